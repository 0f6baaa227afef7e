"""`optimize --project`, `profile --project` and `apply` on a source tree with its own build:
a make project and a CMake project of our own (tests/data/projects: kernels in two files and a
header), copied first into tmp_path, whose copy stands for the user's tree. The user's tree is
hashed before and after every command: it must never change (except through `apply`)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import DATA, IN_CI
from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.command import create_run
from rocm_perf.optimize.ledger import open_ledger
from rocm_perf.optimize.loop import DONE, OptimizeLoop
from rocm_perf.optimize.services import Services, SourceTools
from rocm_perf.optimize.measure import RoundResult, output_fingerprint
from rocm_perf.optimize.options import OptimizeOptions
from rocm_perf.optimize.project import _walk_files, kernel_sources, project_files, resolve_sources

PROJECTS = DATA / "projects"
XOR = "row_xor_sum(unsigned char const*, unsigned int*, int, int)"
WEIGHTED = "row_weighted_sum(unsigned char const*, unsigned int*, int, int)"
FAST = ["--backend", "host", "--compile-check", "off", "--aa-rounds", "3", "--rounds", "3", "--max-rounds", "4",
        "--metric", "median-path", "--quiet"]


def user_tree(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "user" / name
    shutil.copytree(PROJECTS / name, root)
    return root


def tree_hash(root: Path) -> str:
    """Every file's path, bytes and mode under `root`: what 'untouched' means."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file():
            h.update(f"{rel}\0{path.stat().st_mode}\0".encode() + path.read_bytes())
        else:
            h.update(f"{rel}/\0".encode())
    return h.hexdigest()


def only_run(out: Path) -> Path:
    runs = [p for p in out.iterdir() if (p / "ledger.db").exists()]
    assert len(runs) == 1
    return runs[0]


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("rocm-perf: error:")]
    assert len(errors) == 1 and "Traceback" not in "\n".join(err), err
    return errors[0]


# ---- which files a project has ---------------------------------------------------------------


def _ignore_tree(root: Path) -> None:
    files = ["keep.cu", "a.log", "keep.log", "build/x.o", "src/deep/build/y.o", "src/z.tmp", "src/deep/w.tmp",
             "docs/notes.md", "docs/out/gen.txt", "data/big.bin", "data/small.txt", "nested/.gitignore",
             "nested/local.txt", "nested/kept.txt", "only_root.txt", "sub/only_root.txt"]
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / ".gitignore").write_text("# build outputs\nbuild/\n*.log\n!keep.log\nsrc/**/*.tmp\n/docs/out\n"
                                     "data/*.bin\n/only_root.txt\n")
    (root / "nested" / ".gitignore").write_text("local.txt\n")


def test_our_gitignore_reading_agrees_with_git(tmp_path):
    if shutil.which("git") is None:
        if IN_CI:
            pytest.fail("git not installed: CI must have it")
        pytest.skip("git not installed (apt-get install -y git)")
    plain, repo = tmp_path / "plain", tmp_path / "repo"
    for root in (plain, repo):
        _ignore_tree(root)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    ours = _walk_files(plain, 1000)
    gits = project_files(repo)  # inside a work tree: git's own answer
    assert ours == gits
    assert "keep.log" in ours and "a.log" not in ours and "build/x.o" not in ours
    assert "sub/only_root.txt" in ours and "only_root.txt" not in ours
    assert "nested/kept.txt" in ours and "nested/local.txt" not in ours


def test_kernel_sources_and_source_checks():
    root = PROJECTS / "make_app"
    files = project_files(root)
    assert kernel_sources(root, files) == ["src/weighted_rows.cu", "src/xor_rows.cu"]  # main.cu defines none
    assert resolve_sources(root, ["src/xor_rows.cu"], files) == ["src/xor_rows.cu"]
    with pytest.raises(RocmPerfError, match="outside the project"):
        resolve_sources(root, ["../cmake_app/src/xor_rows.cu"], files)
    with pytest.raises(RocmPerfError, match="no such file in the project"):
        resolve_sources(root, ["src/nope.cu"], files)


# ---- bad input: one line each, the tree untouched --------------------------------------------


@pytest.mark.parametrize("case", ["failing build", "source outside", "10000 files", "missing --build"])
def test_bad_project_input_is_one_line_and_leaves_the_tree_alone(tmp_path, capsys, monkeypatch, case):
    root = user_tree(tmp_path, "make_app")
    args = ["optimize", "--project", str(root), "--build", "make", "--run", "./app", "--out", str(tmp_path / "runs"), *FAST]
    if case == "failing build":
        args[args.index("make")] = "make no-such-target"
        # make names itself `make:` or, when the tests run under make (CI's `make test`), `make[1]:` and
        # says "Leaving directory" last: the message is make's failure, not that line, either way
        monkeypatch.setenv("MAKELEVEL", "1")
        expect = "the build command `make no-such-target` failed (exit 2) in a copy of the tree: make"
    elif case == "source outside":
        outside = tmp_path / "user" / "outside.cu"
        outside.write_text("__global__ void k() {}\n")
        args += ["--source", "../outside.cu"]
        expect = "../outside.cu: outside the project"
    elif case == "10000 files":
        for i in range(10000):
            (root / "data" / f"{i // 1000}").mkdir(parents=True, exist_ok=True)
            (root / "data" / f"{i // 1000}" / f"{i}.txt").write_text(str(i))
        expect = "files to copy, over --max-files 5000 (every candidate is a copy of the tree): list build outputs"
    else:
        args.remove("--build")
        args.remove("make")
        expect = "optimize --project needs --build CMD"
    before = tree_hash(root)
    assert main(args) != 0
    line = one_line_error(capsys)
    assert expect in line, line
    if case == "failing build":
        assert "*** No rule to make target" in line, line
    assert tree_hash(root) == before


@pytest.mark.slow
def test_a_run_command_that_starts_no_program_is_named(tmp_path, capsys):
    root = user_tree(tmp_path, "make_app")
    before = tree_hash(root)
    assert main(["optimize", "--project", str(root), "--build", "make", "--run", "echo no program here",
                 "--out", str(tmp_path / "runs"), *FAST]) != 0
    line = one_line_error(capsys)
    assert "the run command `echo no program here` (exit 0) started no HIP program" in line
    assert tree_hash(root) == before


# ---- end to end, real builds and measurements ----------------------------------------------


def check_project_run(run: Path, root: Path, sources: list[str]) -> dict:
    summary = json.loads((run / "summary.json").read_text())
    assert summary["state"] == "done" and summary["trials"] >= 1
    assert summary["project"]["sources"] == sources
    # critical-path ranking maps each profiled kernel to the file that defines it
    files = {k["kernel"]: k["file"] for k in summary["top_kernels"]}
    assert files == {"row_xor_sum": "src/xor_rows.cu", "row_weighted_sum": "src/weighted_rows.cu"}
    ledger = open_ledger(run)
    try:
        trials = ledger.trials()
        for t in trials:
            assert t.file in sources
            changed = [line[6:] for line in t.diff.splitlines() if line.startswith("+++ b/")]
            assert changed == [t.file], t.diff  # each candidate changes one file
    finally:
        ledger.close()
    # the tree was copied without what .gitignore excludes
    assert not (run / "baseline" / "tree" / "build" / "stale.o").exists()
    assert (run / "baseline" / "tree" / "include" / "rows.hpp").is_file()
    return summary


@pytest.mark.slow
@pytest.mark.long
def test_optimize_a_make_project_end_to_end(tmp_path, capsys):
    root = user_tree(tmp_path, "make_app")
    (root / "build").mkdir()
    (root / "build" / "stale.o").write_bytes(b"ignored by .gitignore")
    before = tree_hash(root)
    out = tmp_path / "runs"
    assert main(["optimize", "--project", str(root), "--build", "make", "--run", "./app", "--max-trials", "2",
                 "--out", str(out), *FAST]) == 0
    run = only_run(out)
    check_project_run(run, root, ["src/weighted_rows.cu", "src/xor_rows.cu"])
    assert tree_hash(root) == before
    # the builds happened in the run's copies, with the wrapper as $(HIPCC)
    log = (run / "baseline" / "work.build.log").read_text()
    assert "rocm-perf-hipcc" in log or "/bin/hipcc" in log
    assert (run / "baseline" / "work" / "app").is_file() and not (root / "app").exists()
    # --patch over the accepted changes (whichever files real measurements accepted), applicable as printed
    ledger = open_ledger(run)
    accepted = sorted({t.file for t in ledger.trials() if t.status == "accepted"})
    ledger.close()
    capsys.readouterr()
    assert main(["apply", str(run), "--patch"]) == 0
    printed = capsys.readouterr()
    assert sorted(line[6:] for line in printed.out.splitlines() if line.startswith("+++ b/")) == accepted
    assert f"a patch of {len(accepted)} file(s) relative to {root}" in printed.err
    if accepted:
        check = subprocess.run(["git", "apply", "--check", "-"], input=printed.out, text=True, cwd=root, capture_output=True)
        assert check.returncode == 0, check.stderr
    assert tree_hash(root) == before


@pytest.mark.slow
@pytest.mark.long
def test_optimize_a_cmake_project_end_to_end(tmp_path):
    if shutil.which("cmake") is None:
        message = "cmake not installed (apt-get install -y cmake)"
        if IN_CI:
            pytest.fail(message + ": CI must have it")
        pytest.skip(message)
    root = user_tree(tmp_path, "cmake_app")
    before = tree_hash(root)
    out = tmp_path / "runs"
    assert main(["optimize", "--project", str(root), "--build", "cmake -S . -B build && cmake --build build",
                 "--run", "./build/app", "--source", "src/xor_rows.cu", "--source", "src/weighted_rows.cu",
                 "--max-trials", "1", "--out", str(out), *FAST]) == 0
    run = only_run(out)
    check_project_run(run, root, ["src/xor_rows.cu", "src/weighted_rows.cu"])
    assert tree_hash(root) == before
    assert (run / "baseline" / "work" / "build" / "CMakeCache.txt").is_file()


@pytest.mark.slow
def test_profile_a_project(tmp_path, capsys):
    root = user_tree(tmp_path, "make_app")
    before = tree_hash(root)
    assert main(["profile", "--project", str(root), "--build", "make", "--run", "./app", "--backend", "host",
                 "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "row_xor_sum" in out and "row_weighted_sum" in out
    assert tree_hash(root) == before


# ---- several files accepted, then applied (measurement double) ------------------------------


class TextTimedRounds:
    """Measurement double: a round's time falls with the number of copies of each kernel's loop
    body in the built tree (a manual unroll adds copies), so that candidates in both files win,
    exactly repeatably. The builds are real (the project's own `make`, with the wrapper); only the
    timing is injected, because on a shared CPU no real rewrite wins by a margin a test may rely on."""

    BODIES = {XOR: "acc += mix(values[c], static_cast<unsigned>(c));",
              WEIGHTED: "acc += values[c] * static_cast<unsigned>(c & 7);"}

    def __call__(self, executable: Path, round_dir: Path, key: str) -> RoundResult:
        tree = Path(executable)
        assert (tree / "app").is_file(), f"{tree}: the build made no program"
        times = {}
        for symbol, body in self.BODIES.items():
            text = "".join(p.read_text() for p in (tree / "src").glob("*.cu"))
            copies = text.count(body)
            times[symbol] = 10e6 * (1.0 - 0.15 * math.log2(max(1, copies - 1))) if copies > 1 else 10e6
        # a deterministic 1 % jitter per round (the same round key gives the same value)
        jitter = 1.0 + 0.01 * (int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF - 0.5)
        times = {s: v * jitter for s, v in times.items()}
        total = sum(times.values())
        outputs = output_fingerprint(0, ["same:1"], "checksum 1\n", r"time")
        outputs["processes"] = 1
        return RoundResult(True, "", total, total, times, {s: v / total for s, v in times.items()}, outputs)

    def together(self, rounds: list) -> list[RoundResult]:
        """The rounds of a pair the host backend runs together: their times are injected, so one by one."""
        return [self(*r) for r in rounds]


@pytest.mark.long
def test_accepted_changes_in_two_files_are_applied_together(tmp_path, capsys):
    root = user_tree(tmp_path, "make_app")
    opt = OptimizeOptions(source=root, project=True, build="make", run="./app", backend="host",
                          rules=["unroll_manual"], factors=[4], max_trials=4, rounds=5, max_rounds=15, aa_rounds=5,
                          compile_check="off", out=tmp_path / "runs", quiet=True, jobs=1,
                          metric="critical-path")  # the rounds' values are the program's own timings
    run_dir, ledger = create_run(opt, "host", "test", ["test"])
    from rocm_perf.backends.host import HostBackend

    services = Services(backend=HostBackend(), runner=TextTimedRounds(), tools=SourceTools.default(), compile_check=None)
    assert OptimizeLoop(run_dir, ledger, opt, services).run() == DONE
    accepted = [t for t in ledger.trials() if t.status == "accepted"]
    assert sorted(t.file for t in accepted) == ["src/weighted_rows.cu", "src/xor_rows.cu"]
    ledger.close()
    assert sorted((run_dir / "final").rglob("*.cu")) == [run_dir / "final/src/weighted_rows.cu",
                                                         run_dir / "final/src/xor_rows.cu"]
    report = (run_dir / "report.md").read_text()
    assert "- project: built with `make`, run with `./app`" in report
    assert "changed: `src/weighted_rows.cu`, `src/xor_rows.cu`" in report and "row_xor_sum in `src/xor_rows.cu`" in report

    capsys.readouterr()
    assert main(["apply", str(run_dir), "--patch"]) == 0
    patch = capsys.readouterr().out
    assert "+++ b/src/xor_rows.cu" in patch and "+++ b/src/weighted_rows.cu" in patch
    if shutil.which("git"):  # the patch applies where it says: in the project's root
        check = subprocess.run(["git", "apply", "--check", "-"], input=patch, text=True, cwd=root, capture_output=True)
        assert check.returncode == 0, check.stderr

    # A user file changed since the run started: nothing is written, and the line names it.
    (root / "src" / "weighted_rows.cu").write_text((root / "src" / "weighted_rows.cu").read_text() + "// edited\n")
    before = tree_hash(root)
    assert main(["apply", str(run_dir)]) != 0
    assert "src/weighted_rows.cu changed since the run started" in one_line_error(capsys)
    assert tree_hash(root) == before

    # Restored: both files written, each with its backup; a second apply has nothing to do.
    shutil.copy(PROJECTS / "make_app" / "src" / "weighted_rows.cu", root / "src" / "weighted_rows.cu")
    assert main(["apply", str(run_dir)]) == 0
    for rel in ("src/xor_rows.cu", "src/weighted_rows.cu"):
        assert (root / rel).read_bytes() == (run_dir / "final" / rel).read_bytes()
        assert (root / rel).with_name(f"{Path(rel).name}.{run_dir.name}.orig").read_bytes() == (PROJECTS / "make_app" / rel).read_bytes()
    capsys.readouterr()
    assert main(["apply", str(run_dir)]) == 0
    assert "already holds" in capsys.readouterr().out
    assert os.access(root / "src" / "xor_rows.cu", os.R_OK)
