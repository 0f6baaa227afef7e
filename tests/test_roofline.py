"""The roofline's formulas, peaks, occupancy and rules on the real rocprof-compute workloads
(MI210 / gfx90a and MI300X / gfx942 vector copies), with the arithmetic written out from their CSVs."""

import csv
import shutil

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.analysis.analyze import analyze_trace, collect_command
from rocm_perf.analysis.counter_formula import Formula, evaluate, parse_formula
from rocm_perf.analysis.gpu_arch import arch_spec, device_of, known_archs, theoretical_peak
from rocm_perf.analysis.occupancy import theoretical_occupancy
from rocm_perf.analysis.pass_plan import BLOCK_LIMITS, counter_block
from rocm_perf.analysis.roofline import device_contexts, dispatch_quantities
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace

RPC = DATA / "rocprof-compute"


def _pmc(name: str) -> list[dict[str, str]]:
    with open(RPC / name / "pmc_perf.csv", newline="") as f:
        return list(csv.DictReader(f))


def _edit_pmc(tmp_path, name: str, **columns) -> object:
    """A copy of a workload whose pmc_perf.csv has `columns` set (every row) to the given values."""
    folder = tmp_path / name
    shutil.copytree(RPC / name, folder)
    rows = _pmc(name)
    for row in rows:
        for column, value in columns.items():
            assert column in row, column
            row[column] = str(value)
    with open(folder / "pmc_perf.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return folder


# ---- bytes, by hand ---------------------------------------------------------------------------------


def test_mi200_bytes_at_every_level_by_hand():
    (row,) = _pmc("MI200_vcopy")
    c = {k: float(v) for k, v in row.items() if k.startswith(("TCC_", "TCP_", "SQ_"))}
    # HBM, MI200: 32 * RDREQ_32B + 64 * (RDREQ - RDREQ_32B) + 64 * WRREQ_64B + 32 * (WRREQ - WRREQ_64B)
    assert (c["TCC_EA_RDREQ_32B_sum"], c["TCC_EA_RDREQ_sum"], c["TCC_EA_WRREQ_64B_sum"], c["TCC_EA_WRREQ_sum"]) == \
        (0, 131080, 131072, 131072)
    hbm = 32 * 0 + 64 * (131080 - 0) + 64 * 131072 + 32 * (131072 - 131072)
    assert hbm == 16_777_728  # 16 MiB of doubles copied (8 MiB read + 8 MiB written) + 512 B
    # L2: 64 * (read + write + atomic with return + atomic without) requests from the vL1D
    l2 = 64 * (131072 + 131072 + 0 + 0)
    assert (c["TCP_TCC_READ_REQ_sum"], c["TCP_TCC_WRITE_REQ_sum"]) == (131072, 131072) and l2 == 16_777_216
    vl1d = 64 * 524288  # TCP_TOTAL_CACHE_ACCESSES_sum
    assert c["TCP_TOTAL_CACHE_ACCESSES_sum"] == 524288 and vl1d == 33_554_432
    lds = (0 - 0) * 4 * 32  # (SQ_LDS_IDX_ACTIVE - SQ_LDS_BANK_CONFLICT) * 4 * banks
    int_ops = 64 * 114688  # SQ_INSTS_VALU_INT32
    analysis = analyze_trace(load_trace(RPC / "MI200_vcopy"))
    (k,) = analysis.kernels
    assert k.bytes == {"hbm": hbm, "l2": l2, "vl1d": vl1d, "lds": lds}
    assert k.flops["valu_int32"] == int_ops and k.flops_total == 0.0
    # rates over the dispatch's 20160 ns; HBM against the measured peak of device 2 (roofline.csv: 1388.7931 GB/s)
    duration = 1411987252082105 - 1411987252061945
    assert duration == 20160 and k.measured_ns == duration
    assert k.achieved()["bytes_per_s"]["hbm"] == pytest.approx(hbm / 20160e-9)  # 832.2 GB/s
    assert k.utilization()["hbm"] == pytest.approx(hbm / 20160e-9 / 1388.7931e9)  # 0.599
    assert k.top() == ("hbm", pytest.approx(0.5992, abs=1e-4))


def test_mi300x_bytes_per_dispatch_and_per_kernel_by_hand():
    rows = _pmc("MI300X_vcopy")
    hbm = []
    for row in rows:
        bubble, rd32, rd, wr, wr64 = (float(row[k]) for k in ("TCC_BUBBLE_sum", "TCC_EA0_RDREQ_32B_sum",
                                                               "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum"))
        # MI300: 128 * BUBBLE + 32 * RDREQ_32B + 64 * (RDREQ - BUBBLE - RDREQ_32B) + 32 * (WRREQ - WRREQ_64B) + 64 * WRREQ_64B
        hbm.append(128 * bubble + 32 * rd32 + 64 * (rd - bubble - rd32) + 32 * (wr - wr64) + 64 * wr64)
    # dispatch 1: 128 * 65536 + 0 + 64 * (65767 - 65536 - 0) + 32 * 0 + 64 * 131072 = 16792000
    assert [float(r["TCC_EA0_RDREQ_sum"]) for r in rows][1] == 65767
    assert hbm == [16_792_000, 16_792_000, 16_791_296]
    trace = load_trace(RPC / "MI300X_vcopy")
    per_dispatch = dispatch_quantities(trace, device_contexts(trace))
    assert per_dispatch["hbm"].tolist() == hbm
    assert per_dispatch["l2"].tolist() == [64 * (65536 + 131072)] * 3  # TCP_TCC read + write requests
    (k,) = analyze_trace(trace).kernels
    # per kernel: sums over dispatches, then ratios
    assert k.bytes["hbm"] == sum(hbm) == 50_375_296
    assert k.measured_ns == 16160 + 13680 + 14160 == 44000
    assert k.achieved()["bytes_per_s"]["hbm"] == pytest.approx(50_375_296 / 44000e-9)  # 1144.9 GB/s
    # no roofline.csv: the theoretical HBM peak from sysinfo, 1300 MHz x 32 B x 128 channels = 5324.8 GB/s
    assert k.peaks["hbm"].value == pytest.approx(5324.8e9)
    assert k.utilization()["hbm"] == pytest.approx(50_375_296 / 44000e-9 / 5324.8e9)  # 0.215


def test_flops_by_type_from_valu_and_mfma_counters(tmp_path):
    folder = _edit_pmc(tmp_path, "MI200_vcopy", SQ_INSTS_VALU_ADD_F32=100, SQ_INSTS_VALU_MUL_F32=10,
                       SQ_INSTS_VALU_FMA_F32=1000, SQ_INSTS_VALU_TRANS_F32=1, SQ_INSTS_VALU_FMA_F64=7,
                       SQ_INSTS_VALU_MFMA_MOPS_F16=3, SQ_INSTS_VALU_MFMA_MOPS_BF16=5, SQ_INSTS_VALU_MFMA_MOPS_I8=11)
    (k,) = analyze_trace(load_trace(folder)).kernels
    assert k.flops["valu_f32"] == 64 * (100 + 10 + 2 * 1000 + 1)  # ADD + MUL + 2 FMA + TRANS, 64 lanes
    assert k.flops["valu_f64"] == 64 * 2 * 7
    assert k.flops["mfma_f16"] == 512 * 3 and k.flops["mfma_bf16"] == 512 * 5
    assert k.flops["mfma_i8"] == 512 * 11  # integer: reported, not in the FLOP total
    assert k.flops_total == 64 * 2111 + 64 * 14 + 512 * 8
    assert k.intensity()["hbm"] == pytest.approx(k.flops_total / 16_777_728)


# ---- peaks ------------------------------------------------------------------------------------------


def test_theoretical_peaks_match_the_published_figures():
    mi300x = device_of(None, arch_spec("gfx942"))  # the default device: MI300X, 304 CUs, 2100 MHz
    spec = arch_spec("gfx942")
    assert theoretical_peak(spec, mi300x, "valu_f64").value == pytest.approx(81.7e12, rel=1e-3)  # FORMATS.md: 81.7 TF
    assert theoretical_peak(spec, mi300x, "mfma_f16").value == pytest.approx(1307e12, rel=1e-3)  # 1307 TF
    assert theoretical_peak(spec, mi300x, "hbm").value == pytest.approx(5.3248e12)  # 5.3 TB/s
    mi210 = device_of(None, arch_spec("gfx90a"))
    assert theoretical_peak(arch_spec("gfx90a"), mi210, "hbm").value == pytest.approx(1.6384e12)  # 1.64 TB/s
    mi355x = device_of(None, arch_spec("gfx950"))
    spec950 = arch_spec("gfx950")
    assert theoretical_peak(spec950, mi355x, "mfma_f16").value == pytest.approx(2.5e15, rel=0.01)
    assert theoretical_peak(spec950, mi355x, "mfma_f64").value == pytest.approx(78.6e12, rel=0.01)
    assert theoretical_peak(spec950, mi355x, "hbm").value == pytest.approx(8e12)


def test_every_measured_peak_of_the_mi210_is_below_its_theoretical_one():
    """The per-CU-per-clock table checked against a real device: what the roofline benchmark measured on
    the MI210 (roofline.csv) must be reachable, and not far below, the theoretical peak."""
    trace = load_trace(RPC / "MI200_vcopy")
    (agent,) = trace.agents
    spec = arch_spec("gfx90a")
    device = device_of(agent, spec)
    assert set(agent.measured_peaks) == {"hbm", "l2", "vl1d", "lds", "valu_f32", "valu_f64", "mfma_f16",
                                         "mfma_bf16", "mfma_f32", "mfma_f64", "mfma_i8"}
    for key, measured in agent.measured_peaks.items():
        ratio = measured / theoretical_peak(spec, device, key).value
        assert 0.7 < ratio <= 1.0, (key, ratio)


def test_peak_sources_say_where_each_peak_came_from():
    (k,) = analyze_trace(load_trace(RPC / "MI200_vcopy")).kernels
    assert k.peaks["hbm"].source == "measured: roofline.csv device 2"
    assert k.peaks["valu_f16"].source == "theoretical (gfx90a): 128 ops per CU per clock x 104 CUs x 1700 MHz"
    (k,) = analyze_trace(load_trace(RPC / "MI300X_vcopy"), user_peaks={"hbm": 4.0e12}, user_peaks_from="mine.json").kernels
    assert k.peaks["hbm"].source == "given: mine.json" and k.peaks["hbm"].value == 4.0e12
    assert k.peaks["l2"].source.startswith("theoretical (gfx942): 128 B per L2 channel per clock x 128 channels")


# ---- bound, headroom, findings -------------------------------------------------------------------------


def test_mi200_copy_is_memory_bound_with_its_headroom():
    (k,) = analyze_trace(load_trace(RPC / "MI200_vcopy")).kernels
    util = 16_777_728 / 20160e-9 / 1388.7931e9
    assert k.bound["kind"] == "memory" and k.bound["resource"] == "hbm"
    assert k.headroom() == {"fraction": pytest.approx(1 - util), "speedup": pytest.approx(1 / util),
                            "time_at_roof_ns": pytest.approx(util * 20160), "limited_by": "hbm"}
    assert [f["rule"] for f in k.findings] == ["memory_bound", "occupancy"]
    assert not k.blocks


def test_mi300x_copy_is_latency_bound():
    (k,) = analyze_trace(load_trace(RPC / "MI300X_vcopy")).kernels
    assert k.bound["kind"] == "latency" and k.bound["pct_of_peak"] == pytest.approx(0.2150, abs=1e-4)
    assert k.findings[0]["rule"] == "latency_bound"
    assert "below 50 %" in k.findings[0]["threshold"]


def test_at_the_memory_roof_blocks_unrolling():
    # With a peak of 1000 GB/s the copy's 832 GB/s is 83 % of it: at the roof.
    (k,) = analyze_trace(load_trace(RPC / "MI200_vcopy"), user_peaks={"hbm": 1.0e12}, user_peaks_from="p").kernels
    first = k.findings[0]
    assert first["rule"] == "at_memory_roof" and first["severity"] == "high"
    assert first["measured"].startswith("832 GB/s at hbm, 83 % of its peak 1 TB/s")
    assert "a loop rewrite cannot make it faster" in first["advice"]
    assert k.blocks == {"unroll"}


def test_compute_bound_on_the_valu(tmp_path):
    # 2.4e6 FMA F32 instructions x 128 FLOP in 20160 ns = 15.2 TFLOP/s, 72 % of the measured 21.05 TFLOP/s
    folder = _edit_pmc(tmp_path, "MI200_vcopy", SQ_INSTS_VALU_FMA_F32=2_400_000)
    (k,) = analyze_trace(load_trace(folder)).kernels
    assert k.bound["kind"] == "compute" and k.bound["resource"] == "valu"
    assert k.bound["label"] == "compute (valu_f32)"
    assert k.utilization()["valu"] == pytest.approx(2_400_000 * 128 / 20160e-9 / 21046.363e9 + 7340032 / 20160e-9 / 22630.4e9)
    assert k.findings[0]["rule"] == "compute_bound"


def test_lds_bank_conflicts_small_grid_scratch_and_registers(tmp_path):
    folder = _edit_pmc(tmp_path, "MI300X_vcopy", SQ_LDS_IDX_ACTIVE=1000, SQ_LDS_BANK_CONFLICT=300, SQ_WAVES=100,
                       Scratch_Per_Workitem=64, Arch_VGPR=192, Accum_VGPR=64)
    (k,) = analyze_trace(load_trace(folder)).kernels
    rules = [f["rule"] for f in k.findings]
    assert rules[:2] == ["small_grid", "scratch_spills"]  # high severity first
    assert {"lds_bank_conflicts", "low_occupancy"} <= set(rules)
    lds = next(f for f in k.findings if f["rule"] == "lds_bank_conflicts")
    assert lds["measured"] == "0.429 conflict cycles per uncontended LDS cycle"  # 300 / (1000 - 300)
    grid = next(f for f in k.findings if f["rule"] == "small_grid")
    assert grid["measured"].startswith("0.329 waves per CU per dispatch (SQ_WAVES)")  # 100 / 304
    occ = next(f for f in k.findings if f["rule"] == "low_occupancy")
    assert occ["measured"] == "2 waves per SIMD of 8 (192 VGPRs + 64 AGPRs per lane)"  # 512 // 256


# ---- occupancy -------------------------------------------------------------------------------------


def test_occupancy_limits_from_registers_lds_and_the_compiler():
    cdna3 = arch_spec("gfx942").occupancy
    assert theoretical_occupancy(cdna3, vgpr=128, agpr=0).waves_per_simd == 4  # 512 // 128
    assert theoretical_occupancy(cdna3, vgpr=100).waves_per_simd == 4  # 100 -> 104 in granules of 8; 512 // 104
    slots = theoretical_occupancy(cdna3, vgpr=24, agpr=8)
    assert (slots.waves_per_simd, slots.limiter) == (8, "wave slots")  # registers allow 16, the SIMD has 8 slots
    lds = theoretical_occupancy(cdna3, vgpr=16, lds_bytes=32768, workgroup_size=256)
    assert (lds.waves_per_simd, lds.limiter) == (2, "LDS")  # 2 workgroups of 4 waves per CU = 8 waves on 4 SIMDs
    cdna4 = arch_spec("gfx950").occupancy  # 160 KiB of LDS: 5 such workgroups, 20 waves, 5 per SIMD
    assert theoretical_occupancy(cdna4, vgpr=16, lds_bytes=32768, workgroup_size=256).waves_per_simd == 5
    compiler = theoretical_occupancy(cdna3, vgpr=16, compiler_waves_per_simd=3)
    assert (compiler.waves_per_simd, compiler.limiter) == (3, "compiler")


# ---- data files and formulas ------------------------------------------------------------------------------


def test_every_architecture_loads_and_names_its_sources():
    assert set(known_archs()) >= {"gfx90a", "gfx942", "gfx950"}
    assert arch_spec("gfx941").arch == "gfx942"  # an alias
    assert arch_spec("gfx942:sramecc+:xnack-").arch == "gfx942"
    for arch in known_archs():
        spec = arch_spec(arch)
        assert set(spec.bytes) == {"hbm", "l2", "vl1d", "lds"}
        for f in spec.formulas():
            assert f.source and f.counters, (arch, f.key)
        for rate in spec.peaks.values():
            assert rate.source, (arch, rate.key)
    with pytest.raises(RocmPerfError, match="GPU architecture gfx1100 has no roofline data"):
        arch_spec("gfx1100")


def test_formulas_are_arithmetic_only():
    for bad in ("__import__('os').system('true')", "A ** 2", "A if B else C", "A[0]", "f(A)", "A.real"):
        with pytest.raises(RocmPerfError, match="only \\+ - \\* / over names and numbers"):
            parse_formula(bad, "x")
    f = Formula("x", "wave_size * (A_sum - B) / 2", "test")
    assert f.counters == ("A_sum", "B") and f.params == ("wave_size",)
    # `A_sum` accepts the plain counter (rocprofv3 reports the instance sum under the plain name)
    got = evaluate(f, {"A": np.array([10.0, np.nan]), "B": np.array([4.0, 1.0])}, {"wave_size": 64}, 2)
    assert got[0] == 64 * 6 / 2 and np.isnan(got[1])
    assert evaluate(f, {"B": np.array([1.0])}, {"wave_size": 64}, 1) is None


def test_the_collect_command_fits_every_pass_in_the_block_limits():
    spec = arch_spec("gfx942")
    command = collect_command(spec.required_counters(), program="./app --n 3")
    runs = command.split(" && ")
    assert len(runs) == 3
    collected = []
    for n, run in enumerate(runs, start=1):
        argv = run.split()
        assert argv[0] == "rocprofv3" and run.endswith(" -- ./app --n 3")
        assert f"counters/pmc_{n}" in argv
        names = argv[argv.index("--pmc") + 1 : argv.index("--output-format")]
        for block in {counter_block(c) for c in names}:
            assert sum(counter_block(c) == block for c in names) <= BLOCK_LIMITS[block]
        collected += names
    assert sorted(collected) == sorted(spec.required_counters())


def test_the_docs_tables_name_every_counter_of_every_formula():
    section = (DATA.parent.parent / "docs" / "commands" / "analyze.md").read_text()
    for arch in known_archs():
        spec = arch_spec(arch)
        for f in [*spec.bytes.values(), *spec.other.values()]:
            for counter in f.counters:
                assert f"`{counter.removesuffix('_sum')}`" in section, (arch, f.key, counter)
        for key, rate in spec.peaks.items():
            assert f"{rate.value:g}" in section, (arch, key)
