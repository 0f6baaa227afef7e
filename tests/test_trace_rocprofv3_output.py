"""rocprofv3's CSV output as rocprofv3 lays it out: `<out>/<hostname>/<pid>_*.csv`, with
`<pid>_agent_info.csv` naming the GPU behind every `Agent_Id`, and the newer `rocpd convert`
columns (`Guid`, `Stack_Id`).

Fixtures (tests/data/PROVENANCE.md): `rocprofv3-out/docs-agent-info/238_agent_info.csv` is the
documentation's real sample (a gfx900); `rocprofv3-out/mi210-node/host-a/` holds the documentation's
real counter_collection.csv as `15606_counter_collection.csv` (its Process_Id) beside an
agent_info.csv built with the real header and the MI210 figures of the real rocprof-compute
workload's sysinfo.csv (gfx90a, 104 CUs, 1700 MHz)."""

import csv
import json

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.agent_info_read import read_agent_info
from rocm_perf.trace.load import load_trace

OUT = DATA / "rocprofv3-out"
NODE = OUT / "mi210-node"
HOST = NODE / "host-a"
CSV = DATA / "rocprofv3-csv"


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


def test_the_documentations_agent_info_csv_reads_as_rocprofv3_wrote_it():
    cpu, gpu = read_agent_info(OUT / "docs-agent-info" / "238_agent_info.csv")
    assert (cpu.type, cpu.node_id, cpu.name) == ("CPU", 0, "AMD Ryzen 9 3900X 12-Core Processor")
    assert (gpu.type, gpu.node_id, gpu.logical_node_id, gpu.name, gpu.product) == ("GPU", 1, 1, "gfx900", "Radeon RX Vega")
    assert gpu.cu_count == 64
    assert gpu.extra["max_engine_clk_fcompute"] == 1630 and gpu.extra["wave_front_size"] == 64
    assert gpu.extra["simd_per_cu"] == 4 and gpu.extra["lds_size_in_kb"] == 64


def test_an_output_folder_is_read_through_its_hostname_folder_and_agent_info_names_the_gpu():
    for given in (NODE, HOST, HOST / "15606_counter_collection.csv"):
        t = load_trace(given)
        assert len(t) == 4 and t.metadata["format"] == "rocprofv3-csv"
        (gpu,) = t.agents
        assert (gpu.id, gpu.type, gpu.name, gpu.product, gpu.cu_count) == (1, "GPU", "gfx90a", "AMD Instinct MI210", 104)
        assert gpu.extra["max_engine_clk_fcompute"] == 1700 and gpu.extra["type_index"] == 0
        assert t.metadata["agent_info"].endswith("15606_agent_info.csv")
        assert (t.counters["SQ_WAVES"] == 16384).all()


def test_analyze_needs_no_arch_for_an_output_folder(capsys):
    assert main(["analyze", str(NODE), "--json"]) == 0
    (device,) = json.loads(capsys.readouterr().out)["devices"]
    assert (device["arch"], device["product"], device["cu_count"], device["sclk_mhz"]) == ("gfx90a", "AMD Instinct MI210", 104, 1700)
    assert device["origin"]["cu_count"] == device["origin"]["sclk_mhz"] == "profile"
    # the same counter file alone, without its agent_info.csv, cannot say which GPU it ran on
    assert main(["analyze", str(CSV / "counter_collection.csv")]) == 2
    assert "pass --arch" in capsys.readouterr().err


def test_a_gpu_analyze_has_no_data_for_is_refused_by_name(tmp_path, capsys):
    run = tmp_path / "out" / "vega-box"
    (run / "15606_counter_collection.csv").parent.mkdir(parents=True)
    (run / "15606_counter_collection.csv").write_bytes((HOST / "15606_counter_collection.csv").read_bytes())
    (run / "15606_agent_info.csv").write_bytes((OUT / "docs-agent-info" / "238_agent_info.csv").read_bytes())
    assert main(["analyze", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "GPU architecture gfx900 has no roofline data" in err and len(err.splitlines()) == 1


def test_summary_metadata_carries_the_gpu_from_agent_info(capsys):
    assert main(["summary", str(NODE), "--json"]) == 0
    md = json.loads(capsys.readouterr().out)["metadata"]
    assert md["observed_arch"] == "gfx90a" and md["gpu_cu_counts"] == [104] and md["gpu_clocks_mhz"] == {"0": 1700}


def test_type_relative_agent_labels_name_the_nth_gpu(tmp_path):
    rows = _rows(HOST / "15606_counter_collection.csv")
    at = rows[0].index("Agent_Id")
    for r in rows[1:]:
        r[at] = "GPU 0"  # ROCPROF_AGENT_INDEX=type-relative
    _write(tmp_path / "h" / "15606_counter_collection.csv", rows)
    (tmp_path / "h" / "15606_agent_info.csv").write_bytes((HOST / "15606_agent_info.csv").read_bytes())
    (gpu,) = load_trace(tmp_path / "h").agents
    assert (gpu.id, gpu.name, gpu.cu_count) == (0, "gfx90a", 104)


def test_agent_info_of_another_machine_is_an_error_naming_it(tmp_path):
    rows = _rows(HOST / "15606_counter_collection.csv")
    at = rows[0].index("Agent_Id")
    for r in rows[1:]:
        r[at] = "Agent 7"
    _write(tmp_path / "h" / "15606_counter_collection.csv", rows)
    (tmp_path / "h" / "15606_agent_info.csv").write_bytes((HOST / "15606_agent_info.csv").read_bytes())
    with pytest.raises(RocmPerfError, match=r"15606_agent_info.csv: no agent 7 among its 2 rows"):
        load_trace(tmp_path / "h")


def test_several_hosts_in_one_output_folder_are_named(tmp_path):
    for host in ("node-1", "node-2"):
        (tmp_path / host).mkdir()
        (tmp_path / host / "1_kernel_trace.csv").write_bytes((CSV / "kernel_trace.csv").read_bytes())
    with pytest.raises(RocmPerfError, match=r"CSV output of several hosts or runs \(node-1, node-2\); pass one"):
        load_trace(tmp_path)


def test_guid_and_stack_id_columns_are_read_wherever_they_appear(tmp_path):
    """`rocpd convert -f csv` puts a `Guid` column first and, in newer releases, names the
    correlation column `Stack_Id` (rocprofiler-sdk `source/lib/python/rocpd/source/csv.cpp`)."""
    rows = _rows(CSV / "kernel_trace.csv")
    rows = [["Guid"] + rows[0]] + [["0000ddb5-8903-7903-b269-cd8d3745bb8a"] + r for r in rows[1:]]
    rows[0][rows[0].index("Correlation_Id")] = "Stack_Id"
    api = _rows(CSV / "rocpd-to-csv.csv")  # a real `rocpd convert` API trace, Guid first
    api[0][api[0].index("Correlation_Id")] = "Stack_Id"
    run = tmp_path / "run"
    _write(run / "9_kernel_trace.csv", rows)
    _write(run / "9_hip_api_trace.csv", api)
    t = load_trace(run)
    plain = load_trace(CSV / "kernel_trace.csv")
    assert len(t) == 9 and list(t.corr) == list(plain.corr) and t.runtime_ns == plain.runtime_ns
    assert t.api is not None and len(t.api) == len(api) - 1 and (t.api.corr > 0).all()


def test_a_kernel_trace_and_a_counter_collection_of_one_run_are_joined_by_dispatch(tmp_path):
    kernel = _rows(CSV / "kernel_trace.csv")
    counters = _rows(HOST / "15606_counter_collection.csv")
    k_head, c_head = kernel[0], counters[0]
    # The counter rows as the kernel trace's run would have written them: its agent and thread.
    for r in counters[1:]:
        r[c_head.index("Agent_Id")] = "Agent 4"
        r[c_head.index("Thread_Id")] = "834304"
    run = tmp_path / "run"
    _write(run / "1_kernel_trace.csv", kernel)
    _write(run / "1_counter_collection.csv", counters)
    t = load_trace(run)
    assert len(t) == 9 and t.metadata["csv_files"] == ["1_kernel_trace.csv", "1_counter_collection.csv"]
    ids = {int(r[k_head.index("Dispatch_Id")]): int(r[k_head.index("Start_Timestamp")]) for r in kernel[1:]}
    with_counters = {d for d, start in ids.items() if not np.isnan(t.counters["SQ_WAVES"][list(t.start).index(start)])}
    assert with_counters == {1, 2, 3, 4}  # the counter collection's four dispatches, no others
