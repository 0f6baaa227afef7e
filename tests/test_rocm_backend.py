"""The rocm backend against TEST DOUBLES of rocprofv3 and rocminfo (tests/doubles/; no AMD GPU here).

The doubles check the argv they get against the documented command line and write their output
where the real tools would (`<dir>/<hostname>/<pid>_results.db`); builds use the real hipcc.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, ROOT
from rocm_perf.backends.counters import BLOCK_LIMITS, collect_counters, counter_block, plan_passes
from rocm_perf.backends.rocm import RocmBackend
from rocm_perf.backends.rocprofv3 import died_on_signal
from rocm_perf.backends.select import select_backend
from rocm_perf.errors import RocmPerfError

DOUBLES = ROOT / "tests" / "doubles"


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """A bin dir first on PATH with `rocprofv3` and `rocminfo` pointing at the doubles; returns a
    function setting the double's mode, and the argv log path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rocprofv3").symlink_to(DOUBLES / "fake_rocprofv3")
    (bin_dir / "rocminfo").symlink_to(DOUBLES / "fake_rocminfo")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("ROCM_PATH", raising=False)
    argv_log = tmp_path / "rocprofv3-argv.jsonl"
    monkeypatch.setenv("FAKE_ROCPROFV3_ARGV_LOG", str(argv_log))
    monkeypatch.setenv("FAKE_ROCPROFV3_STATE", str(tmp_path / "rocprofv3-invocations"))

    def mode(value: str) -> None:
        monkeypatch.setenv("FAKE_ROCPROFV3_MODE", value)

    mode.argv_log = argv_log
    mode.bin_dir = bin_dir
    return mode


def marker_program(tmp_path: Path, exit_code: int = 0) -> list[str]:
    """A real program: appends its pid to ran.txt, so a test can see it ran (and how often)."""
    marker = tmp_path / "ran.txt"
    return [sys.executable, "-c", f"import os,sys; open({str(marker)!r},'a').write(f'{{os.getpid()}}\\n'); sys.exit({exit_code})"]


def recorded_argvs(fake) -> list[list[str]]:
    return [json.loads(line) for line in fake.argv_log.read_text().splitlines()]


def test_available_with_rocprofv3_and_a_gpu_agent(fake_tools):
    backend = RocmBackend()
    ok, why = backend.available()
    assert ok, why
    assert backend.describe() == "AMD Instinct MI300X (gfx942) x2"
    assert backend.target_arch() == "gfx942"
    assert RocmBackend(arch="gfx90a").target_arch() == "gfx90a"


def test_not_available_says_what_is_missing(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rocminfo").symlink_to(DOUBLES / "fake_rocminfo")
    (bin_dir / "python3").symlink_to(sys.executable)  # the doubles' interpreter; nothing else on PATH
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.setenv("FAKE_ROCMINFO_MODE", "none")
    ok, why = RocmBackend().available()
    assert not ok
    assert "rocprofv3 not found" in why
    assert "no AMD GPU agent" in why and "ROCk module is NOT loaded" in why
    with pytest.raises(RocmPerfError, match="rocm backend cannot run here: rocprofv3 not found"):
        select_backend("rocm")


def test_auto_selection_picks_rocm_when_it_can_run(fake_tools):
    assert select_backend("auto").name == "rocm"


def test_profile_writes_hostname_pid_layout_and_follows_the_contract(fake_tools, tmp_path):
    fake_tools("ok")
    program = marker_program(tmp_path)
    result = RocmBackend().profile(program + ["--size", "16"], tmp_path / "out", timeout=60)
    pids = (tmp_path / "ran.txt").read_text().split()
    assert len(pids) == 1, "the program runs exactly once"
    (db,) = result.databases
    assert db.name == f"{pids[0]}_results.db"
    assert db.parent.name == socket.gethostname()
    assert db.read_bytes() == (DATA / "rocpd_v3_multistream.db").read_bytes()
    assert result.returncode == 0 and not result.timed_out
    (argv,) = recorded_argvs(fake_tools)
    split = argv.index("--")
    options, app = argv[:split], argv[split + 1 :]
    assert app == program + ["--size", "16"]
    assert options[:4] == ["--kernel-trace", "--hip-runtime-trace", "--output-format", "rocpd"]
    assert options[options.index("-o") + 1] == "%hostname%/%pid%"
    assert Path(options[options.index("-d") + 1]).is_relative_to(tmp_path / "out")


def test_profiled_database_loads_as_a_trace(fake_tools, tmp_path):
    from rocm_perf.trace.load import load_trace

    result = RocmBackend().profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    trace = load_trace(result.databases[0])
    assert len(trace) > 0 and trace.metadata["format"] == "rocpd-v3"


def test_several_processes_give_several_databases(fake_tools, tmp_path):
    fake_tools("processes:3")
    result = RocmBackend().profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    pids = sorted((tmp_path / "ran.txt").read_text().split())
    assert len(pids) == 3
    assert sorted(db.name for db in result.databases) == sorted(f"{pid}_results.db" for pid in pids)
    assert {db.parent.name for db in result.databases} == {socket.gethostname()}


def test_crash_is_retried_and_each_retry_logged(fake_tools, tmp_path):
    fake_tools("crash-first:2")
    result = RocmBackend(attempts=3, retry_wait_s=0.01).profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    assert len(result.databases) == 1
    assert "attempt-3" in str(result.databases[0])
    assert len(recorded_argvs(fake_tools)) == 3
    retries = [l for l in result.log.read_text().splitlines() if l.startswith("# retry")]
    assert len(retries) == 2
    assert all("SIGSEGV" in l for l in retries)
    assert retries[0].startswith("# retry 2/3") and retries[1].startswith("# retry 3/3")


def test_retries_are_bounded(fake_tools, tmp_path):
    fake_tools("crash-first:10")
    with pytest.raises(RocmPerfError, match=r"failed 3 times .*SIGSEGV"):
        RocmBackend(attempts=3, retry_wait_s=0.01).profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    assert len(recorded_argvs(fake_tools)) == 3


@pytest.mark.parametrize("mode", ["busy-first:1", "no-output-first:1"])
def test_busy_device_and_missing_output_are_retried(fake_tools, tmp_path, mode):
    fake_tools(mode)
    result = RocmBackend(attempts=2, retry_wait_s=0.01).profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    assert len(result.databases) == 1
    assert len(recorded_argvs(fake_tools)) == 2


def test_timeout_returns_timed_out_and_is_not_retried(fake_tools, tmp_path):
    fake_tools("hang")
    result = RocmBackend(attempts=3, retry_wait_s=0.01).profile(marker_program(tmp_path), tmp_path / "out", timeout=1)
    assert result.timed_out and result.databases == []
    assert len(recorded_argvs(fake_tools)) == 1
    assert "(timeout)" in result.log.read_text()


def test_counter_collection_timeout_is_an_error(fake_tools, tmp_path):
    fake_tools("hang")
    with pytest.raises(RocmPerfError, match="counter collection timed out after 1 s"):
        collect_counters(marker_program(tmp_path), ["SQ_WAVES"], tmp_path / "out", timeout=1)


def test_failure_without_database_shows_rocprofv3_last_lines(fake_tools, tmp_path):
    fake_tools("fail")
    with pytest.raises(RocmPerfError) as info:
        RocmBackend(retry_wait_s=0.01).profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    message = str(info.value)
    assert "exited with status 1 and wrote no database" in message
    assert "HSA_STATUS_ERROR_OUT_OF_RESOURCES" in message and "failed to initialize" in message
    assert len(recorded_argvs(fake_tools)) == 1  # a plain failure is not transient


def test_failing_program_with_a_database_returns_its_exit_code(fake_tools, tmp_path):
    result = RocmBackend().profile(marker_program(tmp_path, exit_code=3), tmp_path / "out", timeout=60)
    assert result.returncode == 3 and len(result.databases) == 1


def test_signal_exit_codes():
    assert died_on_signal(-11) == 11
    assert died_on_signal(139) == 11
    assert died_on_signal(1) is None and died_on_signal(0) is None


def test_the_double_rejects_argv_outside_the_contract(fake_tools, tmp_path):
    fake = str(DOUBLES / "fake_rocprofv3")
    cases = [
        [fake, "--kernel-trace", "-d", str(tmp_path), "true"],  # no `--`
        [fake, "--kernel-trace", "--"],  # no application
        [fake, "--kernel-tracing", "--", "true"],  # unknown option
        [fake, "--kernel-trace", "--output-format", "sqlite", "--", "true"],  # unknown format
        [fake, "--kernel-trace", "-d", "--", "true"],  # option without its value
    ]
    for argv in cases:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2, argv
        assert "contract violation" in done.stderr


# ---- counters ---------------------------------------------------------------------------------

SQ = [f"SQ_INSTS_VALU_{k}_F{b}" for k in ("ADD", "MUL", "FMA", "TRANS") for b in (16, 32, 64)][:10]
TCC = ["TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum", "TCC_EA0_RDREQ_32B_sum"]
GRBM = ["GRBM_COUNT", "GRBM_GUI_ACTIVE", "GRBM_SPI_BUSY"]


def test_passes_respect_every_block_limit():
    counters = SQ + TCC + GRBM + ["SQ_INSTS_VALU_ADD_F16"]  # one duplicate
    passes = plan_passes(counters)
    flat = [c for p in passes for c in p]
    assert sorted(flat) == sorted(set(counters)) and len(flat) == len(set(flat))
    for p in passes:
        for block in {counter_block(c) for c in p}:
            assert sum(counter_block(c) == block for c in p) <= BLOCK_LIMITS[block]
    assert len(passes) == 2  # 10 SQ > 8, 5 TCC > 4, 3 GRBM > 2: two passes suffice
    assert passes[0] == SQ[:8] + TCC[:4] + GRBM[:2]


def test_counters_run_in_passes_and_come_back(fake_tools, tmp_path):
    counters = SQ + TCC + GRBM
    collection = collect_counters(marker_program(tmp_path), counters, tmp_path / "out", timeout=60, retry_wait_s=0.01)
    assert len(collection.passes) == 2
    assert collection.missing() == []
    assert len((tmp_path / "ran.txt").read_text().split()) == 2  # the program is replayed per pass
    (argv,) = recorded_argvs(fake_tools)
    input_file = Path(argv[argv.index("-i") + 1])
    assert input_file.read_text().splitlines() == [f"pmc: {' '.join(p)}" for p in collection.passes]
    totals = collection.per_kernel()
    # The double reports, for dispatch d of the fixture's 4, the MI300X workload's value in row (d - 1) mod 3.
    with open(DATA / "rocprof-compute" / "MI300X_vcopy" / "pmc_perf.csv", newline="") as f:
        measured = list(csv.DictReader(f))
    subtract = "subtract_kernel(float*, float const*, float const*, int, int)"  # Dispatch_Id 2
    assert totals[subtract]["GRBM_COUNT"] == float(measured[1]["GRBM_COUNT"]) == 2573233.0
    assert totals[subtract]["TCC_EA0_RDREQ_sum"] == float(measured[1]["TCC_EA0_RDREQ_sum"])
    assert len(totals) == 4 and all(len(v) == len(counters) for v in totals.values())
    assert {s.pass_index for s in collection.samples} == {1, 2}
    assert sorted(p.parent.parent.name for p in collection.files) == ["pmc_1", "pmc_2"]  # <dir>/pmc_N/<host>/<pid>_...


def test_the_double_refuses_a_pmc_set_over_one_pass(fake_tools, tmp_path):
    done = subprocess.run(
        [str(DOUBLES / "fake_rocprofv3"), "--pmc", *SQ, "-d", str(tmp_path), "--", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1 and "do not fit in one pass" in done.stderr


# ---- build (real hipcc) -----------------------------------------------------------------------


def test_build_with_hipcc_from_the_environment_for_the_agent_arch(hipcc, tmp_path, monkeypatch):
    spelled = str(Path(hipcc).parent / ".." / Path(hipcc).parent.name / "hipcc")  # same tool, our spelling
    monkeypatch.setenv("HIPCC", spelled)
    program = RocmBackend(arch="gfx90a").build(DATA / "compile" / "resources.cu", tmp_path, ["-DUNUSED=1"])
    assert program.executable.is_file() and os.access(program.executable, os.X_OK)
    assert program.backend == "rocm"
    assert program.flags == ["-O3", "--offload-arch=gfx90a", "-DUNUSED=1"]
    assert program.build_log.read_text().startswith(f"$ {spelled} -O3 --offload-arch=gfx90a -DUNUSED=1 ")


def test_rocprofv3_under_rocm_path_is_found(tmp_path, monkeypatch):
    rocm = tmp_path / "rocm"
    (rocm / "bin").mkdir(parents=True)
    (rocm / "bin" / "rocprofv3").symlink_to(DOUBLES / "fake_rocprofv3")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rocminfo").symlink_to(DOUBLES / "fake_rocminfo")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    backend = RocmBackend()
    assert backend.available()[0]
    result = backend.profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    assert len(result.databases) == 1
    assert f"$ {rocm / 'bin' / 'rocprofv3'} --kernel-trace" in result.log.read_text()


def test_build_error_shows_the_compiler_errors(hipcc, tmp_path):
    with pytest.raises(RocmPerfError, match="undeclared_value"):
        RocmBackend(arch="gfx90a").build(DATA / "compile" / "broken.cu", tmp_path)


def test_profile_command_end_to_end_on_the_rocm_backend(hipcc, fake_tools, tmp_path, monkeypatch):
    """`rocm-perf profile --backend rocm`: real hipcc build for the agent's arch, the double profiles."""
    monkeypatch.setenv("FAKE_ROCMINFO_ARCH", "gfx90a")  # an arch Debian's hipcc knows
    monkeypatch.setenv("FAKE_ROCMINFO_PRODUCT", "AMD Instinct MI210")
    done = subprocess.run(
        [sys.executable, "-m", "rocm_perf.cli", "profile", str(DATA / "compile" / "resources.cu"), "--backend", "rocm", "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("backend: rocm (AMD Instinct MI210 (gfx90a) x2)")
    (db,) = (tmp_path / "runs").glob(f"*/baseline/round_1/rocprofv3/attempt-1/{socket.gethostname()}/*_results.db")
    assert "produce_kernel" in done.stdout  # the fixture's kernels, read back from the copied database
    (run_dir,) = (tmp_path / "runs").iterdir()
    build_log = next(run_dir.rglob("build.log")).read_text()
    assert "--offload-arch=gfx90a" in build_log
    (argv,) = recorded_argvs(fake_tools)
    assert Path(argv[-1]).name == "resources" and argv[-2] == "--"


def test_gpu_agents_from_amd_smi_json_and_cpu_only_rocminfo():
    from rocm_perf.backends.gpu_agents import parse_amd_smi_static, parse_rocminfo

    # amd-smi static --asic --json: the ASIC fields of amdsmi_asic_info_t, per GPU.
    text = json.dumps(
        [
            {"gpu": 0, "asic": {"market_name": "AMD Instinct MI300X", "target_graphics_version": "gfx942", "num_compute_units": 304}},
            {"gpu": 1, "asic": {"market_name": "N/A", "target_graphics_version": "N/A", "num_compute_units": "N/A"}},
        ]
    )
    (agent,) = parse_amd_smi_static(text)
    assert (agent.arch, agent.product, agent.cu_count, agent.source) == ("gfx942", "AMD Instinct MI300X", 304, "amd-smi")
    assert parse_amd_smi_static("not json") == []
    cpu_only = "*******\nAgent 1\n*******\n  Name:                    AMD EPYC\n  Device Type:             CPU\n"
    assert parse_rocminfo(cpu_only) == []


# ---- profile --counters roofline --------------------------------------------------------------


def _prog(tmp_path) -> Path:
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return program


def test_profile_counters_roofline_end_to_end(fake_tools, tmp_path, capsys):
    """Traced round, then one counter round: the roofline set in as many passes as the block limits
    need (an input file, one pmc: line each), the pmc_N folders joined per dispatch and analyzed."""
    from rocm_perf import cli
    from rocm_perf.analysis.gpu_arch import arch_spec

    code = cli.main(["profile", str(_prog(tmp_path)), "--backend", "rocm", "--counters", "roofline", "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert code == 0
    trace_run, counter_run = recorded_argvs(fake_tools)
    assert "--kernel-trace" in trace_run and "-i" in counter_run and "--output-format" in counter_run
    passes = [line.removeprefix("pmc: ").split() for line in Path(counter_run[counter_run.index("-i") + 1]).read_text().splitlines()]
    required = arch_spec("gfx942").required_counters()  # fake_rocminfo's GPUs are gfx942
    assert sorted(c for p in passes for c in p) == sorted(required) and len(passes) == 3
    for p in passes:
        for block in {counter_block(c) for c in p}:
            assert sum(counter_block(c) == block for c in p) <= BLOCK_LIMITS[block]
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counter_round"]["passes"] == ["pmc_1", "pmc_2", "pmc_3"]
    analysis = json.loads((run_dir / "analysis" / "analysis.json").read_text())
    assert analysis["missing_counters"] == []
    assert analysis["devices"][0]["product"] == "AMD Instinct MI300X"  # the traced round's agent, adopted
    by_name = {k["name"].split("(")[0]: k for k in analysis["kernels"]}
    # Dispatch 1 (addition) carries the MI300X workload's first row: HBM bytes
    # 128 * 65536 + 32 * 0 + 64 * (65767 - 65536 - 0) + 32 * (131072 - 131072) + 64 * 131072 = 16792000
    with open(DATA / "rocprof-compute" / "MI300X_vcopy" / "pmc_perf.csv", newline="") as f:
        first = next(csv.DictReader(f))
    assert float(first["TCC_EA0_RDREQ_sum"]) == 65767
    assert by_name["void addition_kernel<float>"]["bytes"]["hbm"] == 16_792_000
    assert (run_dir / "analysis" / "roofline.svg").is_file() and (run_dir / "analysis" / "roofline.png").is_file()
    assert "collecting 32 counters" in out and "latency" in out


def test_the_double_writes_the_real_counter_collection_columns(fake_tools, tmp_path):
    done = subprocess.run([str(DOUBLES / "fake_rocprofv3"), "--pmc", "SQ_WAVES", "TCC_BUBBLE_sum", "-d", str(tmp_path / "o"),
                           "-o", "x", "--", "true"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    with open(DATA / "rocprofv3-csv" / "counter_collection.csv", newline="") as f:
        real_header = next(csv.reader(f))
    with open(tmp_path / "o" / "x_counter_collection.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == real_header and len(rows) == 1 + 4 * 2


def test_host_backend_has_no_counters(tmp_path, capsys):
    from rocm_perf import cli

    code = cli.main(["profile", str(DATA / "host" / "digests.cu"), "--backend", "host", "--counters", "roofline",
                     "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err == ("rocm-perf: error: the host backend runs kernels on the CPU and has no GPU hardware "
                                 "counters: --counters needs the rocm backend (rocprofv3 on an AMD GPU)")
    assert not (tmp_path / "runs").exists()  # refused before building anything


# ---- instruction-level evidence: PC sampling and thread trace ---------------------------------


def _options(fake) -> list[str]:
    (argv,) = recorded_argvs(fake)
    return argv[: argv.index("--")]


def test_pc_sampling_options_follow_the_documented_contract(fake_tools, tmp_path):
    """Stochastic on gfx942 (the double's agents): cycles, a power of two, csv beside rocpd."""
    from rocm_perf.trace.instruction_load import load_instruction_profile

    fake_tools("ok")
    result = RocmBackend(pc_sampling="auto").profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    options = _options(fake_tools)
    assert options[options.index("--pc-sampling-method") + 1] == "stochastic"
    assert options[options.index("--pc-sampling-unit") + 1] == "cycles"
    assert "--pc-sampling-beta-enabled" in options
    formats = options[options.index("--output-format") + 1 : options.index("-d")]
    assert formats == ["rocpd", "csv"]
    assert len(result.databases) == 1  # the trace still comes as rocpd
    profile = load_instruction_profile(tmp_path / "out")
    assert profile.evidence == "pc-sampling" and profile.has_issue_split
    # The double stalls every s_waitcnt sample on WAITCNT: count them in the documentation's file.
    rows = (DATA / "rocprofv3-csv" / "pc_sampling_host_trap.csv").read_text().splitlines()[1:]
    waiting = sum(1 for r in rows if '"s_waitcnt' in r)
    waitcnt = profile.stall_reasons.index("waitcnt")
    assert waiting == 32 and profile.stalls[:, waitcnt].sum() == waiting and profile.stalled.sum() == waiting
    assert profile.weight.sum() == len(rows) == 79
    # Kernel names come from the kernel trace of the same run (Dispatch_Id 1).
    assert profile.kernels() != ["dispatch 1"]


def test_host_trap_pc_sampling_before_mi300(fake_tools, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_ROCMINFO_ARCH", "gfx90a")
    fake_tools("ok")
    RocmBackend(pc_sampling="auto").profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    options = _options(fake_tools)
    assert options[options.index("--pc-sampling-method") + 1] == "host_trap"
    assert options[options.index("--pc-sampling-unit") + 1] == "time"
    assert list((tmp_path / "out").rglob("*_pc_sampling_host_trap.csv"))


def test_the_double_rejects_pc_sampling_outside_the_contract(fake_tools, tmp_path):
    fake = str(DOUBLES / "fake_rocprofv3")
    app = ["--", sys.executable, "-c", "pass"]
    bad = {
        "without the beta flag": ["--pc-sampling-method", "host_trap", "--pc-sampling-unit", "time",
                                  "--pc-sampling-interval", "1", "-f", "csv"],
        "host_trap in cycles": ["--pc-sampling-beta-enabled", "--pc-sampling-method", "host_trap", "--pc-sampling-unit",
                                "cycles", "--pc-sampling-interval", "1", "-f", "csv"],
        "stochastic not a power of two": ["--pc-sampling-beta-enabled", "--pc-sampling-method", "stochastic",
                                          "--pc-sampling-unit", "cycles", "--pc-sampling-interval", "1000", "-f", "csv"],
        "rocpd only": ["--pc-sampling-beta-enabled", "--pc-sampling-method", "stochastic", "--pc-sampling-unit",
                       "cycles", "--pc-sampling-interval", "1024", "-f", "rocpd"],
    }
    for why, options in bad.items():
        done = subprocess.run([sys.executable, fake, *options, "-d", str(tmp_path), *app], capture_output=True, text=True)
        assert done.returncode == 2 and "contract violation" in done.stderr, why


def test_att_writes_decoded_folders_that_hotspots_reads(fake_tools, tmp_path):
    from rocm_perf.trace.instruction_load import load_instruction_profile

    fake_tools("ok")
    RocmBackend(att=True).profile(marker_program(tmp_path), tmp_path / "out", timeout=60)
    options = _options(fake_tools)
    assert "--att" in options and "--kernel-trace" in options
    profile = load_instruction_profile(tmp_path / "out")
    assert profile.evidence == "att" and profile.weight.sum() == 214784


def test_unknown_pc_sampling_method_is_refused():
    with pytest.raises(RocmPerfError, match="--pc-sampling 'fast'"):
        RocmBackend(pc_sampling="fast")


def test_profile_pc_sampling_prints_hot_instructions(hipcc, fake_tools, tmp_path, monkeypatch):
    """`rocm-perf profile --backend rocm --pc-sampling`: a -g build, the sampling options, then the table."""
    monkeypatch.setenv("FAKE_ROCMINFO_ARCH", "gfx90a")
    done = subprocess.run(
        [sys.executable, "-m", "rocm_perf.cli", "profile", str(DATA / "compile" / "resources.cu"), "--backend", "rocm",
         "--pc-sampling", "--out", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (argv,) = recorded_argvs(fake_tools)
    assert argv[argv.index("--pc-sampling-method") + 1] == "host_trap"  # gfx90a has no stochastic sampling
    assert "hotspots of" in done.stdout and "79 samples" in done.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert " -g " in f" {next(run_dir.rglob('build.log')).read_text()} "
    report = json.loads((run_dir / "hotspots.json").read_text())
    assert report["evidence"] == "pc-sampling" and report["kernels"][0]["no_line"] == 79  # the docs' file has no -g lines
