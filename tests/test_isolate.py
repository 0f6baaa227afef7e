"""`rocm-perf isolate`: bad input (one line each, nothing built), the device-code extraction and the
change carried back to the original (libclang, no build), and end to end on real programs (slow):
a kernel whose argument is a struct of device pointers isolated and replayed, a wrong change to the
reproducer's kernel caught by the replay's check, the program's own failures named, a kill -9 in
the middle of a capture, and every kernels/ program's top kernel isolated and replayed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DATA, KERNELS
from rocm_perf.backends.host import HostBackend
from rocm_perf.backends.replay_build import build_replay
from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.isolate.command import IsolateRequest, parse_size, run_isolate
from rocm_perf.isolate.extract import extract_kernel
from rocm_perf.process import run
from rocm_perf.reproducer import carry_change, is_reproducer, read_manifest, replay_args
from rocm_perf.source.parse import parse_bytes

POINTERS = DATA / "isolate" / "pointer_struct.cu"
TWO_PHASE = DATA / "isolate" / "two_phase.cu"


def one_line_error(argv: list[str], capsys) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code != 0 and "\n" not in err and err.startswith("rocm-perf: error: "), err
    return err.removeprefix("rocm-perf: error: ")


# ---- bad input: one line each, before anything is built -----------------------------------------


def test_bad_input_is_one_line_naming_the_problem(tmp_path, capsys):
    out = str(tmp_path / "r")
    assert "no such source file" in one_line_error(["isolate", str(tmp_path / "nope.cu"), "--kernel", "k", "--out", out], capsys)
    assert "counted from 1" in one_line_error(["isolate", str(POINTERS), "--kernel", "scale", "--dispatch", "0",
                                               "--out", out], capsys)
    assert "not a regular expression" in one_line_error(["isolate", str(POINTERS), "--kernel", "scale(", "--out", out], capsys)
    assert "cannot be matched by the capture runtimes" in one_line_error(["isolate", str(POINTERS), "--kernel",
                                                                          "(?P<k>scale)", "--out", out], capsys)
    assert "--build and --run go with --project" in one_line_error(["isolate", str(POINTERS), "--kernel", "scale",
                                                                    "--build", "make", "--out", out], capsys)
    assert "needs --build" in one_line_error(["isolate", "--project", str(tmp_path), "--kernel", "k", "--out", out], capsys)
    assert "--max-snapshot" in one_line_error(["isolate", str(POINTERS), "--kernel", "scale", "--max-snapshot", "lots",
                                               "--out", out], capsys)
    taken = tmp_path / "taken"
    (taken / "x").mkdir(parents=True)
    assert "already exists" in one_line_error(["isolate", str(POINTERS), "--kernel", "scale", "--out", str(taken)], capsys)


def test_no_such_kernel_is_found_in_the_source_before_the_program_is_built(tmp_path, capsys):
    err = one_line_error(["isolate", str(POINTERS), "--kernel", "^transpose", "--out", str(tmp_path / "r"),
                          "--backend", "host"], capsys)
    assert err == f"{POINTERS}: no kernel matches --kernel '^transpose' (its kernels: scale_views)"
    assert not (tmp_path / "r").exists() and not list(tmp_path.glob(".r.isolate-*"))


def test_sizes():
    assert parse_size("2G") == 2 << 30 and parse_size("512MiB") == 512 << 20 and parse_size("1000") == 1000
    with pytest.raises(RocmPerfError):
        parse_size("two gigs")


# ---- the kernel's device code, line for line ---------------------------------------------------


def test_extraction_keeps_the_kernel_its_helpers_types_and_variables_and_blanks_the_rest_line_for_line():
    e = extract_kernel(POINTERS, [], "_Z11scale_views5Viewsm", POINTERS.parent)
    assert e.kept == ["Views", "launches_seen", "gain", "weight", "scale_views"]
    assert e.dropped == ["reference", "main"]
    assert [(v.spelling, v.symbol, v.internal) for v in e.variables] == [("launches_seen", "launches_seen", False),
                                                                           ("gain", "gain", False)]
    original = POINTERS.read_bytes().splitlines()
    extracted = e.data.splitlines()
    assert len(extracted) == len(original)
    # every line is either the original's or blank; the kernel's lines are all there
    assert all(x == o or x == b"" for x, o in zip(extracted, original))
    kernel_lines = range(e.kernel.line - 1, e.kernel.end_line)
    assert all(extracted[i] == original[i] for i in kernel_lines)
    assert b"int main" not in e.data and b"#define CHECK" in e.data  # macros stay
    parse_bytes(POINTERS, e.data)  # and it still parses on its own


@pytest.mark.slow  # twelve libclang parses
def test_every_corpus_kernel_extracts_without_its_host_code():
    for source, kernel in CORPUS:
        e = extract_kernel(KERNELS / source, [], kernel, KERNELS)
        assert "main" in e.dropped, source
        parse_bytes(KERNELS / source, e.data)


def test_a_change_of_the_kernel_file_is_carried_onto_the_original_and_a_change_of_a_blanked_line_is_refused():
    original = POINTERS.read_bytes()
    extracted = extract_kernel(POINTERS, [], "_Z11scale_views5Viewsm", POINTERS.parent).data
    changed = extracted.replace(b"v.in[i] * weight(int(i))", b"weight(int(i)) * v.in[i]")
    carried = carry_change(extracted, changed, original)
    assert carried == original.replace(b"v.in[i] * weight(int(i))", b"weight(int(i)) * v.in[i]")
    blanked_line = extracted.splitlines(keepends=True)  # a line main() held, blank in the kernel file
    at = next(i for i, line in enumerate(blanked_line) if line == b"\n" and original.splitlines()[i].strip())
    blanked_line[at] = b"int extra;\n"
    with pytest.raises(RocmPerfError, match="which the original does not hold as the reproducer's kernel file does"):
        carry_change(extracted, b"".join(blanked_line), original)


def test_a_folder_is_a_reproducer_only_with_its_manifest(tmp_path):
    assert not is_reproducer(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "something else"}))
    assert not is_reproducer(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "rocm-perf-reproducer", "version": 1}))
    assert is_reproducer(tmp_path)
    with pytest.raises(RocmPerfError, match="damaged reproducer"):
        read_manifest(tmp_path)


# ---- end to end -------------------------------------------------------------------------------


def isolate(source: Path, kernel: str, out: Path, *args: str, dispatch: int = 1, **kw) -> int:
    return run_isolate(IsolateRequest(source=source, kernel=kernel, out=out, dispatch=dispatch, program_args=args, **kw),
                       backend="host")


@pytest.fixture(scope="module")
def pointer_reproducer(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("isolate") / "scale_views"
    assert isolate(POINTERS, "scale_views", out, dispatch=2) == 0
    return out


@pytest.mark.slow
def test_a_struct_of_device_pointers_replays_at_the_captured_addresses(pointer_reproducer, tmp_path):
    r = read_manifest(pointer_reproducer)
    doc = r.doc
    assert r.verified and doc["verified"]["passes"] == 2
    assert doc["kernel"]["demangled"] == "scale_views(Views, unsigned long)" and doc["dispatch"] == 2
    assert [a["type"] for a in doc["arguments"]] == ["Views", "unsigned long"]
    assert [int(a["address"], 16) for a in doc["allocations"]] == [0x200000000000 + k * 0x3000 for k in range(5)]
    assert [a["changed"] for a in doc["allocations"]] == [True, False, False, False, False]
    variables = {v["spelling"]: v for v in doc["variables"]}
    assert variables["launches_seen"]["changed"] and not variables["gain"]["changed"]
    assert doc["not_captured"] == [] and doc["warnings"] == []
    assert sorted(p.name for p in (pointer_reproducer / "kernel").iterdir()) == ["pointer_struct.cu"]
    # The harness builds on its own from the folder and replays more passes than isolate checked.
    program = build_replay(HostBackend(), r, tmp_path / "build")
    done = run([program.executable, *replay_args(pointer_reproducer, 7)], timeout=300)
    assert done.returncode == 0, done.stderr
    assert "7 passes, 5 allocations and 2 variables (48028 bytes) bit-exact: PASS" in done.stdout


@pytest.mark.slow
def test_a_wrong_change_to_the_reproducers_kernel_is_caught_by_the_replay_check(pointer_reproducer, tmp_path):
    r = read_manifest(pointer_reproducer)
    wrong = tmp_path / "wrong.cu"
    wrong.write_bytes(r.kernel_file.read_bytes().replace(b"weight(int(i)) +", b"weight(int(i) + 1) +"))
    program = build_replay(HostBackend(), r, tmp_path / "build", kernel_file=wrong)
    done = run([program.executable, *replay_args(pointer_reproducer, 3)], timeout=300)
    assert done.returncode == 1
    assert re.search(r"replay: pass 1: allocation 1 at 0x200000000000 \(12000 bytes\) differs from the captured "
                     r"after-state at byte \d+", done.stderr), done.stderr


@pytest.mark.slow
def test_profile_takes_a_reproducer_as_a_program(pointer_reproducer, tmp_path):
    from rocm_perf.report.profile_command import run_profile

    assert run_profile(pointer_reproducer, backend="host", out=tmp_path, replay_passes=4) == 0
    (run_dir,) = tmp_path.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["rounds"][0]["dispatches"] == 4  # the passes, and nothing else of the program


@pytest.mark.slow
@pytest.mark.long
def test_the_programs_own_failures_are_named_one_line_each(tmp_path):
    with pytest.raises(RocmPerfError) as beyond:
        isolate(TWO_PHASE, "step", tmp_path / "a", dispatch=9)
    assert str(beyond.value) == f"{TWO_PHASE}: --dispatch 9 is beyond the last: step(int*, int, int) was launched 4 times"
    with pytest.raises(RocmPerfError) as early:
        isolate(TWO_PHASE, "step", tmp_path / "b", "exit-after", "1", dispatch=2)
    assert str(early.value) == (f"{TWO_PHASE}: the program exited with status 3 after 1 launch of step(int*, int, int), "
                                "before dispatch 2 (two_phase: stopping early after 1 launches)")
    with pytest.raises(RocmPerfError) as never:
        isolate(TWO_PHASE, "step", tmp_path / "c", "launches", "0")
    assert str(never.value) == f"{TWO_PHASE}: the program launched no kernel (no HIP launch was seen)"
    with pytest.raises(RocmPerfError) as big:
        isolate(TWO_PHASE, "step", tmp_path / "d", max_snapshot=100)
    assert "above --max-snapshot 100 bytes" in str(big.value) and "(4000 bytes)" in str(big.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no reproducer, no staging left


@pytest.mark.slow
def test_a_kill_during_the_capture_leaves_no_reproducer_and_no_program_running(tmp_path):
    out = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-m", "rocm_perf.cli", "isolate", str(TWO_PHASE), "--kernel", "step",
                             "--out", str(out), "--backend", "host", "--", "sleep", "120"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    capture = None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(tmp_path.glob(".r.isolate-*/capture/capture.json"))
        if found:
            capture = json.loads(found[0].read_text())
            break
        time.sleep(0.2)
    assert capture is not None, "the capture never started"
    os.kill(proc.pid, signal.SIGKILL)  # in the middle: the program sleeps after its capture
    proc.wait()
    assert not out.exists()
    program_pid = capture["pid"]
    for _ in range(100):  # the runtime sees its isolate gone within 100 ms
        try:
            os.kill(program_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the captured program {program_pid} outlived the killed isolate")
    # The next isolate into the same folder removes what the killed one left, and completes.
    assert isolate(TWO_PHASE, "step", out) == 0
    assert is_reproducer(out) and not list(tmp_path.glob(".r.isolate-*"))


# Each corpus program's top kernel: the largest critical-path share in `rocm-perf profile` of it on the
# host backend (transpose_shared 93 %, histogram_shared 54 %, expand_chunk 94 %, scan_tiles 99 %; the
# other programs have one kernel), at its first dispatch, whose outputs are fresh.
CORPUS = [
    ("row_reduce.cu", "row_sum"), ("softmax.cu", "softmax_rows<64>"), ("layernorm.cu", "layernorm_rows"),
    ("stencil1d.cu", "stencil_1d"), ("stencil2d.cu", "stencil_2d"), ("matmul_tiled.cu", "matmul_tiled"),
    ("matmul_regblock.cu", "matmul_micro4x4"), ("transpose.cu", "transpose_shared"), ("histogram.cu", "histogram_shared"),
    ("pipeline.cu", "expand_chunk"), ("scan.cu", "scan_tiles"), ("runtime_trip.cu", "integrate_intervals"),
]


@pytest.mark.slow
@pytest.mark.parametrize("source,kernel", CORPUS, ids=[s for s, _ in CORPUS])
def test_each_corpus_programs_top_kernel_is_isolated_and_replays_bit_exact(source, kernel, tmp_path):
    out = tmp_path / "r"
    assert isolate(KERNELS / source, re.escape(kernel), out) == 0
    doc = read_manifest(out).doc
    assert doc["verified"]["ok"], doc["verified"]
    assert doc["kernel"]["name"] == kernel.split("<")[0]
    assert any(a["changed"] for a in doc["allocations"]), "the first dispatch writes fresh outputs"


def fake_reproducer(folder: Path) -> Path:
    """A folder that reads as a reproducer (its harness is never built here)."""
    (folder / "kernel").mkdir(parents=True)
    (folder / "kernel" / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    (folder / "harness.hip").write_text("")
    (folder / "replay_support.h").write_text("")
    (folder / "manifest.json").write_text(json.dumps({"format": "rocm-perf-reproducer", "version": 1,
                                                      "source": {"file": "kernel/k.cu", "rel": "k.cu"}}))
    return folder


def test_sweep_takes_reproducers_alone_in_folders_and_in_manifests(tmp_path):
    from rocm_perf.sweep.run_target import optimize_options
    from rocm_perf.sweep.targets import discover_targets, source_hash

    repro = fake_reproducer(tmp_path / "repros" / "stencil")
    (tmp_path / "repros" / "other.cu").write_text("__global__ void other() {}\n")
    manifest = tmp_path / "sweep.toml"
    manifest.write_text('[[target]]\nsource = "repros/stencil"\nreplay_passes = 4\n')
    alone, = discover_targets([repro])
    in_folder = discover_targets([tmp_path / "repros"])
    from_manifest, = discover_targets([manifest])
    assert (alone.name, alone.options) == ("stencil", {"reproducer": True})
    assert sorted((t.name, t.options.get("reproducer", False)) for t in in_folder) == [("other", False), ("stencil", True)]
    assert from_manifest.options == {"reproducer": True, "replay_passes": 4}
    opt = optimize_options(from_manifest, out=tmp_path / "runs", budget_s=60, backend="host", resume=None, max_trials=None)
    assert opt.replay and opt.replay_passes == 4 and opt.source == repro.resolve()
    import hashlib

    assert source_hash(repro) == hashlib.sha256((repro / "kernel" / "k.cu").read_bytes()).hexdigest()


def test_optimize_takes_a_reproducer_and_refuses_a_plain_folder(tmp_path, capsys):
    from rocm_perf.cli import build_parser
    from rocm_perf.optimize.options import options_from_args

    repro = fake_reproducer(tmp_path / "r")
    opt = options_from_args(build_parser().parse_args(["optimize", str(repro), "--replay-passes", "6"]))
    assert opt.replay and opt.replay_passes == 6
    assert "replay" in opt.recorded() and "replay" not in options_from_args(
        build_parser().parse_args(["optimize", str(POINTERS)])).recorded()  # old runs keep their fingerprints
    (tmp_path / "plain").mkdir()
    assert "not a reproducer" in one_line_error(["optimize", str(tmp_path / "plain")], capsys)
    assert "takes no program arguments" in one_line_error(["optimize", str(repro), "--", "x"], capsys)


def test_try_takes_a_patch_of_the_reproducers_kernel_file_or_of_the_original_and_refuses_others(tmp_path, capsys):
    from rocm_perf.cli import build_parser
    from rocm_perf.optimize.options import options_from_args
    from rocm_perf.optimize.try_command import load_candidates

    repro = fake_reproducer(tmp_path / "r")
    original = tmp_path / "app" / "k.cu"
    original.parent.mkdir()
    original.write_text("__global__ void k(float* x) { x[0] = 1; }\nint main() { return 0; }\n")
    doc = json.loads((repro / "manifest.json").read_text())
    (repro / "manifest.json").write_text(json.dumps({**doc, "origin": {"path": str(original)}}))
    diff = "--- a/{0}\n+++ b/{0}\n@@ -1 +1 @@\n-__global__ void k(float* x) {{ x[0] = 1; }}\n+__global__ void k(float* x) {{ x[0] = 2; }}\n"
    opt = options_from_args(build_parser().parse_args(["try", str(repro)]))
    assert opt.replay
    for name in ("kernel/k.cu", "app/k.cu", "k.cu"):  # the reproducer's file, the original from its parent, the name
        (record,) = load_candidates(opt, [("fix.diff", diff.format(name).encode())], [])
        assert record["file"] == "" and record["kind"] == "patch"
    with pytest.raises(RocmPerfError, match=r"a patch for another file \(other.cu\); the reproducer's kernel file is k.cu, "
                                            r"captured from .*app/k.cu"):
        load_candidates(opt, [("fix.diff", diff.format("other.cu").encode())], [])
    patch = tmp_path / "fix.diff"
    patch.write_text(diff.format("k.cu"))
    # a reproducer takes a tolerance: its harness gets it, checked as try's is
    opt = options_from_args(build_parser().parse_args(["try", str(repro), "--tolerance", "rtol=1e-5,atol=0"]))
    assert opt.replay and opt.tolerance == "rtol=1e-05,atol=0"
    assert replay_args(repro, 3, opt.tolerance, "float64")[4:] == ["--rtol", "1e-05", "--atol", "0.0", "--element", "float64"]
    assert "--tolerance 'rtol=x': 'x' is not a number" in one_line_error(
        ["try", str(repro), "--patch", str(patch), "--tolerance", "rtol=x"], capsys)
    assert "--tolerance-type goes with --tolerance" in one_line_error(
        ["isolate", str(POINTERS), "--kernel", "scale", "--tolerance-type", "float64", "--out", str(tmp_path / "n")], capsys)


@pytest.mark.slow
def test_try_on_a_reproducer_rejects_a_wrong_patch_by_the_replays_check_and_leaves_the_original(pointer_reproducer,
                                                                                                tmp_path, capsys):
    from rocm_perf.optimize.ledger import open_ledger

    r = read_manifest(pointer_reproducer)
    original = Path(r.origin["path"])
    before = original.read_bytes()
    text = r.kernel_file.read_text()
    line = next(i for i, l in enumerate(text.splitlines(), start=1) if "weight(int(i)) +" in l)
    old = text.splitlines()[line - 1]
    patch = tmp_path / "wrong.diff"  # against the original, as a user writes it: the kernel file has its lines
    patch.write_text(f"--- a/{original.name}\n+++ b/{original.name}\n@@ -{line} +{line} @@\n-{old}\n"
                     f"+{old.replace('weight(int(i)) +', 'weight(int(i) + 1) +')}\n")
    runs = tmp_path / "runs"
    assert main(["try", str(pointer_reproducer), "--patch", str(patch), "--backend", "host", "--out", str(runs),
                 "--new", "--compile-check", "off", "--aa-rounds", "4", "--rounds", "3"]) == 0
    out = capsys.readouterr().out
    assert "patch wrong.diff: rejected: wrong output" in out, out
    assert re.search(r"allocation 1 at 0x200000000000 \(12000 bytes\) differs from the captured after-state", out), out
    assert "measured on the replay: dispatch 2 of scale_views" in out
    (run_dir,) = [p for p in runs.iterdir() if (p / "ledger.db").exists()]
    ledger = open_ledger(run_dir)
    try:
        assert ledger.get("replay")["passes"] == 10 and ledger.get("whole_program")["verdict"] == "nothing accepted"
    finally:
        ledger.close()
    assert original.read_bytes() == before


ROW_FLOAT_SUM = DATA / "programs" / "row_float_sum.cu"
ONE_SUM = b"""    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
        acc += values[c];
    }
    sums[row] = acc;"""
FOUR_SUMS = b"""    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int c = 0;
    for (; c + 3 < cols; c += 4) {
        a0 += values[c];
        a1 += values[c + 1];
        a2 += values[c + 2];
        a3 += values[c + 3];
    }
    for (; c < cols; ++c) a0 += values[c];
    sums[row] = (a0 + a1) + (a2 + a3);"""


@pytest.mark.slow
@pytest.mark.long
def test_a_reproducers_float_change_is_caught_bit_for_bit_and_accepted_within_a_tolerance(tmp_path, capsys):
    """Four partial sums in place of one reorder the additions: the replay's memory differs from the
    capture in its last bits. Bit for bit the harness stops at the first such element; under
    --tolerance it lets them through, says the worst error, and the whole program is compared within
    the same tolerance (its standard output prints the float total)."""
    from rocm_perf.optimize.artifacts import unified_diff

    app = tmp_path / "app"
    app.mkdir()
    original = app / ROW_FLOAT_SUM.name
    shutil.copy(ROW_FLOAT_SUM, original)
    before = original.read_bytes()
    assert ONE_SUM in before
    repro = tmp_path / "r"
    assert run_isolate(IsolateRequest(source=original, kernel="row_sum", out=repro, tolerance="rtol=1e-3,atol=1e-3"),
                       backend="host") == 0
    assert read_manifest(repro).doc["verified"]["tolerance"] == "rtol=0.001,atol=0.001 as float32"
    # the patch of the reproducer's kernel file (the original's host code is blank lines there)
    r = read_manifest(repro)
    kernel_text = r.kernel_file.read_bytes()
    patch = tmp_path / "four_sums.diff"
    patch.write_text(unified_diff(kernel_text.decode(), kernel_text.replace(ONE_SUM, FOUR_SUMS).decode(), original.name))
    # the harness alone: bit for bit it names the element; within the tolerance it passes
    (repro_kernel := tmp_path / "four" / "row_float_sum.cu").parent.mkdir()
    repro_kernel.write_bytes(kernel_text.replace(ONE_SUM, FOUR_SUMS))
    program = build_replay(HostBackend(), r, tmp_path / "build", kernel_file=repro_kernel)
    exact = run([program.executable, *replay_args(repro, 2)], timeout=300)
    assert exact.returncode == 1 and "differs from the captured after-state at byte" in exact.stderr, exact.stderr
    within = run([program.executable, *replay_args(repro, 2, "rtol=1e-3,atol=1e-3")], timeout=300)
    assert within.returncode == 0, within.stderr
    assert "within rtol=0.001,atol=0.001 as float32: PASS" in within.stdout
    worst = re.search(r"worst relative error (\S+), worst absolute error (\S+)", within.stderr)
    assert worst and 0 < float(worst.group(2)) <= 1e-3, within.stderr
    tight = run([program.executable, *replay_args(repro, 2, "rtol=1e-12")], timeout=300)
    assert tight.returncode == 1 and re.search(r"differs from the captured after-state at float32 element \d+ \(.*beyond "
                                               r"rtol=1e-12,atol=0\)", tight.stderr), tight.stderr
    # try on the reproducer, as a user runs it
    fast = ["--backend", "host", "--compile-check", "off", "--aa-rounds", "6", "--max-rounds", "30", "--quiet", "--new"]
    assert main(["try", str(repro), "--patch", str(patch), "--out", str(tmp_path / "exact"), *fast]) == 0
    s = json.loads((only_run_dir(tmp_path / "exact") / "summary.json").read_text())
    [t] = s["rejected"]
    assert t["reason"] == "wrong output" and "differs from the captured after-state" in t["detail"], t
    capsys.readouterr()
    assert main(["try", str(repro), "--patch", str(patch), "--tolerance", "rtol=1e-3,atol=1e-3",
                 "--out", str(tmp_path / "within"), *fast]) == 0
    run_dir = only_run_dir(tmp_path / "within")
    s = json.loads((run_dir / "summary.json").read_text())
    [t] = s["accepted"]
    outputs = t["evidence"]["confirm"]["outputs"]
    assert outputs["criterion"] == "rtol=0.001,atol=0.001" and 0 < outputs["worst_abs"] <= 1e-3, outputs
    from rocm_perf.optimize.ledger import open_ledger

    ledger = open_ledger(run_dir)
    try:
        whole = ledger.get("whole_program")
    finally:
        ledger.close()
    # the whole program is judged within the tolerance too: never "outputs differ" on its float total
    assert whole["verdict"] in ("confirmed", "not confirmed"), whole
    assert "outputs within rtol=0.001,atol=0.001" in whole["detail"], whole
    assert original.read_bytes() == before


def only_run_dir(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if (p / "ledger.db").exists()]
    return run_dir


@pytest.mark.slow
def test_a_projects_kernel_is_isolated_with_the_headers_it_includes(tmp_path):
    project = DATA / "projects" / "make_app"
    out = tmp_path / "r"
    assert run_isolate(IsolateRequest(source=None, project=project, build="make", run="./app", kernel="row_xor_sum",
                                      out=out), backend="host") == 0
    r = read_manifest(out)
    assert r.verified and r.kernel_rel == "src/xor_rows.cu" and r.origin["kind"] == "project"
    assert (r.origin["build"], r.origin["run"]) == ("make", "./app")
    assert (out / "kernel" / "include" / "rows.hpp").read_bytes() == (project / "include" / "rows.hpp").read_bytes()
    assert r.doc["source"]["include_dirs"] == ["src", ".", "include"]
    assert not list(project.glob("build")) and not (project / "app").exists()  # the user's tree is only read


def test_a_replay_that_differs_from_its_capture_is_a_wrong_output_not_a_crash():
    from rocm_perf.optimize.measure import RoundResult
    from rocm_perf.optimize.runners.replay import classified

    line = ("replay: pass 1: allocation 1 at 0x200000000000 (12000 bytes) differs from the captured after-state at "
            "byte 4 (0x00, captured 0x41)")
    wrong = classified(RoundResult(False, "crash", outputs={"returncode": 1, "stderr_tail": f"noise\n{line}"}))
    assert wrong.outputs["wrong_output"] == line
    crashed = classified(RoundResult(False, "crash", outputs={"returncode": -11, "stderr_tail": "Segmentation fault"}))
    assert "wrong_output" not in crashed.outputs


@pytest.mark.slow
def test_a_template_kernel_launched_with_deduced_arguments_replays_with_the_launchs_types(tmp_path):
    out = tmp_path / "r"
    assert isolate(DATA / "isolate" / "deduced.cu", "axpy", out, dispatch=2) == 0
    doc = read_manifest(out).doc
    assert doc["verified"]["ok"] and doc["kernel"]["naming"] == "source" and doc["kernel"]["arguments_as"] == "types"
    assert [a["type"] for a in doc["arguments"]] == ["double", "double const*", "double*", "int"]
    assert "values_of<double, double const*, double*, int>" in (out / "harness.hip").read_text()
