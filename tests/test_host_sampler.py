"""The host backend's sampling profiler: real builds, real runs, real symbolizers.

tests/data/host/sampler_two_loops.cu has one cheap loop (8 steps) and one expensive loop (600
steps of a division in an inlined helper): the expensive loop must hold most samples, through
the helper's inlining chain.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rocm_perf.backends.host import HostBackend
from rocm_perf.backends.host_sampler import read_raw_samples, symbolize_samples
from conftest import IN_CI
from rocm_perf.backends.symbolizer import _parse_addr2line, versioned_programs, find_symbolizer
from rocm_perf.cli import main
from rocm_perf.source.profile_sources import source_hotspots
from rocm_perf.trace.host_samples_read import host_sample_files
from rocm_perf.trace.instruction_load import load_instruction_profile

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parent / "data" / "host"
PROGRAM = DATA / "sampler_two_loops.cu"
EXPENSIVE = "two_loops:two_loops:2:19"
CHEAP = "two_loops:two_loops:1:15"


@pytest.fixture(scope="module")
def sampled_round(tmp_path_factory) -> tuple[Path, Path]:
    """One sampled run of the two-loop program: (its round directory, its executable)."""
    root = tmp_path_factory.mktemp("sampler")
    backend = HostBackend(threads=1, sample=True)
    program = backend.build(PROGRAM, root / "build")
    result = backend.profile([str(program.executable)], root / "round")
    assert result.returncode == 0, result.stderr
    assert "PASSED" in result.stdout
    return root / "round", program.executable


def test_the_expensive_loop_holds_most_samples(sampled_round):
    round_dir, _ = sampled_round
    (samples,) = host_sample_files(round_dir)
    profile = load_instruction_profile(round_dir)
    assert profile.evidence == "host-sampler"
    assert profile.weight.sum() >= 100  # about 1000 per second of kernel time
    result = source_hotspots(profile, source=PROGRAM).result
    (kernel,) = result.kernels
    loops = {l.id: l for l in kernel.loops}
    assert set(loops) == {CHEAP, EXPENSIVE}
    assert loops[EXPENSIVE].share > 0.8
    assert loops[CHEAP].share < 0.1
    # The helper's line (8) is inlined into the expensive loop: its samples count for that loop.
    line8 = next(l for l in kernel.lines if l.line == 8)
    assert line8.samples > 0.5 * kernel.heat.samples and line8.loop is None
    assert loops[EXPENSIVE].samples >= line8.samples


def test_raw_samples_carry_load_addresses(sampled_round):
    round_dir, executable = sampled_round
    (raw,) = sorted(round_dir.glob("host_samples_raw_*.jsonl"))
    data = read_raw_samples(raw)
    assert data["meta"]["hz"] == 1000 and data["meta"]["dropped"] == 0
    main_object = next(o for o in data["objects"] if Path(o["path"]).resolve() == executable.resolve())
    assert main_object["base"] > 0  # a PIE: addresses in the file are PC - base
    assert sum(c for _, _, c, _ in data["pcs"]) == data["meta"]["samples"]
    assert data["kernels"][0][0] == "_Z9two_loopsPKfPfiii"


def test_addr2line_gives_the_same_lines_as_llvm_symbolizer(sampled_round, tmp_path, monkeypatch):
    llvm = shutil.which("llvm-symbolizer") or next(iter(versioned_programs("llvm-symbolizer")), None)
    if llvm is None or shutil.which("addr2line") is None:
        # CI installs hipcc, whose llvm brings llvm-symbolizer; binutils comes with g++.
        if IN_CI:
            pytest.fail("CI must have both llvm-symbolizer (llvm, via hipcc) and addr2line (binutils)")
        pytest.skip("needs both llvm-symbolizer and addr2line")
    round_dir, executable = sampled_round
    (raw,) = sorted(round_dir.glob("host_samples_raw_*.jsonl"))
    from rocm_perf.backends.host import prepass_aliases

    by_tool = {}
    for tool, path in (("llvm-symbolizer", llvm), ("addr2line", "addr2line")):
        monkeypatch.setenv("ROCM_PERF_SYMBOLIZER", path)
        out = symbolize_samples(raw, tmp_path / f"{tool}.json", executable=executable, aliases=prepass_aliases(executable))
        rows = json.loads(out.read_text())["rows"]
        assert json.loads(out.read_text())["symbolizer"] == tool
        lines: dict[tuple, int] = {}
        for r in rows:
            lines[(Path(r["file"]).name, r["line"])] = lines.get((Path(r["file"]).name, r["line"]), 0) + r["samples"]
        by_tool[tool] = lines
    assert by_tool["addr2line"] == by_tool["llvm-symbolizer"]
    assert max(by_tool["addr2line"], key=by_tool["addr2line"].get)[0] == "sampler_two_loops.cu"


def test_addr2line_output_with_inlining_is_parsed():
    # The layout `addr2line -a -f -i -C` prints: the address, then function and place per frame.
    text = ("0x0000000000006f41\nstep(float)\n/src/a.cu:8\ntwo_loops(float const*)\n/src/a.cu:20 (discriminator 3)\n"
            "0x0000000000006f50\n??\n??:0\n")
    frames = _parse_addr2line(text)
    assert [(f.function, f.file, f.line) for f in frames[0x6F41]] == [("step(float)", "/src/a.cu", 8),
                                                                    ("two_loops(float const*)", "/src/a.cu", 20)]
    assert [(f.file, f.line) for f in frames[0x6F50]] == [("", 0)]


def test_unsampled_runs_write_no_samples(tmp_path):
    backend = HostBackend(threads=1, sample=False)
    program = HostBackend(threads=1, sample=True).build(PROGRAM, tmp_path / "build")
    result = backend.profile([str(program.executable)], tmp_path / "round")
    assert result.returncode == 0
    assert not list((tmp_path / "round").glob("host_samples*"))


def test_profile_sample_prints_hot_loops(tmp_path, capsys):
    assert main(["profile", str(PROGRAM), "--backend", "host", "--sample", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "hot loops" in out and EXPENSIVE in out
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    report = json.loads((run_dir / "hotspots.json").read_text())
    loops = {l["id"]: l for l in report["kernels"][0]["loops"]}
    assert loops[EXPENSIVE]["share"] > 0.8
    assert main(["hotspots", str(run_dir), "--json"]) == 0  # the run directory is a profile for hotspots
    again = json.loads(capsys.readouterr().out)
    assert again["kernels"][0]["samples"] == report["kernels"][0]["samples"]


def test_sampling_runs_kernels_with_barriers(tmp_path):
    """Fibers switch stacks at every __syncthreads(): samples land on them too, and nothing breaks."""
    backend = HostBackend(threads=2, sample=True, sample_hz=5000)
    program = backend.build(DATA / "barriers.cu", tmp_path / "build")
    result = backend.profile([str(program.executable)], tmp_path / "round")
    assert result.returncode == 0, result.stderr
    (samples,) = host_sample_files(tmp_path / "round")
    assert json.loads(samples.read_text())["dropped"] == 0


def test_doctor_names_the_symbolizer(capsys):
    found = find_symbolizer()
    assert main(["doctor", "--json"]) in (0, 1)
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["symbolizer"]["ok"] is (found is not None)
    if found:
        assert found[0] in checks["symbolizer"]["detail"]


def test_sample_option_belongs_to_the_host_backend(capsys):
    assert main(["profile", str(PROGRAM), "--backend", "rocm", "--sample"]) == 2
    err = capsys.readouterr().err
    assert "--sample is the host backend's sampler" in err and len(err.strip().splitlines()) == 1
    assert main(["profile", str(PROGRAM), "--backend", "host", "--pc-sampling"]) == 2
    assert "--pc-sampling needs the rocm backend" in capsys.readouterr().err


def test_time_in_a_library_call_counts_for_the_calling_line(tmp_path):
    """expf runs in libm: its samples are counted at the call (line 12) and in the loop around it."""
    backend = HostBackend(threads=1, sample=True)
    program = backend.build(DATA / "sampler_library_call.cu", tmp_path / "build")
    result = backend.profile([str(program.executable)], tmp_path / "round")
    assert result.returncode == 0, result.stderr
    (raw,) = sorted((tmp_path / "round").glob("host_samples_raw_*.jsonl"))
    via_call = sum(c for _, _, c, via in read_raw_samples(raw)["pcs"] if via)
    assert via_call > 0
    (symbolized,) = host_sample_files(tmp_path / "round")
    rows = json.loads(symbolized.read_text())["rows"]
    called = [r for r in rows if r["library_call"]]
    # Calls the runtime makes around a launch (its clocks) may be sampled too, under their own file:
    # in the program's source, every library-call sample is expf's, and expf's time dominates.
    in_source = [r for r in called if r["file"].endswith("sampler_library_call.cu")]
    assert {r["line"] for r in in_source} == {12}
    assert sum(r["samples"] for r in called) == via_call
    assert sum(r["samples"] for r in in_source) >= 0.9 * via_call
    result = source_hotspots(load_instruction_profile(tmp_path / "round"), source=DATA / "sampler_library_call.cu").result
    (loop,) = result.kernels[0].loops
    assert loop.id == "soft_sum:soft_sum:1:11" and loop.share > 0.8
