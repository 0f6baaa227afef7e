"""The host runtime's raw log (one JSON object per line, written at the program's exit) as a Trace.

Record types (see host_runtime/rocm_perf_host/runtime.h, Tracer::write_log):
  meta      {pid, threads, serial, warp_size}
  kernel    {id, mangled, demangled, naming}   naming: "symbol" | "signature" | "source"
  dispatch  {corr, kernel, stream, grid[3], block[3], shmem, start, end, tid}
  api       {corr, name, start, end, tid, args{...}, digest?}
  marker    {op, message, time, tid, id}   op: push | pop | start | stop | mark (roctx, rocm_perf_host/roctx.h)
  clocks    {cpu_time, probe, perf, pinning, perf_scaled_dispatches}   how the dispatch costs were taken
  dispatch_cost {corr, cpu_ns, instructions?, cycles?, probe_ns?}   (rocm_perf_host/dispatch_clocks.h)
Dispatch costs become the counters HOST_CPU_TIME_NS, HOST_INSTRUCTIONS, HOST_CYCLES and
HOST_PROBE_NS (trace/host_clocks.py), NaN for a dispatch without them; `clocks` goes to the agent's extra.
Markers are paired into ranges as rocprofv3 --marker-trace pairs them: a pop closes the newest
push of its thread, a stop the start with its id; a range still open at exit is not recorded, and
a pop with nothing open is an error (rocprofv3 stops the program there).
Stream ids in dispatches are small integers (0 = null stream); the API arguments hold the
hipStream_t pointer values, as in a rocprofv3 trace.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.host_clocks import HOST_CPU_TIME_NS, HOST_CYCLES, HOST_INSTRUCTIONS, HOST_PROBE_NS
from rocm_perf.trace.model import MARK, PROCESS_RANGE, THREAD_RANGE, UNKNOWN, Agent, ApiCalls, KernelSymbol, Markers, Trace
from rocm_perf.trace.rocpd_read import DIGEST_ARG, parse_pointer

HOST_AGENT_ID = 1


def _records(path: Path) -> dict[str, list[dict]]:
    by_type: dict[str, list[dict]] = {"meta": [], "kernel": [], "dispatch": [], "api": [], "marker": [], "clocks": [],
                                      "dispatch_cost": []}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise RocmPerfError(f"{path}:{number}: not a host runtime log line ({e.msg})") from e
            by_type.setdefault(record.get("type", ""), []).append(record)
    if not by_type["meta"]:
        raise RocmPerfError(f"{path}: not a host runtime log (no meta record)")
    return by_type


def _symbol(record: dict) -> KernelSymbol:
    mangled = record["mangled"]
    # rocprofv3 names a kernel by its code-object symbol, the mangled name with `.kd`.
    name = mangled + ".kd" if record.get("naming") in ("symbol", "signature") else mangled
    return KernelSymbol(name=name, display_name=record["demangled"], vgpr=None, agpr=None, sgpr=None)


def _api_calls(records: list[dict]) -> tuple[ApiCalls, list[str]]:
    records = sorted(records, key=lambda r: (r["start"], r["corr"]))
    names: list[str] = []
    index: dict[str, int] = {}
    n = len(records)
    name = np.zeros(n, dtype=np.int32)
    cols = {k: np.zeros(n, dtype=np.int64) for k in ("start", "end", "tid", "corr")}
    stream = np.full(n, UNKNOWN, dtype=np.int64)
    event = np.full(n, UNKNOWN, dtype=np.int64)
    args: dict[int, dict[str, str]] = {}
    digests: list[str] = []
    for row, r in enumerate(records):
        name[row] = index.setdefault(r["name"], len(names))
        if name[row] == len(names):
            names.append(r["name"])
        for k in cols:
            cols[k][row] = int(r[k])
        a = dict(r.get("args") or {})
        if "stream" in a:
            stream[row] = parse_pointer(a["stream"])
        if "event" in a:
            event[row] = parse_pointer(a["event"])
        if "digest" in r:
            a[DIGEST_ARG] = r["digest"]
            digests.append(r["digest"])
        args[row] = a
    calls = ApiCalls(names, name, cols["start"], cols["end"], cols["tid"], cols["corr"], stream, event, args)
    return calls, digests


def _markers(records: list[dict], shown: str) -> tuple[Markers | None, int]:
    """Ranges and marks from the raw push/pop/start/stop/mark records; and how many ranges were left open."""
    stacks: dict[int, list[dict]] = {}
    started: dict[int, dict] = {}
    rows: list[dict] = []
    pops = 0
    for r in records:
        op, tid, time = r.get("op"), int(r.get("tid", 0)), int(r.get("time", 0))
        if op == "push":
            stacks.setdefault(tid, []).append(r)
        elif op == "pop":
            pops += 1
            stack = stacks.get(tid)
            if not stack:
                raise RocmPerfError(
                    f"{shown}: roctxRangePop on thread {tid} with no range open (pop number {pops}); rocprofv3 stops "
                    "a program at this point (\"roctxRangePop invoked more times than roctxRangePush\"): pair every "
                    "pop with a push on the same thread"
                )
            opened = stack.pop()
            rows.append({"name": opened.get("message", ""), "start": int(opened["time"]), "end": time, "tid": tid,
                         "kind": THREAD_RANGE})
        elif op == "start":
            started[int(r.get("id", 0))] = r
        elif op == "stop":
            opened = started.pop(int(r.get("id", 0)), None)
            if opened is not None:  # a stop with an unknown id closes nothing, as in rocprofv3
                rows.append({"name": opened.get("message", ""), "start": int(opened["time"]), "end": time,
                             "tid": int(opened.get("tid", tid)), "kind": PROCESS_RANGE})
        elif op == "mark":
            rows.append({"name": r.get("message", ""), "start": time, "end": time, "tid": tid, "kind": MARK})
    left_open = sum(len(s) for s in stacks.values()) + len(started)
    return (Markers.from_rows(rows) if rows else None), left_open


def _dispatch_costs(dispatches: list[dict], costs: list[dict]) -> dict[str, list[float]]:
    """The HOST_* counter columns over `dispatches` (in their order), joined by correlation id;
    empty when the log has no costs (a runtime from before the clocks, or an untraced build)."""
    if not costs:
        return {}
    by_corr = {int(c["corr"]): c for c in costs}
    columns: dict[str, list[float]] = {}
    for name, key in ((HOST_CPU_TIME_NS, "cpu_ns"), (HOST_INSTRUCTIONS, "instructions"), (HOST_CYCLES, "cycles"),
                      (HOST_PROBE_NS, "probe_ns")):
        column = [float(by_corr[int(d["corr"])][key]) if key in by_corr.get(int(d["corr"]), {}) else float("nan")
                  for d in dispatches]
        if any(v == v for v in column):  # not all NaN
            columns[name] = column
    return columns


def read_host_log(path: Path, *, program: str | None = None) -> Trace:
    """The Trace of one host-backend run, from its raw log (errors name `program` when given, else the log)."""
    path = Path(path)
    records = _records(path)
    markers, left_open = _markers(records["marker"], program or str(path))
    meta = records["meta"][0]
    kernels = sorted(records["kernel"], key=lambda r: r["id"])
    symbols = [_symbol(r) for r in kernels]
    position = {r["id"]: i for i, r in enumerate(kernels)}
    dispatches = records["dispatch"]
    api, digests = _api_calls(records["api"])

    # The hipStream_t value behind each small stream id, from launches joined to their dispatches.
    launch_stream = {int(api.corr[i]): int(api.stream[i]) for i in range(len(api)) if api.name_of(i) == "hipLaunchKernel"}
    streams: dict[int, dict] = {0: {"name": "Default Stream", "handle": 0}}
    for d in dispatches:
        handle = launch_stream.get(int(d["corr"]))
        streams.setdefault(int(d["stream"]), {"name": f"Stream {d['stream']}", "handle": handle})

    threads = int(meta.get("threads", 1))
    clocks = {k: v for k, v in (records["clocks"][0] if records["clocks"] else {}).items() if k != "type"}
    trace = Trace.from_rows(
        start=[d["start"] for d in dispatches],
        end=[d["end"] for d in dispatches],
        kernel=[position[d["kernel"]] for d in dispatches],
        symbols=symbols,
        agent=[HOST_AGENT_ID] * len(dispatches),
        queue=[d["stream"] for d in dispatches],
        stream=[d["stream"] for d in dispatches],
        corr=[d["corr"] for d in dispatches],
        grid=[[g * b for g, b in zip(d["grid"], d["block"])] for d in dispatches],  # in threads, as rocprofv3
        workgroup=[d["block"] for d in dispatches],
        lds_bytes=[d["shmem"] for d in dispatches],  # dynamic only: g++ does not tell static __shared__ sizes
        agents=[
            Agent(
                id=HOST_AGENT_ID,
                type="CPU",
                name="host",
                product=f"CPU via rocm-perf host runtime ({threads} threads)",
                cu_count=threads,
                extra={"wave_front_size": int(meta.get("warp_size", 64)), "backend": "host",
                       **({"clocks": clocks} if clocks else {})},
            )
        ],
        api=api,
        digests=digests,
        markers=markers,
        counters=_dispatch_costs(dispatches, records["dispatch_cost"]),
        metadata={
            "ranges_open_at_exit": left_open,
            "format": "host-log",
            "source_path": str(path),
            "pid": int(meta.get("pid", 0)),
            "api_trace": True,
            "backend": "host",
            "host_threads": threads,
            "host_serial": bool(meta.get("serial", False)),
            "kernel_naming": {r["mangled"]: r.get("naming", "") for r in kernels},
            "streams": streams,
            "queues": {sid: f"Queue {sid}" for sid in streams},
        },
    )
    return trace
