"""`rocm-perf try` and the patch and tunables proposers (issue 54).

Two kinds of tests. Those on the doubles of test_optimize_loop.py (a build that copies the source,
rounds whose time follows the program text: exactly repeatable) check the decisions: a patch with a
gain is accepted among alternatives, each guard rejects its patch naming the line, a wrong result
is rejected on its timed rounds, three values of a tunable are measured, `apply` writes an accepted
patch. Those marked slow run the real host backend (g++ builds, real runs, real statistics): a
comment-only or renamed-local patch compiles to the baseline's machine code and is never measured,
a float rewrite is rejected bit for bit and accepted within a tolerance, a declared tunable's
values are measured, and --fail-unless-faster exits 1. Bad input is one line each, nothing written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rocm_perf.cli import main
from rocm_perf.optimize.apply import run_apply
from rocm_perf.optimize.command import create_run
from rocm_perf.optimize.ledger import open_ledger
from rocm_perf.optimize.loop import DONE, OptimizeLoop
from rocm_perf.optimize.services import Services
from rocm_perf.optimize.try_command import load_candidates, try_patch, verdict_lines
from rocm_perf.report.html import write_run_reports
from rocm_perf.source.rewrite import unified_diff
from test_optimize_loop import PROGRAMS, TOOLS, CopyBuildDouble, InjectedRounds, options

SOURCE = PROGRAMS / "two_loops.cu"
XOR_LOOP = b"""    for (int c = 0; c < cols; ++c) {
        acc += values[c] ^ static_cast<unsigned>(c);
    }"""


def user_copy(tmp_path: Path, program: Path = SOURCE) -> Path:
    src = tmp_path / "src" / program.name
    src.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(program, src)
    return src


def unrolled(times: int) -> bytes:
    """The xor loop unrolled by hand as the rules write it (the doubles time more copies of its body faster)."""
    analysis = TOOLS.analyze_source(SOURCE, [])
    loop = next(l for l in analysis.loops if l.kernel == "row_xor_sum")
    return TOOLS.make_candidate(SOURCE, analysis, loop.id, "unroll_manual", times, rules=TOOLS.load_rules()).rewritten


def diff_of(after: bytes, before: bytes | None = None) -> bytes:
    return unified_diff(Path(SOURCE.name), before or SOURCE.read_bytes(), after).encode()


def run_patches(tmp_path: Path, patches: dict[str, bytes], runner=None, source: Path = SOURCE,
                variants: dict[str, bytes] | None = None, **kw) -> Path:
    """A try run of `patches` ({name: diff}) and `variants` ({name: whole file}) on the doubles,
    driven to its end."""
    opt = options(tmp_path, source=source, proposers=["patch"], rules=[], factors=[], **kw)
    records = load_candidates(opt, list(patches.items()), list((variants or {}).items()))
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    for k, r in enumerate(records):  # as run_try records them: a variant's bytes in the run
        if r["kind"] == "variant":
            r["path"] = f"candidates/{k}-{r['name']}"
            (run_dir / r["path"]).parent.mkdir(parents=True, exist_ok=True)
            (run_dir / r["path"]).write_bytes(r.pop("_data"))
    ledger.set("patch_candidates", records)
    ledger.set("command", "try")
    services = Services(CopyBuildDouble(), runner or InjectedRounds(), TOOLS, None, write_report=write_run_reports)
    assert OptimizeLoop(run_dir, ledger, opt, services).run() == DONE
    return run_dir


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def test_the_faster_of_two_patches_is_accepted_and_named_by_its_file(tmp_path):
    run_dir = run_patches(tmp_path, {"x4.diff": diff_of(unrolled(4)), "x2.diff": diff_of(unrolled(2))})
    s = summary_of(run_dir)
    [accepted] = s["accepted"]
    assert accepted["label"] == "patch x4.diff" and accepted["proposer"] == "patch"
    prov = accepted["provenance"]
    assert prov["file"] == "x4.diff" and len(prov["sha256"]) == 64 and prov["diff"].startswith("--- a/two_loops.cu")
    assert accepted["kernel"] == "row_xor_sum"  # the kernel the patch changes: its ratio is reported too
    assert accepted["evidence"]["confirm"]["kernel"]["n"] > 0
    [other] = s["rejected"]  # alternatives of one group: at most one is accepted
    assert other["label"] == "patch x2.diff" and other["reason"] in ("outraced", "superseded", "not significant")
    assert (run_dir / "final.cu").read_bytes() == unrolled(4)
    assert SOURCE.read_bytes() == open(SOURCE, "rb").read()  # (the double never writes the source)
    lines = verdict_lines(s, run_dir)
    assert lines[0].startswith("patch x4.diff: ACCEPTED, ") and "% faster" in lines[0]
    assert lines[-1].startswith("result: 1 of 2 candidates accepted: patch x4.diff")
    assert "`patch x4.diff` on `row_xor_sum`" in (run_dir / "report.md").read_text()
    assert "patch x4.diff" in (run_dir / "report.html").read_text()


def test_each_guard_rejects_its_patch_naming_the_line_and_a_wrong_result_is_caught_on_its_rounds(tmp_path):
    before = SOURCE.read_bytes()
    signature = before.replace(b"row_xor_sum(const unsigned char* data, unsigned* sums, int rows, int cols) {",
                               b"row_xor_sum(const unsigned char* data, unsigned* sums, int rows, int cols, int extra) {")
    host = before.replace(b"constexpr int kRows = 128;", b"constexpr int kRows = 256;")
    broken = before.replace(b"acc += values[c] ^ static_cast<unsigned>(c);", b"acc += values[c] ^ static_cast<unsigned>(c)")
    wrong = before.replace(b"acc += values[c] ^ static_cast<unsigned>(c);", b"acc += values[c] | static_cast<unsigned>(c);")
    run_dir = run_patches(tmp_path, {"signature.diff": diff_of(signature), "host.diff": diff_of(host),
                                     "broken.diff": diff_of(broken), "wrong.diff": diff_of(wrong)},
                          runner=InjectedRounds(wrong_output_if="values[c] | static_cast"))
    s = summary_of(run_dir)
    assert s["accepted"] == []
    why = {t["provenance"]["file"]: (t["reason"], t["detail"]) for t in s["rejected"]}
    assert why["signature.diff"][0] == "guard"
    assert why["signature.diff"][1].startswith("signature: row_xor_sum gained a parameter (line 13: int extra)")
    assert why["host.diff"] == ("guard", "host code changed (line 9: kRows)")
    assert why["broken.diff"][0] == "guard" and why["broken.diff"][1].startswith("does not build: line 19: expected ';'")
    assert why["wrong.diff"][0] == "wrong output"
    assert why["wrong.diff"][1].startswith("round 0: outputs differ: device-to-host copy")
    assert open_ledger(run_dir).rounds(next(t["id"] for t in s["rejected"] if t["provenance"]["file"] == "wrong.diff"),
                                       "screen")  # measured: the outputs of its timed rounds decided
    lines = verdict_lines(s)
    assert "patch host.diff: rejected: guard (host code changed (line 9: kRows))" in lines


def test_a_variant_is_a_candidate_like_a_patch_and_a_host_change_can_be_allowed(tmp_path):
    host_too = unrolled(4).replace(b"constexpr int kRows = 128;", b"constexpr int kRows = 128;  // rows")
    host_too = host_too.replace(b"const dim3 grid(", b"const dim3 grid = dim3(")
    run_dir = run_patches(tmp_path, {}, variants={"faster.cu": unrolled(4), "harness.cu": host_too},
                          allow_host_changes=True)
    s = summary_of(run_dir)
    labels = {t["label"]: t for t in s["accepted"] + s["rejected"]}
    assert set(labels) == {"variant faster.cu", "variant harness.cu"}
    faster = labels["variant faster.cu"]
    assert faster["proposer"] == "patch" and faster["provenance"]["kind"] == "variant"
    assert faster["provenance"]["diff"].startswith("--- a/two_loops.cu")
    harness = labels["variant harness.cu"]
    changed = host_too[:host_too.index(b"const dim3 grid = dim3(")].count(b"\n") + 1  # the first host line that differs
    assert harness["provenance"]["guard_notes"] == [
        f"host code changed (line {changed}: main), allowed by --allow-host-changes: correctness rests on the outputs alone"]
    line = next(l for l in verdict_lines(s) if l.startswith("variant harness.cu"))
    assert line.endswith("correctness rests on the outputs alone")


def test_an_accepted_patch_is_applied_all_or_nothing_and_sha256_checked(tmp_path, capsys):
    src = user_copy(tmp_path)
    before = src.read_bytes()
    run_dir = run_patches(tmp_path, {"x4.diff": diff_of(unrolled(4))}, source=src)
    assert src.read_bytes() == before  # the run never writes the user's file
    src.write_bytes(before + b"// edited since\n")
    with pytest.raises(Exception, match="changed since the run started"):
        run_apply(run_dir)
    assert src.read_bytes() == before + b"// edited since\n"
    src.write_bytes(before)
    assert run_apply(run_dir) == 0
    assert src.read_bytes() == unrolled(4)
    assert (src.parent / f"{src.name}.{run_dir.name}.orig").read_bytes() == before


def test_a_tunable_with_three_values_is_measured_and_the_file_never_written(tmp_path):
    src = user_copy(tmp_path)
    before = src.read_bytes()
    opt = options(tmp_path, source=src, proposers=["tunables"], rules=[], factors=[], tune={"kBlock": [32, 64, 128, 256]})
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    assert OptimizeLoop(run_dir, ledger, opt, Services(CopyBuildDouble(), InjectedRounds(), TOOLS, None)).run() == DONE
    trials = open_ledger(run_dir).trials()
    assert sorted(t.label for t in trials) == ["tune kBlock=128", "tune kBlock=256", "tune kBlock=32"]  # 64 is the baseline
    assert all(t.proposer == "tunables" and t.provenance["was"] == {"kBlock": 64} for t in trials)
    assert all(t.evidence.get("screen", {}).get("rounds", 0) >= 5 for t in trials)  # each raced
    assert all(t.status == "rejected" for t in trials)  # the double's time does not follow kBlock
    assert src.read_bytes() == before


@pytest.mark.long
def test_a_patch_of_a_projects_file_is_tried_in_its_tree_and_applied(tmp_path):
    """`try --project`: the patch names the tree's file (git's a/ b/ paths from its root); the builds
    are the project's own make (real), the rounds the text-timed double of test_optimize_project.py."""
    from rocm_perf.backends.host import HostBackend
    from test_optimize_project import TextTimedRounds, tree_hash, user_tree

    root = user_tree(tmp_path, "make_app")
    rel = "src/xor_rows.cu"
    before = (root / rel).read_bytes()
    analysis = TOOLS.analyze_source(root / rel, ["-I", str(root / "include")])
    loop = next(l for l in analysis.loops if l.kernel == "row_xor_sum")
    after = TOOLS.make_candidate(root / rel, analysis, loop.id, "unroll_manual", 4, rules=TOOLS.load_rules()).rewritten
    text = "".join(__import__("difflib").unified_diff(before.decode().splitlines(True), after.decode().splitlines(True),
                                                      fromfile=f"a/{rel}", tofile=f"b/{rel}")).encode()
    opt = options(tmp_path, source=root, project=True, build="make", run="./app", proposers=["patch"], rules=[], factors=[],
                  metric="critical-path", max_rounds=15, aa_rounds=5)
    records = load_candidates(opt, [("xor.diff", text)], [])
    assert records[0]["file"] == rel
    run_dir, ledger = create_run(opt, "host", "test", ["test"])
    ledger.set("patch_candidates", records)
    hashed = tree_hash(root)
    services = Services(HostBackend(), TextTimedRounds(), TOOLS, None)
    assert OptimizeLoop(run_dir, ledger, opt, services).run() == DONE
    [t] = ledger.trials()
    assert (t.status, t.file, t.label) == ("accepted", rel, "patch xor.diff")
    assert tree_hash(root) == hashed  # the tree is never written by the run
    assert run_apply(run_dir) == 0
    assert (root / rel).read_bytes() == after


# ---- bad input: one line each, nothing written --------------------------------------------------


@pytest.fixture
def bad_input(tmp_path, capsys):
    src = user_copy(tmp_path)
    out = tmp_path / "runs"

    def check(args: list[str], words: str) -> None:
        capsys.readouterr()
        assert main(["try", str(src), "--out", str(out), "--backend", "host", *args]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("rocm-perf: error: ") and words in err and "\n" not in err, err
        assert not out.exists()  # nothing written

    return src, check


def test_bad_patches_are_one_line_and_nothing_is_written(tmp_path, bad_input):
    src, check = bad_input
    before = src.read_bytes()
    other = tmp_path / "other.diff"
    other.write_bytes(diff_of(unrolled(4)).replace(b"two_loops.cu", b"three_loops.cu"))
    check(["--patch", str(other)], "other.diff: a patch for another file (three_loops.cu); the source is two_loops.cu")
    stale = tmp_path / "stale.diff"
    stale.write_bytes(diff_of(unrolled(4), before.replace(XOR_LOOP, XOR_LOOP.replace(b"++c", b"c++"))))
    check(["--patch", str(stale)], "stale.diff: hunk 1 (@@ -15,")
    check(["--patch", str(stale)], "does not apply to two_loops.cu at line 15")
    binary = tmp_path / "binary.diff"
    binary.write_bytes(b"diff --git a/two_loops.cu b/two_loops.cu\nGIT binary patch\nliteral 3\n")
    check(["--patch", str(binary)], "binary.diff: a binary patch")
    empty = tmp_path / "empty.diff"
    empty.write_bytes(b"")
    check(["--patch", str(empty)], "empty.diff: empty patch")
    check(["--patch", str(tmp_path / "missing.diff")], "missing.diff: cannot read the patch")
    check([], "try: give the change to measure")
    assert src.read_bytes() == before


def test_bad_tunables_are_one_line_and_nothing_is_written(bad_input, tmp_path, capsys):
    src, check = bad_input
    check(["--tune", "kNope=1,2"], "two_loops.cu: no tunable kNope")
    check(["--tune", "kBlock=32", "--proposers", "rules,magic"], "--proposers rules,magic: no proposer 'magic'")
    empty = tmp_path / "empty.cu"
    empty.write_bytes(b"")
    check(["--variant", str(empty)], "empty.cu: an empty file; a variant is a whole second version of two_loops.cu")
    assert main(["optimize", str(src), "--tune", "kNope=4", "--out", str(tmp_path / "runs"), "--backend", "host"]) == 2
    assert "two_loops.cu: no tunable kNope" in capsys.readouterr().err and not (tmp_path / "runs").exists()
    check(["--tune", "kBlock=32,x"], "--tune kBlock: 'x' is not an integer")
    check(["--tune", "kBlock=32", "--tolerance", "rtol=big"], "--tolerance 'rtol=big': 'big' is not a number")


def test_try_patch_takes_the_patch_as_text_and_refuses_bad_input_before_writing(tmp_path):
    src = user_copy(tmp_path)
    with pytest.raises(Exception, match="patch.diff: not a unified diff"):
        try_patch(src, "nothing to see here\n", backend="host", out=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


# ---- on the real host backend -------------------------------------------------------------------

FAST = ["--backend", "host", "--compile-check", "off", "--aa-rounds", "6", "--max-rounds", "30", "--quiet"]


def only_run(out: Path) -> Path:
    [run] = [p for p in out.iterdir() if (p / "ledger.db").exists()]
    return run


@pytest.mark.slow
@pytest.mark.long
def test_a_real_gain_is_accepted_and_a_comment_or_a_renamed_local_is_no_change_in_machine_code(tmp_path, capsys):
    src = user_copy(tmp_path, PROGRAMS / "unroll_wins.cu")
    before = src.read_bytes()
    loop = b"    for (int c = 0; c < cols; ++c) {\n        acc += values[c] ^ static_cast<unsigned>(c);\n    }"
    fast = before.replace(loop, b"    int c = 0;\n    for (; c + 3 < cols; c += 4) {\n"
                          b"        acc += values[c] ^ static_cast<unsigned>(c);\n"
                          b"        acc += values[c + 1] ^ static_cast<unsigned>(c + 1);\n"
                          b"        acc += values[c + 2] ^ static_cast<unsigned>(c + 2);\n"
                          b"        acc += values[c + 3] ^ static_cast<unsigned>(c + 3);\n    }\n"
                          b"    for (; c < cols; ++c) {\n        acc += values[c] ^ static_cast<unsigned>(c);\n    }")
    comment = before.replace(b"    unsigned acc = 0;", b"    unsigned acc = 0;  // the row's sum")
    renamed = before.replace(b"unsigned acc = 0;", b"unsigned total = 0;").replace(
        b"acc += values[c]", b"total += values[c]").replace(b"sums[row] = acc;", b"sums[row] = total;")
    patches = []
    for name, after in (("fast.diff", fast), ("comment.diff", comment), ("renamed.diff", renamed)):
        (tmp_path / name).write_bytes(unified_diff(Path(src.name), before, after).encode())
        patches += ["--patch", str(tmp_path / name)]
    out = tmp_path / "runs"
    assert main(["try", str(src), *patches, "--out", str(out), *FAST]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("patch fast.diff: ACCEPTED")
    assert any(line.startswith("patch comment.diff: rejected: duplicate (no change in machine code") for line in printed)
    assert any(line.startswith("patch renamed.diff: rejected: duplicate (no change in machine code") for line in printed)
    run = only_run(out)
    s = summary_of(run)
    assert [t["provenance"]["file"] for t in s["accepted"]] == ["fast.diff"]
    duplicates = [t for t in s["rejected"] if t["reason"] == "duplicate"]
    assert len(duplicates) == 2 and all(not open_ledger(run).rounds(t["id"], "screen") for t in duplicates)  # never measured
    assert src.read_bytes() == before
    assert main(["review", str(run)]) == 0 and "patch fast.diff" in capsys.readouterr().out
    assert main(["apply", str(run)]) == 0
    assert src.read_bytes() == fast


@pytest.mark.slow
@pytest.mark.long
def test_a_float_rewrite_is_rejected_bit_for_bit_and_accepted_within_a_tolerance(tmp_path, capsys):
    src = user_copy(tmp_path, PROGRAMS / "row_float_sum.cu")
    before = src.read_bytes()
    four = before.replace(b"""    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
        acc += values[c];
    }
    sums[row] = acc;""", b"""    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int c = 0;
    for (; c + 3 < cols; c += 4) {
        a0 += values[c];
        a1 += values[c + 1];
        a2 += values[c + 2];
        a3 += values[c + 3];
    }
    for (; c < cols; ++c) a0 += values[c];
    sums[row] = (a0 + a1) + (a2 + a3);""")
    patch = tmp_path / "four_sums.diff"
    patch.write_bytes(unified_diff(Path(src.name), before, four).encode())
    exact, within = tmp_path / "exact", tmp_path / "within"
    assert main(["try", str(src), "--patch", str(patch), "--out", str(exact), *FAST]) == 0
    [t] = summary_of(only_run(exact))["rejected"]
    assert t["reason"] == "wrong output" and "outputs differ: device-to-host copy 1 of 1 (1024 bytes)" in t["detail"]
    assert main(["try", str(src), "--patch", str(patch), "--tolerance", "rtol=1e-3,atol=1e-3", "--out", str(within),
                 "--fail-unless-faster", *FAST]) == 0
    s = summary_of(only_run(within))
    [t] = s["accepted"]
    outputs = t["evidence"]["confirm"]["outputs"]
    assert outputs["criterion"] == "rtol=0.001,atol=0.001" and 0 < outputs["worst_abs"] <= 1e-3
    assert 0 < outputs["worst_rel"]
    assert "within rtol=0.001,atol=0.001" in capsys.readouterr().out
    kept = only_run(within) / "baseline" / "outputs"
    assert json.loads((kept / "reference.json").read_text())["copies"][0]["element"] == "float32"
    assert src.read_bytes() == before


@pytest.mark.slow
@pytest.mark.long
def test_a_declared_tunables_three_values_are_measured_on_the_host(tmp_path):
    src = user_copy(tmp_path, PROGRAMS / "items_per_thread.cu")
    before = src.read_bytes()
    out = tmp_path / "runs"
    assert main(["try", str(src), "--out", str(out), *FAST]) == 0
    s = summary_of(only_run(out))
    trials = s["accepted"] + s["rejected"]
    assert sorted(t["label"] for t in trials) == ["tune ITEMS=1", "tune ITEMS=2", "tune ITEMS=8"]
    assert all(t["evidence"].get("screen", {}).get("rounds", 0) >= 5 for t in trials)
    assert src.read_bytes() == before


@pytest.mark.slow
@pytest.mark.long
def test_fail_unless_faster_exits_1_when_nothing_was_accepted_and_try_patch_runs_off_the_main_thread(tmp_path):
    src = user_copy(tmp_path, PROGRAMS / "unroll_wins.cu")
    before = src.read_bytes()
    text = unified_diff(Path(src.name), before, before.replace(b"unsigned acc = 0;", b"unsigned acc = 0;  // x")).encode()
    patch = tmp_path / "comment.diff"
    patch.write_bytes(text)
    assert main(["try", str(src), "--patch", str(patch), "--out", str(tmp_path / "runs"), "--fail-unless-faster", *FAST]) == 1
    # The MCP server's way: the patch as text, on a worker thread (no signal handlers there), the run directory back.
    import threading

    found: dict = {}
    worker = threading.Thread(target=lambda: found.update(run=try_patch(
        src, text.decode(), name="agent.diff", backend="host", out=tmp_path / "api",
        extra=["--compile-check", "off", "--aa-rounds", "6", "--new"])))
    worker.start()
    worker.join()
    [t] = summary_of(found["run"])["rejected"]
    assert (t["label"], t["reason"]) == ("patch agent.diff", "duplicate") and t["detail"].startswith("no change in machine code")
    assert src.read_bytes() == before
