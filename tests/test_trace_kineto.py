"""The PyTorch profiler (Kineto) reader on real traces: exact times, kernels, launches, ranges, ranks,
and every command built on the Trace; bad inputs are one line through the CLI."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.cli import main
from rocm_perf.trace.kineto_read import us_to_ns
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import UNKNOWN
from test_perfetto import check_trace_event_format

TORCH = DATA / "torch-trace"
MI250 = TORCH / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
A100 = TORCH / "a100_control.json.gz"
A100_TEST = TORCH / "a100_test.json.gz"


def _events(path: Path) -> list[dict]:
    """The raw events, with times kept as their JSON text (independent of the reader's parsing)."""
    return json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]


def _ns(value) -> int:
    return int(Decimal(value) * 1000)


def _base(path: Path) -> int:
    return json.loads(gzip.decompress(path.read_bytes())).get("baseTimeNanoseconds", 0)


# ---- exact times ---------------------------------------------------------------------------------


def test_microseconds_with_fractions_become_exact_nanoseconds():
    assert us_to_ns("1712345678901.123") == 1712345678901123
    assert us_to_ns("1661203462598738.123") == 1661203462598738123  # 19 digits: beyond float64
    assert float("1661203462598738.123") * 1000 != 1661203462598738123  # which is why
    assert us_to_ns(1661203462598738) == 1661203462598738000
    assert us_to_ns("5.5") == 5500 and us_to_ns("0.001") == 1 and us_to_ns("-2.25") == -2250
    assert us_to_ns("1.0005") == 1000 and us_to_ns("1.0015") == 1002  # half to even beyond ns
    assert us_to_ns("1e3") == 1_000_000


@pytest.mark.parametrize("path", [MI250, A100, A100_TEST], ids=lambda p: p.name)
def test_kernel_times_and_totals_equal_the_json(path):
    events = _events(path)
    base = _base(path)
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    trace = load_trace(path)
    assert len(trace) == len(kernels)
    assert trace.runtime_ns == sum(_ns(e["dur"]) for e in kernels)
    assert sorted(trace.start.tolist()) == sorted(_ns(e["ts"]) + base for e in kernels)
    per_kernel = Counter()
    calls = Counter()
    for e in kernels:
        per_kernel[e["name"]] += _ns(e["dur"])
        calls[e["name"]] += 1
    names = [trace.symbols[k].display_name for k in trace.kernel.tolist()]
    ours = Counter()
    for name, d in zip(names, (trace.end - trace.start).tolist()):
        ours[name] += d
    assert ours == per_kernel and Counter(names) == calls


def test_mi250_fractions_are_kept_to_the_nanosecond():
    trace = load_trace(MI250)
    # the first kernel of the file: ts 4203669603771.648 us after the base time
    first = int(np.argmin(trace.start))
    assert trace.start[first] == 1735632360000000000 + 4203669603771648
    assert trace.end[first] - trace.start[first] == 6880
    assert trace.agents[0].cu_count == 104 and trace.agents[0].extra["wave_front_size"] == 64


def test_launches_join_by_correlation_and_streams_come_from_args():
    trace = load_trace(MI250)
    events = _events(MI250)
    launches = {int(e["args"]["correlation"]): e for e in events
                if e.get("cat") == "cuda_runtime" and "kernel" in e.get("args", {})}
    assert set(trace.corr.tolist()) == set(launches)
    api = trace.api
    for row in range(len(trace)):
        corr = int(trace.corr[row])
        call = int(np.flatnonzero(api.corr == corr)[0])
        assert api.name_of(call) == launches[corr]["name"]
        assert trace.tid[row] == launches[corr]["tid"]
        assert api.stream[call] == 0  # "stream": "0x0"
    assert set(trace.stream.tolist()) == {0}  # args.stream of every kernel
    assert len(trace.copies) == 2 and set(trace.copies.names) == {"Memcpy HtoD (Host -> Device)"}


def test_a100_streams_copies_and_flows():
    trace = load_trace(A100)
    events = _events(A100)
    streams = {e["args"]["stream"] for e in events if e.get("cat") == "kernel"}
    assert set(trace.stream.tolist()) == streams  # kept as the file numbers them (one device)
    copies = [e for e in events if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
    assert len(trace.copies) == len(copies)
    assert int(trace.copies.is_fill.sum()) == sum(e["cat"] == "gpu_memset" for e in copies)
    assert int((trace.copies.bytes >= 0).sum()) == len(copies)
    # every kernel's correlation id has its cudaLaunchKernel
    launched = set(trace.api.corr[np.asarray(trace.api.name) == trace.api.names.index("cudaLaunchKernel")].tolist())
    assert set(trace.corr.tolist()) <= launched
    assert trace.metadata["world_size"] == 8 and trace.metadata["ranks"][0]["rank"] == 3


def test_user_annotations_become_ranges_linked_to_their_gpu_side():
    trace = load_trace(MI250)
    m = trace.markers
    names = [m.name_of(i) for i in range(len(m))]
    assert sorted(names) == sorted(["ProfilerStep#1", "Optimizer.step#SGD.step", "ProfilerStep#2",
                                    "Optimizer.step#SGD.step", "ProfilerStep#1"])
    gpu = np.flatnonzero(m.agent != UNKNOWN)
    assert len(gpu) == 2
    for row in gpu.tolist():
        link = int(m.link[row])
        assert link >= 0 and m.agent[link] == UNKNOWN and m.name_of(link) == m.name_of(row)


def test_a_folder_of_ranks_merges_and_keeps_devices_apart(tmp_path):
    for i in range(2):  # two ranks that both used device 3
        (tmp_path / f"rank{i}.json.gz").write_bytes(A100.read_bytes())
    (tmp_path / "notes.json").write_text('{"not": "a trace"}')
    one = load_trace(A100)
    both = load_trace(tmp_path)
    assert len(both) == 2 * len(one) and both.runtime_ns == 2 * one.runtime_ns
    assert len(both.gpu_agents()) == 2 and len(set(both.agent.tolist())) == 2
    assert both.metadata["kineto_files"] == ["rank0.json.gz", "rank1.json.gz"]
    assert len(set(both.stream.tolist())) == 2 * len(set(one.stream.tolist()))
    assert len(set(both.corr.tolist())) == 2 * len(set(one.corr.tolist()))  # correlation ids stay unique


# ---- commands on Kineto traces -------------------------------------------------------------------


def test_summary_critical_path_and_export_work_on_kineto(tmp_path, capsys):
    assert main(["summary", str(MI250), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "kineto-json" and doc["dispatches"] == 14
    assert doc["critical_path"]["cross_stream_known"] is True  # one stream, launches from the flows
    assert main(["critical-path", str(A100), "--json"]) == 0
    cp = json.loads(capsys.readouterr().out)
    assert cp["streams"] == 3 and 0 < cp["critical_path_ns"] <= cp["sum_dispatch_ns"]
    out = tmp_path / "mi250.json"
    assert main(["export", str(MI250), "--perfetto", str(out)]) == 0
    capsys.readouterr()
    by_phase = check_trace_event_format(json.loads(out.read_text()))
    ranges = [e for e in by_phase["X"] if e.get("cat") in ("roctx", "gpu_user_annotation")]
    assert sorted(e["name"] for e in ranges) == sorted(
        ["ProfilerStep#1", "Optimizer.step#SGD.step", "ProfilerStep#2", "Optimizer.step#SGD.step", "ProfilerStep#1"])
    host = [e for e in ranges if e["cat"] == "roctx"]
    api_tracks = {(e["pid"], e["tid"]) for e in by_phase["X"] if e.get("cat") == "hip_api"}
    assert {(e["pid"], e["tid"]) for e in host} <= api_tracks  # on the thread tracks of their thread


# ---- bad input: one line --------------------------------------------------------------------------


def _one_line_error(capsys, argv, *fragments):
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
    return err


def test_truncated_json(tmp_path, capsys):
    raw = gzip.decompress(MI250.read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(raw[: len(raw) // 2])
    _one_line_error(capsys, ["summary", str(cut)], str(cut), "not valid JSON", "truncated")
    cut_gz = tmp_path / "cut.json.gz"
    cut_gz.write_bytes(gzip.compress(raw[: len(raw) // 2]))
    _one_line_error(capsys, ["summary", str(cut_gz)], str(cut_gz), "not valid JSON")


def test_a_gz_that_is_not_gzip(tmp_path, capsys):
    fake = tmp_path / "trace.json.gz"
    fake.write_bytes(bytes(range(256)) * 4)
    _one_line_error(capsys, ["summary", str(fake)], str(fake), "not gzip")
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(MI250.read_bytes()[:3000])
    _one_line_error(capsys, ["triage", str(broken)], str(broken), "gzip")


def test_a_trace_with_no_gpu_events(tmp_path, capsys):
    doc = json.loads(gzip.decompress(MI250.read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"]
                          if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")]
    cpu_only = tmp_path / "cpu_only.json"
    cpu_only.write_text(json.dumps(doc))
    _one_line_error(capsys, ["summary", str(cpu_only)], str(cpu_only), "no GPU kernels", "ProfilerActivity.CUDA")
    _one_line_error(capsys, ["compare", str(MI250), str(cpu_only)], str(cpu_only), "no GPU kernels")


def test_json_that_is_not_a_trace_and_our_own_export(tmp_path, capsys):
    other = tmp_path / "config.json"
    other.write_text('{"model": "llama", "layers": 32}')
    _one_line_error(capsys, ["summary", str(other)], str(other), "not a PyTorch profiler trace")
    export = tmp_path / "exported.json"
    assert main(["export", str(MI250), "--perfetto", str(export)]) == 0
    capsys.readouterr()
    _one_line_error(capsys, ["summary", str(export)], str(export), "rocm-perf's own Perfetto export")


def test_kineto_help_mentions_pytorch(capsys):
    with pytest.raises(SystemExit):
        main(["summary", "--help"])
    assert re.search(r"PyTorch\s+profiler", capsys.readouterr().out)
