"""Phases: the kernel table split by roctx ranges (or PyTorch user annotations).

A dispatch belongs to the innermost range open on the thread that launched it, at the moment it
was launched; its phase is the names of every range open there, outermost first, joined with
`/` (`decode/attention`). Push/pop ranges belong to their thread; start/stop ranges (which may
overlap anything and end on another thread) count as open on every thread of the process.

Where the launch comes from, best first:
1. the tracer's own attribution (rocm-trace-lite's `roctxId`);
2. a GPU-side annotation around the kernel on its stream (Kineto `gpu_user_annotation`), named
   by the host range it mirrors;
3. the launch call joined to the dispatch by correlation id (rocpd, RPD, CSV with an API trace):
   its thread and start time;
4. without an API trace, the dispatch's own launching thread (when the format has one) and its
   start time: a kernel that runs after its range closed is then counted outside it (noted).

Ranges named NAME#<number> (PyTorch's `ProfilerStep#1009`, one per iteration) are folded into
NAME#* unless asked not to: one phase per step would make a table per iteration, and two runs of one
job rarely number their steps alike.

Per phase: `gpu_ns` is the kernel time of the dispatches placed in it (nested phases have their
own rows, so phases add up to the total), `wall_ns` how long some thread was inside it (nested
ranges included, concurrent threads counted once).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from rocm_perf.analysis.dag import launch_rows
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import MARK, PROCESS_RANGE, UNKNOWN, Markers, Trace

SEPARATOR = "/"
NO_RANGE = "(no range)"
_NUMBERED = re.compile(r"#\d+$")


def fold_number(name: str) -> str:
    """'ProfilerStep#1009' -> 'ProfilerStep#*'; other names unchanged."""
    return _NUMBERED.sub("#*", name)


@dataclass
class PhaseKernel:
    name: str  # display name
    calls: int
    total_ns: int

    def to_json(self) -> dict:
        return {"name": self.name, "calls": self.calls, "total_ns": self.total_ns}


@dataclass
class Phase:
    name: str  # the range path, outer/inner; NO_RANGE for dispatches outside every range
    wall_ns: int | None  # time some thread spent inside it (None for NO_RANGE)
    gpu_ns: int  # SUM(end - start) of the dispatches placed in it
    dispatches: int
    kernels: list[PhaseKernel]
    instances: int = 0  # how many times the innermost range was entered

    def to_json(self) -> dict:
        return {"name": self.name, "wall_ns": self.wall_ns, "gpu_ns": self.gpu_ns, "dispatches": self.dispatches,
                "instances": self.instances, "kernels": [k.to_json() for k in self.kernels]}


@dataclass
class PhaseTable:
    """Phases in the order they were first entered, NO_RANGE last; `phase_of` is each dispatch's index into
    `paths` (-1: none)."""

    phases: list[Phase]
    paths: list[str]
    phase_of: np.ndarray
    placement: str  # how dispatches were placed (see the module docstring)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Steps:
    """A step function per timeline: after times[i], the open ranges give path paths[i] (-1: none)."""

    times: np.ndarray
    path: np.ndarray
    innermost: np.ndarray
    row_path: dict[int, int] = field(default_factory=dict)  # each range row: the path where it opened

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not len(self.times):
            none = np.full(len(t), -1, dtype=np.int64)
            return none, none.copy()
        i = np.searchsorted(self.times, t, side="right") - 1
        ok = i >= 0
        j = np.maximum(i, 0)
        return np.where(ok, self.path[j], -1), np.where(ok, self.innermost[j], -1)


class _PathIndex:
    """Interned phase paths: a tuple of range names, outermost first, to a small integer."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.index: dict[tuple[str, ...], int] = {}

    def of(self, names: tuple[str, ...]) -> int:
        if names not in self.index:
            self.index[names] = len(self.paths)
            self.paths.append(SEPARATOR.join(names))
        return self.index[names]


def validate_markers(markers: Markers, source: str) -> None:
    """Ranges must not end before they start: a one-line error naming the file otherwise."""
    bad = np.flatnonzero(markers.end < markers.start)
    if len(bad):
        row = int(bad[0])
        raise RocmPerfError(
            f"{source}: range {markers.name_of(row)!r} ends before it starts ({len(bad)} such ranges): "
            "the profile's markers are inconsistent"
        )


def _sweep(markers: Markers, rows: np.ndarray, paths: _PathIndex, fold: bool) -> _Steps:
    """The step function of one timeline over the given range rows (ranges are [start, end))."""
    if not len(rows):
        z = np.zeros(0, dtype=np.int64)
        return _Steps(z, z.copy(), z.copy())
    starts = markers.start[rows]
    ends = markers.end[rows]
    # events at one time: ends first (a range closed at t does not hold what starts at t)
    times = np.concatenate([ends, starts])
    is_start = np.concatenate([np.zeros(len(rows), bool), np.ones(len(rows), bool)])
    which = np.concatenate([rows, rows])
    order = np.lexsort((which, is_start, times))
    # the nesting order of open ranges: by start, the longer (outer) first, then row
    rank = {r: i for i, r in enumerate(rows[np.lexsort((rows, -(ends - starts), starts))].tolist())}
    names = [fold_number(n) for n in markers.names] if fold else markers.names
    label = {r: names[int(markers.name[r])] for r in rows.tolist()}
    open_rows: list[int] = []
    row_path: dict[int, int] = {}
    out_t: list[int] = []
    out_path: list[int] = []
    out_inner: list[int] = []
    times_l = times[order].tolist()
    starts_l = is_start[order].tolist()
    which_l = which[order].tolist()
    last = len(times_l) - 1
    for k, (t, opening, r) in enumerate(zip(times_l, starts_l, which_l)):
        if opening:
            open_rows.append(r)
            mine = rank[r]
            row_path[r] = paths.of(tuple(label[x] for x in sorted(open_rows, key=rank.__getitem__) if rank[x] <= mine))
        elif r in open_rows:
            open_rows.remove(r)
        if k < last and times_l[k + 1] == t:
            continue  # only the state after every event at one time matters
        if open_rows:
            open_rows.sort(key=rank.__getitem__)
            out_path.append(paths.of(tuple(label[x] for x in open_rows)))
            out_inner.append(open_rows[-1])
        else:
            out_path.append(-1)
            out_inner.append(-1)
        out_t.append(t)
    return _Steps(np.asarray(out_t, np.int64), np.asarray(out_path, np.int64), np.asarray(out_inner, np.int64),
                  row_path)


def _launches(trace: Trace, notes: list[str]) -> tuple[np.ndarray, np.ndarray, str]:
    """Per dispatch: the launching thread and the launch time, and how they were found."""
    n = len(trace)
    tid = trace.tid.copy() if trace.tid is not None else np.full(n, UNKNOWN, np.int64)
    time = trace.start.copy()
    how = "kernel start on its launching thread (no API trace)"
    launch = launch_rows(trace)
    matched = launch >= 0
    if trace.api is not None and matched.any():
        tid[matched] = trace.api.tid[launch[matched]]
        time[matched] = trace.api.start[launch[matched]]
        how = "launch call (correlation id)"
        if not matched.all():
            notes.append(f"{int((~matched).sum())} of {n} dispatches have no launch call: placed by their start time")
    elif n:
        notes.append("no API trace: kernels are placed by their start time, so a kernel that ran after its range "
                     "closed counts outside it")
    return tid, time, how


@dataclass
class Placement:
    """Each dispatch's phase (an index into `paths`, -1 outside every range), and what the ranges say."""

    phase_of: np.ndarray
    paths: list[str]
    how: str
    notes: list[str]
    wall_ns: dict[str, int]  # per path: time some thread was inside it (nested phases included)
    instances: dict[str, int]  # per path: how many ranges opened with exactly this path
    first_ns: dict[str, int]  # per path: when it was first entered


def place_dispatches(trace: Trace, *, fold_numbers: bool = True) -> Placement:
    """Put every dispatch in its phase (see the module docstring for the rules)."""
    n = len(trace)
    markers = trace.markers
    notes: list[str] = []
    paths = _PathIndex()
    phase = np.full(n, -1, dtype=np.int64)
    if markers is None or not int((markers.kind != MARK).sum()):
        notes.append("the profile holds no ranges (roctx: profile with rocprofv3 --marker-trace; PyTorch: "
                     "record_function or torch.cuda.nvtx ranges)")
        return Placement(phase, [], "no ranges", notes, {}, {}, {})
    validate_markers(markers, str(trace.metadata.get("source_path") or "profile"))
    is_range = markers.kind != MARK
    on_gpu = markers.on_gpu
    host_rows = np.flatnonzero(is_range & ~on_gpu)
    process_rows = host_rows[markers.kind[host_rows] == PROCESS_RANGE]
    thread_rows = host_rows[markers.kind[host_rows] != PROCESS_RANGE]

    # One timeline per host thread (its push/pop ranges plus the process-wide ones); ranges whose
    # thread the format does not name (UNKNOWN) form one more timeline.
    threads = sorted(set(markers.tid[thread_rows].tolist()))
    host_steps = {t: _sweep(markers, np.concatenate([thread_rows[markers.tid[thread_rows] == t], process_rows]),
                            paths, fold_numbers) for t in threads}
    process_steps = _sweep(markers, process_rows, paths, fold_numbers)
    walls: list[tuple[int, int, int]] = []
    opened: list[tuple[int, int]] = []  # (path, row) of every range, where it opened
    for t, steps in host_steps.items():
        _collect_walls(steps, walls)
        opened += [(steps.row_path[r], r) for r in thread_rows[markers.tid[thread_rows] == t].tolist()]
    if not threads:
        _collect_walls(process_steps, walls)
    opened += [(process_steps.row_path[r], r) for r in process_rows.tolist()]

    remaining = np.ones(n, dtype=bool)
    how = []
    if n and trace.dispatch_range is not None:
        attributed = trace.dispatch_range >= 0
        for row in np.unique(trace.dispatch_range[attributed]).tolist():
            phase[trace.dispatch_range == row] = _path_at_open(markers, row, host_steps, process_steps, paths)
        remaining &= ~attributed
        how.append("the tracer's own range id per dispatch")
    gpu_rows = np.flatnonzero(is_range & on_gpu)
    if n and len(gpu_rows):
        placed_on_gpu = 0
        for agent, stream in sorted(set(zip(markers.agent[gpu_rows].tolist(), markers.stream[gpu_rows].tolist()))):
            rows = gpu_rows[(markers.agent[gpu_rows] == agent) & (markers.stream[gpu_rows] == stream)]
            steps = _sweep(markers, rows, paths, fold_numbers)
            unlinked = [r for r in rows.tolist() if markers.link[r] == UNKNOWN]
            if unlinked:  # a GPU range with no host twin: its own time is its wall time
                _collect_walls(_sweep(markers, np.asarray(unlinked, dtype=np.int64), paths, fold_numbers), walls)
                opened += [(steps.row_path[r], r) for r in unlinked]
            on_this = np.flatnonzero(remaining & (trace.agent == agent) & (trace.stream == stream))
            if not len(on_this):
                continue
            gpu_path, inner = steps.at(trace.start[on_this])
            for row in np.unique(inner[inner >= 0]).tolist():
                link = int(markers.link[row])
                target = _path_at_open(markers, link, host_steps, process_steps, paths) if link != UNKNOWN else -1
                mine = inner == row
                phase[on_this[mine]] = target if target >= 0 else gpu_path[mine]
            remaining[on_this[inner >= 0]] = False
            placed_on_gpu += int((inner >= 0).sum())
        if placed_on_gpu:
            how.append("GPU-side annotations")
    if n and remaining.any() and len(host_rows):
        tid, time, launch_how = _launches(trace, notes)
        how.append(launch_how)
        rows = np.flatnonzero(remaining)
        for t in np.unique(tid[rows]).tolist():
            mine = rows[tid[rows] == t]
            steps = host_steps.get(t)
            if steps is None:
                # a launch from a thread that opened no range: only process-wide ranges hold it, unless
                # the format names no threads at all (then the one timeline holds everything)
                steps = host_steps[threads[0]] if len(threads) == 1 and UNKNOWN in (t, threads[0]) else process_steps
            phase[mine] = steps.at(time[mine])[0]
    instances: dict[str, int] = {}
    first: dict[str, int] = {}
    for p, row in opened:
        if p >= 0:
            name = paths.paths[p]
            instances[name] = instances.get(name, 0) + 1
            first[name] = min(first.get(name, int(markers.start[row])), int(markers.start[row]))
    return Placement(phase, paths.paths, ", then ".join(how) or "no dispatches", notes,
                     _union_walls(walls, paths.paths), instances, first)


def _path_at_open(markers: Markers, row: int, host_steps: dict, process_steps: _Steps, paths: _PathIndex) -> int:
    """The path of the ranges open where (and when) `row` opened, itself included."""
    steps = host_steps.get(int(markers.tid[row]), process_steps)
    return steps.row_path.get(int(row), process_steps.row_path.get(int(row), -1))


def _collect_walls(steps: _Steps, out: list[tuple[int, int, int]]) -> None:
    """Intervals [t_i, t_i+1) with an open path, for that path (ancestors are added when unioned)."""
    t = steps.times.tolist()
    p = steps.path.tolist()
    for i in range(len(t) - 1):
        if p[i] >= 0 and t[i + 1] > t[i]:
            out.append((p[i], t[i], t[i + 1]))


def _union_walls(intervals: list[tuple[int, int, int]], paths: list[str]) -> dict[str, int]:
    """Per path: the union of the time inside it or inside any phase nested in it."""
    by_path: dict[str, list[tuple[int, int]]] = {}
    for p, s, e in intervals:
        name = paths[p]
        parts = name.split(SEPARATOR)
        for depth in range(1, len(parts) + 1):
            by_path.setdefault(SEPARATOR.join(parts[:depth]), []).append((s, e))
    walls = {}
    for name, spans in by_path.items():
        spans.sort()
        total = 0
        cur_s, cur_e = spans[0]
        for s, e in spans[1:]:
            if s > cur_e:
                total += cur_e - cur_s
                cur_s, cur_e = s, e
            elif e > cur_e:
                cur_e = e
        walls[name] = total + cur_e - cur_s
    return walls


def phase_table(trace: Trace, *, fold_numbers: bool = True) -> PhaseTable:
    """The kernel table per phase (see the module docstring); dispatches outside every range form NO_RANGE."""
    placed = place_dispatches(trace, fold_numbers=fold_numbers)
    duration = trace.end - trace.start
    names = [s.display_name or s.name for s in trace.symbols]
    phases = []
    for p in np.unique(placed.phase_of).tolist():
        rows = np.flatnonzero(placed.phase_of == p)
        per: dict[str, list[int]] = {}
        for k, d in zip(trace.kernel[rows].tolist(), duration[rows].tolist()):
            entry = per.setdefault(names[k], [0, 0])
            entry[0] += 1
            entry[1] += d
        kernels = sorted((PhaseKernel(k, c, t) for k, (c, t) in per.items()), key=lambda k: (-k.total_ns, k.name))
        path = placed.paths[p] if p >= 0 else NO_RANGE
        phases.append(Phase(name=path, wall_ns=placed.wall_ns.get(path) if p >= 0 else None,
                            gpu_ns=int(duration[rows].sum()), dispatches=len(rows), kernels=kernels,
                            instances=placed.instances.get(path, 0)))
    # Phases entered but holding no dispatch still show their wall time.
    shown = {ph.name for ph in phases}
    for path, wall in placed.wall_ns.items():
        if path not in shown:
            phases.append(Phase(name=path, wall_ns=wall, gpu_ns=0, dispatches=0, kernels=[],
                                instances=placed.instances.get(path, 0)))
    # in the order the program first entered them (a parent before its children), outside-all last
    never = max(placed.first_ns.values(), default=0) + 1
    phases.sort(key=lambda ph: (ph.name == NO_RANGE, placed.first_ns.get(ph.name, never), ph.name))
    return PhaseTable(phases=phases, paths=placed.paths, phase_of=placed.phase_of, placement=placed.how,
                      notes=placed.notes)
