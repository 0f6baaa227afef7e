"""Projects whose build reads outside their directory (optimize/outside.py, backends/host_outside.py):
`-I../common`, `../<name>-cuda/reference.h` as a prerequisite, `../<name>-cuda/verify.cpp` as a
source. Real make, real compilers; the user's tree (the project and its siblings) is hashed before
and after every command and must never change."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import DATA
from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.outside import OutsideStore, expand, missing_outside
from rocm_perf.optimize.project import build_copy, copy_files, project_files

SIBLINGS = DATA / "projects" / "siblings"
FAST = ["--backend", "host", "--compile-check", "off", "--aa-rounds", "3", "--rounds", "3", "--max-rounds", "4",
        "--metric", "median-path", "--quiet"]


def tree_hash(root: Path) -> str:
    """Every file's path, bytes and mode under `root` (symlinks as their targets' text)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            h.update(f"{rel}\0->{os.readlink(path)}\0".encode())
        elif path.is_file():
            h.update(f"{rel}\0{path.stat().st_mode}\0".encode() + path.read_bytes())
        else:
            h.update(f"{rel}/\0".encode())
    return h.hexdigest()


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("rocm-perf: error:")]
    assert len(errors) == 1 and "Traceback" not in "\n".join(err), err
    return errors[0]


def suite(tmp_path: Path) -> Path:
    """The user's checkout: the siblings suite, its project `colsum-hip`."""
    shutil.copytree(SIBLINGS, tmp_path / "user")
    return tmp_path / "user"


def small_project(tmp_path: Path, makefile: str, files: dict[str, str]) -> Path:
    """A make project `app` beside other folders of the user's, with no compiler involved."""
    user = tmp_path / "user"
    for rel, text in {"app/Makefile": makefile, **files}.items():
        (user / rel).parent.mkdir(parents=True, exist_ok=True)
        (user / rel).write_text(text)
    return user / "app"


def build(root: Path, run_dir: Path, discover: bool = True, command: str = "make") -> tuple[Path, OutsideStore]:
    store = OutsideStore.open(run_dir, root)
    files = project_files(root)
    work = run_dir / "baseline" / "work"
    build_copy(lambda dest: copy_files(root, files, dest), work, command, {}, 60, run_dir / "baseline" / "work.build.log",
               str(root), store=store, discover=discover)
    return work, store


# ---- make's complaints: what is brought in, where, and proven unchanged ------------------------


MAKEFILE = """out.txt: ../common/a.txt ../lib-cuda/b.txt
\tcat ../common/a.txt ../lib-cuda/b.txt ../../top/c.txt > out.txt
"""


def test_a_make_build_that_reads_siblings_builds_in_a_nest_of_read_only_copies(tmp_path):
    root = small_project(tmp_path, MAKEFILE, {"common/a.txt": "a\n", "lib-cuda/b.txt": "b\n", "../top/c.txt": "c\n",
                                              "common/unused.txt": "not read\n"})
    before = tree_hash(tmp_path / "user"), tree_hash(tmp_path / "top")
    work, store = build(root, tmp_path / "run")
    assert (work / "out.txt").read_text() == "a\nb\nc\n"
    # exactly what the build named, relative to the project root, each hashed when copied
    assert sorted(store.files) == ["../../top/c.txt", "../common/a.txt", "../lib-cuda/b.txt"]
    assert store.files["../common/a.txt"] == hashlib.sha256(b"a\n").hexdigest()
    # the copy is a tree in a nest two levels deep (`../../top`), the outside files links to read-only copies
    assert work.is_symlink() and work.resolve() == (tmp_path / "run/baseline/work.nest/user/app").resolve()
    link = work.resolve().parent / "common" / "a.txt"
    assert link.is_symlink() and (link.resolve().stat().st_mode & 0o777) == 0o444
    assert not (work.resolve().parent / "common" / "unused.txt").exists()
    assert store.originals_changed() == []
    assert (tree_hash(tmp_path / "user"), tree_hash(tmp_path / "top")) == before
    # a second build of the run (a candidate's) finds them laid out again, without discovery
    again, _ = build(root, tmp_path / "run", discover=False)
    assert (again / "out.txt").read_text() == "a\nb\nc\n"


def test_a_build_that_writes_an_outside_copy_fails_and_the_users_file_is_untouched(tmp_path):
    root = small_project(tmp_path, "out.txt: ../common/a.txt\n\tcat ../common/a.txt > out.txt\n\techo x >> ../common/a.txt\n",
                         {"common/a.txt": "a\n"})
    before = tree_hash(tmp_path / "user")
    with pytest.raises(RocmPerfError) as e:
        build(root, tmp_path / "run")
    message = str(e.value)
    if os.geteuid() == 0:  # root ignores the 0444 mode: the hashes after the build catch the write
        assert "the build wrote ../common/a.txt, a read-only copy of a file outside the project" in message
    else:
        assert "Permission denied" in message
    assert tree_hash(tmp_path / "user") == before


def test_an_outside_path_missing_everywhere_is_named_with_the_flag(tmp_path, capsys):
    root = small_project(tmp_path, "out.txt: ../gen-cuda/table.h\n\tcp ../gen-cuda/table.h out.txt\n", {})
    before = tree_hash(tmp_path / "user")
    assert main(["profile", "--project", str(root), "--build", "make", "--run", "true", "--backend", "host",
                 "--out", str(tmp_path / "runs")]) != 0
    line = one_line_error(capsys)
    assert "No rule to make target '../gen-cuda/table.h'" in line
    assert "it reads ../gen-cuda/table.h outside the project, which is not in" in line and "--with PATH" in line
    assert tree_hash(tmp_path / "user") == before


# HeCBench's form (src/moe-sum-hip/Makefile): the outside headers are prerequisites of a pattern
# rule, which make drops in silence when one is missing ("No rule to make target 'main.o'").
PATTERN_MAKEFILE = """main: main.o
\tcp main.o main
%.o: %.cu ../kern-cuda/kernels.h ../kern-cuda/reference.h Makefile
\tcat $< ../kern-cuda/kernels.h ../kern-cuda/reference.h > $@
"""


def test_a_pattern_rules_outside_prerequisites_are_found_from_makes_trace(tmp_path):
    root = small_project(tmp_path, PATTERN_MAKEFILE, {"app/main.cu": "m\n", "kern-cuda/kernels.h": "k\n",
                                                      "kern-cuda/reference.h": "r\n", "kern-cuda/RCS/other": "x\n"})
    before = tree_hash(tmp_path / "user")
    work, store = build(root, tmp_path / "run")
    assert (work / "main").read_text() == "m\nk\nr\n"
    # what the rule lacked, and not the names make's built-in rules try (../kern-cuda/RCS/kernels.h,v)
    assert sorted(store.files) == ["../kern-cuda/kernels.h", "../kern-cuda/reference.h"]
    assert (tmp_path / "run/baseline/work.build.make-trace.log").read_text().count("Trying rule prerequisite") >= 2
    assert tree_hash(tmp_path / "user") == before


@pytest.mark.parametrize("makeflags", ["s -- PYTEST_ARGS=--durations=40", " -- CC=gcc"])
def test_the_trace_flag_goes_before_the_variables_of_a_make_that_runs_rocm_perf(tmp_path, monkeypatch, makeflags):
    """Under `make test PYTEST_ARGS=...` MAKEFLAGS ends with `-- VAR=value`: a flag added after it is a target."""
    from rocm_perf.optimize.outside import MAKE_TRACE, with_make_trace

    monkeypatch.setenv("MAKEFLAGS", makeflags)
    assert with_make_trace({})["MAKEFLAGS"].split(" -- ")[0].endswith(MAKE_TRACE)
    root = small_project(tmp_path, PATTERN_MAKEFILE, {"app/main.cu": "m\n", "kern-cuda/kernels.h": "k\n",
                                                      "kern-cuda/reference.h": "r\n"})
    work, store = build(root, tmp_path / "run")
    assert (work / "main").read_text() == "m\nk\nr\n"
    assert sorted(store.files) == ["../kern-cuda/kernels.h", "../kern-cuda/reference.h"]


def test_a_pattern_rule_whose_outside_source_is_missing_everywhere_is_one_line(tmp_path, capsys):
    root = small_project(tmp_path, "main: main.o\n\tcp main.o main\n%.o: ../gone-cuda/%.cu\n\tcp $< $@\n", {})
    before = tree_hash(tmp_path / "user")
    assert main(["profile", "--project", str(root), "--build", "make", "--run", "true", "--backend", "host",
                 "--out", str(tmp_path / "runs")]) != 0
    line = one_line_error(capsys)
    # the untraced build's complaint and its log, not the trace's
    assert "No rule to make target 'main.o', needed by 'main'" in line and "build.log)" in line
    assert tree_hash(tmp_path / "user") == before


def test_a_pattern_rule_with_an_outside_source_finds_it(tmp_path):
    root = small_project(tmp_path, "main: main.o\n\tcp main.o main\n%.o: ../src-cuda/%.cu\n\tcp $< $@\n",
                         {"src-cuda/main.cu": "s\n"})
    work, store = build(root, tmp_path / "run")
    assert (work / "main").read_text() == "s\n" and list(store.files) == ["../src-cuda/main.cu"]


def test_files_the_run_command_names_outside_the_project_are_brought_in(tmp_path):
    from rocm_perf.optimize.outside import run_command_paths

    root = small_project(tmp_path, "", {"x-cuda/data.csv": "1,2\n", "x-cuda/dataset/c.csv": "3\n", "app/in.txt": "i\n"})
    # HeCBench's meanshift-hip: `./main ../meanshift-cuda/dataset/data.csv ../meanshift-cuda/dataset/centroids.csv`;
    # inside paths, missing ones, folders and absolute paths are not taken
    run = "./main ../x-cuda/data.csv --centroids=../x-cuda/dataset/c.csv in.txt ../x-cuda/none.csv ../x-cuda /etc/hosts"
    assert run_command_paths(root, run) == ["../x-cuda/data.csv", "../x-cuda/dataset/c.csv"]
    assert run_command_paths(root, "./main 'unbalanced") == []


def test_complaints_of_real_tools_name_the_outside_paths(tmp_path):
    tree = tmp_path / "copy" / "app"
    (tree / "sub").mkdir(parents=True)
    origin = tmp_path / "user" / "app"
    origin.mkdir(parents=True)
    for rel in ("common/x.h", "data/in.bin", "lib/helper.cpp", "lib/sub.h"):
        (origin.parent / rel).parent.mkdir(parents=True, exist_ok=True)
        (origin.parent / rel).write_text("// present in the user's checkout\n")
    (tree / "main.cpp").write_text('#include "../common/x.h"\nint main() { return 0; }\n')
    (tree / "sub" / "Makefile").write_text("all: ../../lib/sub.h\n")
    logs = []
    for argv in (["g++", "-c", "main.cpp", "-o", "/dev/null"], ["g++", "-c", "../lib/helper.cpp", "-o", "/dev/null"],
                 ["cp", "../data/in.bin", "."], ["make", "-C", "sub"]):
        done = subprocess.run(argv, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert done.returncode != 0
        logs.append(done.stdout)  # one stream, in order, as builds are read
    available, absent = missing_outside("\n".join(logs), tree, tree, origin)
    assert available == ["../common/x.h", "../lib/helper.cpp", "../data/in.bin", "../lib/sub.h"], logs
    assert absent == []


# ---- the wrapper's dependency pass: -I../common finds nothing for make to name -------------------


def test_the_wrapper_reports_the_outside_headers_a_failed_compile_needs(tmp_path):
    user = suite(tmp_path)
    copy = tmp_path / "copy" / "colsum-hip"
    shutil.copytree(user / "colsum-hip", copy)
    report = tmp_path / "report"
    env = {**os.environ, "ROCM_PERF_OUTSIDE_REPORT": str(report), "ROCM_PERF_PROJECT_COPY": str(copy),
           "ROCM_PERF_PROJECT_ORIGIN": str(user / "colsum-hip"), "ROCM_PERF_OUTSIDE_STORE": str(tmp_path / "store")}
    done = subprocess.run([os.sys.executable, "-m", "rocm_perf.backends.host_hipcc", "-std=c++17", "-I../common",
                           "-I../colsum-cuda", "-c", "main.cu", "-o", "main.o"], cwd=copy, env=env, capture_output=True,
                          text=True)
    assert done.returncode != 0 and "reference.h: No such file" in done.stderr
    assert sorted(report.read_text().split("\n")) == ["", "needs ../colsum-cuda/reference.h", "needs ../common/timer.h"]


# ---- bad input: one line each, nothing written -------------------------------------------------


@pytest.mark.parametrize("case", ["6000 files", "symlink loop", "loop inside", "inside", "missing", "source outside"])
def test_bad_outside_input_is_one_line(tmp_path, capsys, case):
    user = suite(tmp_path)
    root = user / "colsum-hip"
    args = ["optimize", "--project", str(root), "--build", "make", "--run", "./main", "--out", str(tmp_path / "runs"), *FAST]
    if case == "6000 files":
        for i in range(6000):
            (user / "data" / str(i // 1000)).mkdir(parents=True, exist_ok=True)
            (user / "data" / str(i // 1000) / f"{i}.txt").write_text(str(i))
        args += ["--with", str(user / "data")]
        expect = "--with ../data: an outside directory of more than 5000 files (over --max-files 5000); name the files"
    elif case == "symlink loop":
        os.symlink("loop", user / "loop")
        args += ["--with", str(user / "loop")]
        expect = "--with ../loop: a symlink loop"
    elif case == "loop inside":
        os.symlink("..", user / "common" / "back")
        args += ["--with", str(user / "common")]
        expect = "--with ../common/back: a symlink loop (it leads back to"
    elif case == "inside":
        args += ["--with", str(root / "main.cu")]
        expect = f"main.cu: inside the project {root}, which is copied whole already"
    elif case == "missing":
        args += ["--with", str(user / "nope")]
        expect = "/nope: no such file or directory"
    else:
        args += ["--source", "../colsum-cuda/verify.cpp"]
        expect = "../colsum-cuda/verify.cpp: outside the project"
    before = tree_hash(user)
    assert main(args) != 0
    line = one_line_error(capsys)
    assert expect in line, line
    assert tree_hash(user) == before
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_expand_lists_a_directory_under_each_of_its_names(tmp_path):
    (tmp_path / "lib" / "inc").mkdir(parents=True)
    (tmp_path / "lib" / "inc" / "a.h").write_text("a")
    os.symlink("inc", tmp_path / "lib" / "alias")  # a second name for a directory (not a loop): a build may use either
    (tmp_path / "app").mkdir()
    assert expand(tmp_path / "app", "../lib", 10) == ["../lib/alias/a.h", "../lib/inc/a.h"]


# ---- end to end: the whole loop on the suite's project -----------------------------------------


@pytest.mark.slow
@pytest.mark.long
def test_optimize_a_project_whose_makefile_reads_its_siblings(tmp_path):
    user = suite(tmp_path)
    root = user / "colsum-hip"
    before = tree_hash(user)
    out = tmp_path / "runs"
    assert main(["optimize", "--project", str(root), "--build", "make CC=rocm-perf-hipcc", "--run", "./main",
                 "--max-trials", "1", "--out", str(out), *FAST]) == 0
    run = next(p for p in out.iterdir() if (p / "ledger.db").exists())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["state"] == "done" and summary["trials"] >= 1
    outside = summary["outside"]
    assert outside["files"] == ["../colsum-cuda/reference.h", "../colsum-cuda/verify.cpp", "../common/timer.h"]
    # the compiler's dependency output: what the compiles read of them (the header through -I../common too)
    assert outside["read"] == outside["files"] and outside["changed_since"] == []
    assert "outside the project: 3 file(s) the build reads" in (run / "report.html").read_text()
    assert tree_hash(user) == before


@pytest.mark.slow
def test_profile_a_project_whose_makefile_reads_its_siblings(tmp_path, capsys):
    user = suite(tmp_path)
    (user / "common" / "input.txt").write_text("an input the run command names\n")
    before = tree_hash(user)
    # the run command's own outside file is brought in too (`test -f` fails the run without it)
    assert main(["profile", "--project", str(user / "colsum-hip"), "--build", "make", "--run",
                 "test -f ../common/input.txt && ./main", "--backend", "host", "--out", str(tmp_path / "runs")]) == 0
    captured = capsys.readouterr()
    assert "weighted_col" in captured.out  # (the table shortens long names)
    assert "the build reads 4 file(s) outside the project (../colsum-cuda/reference.h" in captured.err
    run = next((tmp_path / "runs").iterdir())
    assert json.loads((run / "summary.json").read_text())["outside"]["changed_since"] == []
    assert tree_hash(user) == before


@pytest.mark.slow
def test_a_library_call_the_host_runtime_lacks_is_one_line_at_the_callers_line(tmp_path, capsys):
    # HeCBench's ludb-hip calls hipblasSgetrfBatched: the static_assert is in the runtime's header, the
    # line to show is the program's
    root = small_project(tmp_path, "main: main.cu\n\thipcc main.cu -o main -lhipblas\n", {"app/main.cu": (
        "#include <hipblas/hipblas.h>\nint main() {\n    hipblasHandle_t h; float* a = nullptr;\n"
        "    return hipblasSgbmv(h, HIPBLAS_OP_N, 4, 4, 1, 1, a, a, 4, a, 1, a, a, 1);\n}\n")})
    assert main(["profile", "--project", str(root), "--build", "make", "--run", "./main", "--backend", "host",
                 "--out", str(tmp_path / "runs")]) != 0
    line = one_line_error(capsys)
    assert "main.cu:4:" in line and "rocm-perf host backend: hipblasSgbmv is not supported" in line
    assert "hipblas_refused.h" not in line


@pytest.mark.slow
def test_headers_found_through_a_sibling_include_dir_one_at_a_time_with_the_run_beside_the_checkout(tmp_path, capsys):
    # HeCBench's rng-wallace-hip: `-I../rng-wallace-cuda`, one of its headers a pattern rule's
    # prerequisite (found first, from make's trace), the other only included. The runs lie beside the
    # checkout, so the compiler's name for the first (its run copy) is also a path outside the project.
    kernel = "__global__ void fill(int* out, int v) { out[threadIdx.x] = v; }\n"
    main_cu = ('#include <hip/hip_runtime.h>\n#include <cstdio>\n#include "kernel.h"\n#include "reference.h"\n'
               "int main() {\n    int* d; hipMalloc(&d, 64 * sizeof(int));\n    fill<<<1, 64>>>(d, VALUE);\n"
               "    int h[64]; hipMemcpy(h, d, sizeof h, hipMemcpyDeviceToHost);\n"
               '    std::printf("%s\\n", h[63] == VALUE ? "PASS" : "FAIL");\n    return h[63] == VALUE ? 0 : 1;\n}\n')
    makefile = ("CFLAGS := -std=c++17 -I../w-cuda\nmain: main.o\n\t$(CC) main.o -o main\n"
                "%.o: %.cu ../w-cuda/kernel.h Makefile\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
    root = small_project(tmp_path, makefile, {"app/main.cu": main_cu, "w-cuda/kernel.h": kernel,
                                              "w-cuda/reference.h": "#define VALUE 7\n"})
    before = tree_hash(tmp_path / "user")
    assert main(["profile", "--project", str(root), "--build", "make CC=rocm-perf-hipcc", "--run", "./main",
                 "--backend", "host", "--out", str(tmp_path / "runs")]) == 0
    run = next((tmp_path / "runs").iterdir())
    assert sorted(json.loads((run / "outside" / "manifest.json").read_text())["files"]) == [
        "../w-cuda/kernel.h", "../w-cuda/reference.h"]  # nothing of the run's own directory
    assert tree_hash(tmp_path / "user") == before
