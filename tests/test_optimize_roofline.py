"""The loop uses the roofline: with counters for the baseline a kernel's expected value is its
critical-path share x headroom, a kernel at its memory roof gets no unroll candidates (and the report
says why), and the report shows the roofline of the baseline and of the accepted result.

Built on test_optimize_loop.py's doubles (injected measurements, a build double); the counters are
real-format counter_collection.csv files analyzed by the real analysis.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from counter_profiles import write_counter_collection
from rocm_perf.analysis.gpu_arch import arch_spec
from rocm_perf.optimize.ledger import open_ledger
from rocm_perf.optimize.loop import DONE
from test_optimize_loop import WEIGHTED, XOR, CopyBuildDouble, InjectedRounds, start

HBM_PEAK = 5324.8e9  # gfx942's default device (MI300X): 1300 MHz x 32 B x 128 channels
DURATION_NS = 10_000


def _dispatch(did: int, name: str) -> dict:
    start = 1_000_000 + did * 20_000
    return {"Dispatch_Id": str(did), "Correlation_Id": str(did), "Agent_Id": "Agent 1", "Queue_Id": "1",
            "Thread_Id": "1", "Kernel_Id": str(did), "Kernel_Name": name, "Grid_Size_X": "65536", "Grid_Size_Y": "1",
            "Grid_Size_Z": "1", "Workgroup_Size_X": "256", "Workgroup_Size_Y": "1", "Workgroup_Size_Z": "1",
            "LDS_Block_Size": "0", "Scratch_Size": "0", "VGPR_Count": "16", "Accum_VGPR_Count": "0", "SGPR_Count": "16",
            "Start_Timestamp": str(start), "End_Timestamp": str(start + DURATION_NS)}


def _counters(hbm_utilization: dict[str, float]) -> tuple[list[dict], dict[int, dict[str, float]]]:
    """Every gfx942 roofline counter, zero but SQ_WAVES and the HBM reads that give each kernel its
    utilization: 64 B per TCC_EA0_RDREQ (no BUBBLE, no 32-byte reads)."""
    dispatches, values = [], {}
    for did, (name, util) in enumerate(hbm_utilization.items(), start=1):
        dispatches.append(_dispatch(did, name))
        per = {c: 0.0 for c in arch_spec("gfx942").required_counters()}
        per["SQ_WAVES"] = 1024.0
        per["TCC_EA0_RDREQ_sum"] = round(util * HBM_PEAK * DURATION_NS * 1e-9 / 64)
        values[did] = per
    return dispatches, values


class CounterBackendDouble(CopyBuildDouble):
    """Build double with hardware counters: a counter round writes one pmc_1 pass in rocprofv3's CSV layout."""

    has_counters = True

    def __init__(self, utilization: dict[str, float]):
        super().__init__()
        self.utilization = utilization
        self.rounds: list[list[str]] = []

    def target_arch(self):
        return "gfx942"

    def collect_counters(self, argv, counters, out_dir, timeout=600, cwd=None, env=None):
        self.rounds.append(list(argv))
        assert sorted(counters) == sorted(arch_spec("gfx942").required_counters())
        dispatches, values = _counters(self.utilization)
        write_counter_collection(Path(out_dir) / "pmc_1" / "host" / "1_counter_collection.csv", values, dispatches)
        return Path(out_dir)


def test_a_kernel_at_its_memory_roof_gets_no_unroll_candidates(tmp_path):
    """--analysis: a profile the user collected. row_xor_sum moves HBM bytes at 90 % of the peak."""
    dispatches, values = _counters({XOR: 0.90, WEIGHTED: 0.36})
    profile = write_counter_collection(tmp_path / "given" / "counter_collection.csv", values, dispatches)
    run_dir, loop = start(tmp_path, InjectedRounds(), analysis=profile, arch="gfx942", max_trials=4)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    assert {t.kernel for t in ledger.trials()} == {"row_weighted_sum"}  # none for the kernel at its roof
    (skipped,) = ledger.get("roofline_skipped")
    assert skipped["kernel"] == "row_xor_sum" and skipped["reason"].startswith("at the hbm roof: 4.79 TB/s at hbm, 90 %")
    (top,) = ledger.get("top_kernels")
    assert top["kernel"] == "row_weighted_sum" and abs(top["headroom"] - 0.64) < 1e-3
    assert ledger.get("roofline")["how"] == f"given: {profile}"
    report = (run_dir / "report.md").read_text()
    assert "- `row_xor_sum`: no unroll candidates: at the hbm roof: 4.79 TB/s at hbm, 90 % of its peak" in report
    assert "- `row_weighted_sum`: latency, headroom 64 %" in report
    html = (run_dir / "report.html").read_text()
    assert "row_xor_sum: no unroll candidates" in html and "Roofline of the baseline" in html
    assert '<figure class="plot" id="fig-roofline-baseline"><svg ' in html  # inline, no image to fetch


def test_a_counter_round_ranks_by_share_times_headroom_and_the_result_gets_its_roofline(tmp_path):
    """The backend has counters: the loop runs a counter round of the baseline and, after accepting,
    one of the result. row_xor_sum has the larger critical-path share (60 %) but is near its roof
    (headroom 25 %); row_weighted_sum (40 %) has 90 % headroom: it comes first."""
    backend = CounterBackendDouble({XOR: 0.75, WEIGHTED: 0.10})
    run_dir, loop = start(tmp_path, InjectedRounds(), backend=backend, arch="gfx942", max_trials=6)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    ranking = ledger.get("ranking")
    assert [r["kernel"] for r in ranking] == ["row_weighted_sum", "row_xor_sum"]
    assert abs(ranking[0]["headroom"] - 0.90) < 1e-3 and abs(ranking[1]["headroom"] - 0.25) < 1e-3
    first = min(ledger.trials(), key=lambda t: t.id)
    assert first.kernel == "row_weighted_sum"  # the larger share x headroom is tried first
    assert ledger.get("roofline")["how"] == "counter round"
    assert ledger.trials(status="accepted")
    # one counter round of the baseline, one of the accepted result
    assert len(backend.rounds) == 2 and backend.rounds[1][0].endswith("program.cu")
    final = json.loads((run_dir / ledger.get("roofline_final")["analysis"]).read_text())
    assert final["schema"] == "rocm-perf.analysis/1" and len(final["kernels"]) == 2
    html = (run_dir / "report.html").read_text()
    assert "Roofline of the baseline" in html and "Roofline of the accepted result" in html
    assert (run_dir / "figures" / "roofline-baseline.svg").is_file()
    assert (run_dir / "figures" / "roofline-final.svg").is_file()
    md = (run_dir / "report.md").read_text()
    assert "](figures/roofline-baseline.svg)" in md and "](figures/roofline-final.svg)" in md


def test_without_counters_the_ranking_is_by_critical_path_share(tmp_path):
    run_dir, loop = start(tmp_path, InjectedRounds(), max_trials=1)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    assert [r["kernel"] for r in ledger.get("ranking")] == ["row_xor_sum", "row_weighted_sum"]  # 60 % before 40 %
    assert all(r["headroom"] is None for r in ledger.get("ranking"))
    assert ledger.get("roofline")["how"] == "none"
    assert "- roofline: the copy-double backend has no hardware counters" in (run_dir / "report.md").read_text()


def test_a_sweep_manifest_can_turn_the_counter_round_off(tmp_path):
    from rocm_perf.errors import RocmPerfError
    from rocm_perf.sweep.run_target import optimize_options
    from rocm_perf.sweep.targets import load_manifest

    source = tmp_path / "k.cu"
    source.write_text("__global__ void k() {}\n")
    manifest = tmp_path / "sweep.toml"
    manifest.write_text('[[target]]\nsource = "k.cu"\ncounters = "off"\n')
    (target,) = load_manifest(manifest)
    opts = optimize_options(target, out=tmp_path / "runs", budget_s=60, backend="rocm", resume=None, max_trials=None)
    assert opts.counters == "off"
    manifest.write_text('[[target]]\nsource = "k.cu"\ncounters = "always"\n')
    with pytest.raises(RocmPerfError, match='`counters` must be "auto" or "off"'):
        load_manifest(manifest)
