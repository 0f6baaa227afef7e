"""`rocm-perf analyze`: the table, the files it writes, the same answer from every counter format,
and one line for every bad input."""

import csv
import json
import shutil
import xml.etree.ElementTree as ET

import pytest

from conftest import DATA
from counter_profiles import docs_dispatches, measured_counters, rocpd_with_counters, write_counter_collection
from rocm_perf import cli
from rocm_perf.analysis.gpu_arch import arch_spec

RPC = DATA / "rocprof-compute"
KERNEL_KEYS = {"name", "dispatches", "duration_ns", "flops", "bytes", "intensity", "achieved", "peaks", "bound",
               "headroom", "findings"}


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(["analyze", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(capsys, *argv) -> str:
    code, out, err = _run(capsys, *argv)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---- the table and the files -------------------------------------------------------------------------


def test_mi200_table_and_files(tmp_path, capsys):
    code, out, _ = _run(capsys, RPC / "MI200_vcopy", "--out", tmp_path)
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("vecCopy"))
    assert row.split() == ["vecCopy", "100", "%", "memory", "(hbm)", "0", "60", "%", "40", "%", "(1.67x)",
                           "memory-bound", "(hbm)"]
    assert "GPU 2: MI200 (gfx90a, CDNA2), 104 CUs, 1700 MHz" in out
    data = json.loads((tmp_path / "analysis.json").read_text())
    (kernel,) = data["kernels"]
    assert set(kernel) == KERNEL_KEYS
    assert kernel["bytes"] == {"hbm": 16777728.0, "l2": 16777216.0, "vl1d": 33554432.0, "lds": 0.0}
    assert kernel["peaks"]["hbm"] == {"value": pytest.approx(1388.7931e9), "source": "measured: roofline.csv device 2"}
    assert kernel["bound"]["kind"] == "memory" and kernel["headroom"]["limited_by"] == "hbm"
    for finding in kernel["findings"]:
        assert {"rule", "severity", "title", "measured", "threshold", "advice"} <= set(finding)
    md = (tmp_path / "analysis.md").read_text()
    assert "| `vecCopy` | 100 % | memory (hbm) | 0 | 60 % | 40 % (1.67x) | memory-bound (hbm) |" in md
    assert "![roofline](roofline.svg)" in md and "measured: roofline.csv device 2" in md
    svg = ET.parse(tmp_path / "roofline.svg").getroot()
    assert svg.tag.endswith("svg")
    text = (tmp_path / "roofline.svg").read_text()
    assert "vecCopy" in text and "HBM 1,389 GB/s" in text  # the roof from the measured peak, the kernel by name
    assert (tmp_path / "roofline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mi300x_table(capsys):
    code, out, _ = _run(capsys, RPC / "MI300X_vcopy")
    row = next(line for line in out.splitlines() if line.startswith("vecCopy"))
    assert code == 0 and row.split()[:3] == ["vecCopy", "100", "%"] and "latency" in row and "22 %" in row
    assert "note: optional counters not in the profile (their FLOPs are not counted): SQ_INSTS_VALU_MFMA_MOPS_F8" in out


def test_json_output_and_kernel_filter(tmp_path, capsys):
    values = measured_counters(arch_spec("gfx942").required_counters(), [int(d["Dispatch_Id"]) for d in docs_dispatches()])
    db = rocpd_with_counters(tmp_path / "pmc.db", values)
    code, out, _ = _run(capsys, db, "--json", "--kernel", "^(divide|multiply)")
    data = json.loads(out)
    assert code == 0 and sorted(k["name"].split("(")[0] for k in data["kernels"]) == ["divide_kernel", "multiply_kernel"]
    assert data["missing_counters"] == [] and data["collect"] is None
    assert data["devices"][0]["arch"] == "gfx942" and data["devices"][0]["origin"]["cu_count"] == "profile"


def test_the_same_counters_from_csv_and_from_rocpd_give_the_same_analysis(tmp_path, capsys):
    dispatches = [int(d["Dispatch_Id"]) for d in docs_dispatches()]
    values = measured_counters(arch_spec("gfx942").required_counters(), dispatches)
    csv_path = write_counter_collection(tmp_path / "csv" / "counter_collection.csv", values)
    db = rocpd_with_counters(tmp_path / "pmc.db", values, split="TCC_EA0_RDREQ_sum")
    assert _run(capsys, csv_path, "--arch", "gfx942", "--out", tmp_path / "from_csv")[0] == 0
    assert _run(capsys, db, "--out", tmp_path / "from_rocpd")[0] == 0
    a = json.loads((tmp_path / "from_csv" / "analysis.json").read_text())
    b = json.loads((tmp_path / "from_rocpd" / "analysis.json").read_text())
    # Only where the numbers came from differs: the file, its format, and which device figures the profile gave.
    assert (a.pop("profile"), a.pop("format")) == (str(csv_path), "rocprofv3-csv")
    assert (b.pop("profile"), b.pop("format")) == (str(db), "rocpd-v3")
    devices_a, devices_b = a.pop("devices"), b.pop("devices")
    assert devices_a[0]["origin"]["cu_count"] == "gfx942 default (MI300X)" and devices_b[0]["origin"]["cu_count"] == "profile"
    assert a == b
    assert len(a["kernels"]) == 4 and all(k["bytes"]["hbm"] > 0 for k in a["kernels"])


def test_only_sq_waves_reports_waves_and_occupancy_and_how_to_collect_the_rest(capsys):
    code, out, err = _run(capsys, DATA / "rocprofv3-csv" / "counter_collection.csv", "--arch", "gfx942")
    assert code == 0 and err == ""
    rows = [line.split() for line in out.splitlines() if line.startswith(("addition", "subtract", "divide", "multiply"))]
    # 16384 waves per dispatch (SQ_WAVES) on 304 CUs = 53.9 per CU; 8 VGPRs allow every wave slot
    assert [r[-7:-2] for r in rows][0] == ["1", "53.9", "8", "wave", "slots"]
    (line,) = [line for line in out.splitlines() if "lacks its counters" in line]
    required = arch_spec("gfx942").required_counters()
    assert line.startswith(f"no roofline: the profile lacks its counters: {', '.join(sorted(set(required) - {'SQ_WAVES'})[:8])}")
    assert f"({len(required) - 1} in all)" in line
    assert "collect them with `rocm-perf profile SOURCE --counters roofline`, or: rocprofv3 --pmc " in line
    assert line.count("rocprofv3 --pmc") == 3 and "-d counters/pmc_3 -- PROGRAM ARGS" in line


# ---- bad inputs: one line each --------------------------------------------------------------------------


def test_no_architecture_in_the_profile(capsys):
    line = _one_error_line(capsys, DATA / "rocprofv3-csv" / "counter_collection.csv")
    assert line.endswith("counter_collection.csv: the profile does not say which GPU architecture it ran on; "
                         "pass --arch (gfx90a, gfx942, gfx950)")


def test_unknown_architecture(tmp_path, capsys):
    folder = tmp_path / "w"
    shutil.copytree(RPC / "MI200_vcopy", folder)
    sysinfo = (folder / "sysinfo.csv").read_text().replace(",gfx90a,", ",gfx1100,")
    (folder / "sysinfo.csv").write_text(sysinfo)
    line = _one_error_line(capsys, folder)
    assert line == f"rocm-perf: error: {folder}: GPU architecture gfx1100 has no roofline data (known: gfx90a, gfx942, gfx950)"
    line = _one_error_line(capsys, DATA / "rocprofv3-csv" / "counter_collection.csv", "--arch", "gfx1030")
    assert "GPU architecture gfx1030 has no roofline data" in line


def test_arch_that_contradicts_the_profile(capsys):
    line = _one_error_line(capsys, RPC / "MI300X_vcopy", "--arch", "gfx90a")
    assert line.endswith("MI300X_vcopy: the profile ran on gfx942, not --arch gfx90a")


def test_zero_duration(tmp_path, capsys):
    folder = tmp_path / "w"
    shutil.copytree(RPC / "MI300X_vcopy", folder)
    path = folder / "pmc_perf.csv"
    rows = list(csv.DictReader(open(path, newline="")))
    for r in rows:
        r["End_Timestamp"] = r["Start_Timestamp"]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    line = _one_error_line(capsys, folder)
    assert line.endswith("every dispatch with counters has a zero duration (end == start): no rates can be computed")


def test_some_zero_durations_are_left_out_with_a_note(tmp_path, capsys):
    folder = tmp_path / "w"
    shutil.copytree(RPC / "MI300X_vcopy", folder)
    path = folder / "pmc_perf.csv"
    rows = list(csv.DictReader(open(path, newline="")))
    rows[0]["End_Timestamp"] = rows[0]["Start_Timestamp"]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    code, out, _ = _run(capsys, folder)
    assert code == 0 and "note: 1 of 3 dispatches of vecCopy have a zero duration and are left out of its rates" in out


def test_nan_counter_values_are_named_as_missing(tmp_path, capsys):
    dispatches = [int(d["Dispatch_Id"]) for d in docs_dispatches()]
    values = measured_counters(arch_spec("gfx942").required_counters(), dispatches)
    for per in values.values():
        per["TCC_BUBBLE_sum"] = float("nan")  # what a derived counter that divided by zero prints
    path = write_counter_collection(tmp_path / "counter_collection.csv", values)
    assert "nan" in path.read_text()
    code, out, _ = _run(capsys, path, "--arch", "gfx942", "--json")
    data = json.loads(out)
    assert code == 0 and data["missing_counters"] == ["TCC_BUBBLE_sum"]
    assert all(k["bytes"]["hbm"] is None and k["bytes"]["l2"] is not None for k in data["kernels"])
    code, out, _ = _run(capsys, path, "--arch", "gfx942")
    (line,) = [line for line in out.splitlines() if "TCC_BUBBLE_sum" in line]
    assert line.startswith("the roofline needs counters this profile lacks: TCC_BUBBLE_sum; collect them with")


def test_bad_peaks_files(tmp_path, capsys):
    profile = RPC / "MI300X_vcopy"
    no_unit = tmp_path / "p.json"
    no_unit.write_text('{"hbm": 5000}')
    assert "unknown peak 'hbm' (a peak name with its unit: hbm_gbs" in _one_error_line(capsys, profile, "--peaks", no_unit)
    broken = tmp_path / "b.json"
    broken.write_text("{hbm_gbs: 5000")
    assert f"{broken}: not a JSON peaks file" in _one_error_line(capsys, profile, "--peaks", broken)
    negative = tmp_path / "n.toml"
    negative.write_text("hbm_gbs = -1\n")
    assert "peak hbm_gbs must be a positive number, got -1" in _one_error_line(capsys, profile, "--peaks", negative)
    assert "no such peaks file" in _one_error_line(capsys, profile, "--peaks", tmp_path / "none.json")


def test_good_peaks_files(tmp_path, capsys):
    peaks = tmp_path / "mi300x.toml"
    peaks.write_text("hbm_gbs = 4300\nmfma_f16_tflops = 1000\n")
    code, out, _ = _run(capsys, RPC / "MI300X_vcopy", "--peaks", peaks, "--json")
    (k,) = json.loads(out)["kernels"]
    assert k["peaks"]["hbm"] == {"value": 4.3e12, "source": f"given: {peaks}"}
    assert k["peaks"]["mfma_f16"]["value"] == 1e15
    # a rocprof-compute roofline.csv as --peaks: the median over its devices
    code, out, _ = _run(capsys, RPC / "MI300X_vcopy", "--peaks", RPC / "MI200_vcopy" / "roofline.csv", "--json")
    (k,) = json.loads(out)["kernels"]
    assert k["peaks"]["hbm"]["value"] == pytest.approx((1388.7931e9 + 1388.9321e9) / 2)  # 4 devices: the middle two
    assert "median of 4 devices" in k["peaks"]["hbm"]["source"]


def test_bad_kernel_filter(capsys):
    assert "--kernel '(': not a regular expression" in _one_error_line(capsys, RPC / "MI200_vcopy", "--kernel", "(")
    line = _one_error_line(capsys, RPC / "MI200_vcopy", "--kernel", "gemm")
    assert line.endswith("no kernel matches --kernel 'gemm' (kernels: vecCopy(double*, double*, double*, int, int))")


def test_a_workload_without_dispatches(tmp_path, capsys):
    folder = tmp_path / "w"
    shutil.copytree(RPC / "MI200_vcopy", folder)
    header = (folder / "pmc_perf.csv").read_text().splitlines()[0]
    (folder / "pmc_perf.csv").write_text(header + "\n")
    assert _one_error_line(capsys, folder).endswith(f"{folder / 'pmc_perf.csv'}: no dispatch rows")


def test_a_missing_profile(tmp_path, capsys):
    assert _one_error_line(capsys, tmp_path / "nothing.db").endswith("nothing.db: no such file or directory")


def test_a_host_backend_profile_has_no_gpu_counters(tmp_path, capsys):
    from rocm_perf.trace.model import Agent, KernelSymbol, Trace
    from rocm_perf.trace.rocpd_write import write_rocpd

    trace = Trace.from_rows(start=[0, 10], end=[5, 20], kernel=[0, 0], symbols=[KernelSymbol("k", "k(int*)")],
                            agent=[1, 1], agents=[Agent(1, "CPU", "host", "CPU via rocm-perf host runtime (1 threads)")])
    db = tmp_path / "host.db"
    write_rocpd(trace, db)
    line = _one_error_line(capsys, db)
    assert line.endswith("the kernels ran on a CPU agent (CPU via rocm-perf host runtime (1 threads)), as the host "
                         "backend runs them: there are no GPU hardware counters to analyze")


def test_source_adds_the_compile_checks_figures(hipcc, capsys):
    """--source: Debian's hipcc compiles a kernel with the workload kernel's name for gfx90a."""
    code, out, _ = _run(capsys, RPC / "MI200_vcopy", "--source", DATA / "compile" / "vcopy.cu", "--json")
    (k,) = json.loads(out)["kernels"]
    occupancy = next(f for f in k["findings"] if f["rule"] == "occupancy")
    assert code == 0 and "hipcc's own figure: 8" in occupancy["measured"]


def test_counters_for_some_kernels_only_name_the_others(tmp_path, capsys):
    """A collection with --kernel-include-regex: the kernels without counters are named, nothing is 'missing'."""
    dispatches = [int(d["Dispatch_Id"]) for d in docs_dispatches()]
    values = measured_counters(arch_spec("gfx942").required_counters(), dispatches)
    only_divide = [d for d in docs_dispatches() if d["Kernel_Name"].startswith("divide")]
    db = rocpd_with_counters(tmp_path / "pmc.db", {int(d["Dispatch_Id"]): values[int(d["Dispatch_Id"])] for d in only_divide})
    code, out, _ = _run(capsys, db, "--json")
    data = json.loads(out)
    assert code == 0 and data["missing_counters"] == [] and data["collect"] is None
    assert data["notes"][0] == ("3 kernel(s) have no roofline counters (collected for other kernels only?): "
                                "addition_kernel<float>, multiply_kernel, subtract_kernel")
    assert data["notes"][1].endswith("SQ_INSTS_VALU_MFMA_MOPS_F8")  # optional, not collected here
    kinds = {k["name"].split("(")[0]: k["bound"]["kind"] for k in data["kernels"]}
    assert kinds["divide_kernel"] != "unknown" and kinds["void addition_kernel<float>"] == "unknown"
