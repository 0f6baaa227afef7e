"""Perfetto export: the JSON obeys the trace-event format on every profile format the readers take."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.cli import main
from rocm_perf.trace.model import ApiCalls, KernelSymbol, Trace
from rocm_perf.report.perfetto_export import export_perfetto, us

PROFILES = [
    DATA / "rocpd_v3_multistream.db",
    DATA / "rocpd_v3_docs_kernel_trace.db",
    DATA / "matmul_result.rpd",
    DATA / "mytrace.rpd.gz",
    DATA / "rocprofv3-csv" / "kernel_trace.csv",
    DATA / "rocprofv3-csv",
    DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]

PHASES = {"X", "B", "E", "M", "s", "t", "f", "i", "I", "C"}


def check_trace_event_format(doc: dict) -> dict[str, list[dict]]:
    """Assert the Chrome trace-event rules a viewer relies on; return the events by phase."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    by_phase: dict[str, list[dict]] = defaultdict(list)
    for e in doc["traceEvents"]:
        assert isinstance(e["name"], str) and e["name"], e
        assert e["ph"] in PHASES, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] == "M":
            assert e["name"] in {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}, e
            assert isinstance(e["args"], dict)
        if e["ph"] in "stf":
            assert "id" in e and e.get("cat"), e
        by_phase[e["ph"]].append(e)

    # B/E pairs nest per thread (the exporter uses X, but keep the rule if that changes).
    open_slices: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in sorted((e for e in doc["traceEvents"] if e["ph"] in "BE"), key=lambda e: e["ts"]):
        key = (e["pid"], e["tid"])
        if e["ph"] == "B":
            open_slices[key].append(e)
        else:
            assert open_slices[key], f"E without B: {e}"
            open_slices[key].pop()
    assert not any(open_slices.values()), "B without E"

    # Flows: one start and one finish per id, finish not before start, each bound to a slice on its track.
    slices = defaultdict(list)
    for e in by_phase["X"]:
        slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    ends: dict[object, dict[str, dict]] = defaultdict(dict)
    for e in by_phase["s"] + by_phase["f"]:
        assert e["ph"] not in ends[(e["cat"], e["id"])], f"duplicate flow {e['ph']} for id {e['id']}"
        ends[(e["cat"], e["id"])][e["ph"]] = e
        assert any(a <= e["ts"] <= b for a, b in slices[(e["pid"], e["tid"])]), f"flow event outside any slice: {e}"
    for key, pair in ends.items():
        assert set(pair) == {"s", "f"}, f"unmatched flow {key}"
        assert pair["s"]["ts"] <= pair["f"]["ts"] + 1e-9, key
        assert pair["f"].get("bp") == "e"
    # Every track a slice sits on is named.
    named = {(e["pid"], e["tid"]) for e in by_phase["M"] if e["name"] == "thread_name"}
    for key in slices:
        assert key in named, f"unnamed track {key}"
    return by_phase


def test_us_is_exact():
    assert us(0) == "0.000"
    assert us(1) == "0.001"
    assert us(1_234_567) == "1234.567"
    assert us(-1500) == "-1.500"
    assert float(us(1_700_000_000_123_456_789)) == pytest.approx(1_700_000_000_123_456.789)


def small_trace() -> Trace:
    symbols = [KernelSymbol("_Z4axpyPf.kd", "axpy(float*)"), KernelSymbol("<script>alert(1)</script>", "<script>alert(1)</script>")]
    api = ApiCalls(
        names=["hipLaunchKernel"],
        name=np.zeros(3, dtype=np.int32),
        start=np.array([1_000, 2_000, 3_000]),
        end=np.array([1_400, 2_400, 3_400]),
        tid=np.array([7, 7, 8]),
        corr=np.array([11, 12, 13]),
        stream=np.array([0, 0, 0]),
        event=np.array([-1, -1, -1]),
        args={0: {"stream": "0x0"}},
    )
    return Trace.from_rows(
        start=[10_000, 20_500, 31_000],
        end=[15_250, 30_000, 31_000],
        kernel=[0, 1, 0],
        symbols=symbols,
        agent=[4, 4, 5],
        queue=[0, 0, 1],
        stream=[0, 1, 1],
        corr=[11, 12, 13],
        grid=[[256, 1, 1], [512, 2, 1], [64, 1, 1]],
        workgroup=[[64, 1, 1], [128, 1, 1], [64, 1, 1]],
        api=api,
        metadata={"format": "constructed", "pid": 4242},
    )


def test_constructed_trace_units_tracks_and_launch_arrows(tmp_path):
    trace = small_trace()
    out = tmp_path / "t.json"
    counts = export_perfetto(trace, out, categories=["BLAS", "other"])
    doc = json.loads(out.read_text())
    by_phase = check_trace_event_format(doc)
    origin = doc["otherData"]["origin_ns"]
    assert origin == 1_000  # the first API call
    kernels = [e for e in by_phase["X"] if e["cat"] == "kernel"]
    assert len(kernels) == counts.kernel_slices == 3
    first = next(e for e in kernels if e["args"]["row"] == 0)
    assert first["ts"] == pytest.approx(9.0) and first["dur"] == pytest.approx(5.25)  # ns -> us
    assert first["args"]["grid"] == [256, 1, 1] and first["args"]["workgroup"] == [64, 1, 1]
    assert first["args"]["category"] == "BLAS"
    zero = next(e for e in kernels if e["args"]["row"] == 2)
    assert zero["dur"] == 0
    # Three (agent, queue, stream) tracks in two agent processes; API calls on host threads 7 and 8.
    assert counts.tracks == 3
    assert len({(e["pid"], e["tid"]) for e in kernels}) == 3
    assert len({e["pid"] for e in kernels}) == 2
    api = [e for e in by_phase["X"] if e["cat"] == "hip_api"]
    assert sorted({e["tid"] for e in api}) == [7, 8]
    assert {e["pid"] for e in api}.isdisjoint({e["pid"] for e in kernels})
    assert api[0]["args"]["stream"] == "0x0"
    assert counts.launch_flows == 3 and len(by_phase["s"]) == 3
    # An untrusted kernel name stays data: JSON-escaped, round-trips unchanged.
    assert any(e["name"] == "<script>alert(1)</script>" for e in kernels)


def test_empty_profile_exports_no_slices(tmp_path):
    trace = Trace.from_rows(start=[], end=[], kernel=[], symbols=[])
    out = tmp_path / "e.json"
    export_perfetto(trace, out)
    doc = json.loads(out.read_text())
    assert doc["traceEvents"] == []


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_profile_format_exports_valid_trace_events(profile, tmp_path):
    from rocm_perf.analysis.critical_path import analyze_critical_path
    from rocm_perf.trace.load import load_trace

    trace = load_trace(profile)
    out = tmp_path / "out.json"
    assert main(["export", str(profile), "--perfetto", str(out)]) == 0
    doc = json.loads(out.read_text())
    by_phase = check_trace_event_format(doc)
    origin = doc["otherData"]["origin_ns"]
    kernels = [e for e in by_phase["X"] if e["cat"] == "kernel"]
    assert len(kernels) == len(trace)
    for e in kernels[:: max(1, len(kernels) // 50)]:
        row = e["args"]["row"]
        assert e["ts"] == pytest.approx((int(trace.start[row]) - origin) / 1000, abs=1e-6)
        assert e["dur"] == pytest.approx((int(trace.end[row]) - int(trace.start[row])) / 1000, abs=1e-6)
        assert e["name"] == trace.symbol_name(row)
        assert isinstance(e["args"]["category"], str) and e["args"]["category"]
    api = [e for e in by_phase["X"] if e["cat"] == "hip_api"]
    assert len(api) == (len(trace.api) if trace.api is not None else 0)
    # The critical-path track holds exactly the analysis' path.
    cp = analyze_critical_path(trace)
    on_track = [e["args"]["row"] for e in by_phase["X"] if e["cat"] == "critical_path"]
    assert on_track == [int(r) for r in cp.path]
    assert sum(e["args"]["on_critical_path"] for e in kernels) == len(set(on_track))
    assert doc["otherData"]["critical_path_ns"] == cp.critical_path_ns


def test_multistream_cross_stream_edges_become_arrows(tmp_path):
    from rocm_perf.trace.load import load_trace

    profile = DATA / "rocpd_v3_multistream.db"
    trace = load_trace(profile)
    out = tmp_path / "ms.json"
    assert main(["export", str(profile), "--perfetto", str(out)]) == 0
    by_phase = check_trace_event_format(json.loads(out.read_text()))
    deps = [e for e in by_phase["s"] if e["cat"] == "dependency"]
    assert deps, "the multi-stream app has event-ordered cross-stream work"
    # Arrow ends sit on different tracks.
    finishes = {e["id"]: e for e in by_phase["f"] if e["cat"] == "dependency"}
    for s in deps:
        f = finishes[s["id"]]
        assert (s["pid"], s["tid"]) != (f["pid"], f["tid"])
    pairs = {(s["args"]["from_row"], s["args"]["to_row"]) for s in deps}
    name = trace.symbol_name
    # produce -> consume is ordered by an event (hipEventRecord / hipStreamWaitEvent): an arrow.
    first_produce = next(r for r in range(len(trace)) if name(r).startswith("produce_kernel"))
    first_consume = next(r for r in range(len(trace)) if name(r).startswith("consume_kernel"))
    first_decoy = next(r for r in range(len(trace)) if name(r).startswith("decoy_kernel"))
    assert (first_produce, first_consume) in pairs
    # The decoy starts 1 us after produce_kernel ends but does not depend on it: no arrow.
    assert trace.start[first_decoy] - trace.end[first_produce] == 1000
    assert not any(b == first_decoy for _, b in pairs)


def test_export_of_a_missing_file_is_one_line_error(tmp_path, capsys):
    assert main(["export", str(tmp_path / "nope.db"), "--perfetto", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocm-perf: error:") and err.count("\n") == 1
    assert not (tmp_path / "o.json").exists()


def test_export_memory_stays_bounded_while_the_file_grows(tmp_path, monkeypatch):
    """Events go to the file chunk by chunk: the export's own allocations (column-sized) stay well below the output, which a list of events would exceed."""
    import tracemalloc

    import rocm_perf.report.perfetto_export as pe

    monkeypatch.setattr(pe, "CHUNK_ROWS", 512)
    monkeypatch.setattr(pe, "WRITE_BUFFER", 1 << 16)
    n = 20_000
    start = np.arange(n, dtype=np.int64) * 1000
    trace = Trace.from_rows(start=start, end=start + 500, kernel=np.zeros(n, dtype=np.int32),
                            symbols=[KernelSymbol("_Z1kv", "k()")], agent=np.zeros(n), queue=np.zeros(n), stream=np.zeros(n))
    out = tmp_path / "m.json"
    tracemalloc.start()
    export_perfetto(trace, out, categories=["other"])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = out.stat().st_size
    assert size > 2_000_000
    assert peak < size / 2, f"export allocated {peak} bytes at its peak for a {size}-byte file"


def test_large_trace_streams_to_file(tmp_path):
    n = 50_000
    rng = np.random.default_rng(1)
    start = np.cumsum(rng.integers(100, 2_000, n))
    trace = Trace.from_rows(
        start=start, end=start + rng.integers(50, 900, n), kernel=rng.integers(0, 2, n),
        symbols=[KernelSymbol("a", "a"), KernelSymbol("b", "b")], agent=np.zeros(n), queue=rng.integers(0, 4, n),
        stream=rng.integers(0, 4, n),
    )
    out = tmp_path / "big.json"
    counts = export_perfetto(trace, out)
    assert counts.kernel_slices == n and counts.tracks == 16
    doc = json.loads(out.read_text())
    assert len(doc["traceEvents"]) == n + 2 + 2 * 16
