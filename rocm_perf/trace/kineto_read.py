"""Read PyTorch profiler (Kineto) Chrome-trace JSON: `.json`, `.json.gz`, or a folder of them (one per rank).

What becomes what (category names as PyTorch writes them on ROCm and CUDA alike):
  `kernel`                          -> dispatches (pid = device, tid = stream; `args.stream`, `args.device`)
  `gpu_memcpy`, `gpu_memset`        -> Trace.copies
  `cuda_runtime`, `cuda_driver`     -> API calls (the HIP calls keep the `cuda_runtime` name on ROCm);
                                       `args.correlation` joins a launch to its kernel, as the flow
                                       events (`ac2g`, older `async_cpu_to_gpu`) do
  `user_annotation`                 -> host ranges (record_function, profiler steps, torch roctx)
  `gpu_user_annotation`             -> GPU-side ranges, linked to their host range by `External id`
  `deviceProperties`, `distributedInfo` -> agents and rank metadata
Times are microseconds with up to three decimals (relative to `baseTimeNanoseconds` when the file
has one). They are parsed from the JSON text itself, never through a float: a float64 holds
about 16 digits, and an epoch in microseconds with a fraction needs 19.
"""

from __future__ import annotations

import gc
import gzip
import json
import math
import zlib
from collections import Counter
from contextlib import contextmanager
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.kineto_json import args_of
from rocm_perf.trace.kineto_json import decode as decode_document
from rocm_perf.trace.foreign import INT64_MAX, INT64_MIN
from rocm_perf.trace.model import (
    THREAD_RANGE,
    UNKNOWN,
    Agent,
    ApiCalls,
    KernelSymbol,
    Markers,
    Trace,
)
from rocm_perf.trace.rocpd_read import memory_ops, parse_pointer

GZIP_MAGIC = b"\x1f\x8b"
API_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
FLOW_CATEGORIES = frozenset({"ac2g", "async_cpu_to_gpu"})
COPY_CATEGORIES = frozenset({"gpu_memcpy", "gpu_memset"})
# The Perfetto JSON rocm-perf writes has the same outer shape; reading it back would count its
# critical-path copies twice.
OWN_EXPORT = "rocm-perf"
STREAM_SPACING = 1 << 20  # streams of one device when several devices number theirs alike
# The ranges ids, devices and launch dimensions are read in (anything else counts as absent): wide
# enough for every real value, narrow enough that merged ids (device x stream spacing, correlation
# offsets, grid x block) stay within int64.
ID_BOUND = 1 << 53
DEVICE_BOUND = 1 << 31
DIM_BOUND = 1 << 31


def us_to_ns(value: Any) -> int:
    """A Kineto time in microseconds (an int, or the decimal text of a float) as exact integer ns.

    '1712345678901.123' -> 1712345678901123; more than three decimals round half to even.
    """
    if type(value) is int:
        return value * 1000
    if type(value) is str:
        text = value
        negative = text.startswith("-")
        whole, dot, frac = text.lstrip("+-").partition(".")
        if whole.isdigit() and (not frac or frac.isdigit()) and len(frac) <= 3:
            ns = int(whole) * 1000 + (int(frac.ljust(3, "0")) if frac else 0)
            return -ns if negative else ns
        try:
            return int((Decimal(text) * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))
        except (InvalidOperation, OverflowError) as e:  # text, NaN, Infinity
            raise ValueError(f"not a number: {text[:40]!r}") from e
    if isinstance(value, float):  # a float the caller parsed itself: the best we can do
        if not math.isfinite(value):
            raise ValueError(f"not a finite time: {value!r}")
        return int(round(value * 1000))
    raise ValueError(f"not a time: {value!r}")


def looks_like_kineto(head: bytes) -> bool:
    """True when the first bytes of a (decompressed) file are a Chrome-trace JSON object."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and (b'"traceEvents"' in head or b'"schemaVersion"' in head
                                       or b'"deviceProperties"' in head or b'"displayTimeUnit"' in head)


@contextmanager
def _no_cyclic_gc():
    """A trace is a million small dicts with no cycles: the cyclic collector would walk them again
    and again while they are built (about a quarter of the read time), so pause it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read_document(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            head = f.read(2)
            f.seek(0)
            raw = gzip.decompress(f.read()) if head == GZIP_MAGIC else f.read()
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read ({e.strerror or e})") from e
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise RocmPerfError(f"{path}: damaged gzip file ({e})") from e
    try:
        # floats stay text so that times can be turned into exact nanoseconds (us_to_ns)
        doc = decode_document(raw)
    except json.JSONDecodeError as e:
        where = "the end" if e.pos >= len(raw) - 2 else f"line {e.lineno}, column {e.colno}"
        raise RocmPerfError(f"{path}: not valid JSON at {where} ({e.msg}; a truncated profiler trace?)") from e
    except UnicodeDecodeError as e:
        raise RocmPerfError(f"{path}: not UTF-8 JSON ({e.reason})") from e
    except ValueError as e:
        raise RocmPerfError(f"{path}: JSON without a traceEvents list (not a PyTorch profiler trace)") from e
    del raw
    if isinstance(doc.get("otherData"), dict) and doc["otherData"].get("exporter") == OWN_EXPORT:
        raise RocmPerfError(
            f"{path}: this is rocm-perf's own Perfetto export; pass the profile it was made from instead"
        )
    return doc


class _Rank:
    """Everything one file contributes, before files are merged."""

    def __init__(self, path: Path, doc: dict[str, Any]):
        self.path = path
        self.doc = doc
        base = doc.get("baseTimeNanoseconds")
        self.base_ns = int(base) if isinstance(base, int) else 0
        dist = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
        self.rank = dist.get("rank")
        self.world_size = dist.get("world_size")
        self.backend = dist.get("backend")
        self.kernels: list[tuple] = []  # (start, end, device, stream, name, corr, grid, block, shmem)
        self.copies: list[tuple] = []  # (start, end, device, stream, name, corr, bytes, is_fill)
        self.api: list[tuple] = []  # (start, end, tid, name, corr, stream pointer)
        self.ranges: list[dict[str, Any]] = []  # host user_annotation
        self.gpu_ranges: list[dict[str, Any]] = []  # gpu_user_annotation
        self.flow_start: dict[int, tuple] = {}  # flow id -> (pid, tid, ts)
        self.flow_end: dict[tuple, int] = {}  # (pid, tid, ts) -> flow id
        self.pid: int | None = None
        self.counts: dict[str, int] = {}

    def parse(self) -> None:
        """Sort the events by what they become, then turn each kind into rows (kineto_json.Event)."""
        kernels, api, copies, ranges, gpu_ranges, flows, other = [], [], [], [], [], [], []
        for e in self.doc["traceEvents"]:  # one plain loop: faster than any vectorized sorting tried
            ph = e.ph
            if ph == "X":
                cat = e.cat
                if type(cat) is not str:  # a category that is no text (a list, a number): not one we read
                    other.append(cat)
                elif cat == "kernel":
                    kernels.append(e)
                elif cat in API_CATEGORIES:
                    api.append(e)
                elif cat in COPY_CATEGORIES:
                    copies.append(e)
                elif cat == "user_annotation":
                    ranges.append(e)
                elif cat == "gpu_user_annotation":
                    gpu_ranges.append(e)
                else:
                    other.append(cat)
            elif (ph == "s" or ph == "f") and type(e.cat) is str and e.cat in FLOW_CATEGORIES:
                flows.append(e)
        for cat, count in Counter(map(str, other)).items():
            self.counts[cat] = self.counts.get(cat, 0) + count
        del other
        for e in kernels:
            a = args_of(e)
            self.kernels.append((*self._span(e), _device(e, a), _stream(e, a), str(e.name or ""), _int(a.correlation),
                                 _dims(a.grid), _dims(a.block), _int(a.shared_memory)))
        for e in api:
            if self.pid is None:
                self.pid = _int(e.pid)
            a = args_of(e)
            self.api.append((*self._span(e), _int(e.tid), str(e.name or ""), _int(a.correlation), _pointer(a.stream)))
        for e in copies:
            a = args_of(e)
            self.copies.append((*self._span(e), _device(e, a), _stream(e, a), str(e.name or ""), _int(a.correlation),
                                _int(a.bytes), e.cat == "gpu_memset"))
        for e in ranges:
            start, end = self._span(e)
            self.ranges.append({"name": str(e.name or ""), "start": start, "end": end, "tid": _int(e.tid),
                                "ext": _int(args_of(e).external_id)})
        for e in gpu_ranges:
            start, end = self._span(e)
            a = args_of(e)
            self.gpu_ranges.append({"name": str(e.name or ""), "start": start, "end": end, "device": _device(e, a),
                                    "stream": _stream(e, a), "ext": _int(a.external_id)})
        self._flows = flows
        self._correlate_by_flows()

    def _span(self, e) -> tuple[int, int]:
        """(start, end) in exact ns; a RocmPerfError naming the event when its times are unusable."""
        try:
            ts, dur = e.ts, e.dur
            start = (ts * 1000 if type(ts) is int else us_to_ns(ts)) + self.base_ns
            end = start + (dur * 1000 if type(dur) is int else us_to_ns(dur if dur is not None else 0))
        except ValueError as err:
            raise RocmPerfError(f"{self.path}: event {str(e.name)[:80]!r} has no usable ts/dur ({err})") from err
        if not (INT64_MIN <= start <= INT64_MAX and INT64_MIN <= end <= INT64_MAX):
            raise RocmPerfError(f"{self.path}: event {str(e.name)[:80]!r}: ts/dur beyond the 64-bit range of nanoseconds")
        return start, end

    def _correlate_by_flows(self) -> None:
        """Give kernels and API calls without `args.correlation` the id of the flow that ends/starts on them."""
        if not self._flows or all(k[5] != UNKNOWN for k in self.kernels):
            return
        for e in self._flows:
            try:
                key = (e.pid, e.tid, us_to_ns(e.ts) + self.base_ns)
                flow = _int(e.id)
            except (ValueError, TypeError):
                continue
            if flow == UNKNOWN:  # an id beyond every real one, or none
                continue
            if e.ph == "s":
                self.flow_start[flow] = key
            else:
                self.flow_end[key] = flow
        # GPU events sit at (pid = device, tid = stream, ts = start) in the file; flows point there.
        fixed = []
        for k in self.kernels:
            if k[5] == UNKNOWN:
                flow = self.flow_end.get((k[2], k[3], k[0])) or self.flow_end.get((str(k[2]), str(k[3]), k[0]))
                if flow is not None:
                    k = k[:5] + (flow,) + k[6:]
            fixed.append(k)
        self.kernels = fixed
        by_place = {v: k for k, v in self.flow_start.items()}
        api = []
        for a in self.api:
            flow = by_place.get((self.pid, a[2], a[0])) if a[4] == UNKNOWN else None
            api.append(a if flow is None else a[:4] + (flow,) + a[5:])
        self.api = api


def _pointer(stream: Any) -> int:
    return parse_pointer(stream) if isinstance(stream, str) else UNKNOWN


def _stream(event, args) -> int:
    return _int(args.stream, _int(event.tid))


def _int(value: Any, default: int = UNKNOWN, bound: int = ID_BOUND) -> int:
    """An id as the file gives it (an int, decimal or 0x text): `default` where it is none, or
    beyond +-bound."""
    if type(value) is int:
        return value if -bound < value < bound else default
    if isinstance(value, str):
        try:
            number = int(value, 0) if value.lower().startswith("0x") else int(float(value))
        except (ValueError, OverflowError):
            return default
        return number if -bound < number < bound else default
    return default


def _device(event, args) -> int:
    device = _int(args.device, bound=DEVICE_BOUND)
    return device if device != UNKNOWN else _int(event.pid, bound=DEVICE_BOUND)


def _dims(value: Any) -> tuple[int, int, int]:
    if type(value) is list and len(value) == 3:
        x, y, z = value
        if type(x) is int and type(y) is int and type(z) is int and all(0 < v < DIM_BOUND for v in value):
            return (x, y, z)
        return tuple(max(1, _int(v, 1, bound=DIM_BOUND)) for v in value)
    return (1, 1, 1)


def read_kineto(path: Path) -> Trace:
    """A Trace from one PyTorch profiler trace (`.json` or `.json.gz`)."""
    path = Path(path)
    with _no_cyclic_gc():
        rank = _Rank(path, _read_document(path))
        rank.parse()
        rank.doc["traceEvents"] = []  # parsed: free the events (and the text their args point into)
        trace = _build([rank])
    trace.metadata["source_path"] = str(path)
    return trace


def read_kineto_folder(folder: Path, files: list[Path]) -> Trace:
    """One Trace from several PyTorch profiler traces (one per rank), merged."""
    ranks = []
    with _no_cyclic_gc():
        for path in files:
            rank = _Rank(path, _read_document(path))
            rank.parse()
            rank.doc["traceEvents"] = []  # parsed: free the events before the next rank is read
            ranks.append(rank)
        trace = _build(ranks)
    trace.metadata["source_path"] = str(folder)
    trace.metadata["kineto_files"] = [p.name for p in files]
    return trace


def _build(ranks: list[_Rank]) -> Trace:
    """Merge ranks: devices of different ranks get different agent ids when their device ids collide."""
    if not any(r.kernels or r.copies for r in ranks):
        names = ", ".join(str(r.path) for r in ranks[:3])
        raise RocmPerfError(
            f"{names}: PyTorch profiler trace with no GPU kernels or copies "
            "(profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])"
        )
    devices_seen: dict[int, int] = {}
    agent_of: list[dict[int, int]] = []
    for i, r in enumerate(ranks):
        used = {k[2] for k in r.kernels} | {c[2] for c in r.copies} | {g["device"] for g in r.gpu_ranges}
        mapping = {}
        for d in sorted(used):
            agent = d if d not in devices_seen else (i + 1) * 1000 + d
            devices_seen[agent] = i
            mapping[d] = agent
        agent_of.append(mapping)

    # Stream ids are per device in Kineto; the Trace's are global (the DAG's chains). Keep the file's
    # number where no other device uses it (0 stays the HIP null stream); else make it unique.
    pairs = sorted({(agent_of[i][k[2]], k[3]) for i, r in enumerate(ranks) for k in r.kernels}
                   | {(agent_of[i][c[2]], c[3]) for i, r in enumerate(ranks) for c in r.copies}
                   | {(agent_of[i][g["device"]], g["stream"]) for i, r in enumerate(ranks) for g in r.gpu_ranges})
    agents_of_stream: dict[int, set[int]] = {}
    for agent, stream in pairs:
        agents_of_stream.setdefault(stream, set()).add(agent)
    stream_id = {(a, s): s if len(agents_of_stream[s]) == 1 and s >= 0 else (a + 1) * STREAM_SPACING + max(s, 0)
                 for a, s in pairs}
    # Correlation ids are per process; offset later ranks so ids stay unique after merging.
    corr_offset = []
    offset = 0
    for r in ranks:
        corr_offset.append(offset)
        top = max([k[5] for k in r.kernels] + [a[4] for a in r.api] + [c[5] for c in r.copies] + [0])
        offset += top + 1

    symbols: list[KernelSymbol] = []
    symbol_of: dict[str, int] = {}
    cols: dict[str, list] = {k: [] for k in ("start", "end", "agent", "stream", "kernel", "corr", "grid", "block",
                                             "lds", "tid")}
    api_rows: list[tuple] = []
    copy_rows: list[tuple] = []
    marker_rows: list[dict[str, Any]] = []
    for i, r in enumerate(ranks):
        off = corr_offset[i]
        launch_tid = {a[4]: a[2] for a in r.api if a[4] != UNKNOWN}
        for start, end, device, stream, name, corr, grid, block, shmem in r.kernels:
            agent = agent_of[i][device]
            cols["start"].append(start)
            cols["end"].append(end)
            cols["agent"].append(agent)
            cols["stream"].append(stream_id[(agent, stream)])
            if name not in symbol_of:
                symbol_of[name] = len(symbols)
                symbols.append(KernelSymbol(name=name, display_name=name))
            cols["kernel"].append(symbol_of[name])
            cols["corr"].append(corr + off if corr != UNKNOWN else UNKNOWN)
            cols["grid"].append([g * b for g, b in zip(grid, block)])  # in threads, as rocprofv3 counts
            cols["block"].append(block)
            cols["lds"].append(shmem)
            cols["tid"].append(launch_tid.get(corr, UNKNOWN))
        api_rows += [(s, e, tid, name, c + off if c != UNKNOWN else UNKNOWN, ptr) for s, e, tid, name, c, ptr in r.api]
        for start, end, device, stream, name, corr, nbytes, fill in r.copies:
            agent = agent_of[i][device]
            copy_rows.append((start, end, agent, stream_id[(agent, stream)], name,
                              corr + off if corr != UNKNOWN else UNKNOWN, nbytes, fill))
        host_by_ext: dict[int, int] = {}
        for rng in r.ranges:
            if rng["ext"] != UNKNOWN:
                host_by_ext.setdefault(rng["ext"], len(marker_rows))
            marker_rows.append({"name": rng["name"], "start": rng["start"], "end": rng["end"], "tid": rng["tid"],
                                "kind": THREAD_RANGE})
        for g in r.gpu_ranges:
            agent = agent_of[i][g["device"]]
            marker_rows.append({"name": g["name"], "start": g["start"], "end": g["end"], "kind": THREAD_RANGE,
                                "agent": agent, "stream": stream_id[(agent, g["stream"])],
                                "link": host_by_ext.get(g["ext"], UNKNOWN)})

    lds = np.asarray(cols["lds"], dtype=np.int64)
    trace = Trace.from_rows(
        start=cols["start"], end=cols["end"], kernel=cols["kernel"], symbols=symbols, agent=cols["agent"],
        stream=cols["stream"], corr=cols["corr"], grid=cols["grid"] or np.ones((0, 3)),
        workgroup=cols["block"] or np.ones((0, 3)),
        lds_bytes=lds if len(lds) and bool((lds >= 0).any()) else None, tid=cols["tid"],
        agents=_agents(ranks, agent_of),
        api=_api_calls(api_rows),
        markers=Markers.from_rows(marker_rows) if marker_rows else None,
        copies=memory_ops(copy_rows),
    )
    first = ranks[0]
    trace.metadata.update(
        format="kineto-json",
        hostname=None,
        command=None,
        pid=first.pid,
        api_trace=bool(api_rows),
        api_args=False,  # Kineto keeps the launch's stream at most, never event handles
        streams={n: {"name": f"device {a} stream {s}", "handle": 0 if s == 0 else None} for (a, s), n in stream_id.items()},
        ranks=[{"file": r.path.name, "rank": r.rank, "world_size": r.world_size, "backend": r.backend} for r in ranks],
        distributed_backend=first.backend,
        world_size=first.world_size,
        trace_name=first.doc.get("traceName"),
        kineto_schema_version=first.doc.get("schemaVersion"),
        host_events={k: v for r in ranks for k, v in r.counts.items()},
    )
    return trace


def _agents(ranks: list[_Rank], agent_of: list[dict[int, int]]) -> list[Agent]:
    agents = []
    for i, r in enumerate(ranks):
        listed = r.doc.get("deviceProperties")
        props = {_int(p["id"]): p for p in (listed if isinstance(listed, list) else []) if isinstance(p, dict) and "id" in p}
        for device, agent in sorted(agent_of[i].items(), key=lambda kv: kv[1]):
            p = props.get(device, {})
            arch = str(p.get("gcnArchName") or "").split(":")[0]
            extra = {k: p[k] for k in ("computeMajor", "computeMinor", "totalGlobalMem", "warpSize",
                                        "maxThreadsPerBlock", "sharedMemPerBlock", "regsPerBlock") if k in p}
            extra.update(device_index=device, rank=r.rank)
            if "warpSize" in p:
                extra["wave_front_size"] = p["warpSize"]
            agents.append(Agent(id=agent, type="GPU", name=arch, product=str(p.get("name") or ""),
                                cu_count=_int(p.get("numSms"), 0) or None, extra=extra))
    return agents


def _api_calls(rows: list[tuple]) -> ApiCalls | None:
    if not rows:
        return None
    n = len(rows)
    start, end, tid, name_text, corr, stream = zip(*rows)
    start = np.fromiter(start, dtype=np.int64, count=n)
    order = np.argsort(start, kind="stable")
    distinct = sorted(set(name_text))
    index = {x: i for i, x in enumerate(distinct)}
    name = np.fromiter(map(index.__getitem__, name_text), dtype=np.int32, count=n)
    column = lambda values: np.fromiter(values, dtype=np.int64, count=n)[order]  # noqa: E731
    return ApiCalls(
        names=distinct,
        name=name[order],
        start=start[order],
        end=column(end),
        tid=column(tid),
        corr=column(corr),
        stream=column(stream),
        event=np.full(n, UNKNOWN, dtype=np.int64),
    )
