"""Generated rocpd v3 profiles of any size, with the answer the analyses must give.

A single-threaded HIP program launches N kernels onto S streams (stream picked at random), and
between launches records an event on the stream it just launched onto and makes another stream
wait for it (every EVENT_EVERY launches), synchronizes one stream (every STREAM_SYNC_EVERY), an
event (every EVENT_SYNC_EVERY) and the device (every DEVICE_SYNC_EVERY). The generator plays
the program on a simulated GPU for the recorded times, and on the ideal schedule of the dispatch
DAG (dag.py's rules: program order per stream, record/wait edges, host barriers) for the answer:
each dispatch's earliest start, the critical path's length, and per-kernel totals. Nothing of
rocm-perf's analysis is used to make the answer.

`write_profile` writes it as rocprofv3 does (tables with a uuid suffix, dispatches in completion
order, launch calls joined through `rocpd_event.stack_id`, pointer arguments in `rocpd_arg`),
in chunks, so that 10M dispatches take minutes and little memory. Used by tests on small sizes
and by tests/bench/bench_scale.py on large ones.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rocm_perf.trace.rocpd_schema import SCHEMA_VERSION, create_statements, new_uuid, table_name

EVENT_EVERY = 4
STREAM_SYNC_EVERY = 7_919
EVENT_SYNC_EVERY = 5_003
DEVICE_SYNC_EVERY = 10_000
N_KERNELS = 16
STREAM_HANDLE = 0x55D1C0A30000  # + 0x100 * stream: hipStream_t values as a real program has them
EVENT_HANDLE = 0x55D1C0A50000  # + 0x10 * event
N_EVENTS = 64  # events are reused round-robin, as programs reuse a small pool

LAUNCH, RECORD, WAIT, STREAM_SYNC, EVENT_SYNC, DEVICE_SYNC = range(6)
API_NAMES = ["hipLaunchKernel", "hipEventRecord", "hipStreamWaitEvent", "hipStreamSynchronize",
             "hipEventSynchronize", "hipDeviceSynchronize"]


@dataclass
class ScaleProfile:
    """The program's dispatches (in launch order) and API calls (in call order), and the answer."""

    streams: int
    stream: np.ndarray  # per dispatch: stream id 1..S
    kernel: np.ndarray  # per dispatch: symbol 0..N_KERNELS-1
    start: np.ndarray  # recorded on the simulated GPU
    end: np.ndarray
    corr: np.ndarray  # the launch call's correlation id
    api_kind: np.ndarray  # LAUNCH, RECORD, ...
    api_start: np.ndarray
    api_end: np.ndarray
    api_corr: np.ndarray
    api_stream: np.ndarray  # stream id 1..S, 0 for none
    api_event: np.ndarray  # event index, -1 for none
    earliest: np.ndarray  # answer: earliest start per dispatch on the DAG's ideal schedule (from 0)
    critical_path_ns: int  # answer

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    def kernel_totals(self) -> dict[str, tuple[int, int]]:
        """display name -> (calls, summed duration)."""
        calls = np.bincount(self.kernel, minlength=N_KERNELS)
        total = np.zeros(N_KERNELS, dtype=np.int64)
        np.add.at(total, self.kernel, self.duration)
        return {display_name(k): (int(calls[k]), int(total[k])) for k in range(N_KERNELS) if calls[k]}

    def answer(self) -> dict:
        return {"dispatches": int(len(self.start)), "critical_path_ns": self.critical_path_ns,
                "sum_dispatch_ns": int(self.duration.sum()),
                "span_ns": int(self.end.max() - self.start.min()) if len(self.start) else 0,
                "kernels": {k: list(v) for k, v in self.kernel_totals().items()}}


def display_name(k: int) -> str:
    return f"kernel_{k:02d}(float*, int)"


def mangled_name(k: int) -> str:
    return f"_Z9kernel_{k:02d}Pfi.kd"


def generate(n: int, streams: int = 4, seed: int = 0) -> ScaleProfile:
    """Play the program (see the module docstring); returns its profile and the answer."""
    rng = np.random.default_rng(seed)
    stream_of = (rng.integers(1, streams + 1, size=n)).tolist()
    other_of = rng.integers(1, streams, size=n).tolist()  # offset to the stream that waits
    weights = 1.0 / np.arange(1, N_KERNELS + 1)
    kernel = rng.choice(N_KERNELS, size=n, p=weights / weights.sum()).astype(np.int32)
    duration = rng.integers(2_000, 40_000, size=n).tolist()
    start, end, earliest = [0] * n, [0] * n, [0] * n
    corr_of = [0] * n
    kinds, a_start, a_end, a_corr, a_stream, a_event = [], [], [], [], [], []
    gpu_free = [0] * (streams + 1)  # recorded GPU: when each stream is free
    gpu_wait = [0] * (streams + 1)  # recorded GPU: waits imposed on the next launch
    ideal_last = [0] * (streams + 1)  # ideal schedule: finish of each stream's last launch
    ideal_wait = [0] * (streams + 1)
    event_gpu = [0] * N_EVENTS  # what each event captured: recorded end, ideal finish
    event_ideal = [0] * N_EVENTS
    barrier = 0  # ideal schedule: finish of the latest host barrier
    host = 1_000_000_000
    corr = 0
    last_event = -1

    def call(kind: int, length: int, stream: int = 0, event: int = -1) -> int:
        nonlocal host, corr
        corr += 1
        kinds.append(kind)
        a_start.append(host)
        a_end.append(host + length)
        a_corr.append(corr)
        a_stream.append(stream)
        a_event.append(event)
        host += length + 200
        return corr

    for i in range(n):
        s = stream_of[i]
        corr_of[i] = call(LAUNCH, 800, s)
        begin = max(a_end[-1] + 2_000, gpu_free[s], gpu_wait[s])
        gpu_wait[s] = 0
        start[i] = begin
        end[i] = gpu_free[s] = begin + duration[i]
        first = max(ideal_last[s], ideal_wait[s], barrier)
        ideal_wait[s] = 0
        earliest[i] = first
        ideal_last[s] = first + duration[i]
        if streams > 1 and i % EVENT_EVERY == EVENT_EVERY - 1:
            e = (i // EVENT_EVERY) % N_EVENTS
            other = (s - 1 + other_of[i]) % streams + 1
            call(RECORD, 300, s, e)
            event_gpu[e], event_ideal[e] = gpu_free[s], ideal_last[s]
            call(WAIT, 300, other, e)
            gpu_wait[other] = max(gpu_wait[other], event_gpu[e])
            ideal_wait[other] = max(ideal_wait[other], event_ideal[e])
            last_event = e
        if i % STREAM_SYNC_EVERY == STREAM_SYNC_EVERY - 1:
            done = gpu_free[s]
            call(STREAM_SYNC, max(500, done + 500 - host), s)
            barrier = max(barrier, ideal_last[s])
        if last_event >= 0 and i % EVENT_SYNC_EVERY == EVENT_SYNC_EVERY - 1:
            call(EVENT_SYNC, max(500, event_gpu[last_event] + 500 - host), 0, last_event)
            barrier = max(barrier, event_ideal[last_event])
        if i % DEVICE_SYNC_EVERY == DEVICE_SYNC_EVERY - 1:
            call(DEVICE_SYNC, max(500, max(gpu_free) + 500 - host))
            barrier = max(barrier, max(ideal_last))
    i64 = np.int64
    earliest_a = np.asarray(earliest, dtype=i64)
    return ScaleProfile(
        streams=streams, stream=np.asarray(stream_of, dtype=i64), kernel=kernel,
        start=np.asarray(start, dtype=i64), end=np.asarray(end, dtype=i64), corr=np.asarray(corr_of, dtype=i64),
        api_kind=np.asarray(kinds, dtype=np.int8), api_start=np.asarray(a_start, dtype=i64),
        api_end=np.asarray(a_end, dtype=i64), api_corr=np.asarray(a_corr, dtype=i64),
        api_stream=np.asarray(a_stream, dtype=i64), api_event=np.asarray(a_event, dtype=i64),
        earliest=earliest_a, critical_path_ns=int((earliest_a + np.asarray(duration, dtype=i64)).max()) if n else 0,
    )


CHUNK = 200_000


def write_profile(p: ScaleProfile, path: Path) -> Path:
    """Write the profile as a rocpd v3 database (see the module docstring); replaces `path`."""
    path = Path(path)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    guid = new_uuid()
    t = lambda base: table_name(base, guid)  # noqa: E731
    for statement in create_statements(guid):
        con.execute(statement)
    con.executemany(f'INSERT INTO "{t("rocpd_metadata")}" (tag, value) VALUES (?, ?)',
                    [("schema_version", SCHEMA_VERSION), ("uuid", "_" + guid.replace("-", "_")), ("guid", guid)])
    pid, tid = 4242, 4242
    con.execute(f'INSERT INTO "{t("rocpd_info_node")}" (id, hash, machine_id, hostname) VALUES (1, 1, ?, ?)',
                (guid.replace("-", ""), "bench-host"))
    con.execute(f'INSERT INTO "{t("rocpd_info_process")}" (id, nid, ppid, pid, command) VALUES (1, 1, 1, ?, ?)',
                (pid, "./scale_program"))
    con.execute(f'INSERT INTO "{t("rocpd_info_thread")}" (id, nid, ppid, pid, tid, name) VALUES (1, 1, 1, ?, ?, ?)',
                (pid, tid, "main"))
    con.executemany(
        f'INSERT INTO "{t("rocpd_info_agent")}" (id, nid, pid, type, absolute_index, logical_index, type_index, name, '
        f'product_name, extdata) VALUES (?, 1, 1, ?, ?, ?, ?, ?, ?, ?)',
        [(1, "CPU", 0, 0, 0, "cpu", "bench CPU", "{}"),
         (2, "GPU", 1, 1, 0, "gfx942", "AMD Instinct MI300X", json.dumps({"cu_count": 304}))])
    con.executemany(f'INSERT INTO "{t("rocpd_info_queue")}" (id, nid, pid, name) VALUES (?, 1, 1, ?)',
                    [(s, f"Queue {s}") for s in range(1, p.streams + 1)])
    con.executemany(f'INSERT INTO "{t("rocpd_info_stream")}" (id, nid, pid, name, extdata) VALUES (?, 1, 1, ?, ?)',
                    [(s, f"Stream {s}", json.dumps({"stream": hex(STREAM_HANDLE + 0x100 * s)}))
                     for s in range(1, p.streams + 1)])
    con.execute(f'INSERT INTO "{t("rocpd_info_code_object")}" (id, nid, pid, uri) VALUES (1, 1, 1, ?)', ("memory://",))
    con.executemany(
        f'INSERT INTO "{t("rocpd_info_kernel_symbol")}" (id, nid, pid, code_object_id, kernel_name, display_name, '
        f'group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count) '
        f'VALUES (?, 1, 1, 1, ?, ?, 0, 0, 16, ?, 0)',
        [(k + 1, mangled_name(k), display_name(k), 8 + k) for k in range(N_KERNELS)])
    strings = {"": 1, "KERNEL_DISPATCH": 2, "HIP_RUNTIME_API_EXT": 3}
    for name in API_NAMES:
        strings[name] = len(strings) + 1
    con.executemany(f'INSERT INTO "{t("rocpd_string")}" (id, string) VALUES (?, ?)', [(i, s) for s, i in strings.items()])

    n = len(p.start)
    # Dispatches in completion order, as rocprofv3 writes them; event ids 1..n.
    order = np.argsort(p.end, kind="stable")
    for lo in range(0, n, CHUNK):
        rows = order[lo:lo + CHUNK]
        ids = (rows + 1).tolist()
        con.executemany(f'INSERT INTO "{t("rocpd_event")}" (id, category_id, stack_id, parent_stack_id, correlation_id) '
                        f'VALUES (?, 2, ?, 0, 0)', zip(ids, p.corr[rows].tolist()))
        con.executemany(
            f'INSERT INTO "{t("rocpd_kernel_dispatch")}" (id, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, '
            f'stream_id, start, "end", private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, '
            f'workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id) '
            f'VALUES (?, 1, 1, 1, 2, ?, ?, ?, ?, ?, ?, 0, 0, 256, 1, 1, ?, 1, 1, 1, ?)',
            zip(range(lo + 1, lo + 1 + len(rows)), (p.kernel[rows] + 1).tolist(), ids, p.stream[rows].tolist(),
                p.stream[rows].tolist(), p.start[rows].tolist(), p.end[rows].tolist(),
                ((p.kernel[rows].astype(np.int64) + 1) * 65536).tolist(), ids))
    # API calls in call order; event ids after the dispatches'.
    m = len(p.api_start)
    names = np.array([strings[x] for x in API_NAMES], dtype=np.int64)
    for lo in range(0, m, CHUNK):
        hi = min(m, lo + CHUNK)
        event_ids = np.arange(n + 1 + lo, n + 1 + hi, dtype=np.int64)
        con.executemany(f'INSERT INTO "{t("rocpd_event")}" (id, category_id, stack_id, parent_stack_id, correlation_id) '
                        f'VALUES (?, 3, ?, 0, 0)', zip(event_ids.tolist(), p.api_corr[lo:hi].tolist()))
        con.executemany(f'INSERT INTO "{t("rocpd_region")}" (id, nid, pid, tid, start, "end", name_id, event_id) '
                        f'VALUES (?, 1, 1, 1, ?, ?, ?, ?)',
                        zip(range(lo + 1, hi + 1), p.api_start[lo:hi].tolist(), p.api_end[lo:hi].tolist(),
                            names[p.api_kind[lo:hi]].tolist(), event_ids.tolist()))
        con.executemany(f'INSERT INTO "{t("rocpd_arg")}" (event_id, position, type, name, value) VALUES (?, ?, ?, ?, ?)',
                        _arg_rows(p, lo, hi, event_ids))
    con.commit()
    con.close()
    os.replace(tmp, path)
    return path


def _arg_rows(p: ScaleProfile, lo: int, hi: int, event_ids: np.ndarray):
    for k, stream, event, eid in zip(p.api_kind[lo:hi].tolist(), p.api_stream[lo:hi].tolist(),
                                     p.api_event[lo:hi].tolist(), event_ids.tolist()):
        position = 0
        if event >= 0:
            yield eid, position, "hipEvent_t", "event", hex(EVENT_HANDLE + 0x10 * event)
            position += 1
        if stream > 0:
            yield eid, position, "hipStream_t", "stream", hex(STREAM_HANDLE + 0x100 * stream)
        if k == LAUNCH:
            yield eid, position + 1, "unsigned int", "sharedMemBytes", "0"
