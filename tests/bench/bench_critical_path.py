"""Benchmark: critical-path analysis over generated multi-stream traces with HIP API events.

Each case runs in its own process (so that peak memory is that case's): it generates a trace of N
dispatches round-robin over S streams, with an hipEventRecord/hipStreamWaitEvent pair every
EVENT_EVERY dispatches (record on the stream just launched onto, wait on the next stream) and a
hipDeviceSynchronize every SYNC_EVERY dispatches, then times `analyze_critical_path`.

    .venv/bin/python tests/bench/bench_critical_path.py            # the full table
    .venv/bin/python tests/bench/bench_critical_path.py --sizes 10000 100000 --streams 4

Prints: dispatches, streams, graph nodes after segment collapse, analysis wall and CPU seconds (the
CPU figure is the fairer one on a shared machine), peak RSS of the process (trace included) and the
peak's growth during the analysis.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.trace.model import ApiCalls, KernelSymbol, Trace  # noqa: E402

EVENT_EVERY = 4
SYNC_EVERY = 10_000
KERNELS = 8


def generated_trace(n: int, streams: int, *, seed: int = 0) -> Trace:
    """A plausible trace: host launches 1 us apart, kernels 2..40 us, dependencies honoured in the times."""
    rng = np.random.default_rng(seed)
    duration = rng.integers(2_000, 40_000, size=n)
    stream_of = np.arange(n) % streams + 1
    names = ["hipLaunchKernel", "hipEventRecord", "hipStreamWaitEvent", "hipDeviceSynchronize"]
    api_name, api_start, api_end, api_corr, api_stream, api_event = [], [], [], [], [], []
    start = np.zeros(n, dtype=np.int64)
    stream_free = [0] * (streams + 1)
    pending = [0] * (streams + 1)  # earliest start imposed by waits
    events_end: dict[int, int] = {}
    host = 0
    corr = 0
    last_on_stream_end = [0] * (streams + 1)
    duration_list = duration.tolist()
    stream_list = stream_of.tolist()
    starts = [0] * n
    for i in range(n):
        s = stream_list[i]
        corr += 1
        api_name.append(0), api_start.append(host), api_end.append(host + 800)
        api_corr.append(corr), api_stream.append(0x1000 + s), api_event.append(-1)
        begin = max(host + 2_000, stream_free[s], pending[s])
        pending[s] = 0
        starts[i] = begin
        stream_free[s] = begin + duration_list[i]
        last_on_stream_end[s] = stream_free[s]
        host += 1_000
        if i % EVENT_EVERY == EVENT_EVERY - 1 and streams > 1:
            event = 0x9000 + (i // EVENT_EVERY) % 64
            other = s % streams + 1
            for kind, stream in ((1, s), (2, other)):
                corr += 1
                api_name.append(kind), api_start.append(host), api_end.append(host + 300)
                api_corr.append(corr), api_stream.append(0x1000 + stream), api_event.append(event)
                host += 400
            events_end[event] = last_on_stream_end[s]
            pending[other] = max(pending[other], events_end[event])
        if i % SYNC_EVERY == SYNC_EVERY - 1:
            done = max(stream_free)
            corr += 1
            api_name.append(3), api_start.append(host), api_end.append(max(host + 500, done + 500))
            api_corr.append(corr), api_stream.append(-1), api_event.append(-1)
            host = api_end[-1] + 100
    start = np.asarray(starts, dtype=np.int64)
    dispatch_corr = np.asarray([c for c, k in zip(api_corr, api_name) if k == 0], dtype=np.int64)
    symbols = [KernelSymbol(f"_Z7kernel{k}Pf", f"kernel{k}(float*)") for k in range(KERNELS)]
    trace = Trace.from_rows(
        start=start,
        end=start + duration,
        kernel=rng.integers(0, KERNELS, size=n),
        symbols=symbols,
        stream=stream_of,
        queue=stream_of,
        corr=dispatch_corr,
    )
    order = np.argsort(np.asarray(api_start), kind="stable")
    trace.api = ApiCalls(
        names,
        np.asarray(api_name, dtype=np.int32)[order],
        np.asarray(api_start, dtype=np.int64)[order],
        np.asarray(api_end, dtype=np.int64)[order],
        np.zeros(len(order), dtype=np.int64),
        np.asarray(api_corr, dtype=np.int64)[order],
        np.asarray(api_stream, dtype=np.int64)[order],
        np.asarray(api_event, dtype=np.int64)[order],
    )
    return trace


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def one_case(n: int, streams: int) -> dict:
    from rocm_perf.analysis.critical_path import analyze_critical_path

    trace = generated_trace(n, streams)
    before = _rss_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak-RSS watermark to now
    t0, c0 = time.perf_counter(), time.process_time()
    result = analyze_critical_path(trace)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _rss_kib("VmHWM")
    assert result.critical_path_ns <= result.sum_dispatch_ns and (result.slack >= 0).all()
    return {
        "dispatches": n,
        "streams": streams,
        "graph_nodes": result.n_graph_nodes,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_mib": peak / 1024,
        "growth_mib": (peak - before) / 1024,
        "cp_over_span": result.path_over_span,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 2_000_000])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--case", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(one_case(*args.case)))
        return
    print(f"events every {EVENT_EVERY} dispatches, device sync every {SYNC_EVERY}")
    header = f"{'dispatches':>10} {'streams':>7} {'graph nodes':>11} {'wall s':>7} {'cpu s':>7} {'peak MiB':>9} {'growth MiB':>10}"
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        for s in args.streams:
            out = subprocess.run(
                [sys.executable, __file__, "--case", str(n), str(s)], capture_output=True, text=True, check=False
            )
            if out.returncode:
                print(f"{n:>10} {s:>7} failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
                continue
            r = json.loads(out.stdout)
            print(
                f"{r['dispatches']:>10} {r['streams']:>7} {r['graph_nodes']:>11} {r['seconds']:>7.2f} {r['cpu_seconds']:>7.2f} "
                f"{r['peak_mib']:>9.0f} {r['growth_mib']:>10.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
