"""The host runtime's per-dispatch clocks (dispatch_clocks.h): CPU time of the block workers,
user-space instructions and cycles, pinning; how they travel (raw log -> Trace.counters -> rocpd
pmc tables -> Trace.counters) and that `analyze` does not take them for GPU counters. Real
programs built with g++ against the runtime."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA
from host_programs import built  # noqa: F401  (the shared build fixture)
from rocm_perf.backends.host import HostBackend
from rocm_perf.backends.host_clocks import clock_availability, perf_counters_status, pinning_status
from rocm_perf.backends.host_trace import read_host_log
from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.measure import ProfiledRounds, metric_value
from rocm_perf.trace.host_clocks import HOST_CPU_TIME_NS, HOST_CYCLES, HOST_INSTRUCTIONS, HOST_PROBE_NS
from rocm_perf.trace.load import load_trace

pytestmark = pytest.mark.slow
needs_perf = pytest.mark.skipif(bool(perf_counters_status()), reason=f"no perf counters here: {perf_counters_status()}")


def profile(executable: Path, out: Path, *args: str, env: dict | None = None, **backend_options):
    result = HostBackend(**backend_options).profile([str(executable), *args], out, timeout=120, env=env)
    assert result.returncode == 0 and not result.timed_out, result.stdout + result.stderr
    return result, load_trace(result.databases[0])


def clocks_of(trace) -> dict:
    return trace.agents[0].extra["clocks"]


def one_round(backend: HostBackend, executable: Path, out: Path, *args: str, keep: bool = False):
    """One measured round of the loop (ProfiledRounds) on the real backend; `keep` keeps its profile."""
    rounds = ProfiledRounds(backend, program_args=list(args), run_template=None, timeout_s=60, cwd=out,
                            timing_lines="(?!)", warmup=0, **({"keep_profiles": lambda key: True} if keep else {}))
    r = rounds(executable, out / "round", "1-screen-0-B")
    assert r.ok and metric_value(r, "cpu-path") > 0
    return r


def test_every_dispatch_carries_the_cpu_time_of_its_block_workers(built, tmp_path):
    result, trace = profile(built("dispatch_clocks"), tmp_path)
    cpu = trace.counters[HOST_CPU_TIME_NS]
    wall = (trace.end - trace.start).astype(float)
    assert len(cpu) == len(trace) == 3 and (cpu > 0).all()
    # One block worker: its CPU time is taken inside the dispatch's wall-clock window.
    assert (cpu <= wall).all(), (cpu, wall)
    assert clocks_of(trace)["cpu_time"].startswith("CLOCK_THREAD_CPUTIME_ID")


@needs_perf
def test_instructions_and_cycles_follow_the_work_and_sum_over_block_workers(built, tmp_path):
    _, one = profile(built("dispatch_clocks"), tmp_path / "one", "40000")
    instructions = one.counters[HOST_INSTRUCTIONS]
    cycles = one.counters[HOST_CYCLES]
    # The second dispatch runs the same loop twice as many times.
    assert instructions[1] / instructions[0] == pytest.approx(2.0, rel=0.02)
    assert cycles[1] / cycles[0] == pytest.approx(2.0, rel=0.3)
    assert (cycles > 0).all() and "instructions, cycles" in clocks_of(one)["perf"]
    # Three block workers share each launch: their counts add up to the one worker's.
    _, three = profile(built("dispatch_clocks"), tmp_path / "three", "40000", threads=3)
    assert three.counters[HOST_INSTRUCTIONS][:2] == pytest.approx(instructions[:2], rel=0.02)


def test_without_perf_counters_only_cpu_time_is_recorded_and_a_metric_needing_them_says_so(built, tmp_path):
    result, trace = profile(built("dispatch_clocks"), tmp_path, env={"ROCM_PERF_HOST_PERF": "0"})
    assert set(trace.counters) == {HOST_CPU_TIME_NS, HOST_PROBE_NS}
    assert clocks_of(trace)["perf"] == "off (ROCM_PERF_HOST_PERF=0)"
    r = one_round(_NoPerf(), built("dispatch_clocks"), tmp_path)
    with pytest.raises(RocmPerfError, match="--metric instructions: a round has no instructions value .*no HOST_INSTRUCTIONS"):
        metric_value(r, "instructions")


def test_every_dispatch_carries_the_speed_probe_timed_before_it_and_probed_path_divides_by_it(built, tmp_path):
    # trip 100: both hash_chain launches start within the probe's 50 ms spacing, so they share a reading.
    _, trace = profile(built("dispatch_clocks"), tmp_path / "trace", "100")
    cpu, probe = trace.counters[HOST_CPU_TIME_NS], trace.counters[HOST_PROBE_NS]
    assert (probe > 0).all() and probe[0] == probe[1], probe
    assert clocks_of(trace)["probe"].startswith("9-point stencil over 32 KiB")
    # The probe runs before the launch's start, outside its wall-clock window and its CPU time.
    assert (cpu <= (trace.end - trace.start)).all()
    r = one_round(HostBackend(), built("dispatch_clocks"), tmp_path, "100", keep=True)
    # One stream: the path holds every dispatch, each weighted by its CPU time per 1 ms of probe.
    one = load_trace(next((tmp_path / "round").rglob("*.db")))
    expected = float((one.counters[HOST_CPU_TIME_NS] / one.counters[HOST_PROBE_NS]).sum() * 1e6)
    assert metric_value(r, "probed-path") == pytest.approx(expected, rel=1e-5)  # the path sums whole ns
    assert metric_value(r, "cpu-path") == pytest.approx(float(one.counters[HOST_CPU_TIME_NS].sum()), rel=1e-5)


def test_a_probe_taken_beside_another_launch_is_dropped_and_the_probed_path_says_why(built, tmp_path):
    # pipeline.cu's three streams slowed the probe of the original by up to 2x more than a
    # candidate's: a reading beside another launch measures that launch, not the core.
    _, trace = profile(built("probe_overlap"), tmp_path / "trace")
    names = [trace.symbols[k].display_name.split("(")[0] for k in trace.kernel]
    probe = dict(zip(names, trace.counters[HOST_PROBE_NS]))
    assert probe["hold"] > 0 and np.isnan(probe["short_work"]), probe
    assert "none beside another launch" in clocks_of(trace)["probe"]
    r = one_round(HostBackend(), built("probe_overlap"), tmp_path)
    with pytest.raises(RocmPerfError, match="no probed-path value .1 dispatch.es. without HOST_PROBE_NS"):
        metric_value(r, "probed-path")


PROBE_SYMBOL = "_ZN14rocm_perf_host16time_speed_probeEv"  # rocm_perf_host::time_speed_probe()


def probe_code(executable: Path) -> tuple[int, list[tuple[int, str]]]:
    """(address, [(offset, mnemonic), ...]) of the speed probe's one copy in a build (objdump)."""
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={PROBE_SYMBOL}", str(executable)],
                             capture_output=True, text=True, check=True).stdout
    start = re.search(rf"^([0-9a-f]+) <{PROBE_SYMBOL}>:$", listing, re.M)
    assert start, f"{executable.name}: no out-of-line {PROBE_SYMBOL} (inlined into the launchers?)"
    address = int(start.group(1), 16)
    code = [(int(m.group(1), 16) - address, m.group(2))
            for m in re.finditer(r"^\s+([0-9a-f]+):\s+(\S+)", listing[start.end():], re.M)]
    return address, code


def test_the_speed_probe_is_the_same_machine_code_at_the_same_alignment_in_every_build(built):
    # Inlined into each kernel's launcher, the probe's loop moved with the kernels' code: in two
    # builds of transpose.cu (its original and an unrolled candidate) it read 35-56 % slower in the
    # candidate's, which probed-path took for a gain of 32-40 % where CPU time saw 7-13 %.
    builds = [built("dispatch_clocks"), built("probe_overlap")]
    (a, code_a), (b, code_b) = (probe_code(e) for e in builds)
    assert a != b, "the two programs should place their code differently, or this test shows nothing"
    assert a % 64 == 0 and b % 64 == 0, (hex(a), hex(b))
    assert len(code_a) > 20 and code_a == code_b  # every instruction at the same offset: the same code


def test_without_the_probe_there_is_no_probed_path_and_the_metric_says_why(built, tmp_path):
    _, trace = profile(built("dispatch_clocks"), tmp_path / "trace", env={"ROCM_PERF_HOST_PROBE": "0"})
    assert HOST_PROBE_NS not in trace.counters and HOST_CPU_TIME_NS in trace.counters
    assert clocks_of(trace)["probe"] == "off (ROCM_PERF_HOST_PROBE=0)"
    r = one_round(_NoProbe(), built("dispatch_clocks"), tmp_path)
    with pytest.raises(RocmPerfError, match="--metric probed-path: a round has no probed-path value .*no HOST_PROBE_NS"):
        metric_value(r, "probed-path")


class _NoProbe(HostBackend):
    """The real host backend with the speed probe switched off in the runtime (ROCM_PERF_HOST_PROBE=0)."""

    def environment(self, log_path, samples_path=None, copies_path=None):
        return {**super().environment(log_path, samples_path, copies_path), "ROCM_PERF_HOST_PROBE": "0"}


class _NoPerf(HostBackend):
    """The real host backend with perf counters switched off in the runtime (ROCM_PERF_HOST_PERF=0)."""

    def environment(self, log_path, samples_path=None, copies_path=None):
        return {**super().environment(log_path, samples_path, copies_path), "ROCM_PERF_HOST_PERF": "0"}


@pytest.mark.skipif(bool(pinning_status()), reason=f"pinning refused here: {pinning_status()}")
def test_pinned_block_workers_stay_on_one_cpu_each(built, tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    result, trace = profile(built("dispatch_clocks"), tmp_path / "one", pin=True)
    assert result.stdout.strip() == f"cpus: {allowed[-1]}"  # the highest CPU first
    assert clocks_of(trace)["pinning"] == f"cpu {allowed[-1]}"
    if len(allowed) >= 2:
        result, trace = profile(built("dispatch_clocks"), tmp_path / "two", pin=True, threads=2)
        seen = {int(c) for c in result.stdout.split(":")[1].split()}
        assert seen <= {allowed[-1], allowed[-2]}
        assert set(clocks_of(trace)["pinning"].split("; ")) == {f"cpu {allowed[-1]}", f"cpu {allowed[-2]}"}
    _, unpinned = profile(built("dispatch_clocks"), tmp_path / "off", pin=False)
    assert clocks_of(unpinned)["pinning"] == "off"


def test_clocks_travel_as_cpu_agent_counters_in_rocpd_and_analyze_refuses_them(built, tmp_path, capsys):
    result, trace = profile(built("dispatch_clocks"), tmp_path)
    raw = read_host_log(next(tmp_path.glob("host_trace_*.jsonl")))
    for name, column in raw.counters.items():  # the database holds what the raw log said
        assert np.array_equal(trace.counters[name], column)
    con = sqlite3.connect(str(result.databases[0]))
    rows = con.execute("SELECT I.name, I.target_arch, I.description, A.type FROM rocpd_info_pmc I "
                       "JOIN rocpd_info_agent A ON A.id = I.agent_id").fetchall()
    con.close()
    assert {r[0] for r in rows} == set(trace.counters) and all(r[1] == "CPU" == r[3] and r[2] for r in rows)
    assert main(["analyze", str(result.databases[0])]) == 2
    err = capsys.readouterr().err
    assert "ran on a CPU agent" in err and "no GPU hardware counters" in err and len(err.strip().splitlines()) == 1


def test_a_log_from_before_the_clocks_reads_with_no_counters():
    trace = read_host_log(DATA / "host" / "streams_events.host_log.jsonl")
    assert trace.counters == {} and "clocks" not in trace.agents[0].extra


def test_availability_matches_what_the_runtime_records(built, tmp_path):
    _, trace = profile(built("dispatch_clocks"), tmp_path)
    available = clock_availability()
    assert available[HOST_CPU_TIME_NS] == ""
    assert (HOST_INSTRUCTIONS in trace.counters) == (available[HOST_INSTRUCTIONS] == "")

