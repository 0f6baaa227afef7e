"""The roofline of each kernel from hardware counters: FLOPs by data type, bytes per memory level,
arithmetic intensity, achieved rates, peaks with their source, the binding roof and the headroom.

Per dispatch, each quantity is its counter formula (analysis/arch/<arch>.toml). Per kernel (by
display name, as the kernel table groups them), quantities are summed over the kernel's dispatches
that have every counter the profile collected for it and a positive duration, and the rates are
those sums over the summed duration of the same dispatches ("sums over dispatches, then ratios").

The resources a kernel can be bound by are the memory levels (hbm, l2, vl1d, lds: bytes / peak) and
the two compute pipes (valu, mfma: the sum over the pipe's data types of FLOPs / that type's peak).
Each one alone takes at least its "time at peak"; the largest of those is the roofline's bound, and
`1 - max(time at peak) / time` is the headroom: the fraction of the kernel's time the roofline allows
to save (the largest speed-up is 1 / (1 - headroom)).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from rocm_perf.analysis.counter_formula import Formula, evaluate, missing_counters
from rocm_perf.analysis.gpu_arch import MEMORY_LEVELS, ArchSpec, Device, Peak, arch_spec, device_of, resolve_peaks
from rocm_perf.analysis.occupancy import Occupancy, theoretical_occupancy
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Agent, Trace

COMPUTE_UNITS = ("valu", "mfma")
RESOURCES = (*MEMORY_LEVELS, *COMPUTE_UNITS)


@dataclass
class DeviceContext:
    """One GPU of the profile as the roofline sees it."""

    agent_id: int
    spec: ArchSpec
    device: Device
    peaks: dict[str, Peak]


@dataclass
class KernelRoofline:
    """The numbers of one kernel; `classify` (bottlenecks.py) adds its bound and findings."""

    name: str
    symbol: str
    agent_id: int
    arch: str
    dispatches: int
    duration_ns: int  # every dispatch of the kernel
    share: float  # of the profile's summed kernel time
    measured_dispatches: int  # dispatches the rates come from
    measured_ns: int
    zero_duration: int  # dispatches with counters left out for a duration <= 0
    flops: dict[str, float | None]  # data type -> FLOPs (integer types: ops); None: not collected
    bytes: dict[str, float | None]  # level -> bytes; None: not collected
    other: dict[str, float | None]  # waves, LDS conflict cycles, ...
    integer_types: tuple[str, ...]
    flop_peak: dict[str, str]  # data type -> the peak it is measured against
    peaks: dict[str, Peak]
    missing: list[str]  # required counters the profile lacks for this kernel
    optional_missing: list[str]
    waves_per_cu: float | None
    waves_source: str
    occupancy: Occupancy | None
    scratch_bytes: int | None
    vgpr_spill: int | None = None
    sgpr_spill: int | None = None
    # filled by classify()
    bound: dict = field(default_factory=dict)
    findings: list[dict] = field(default_factory=list)
    blocks: set[str] = field(default_factory=set)

    # ---- derived -----------------------------------------------------------------------------

    @property
    def measured_s(self) -> float:
        return self.measured_ns * 1e-9

    @property
    def have_roofline(self) -> bool:
        return self.measured_ns > 0 and any(v is not None for v in [*self.flops.values(), *self.bytes.values()])

    @property
    def flops_total(self) -> float | None:
        """Floating-point operations of every type (integer ops are reported apart, as rocprof-compute does)."""
        values = [v for k, v in self.flops.items() if v is not None and k not in self.integer_types]
        return float(sum(values)) if values else None

    def intensity(self) -> dict[str, float | None]:
        total = self.flops_total
        return {level: (total / b if total is not None and b else None) for level, b in self.bytes.items()}

    def achieved(self) -> dict[str, dict[str, float | None]]:
        s = self.measured_s

        def rate(v):
            return v / s if v is not None and s > 0 else None

        flops = {k: rate(v) for k, v in self.flops.items()}
        flops["total"] = rate(self.flops_total)
        return {"flops_per_s": flops, "bytes_per_s": {k: rate(v) for k, v in self.bytes.items()}}

    def time_at_peak_s(self) -> dict[str, float]:
        """Resource -> the least time it alone needs for this kernel's work, at its peak."""
        out: dict[str, float] = {}
        for level, amount in self.bytes.items():
            peak = self.peaks.get(level)
            if amount is not None and peak is not None:
                out[level] = amount / peak.value
        for unit in COMPUTE_UNITS:
            times = [amount / self.peaks[self.flop_peak[dtype]].value for dtype, amount in self.flops.items()
                     if dtype.startswith(unit + "_") and amount is not None and self.flop_peak[dtype] in self.peaks]
            if times:
                out[unit] = float(sum(times))
        return out

    def utilization(self) -> dict[str, float]:
        """Resource -> achieved / peak over the measured time (0..1, above 1 when a peak is too low)."""
        s = self.measured_s
        return {r: t / s for r, t in self.time_at_peak_s().items()} if s > 0 else {}

    def top(self) -> tuple[str | None, float]:
        util = self.utilization()
        if not util:
            return None, 0.0
        best = max(RESOURCES, key=lambda r: (util.get(r, -1.0), -RESOURCES.index(r)))
        return best, util[best]

    def top_dtype(self, unit: str) -> str | None:
        """The data type of a compute pipe that takes it the most time."""
        shares = {d: a / self.peaks[self.flop_peak[d]].value for d, a in self.flops.items()
                  if d.startswith(unit + "_") and a and self.flop_peak[d] in self.peaks}
        return max(shares, key=shares.get) if shares else None

    def headroom(self) -> dict | None:
        top, util = self.top()
        if top is None or util <= 0:
            return None
        fraction = min(1.0, max(0.0, 1.0 - util))
        return {
            "fraction": fraction,
            "speedup": (1.0 / util) if util < 1 else 1.0,
            "time_at_roof_ns": util * self.measured_ns,
            "limited_by": top,
        }

    def to_json(self) -> dict:
        """The kernel's entry of analysis.json: exactly the documented keys."""
        return {
            "name": self.name,
            "dispatches": self.dispatches,
            "duration_ns": self.duration_ns,
            "flops": {**self.flops, "total": self.flops_total},
            "bytes": dict(self.bytes),
            "intensity": self.intensity(),
            "achieved": self.achieved(),
            "peaks": {k: p.to_json() for k, p in self.peaks.items()},
            "bound": dict(self.bound),
            "headroom": self.headroom(),
            "findings": [dict(f) for f in self.findings],
        }


# ---- building the per-kernel numbers ------------------------------------------------------------


def device_contexts(trace: Trace, *, arch: str | None = None, user_peaks: dict | None = None,
                    user_from: str = "", shown: str = "") -> dict[int, DeviceContext]:
    """Every GPU agent the dispatches ran on, with its architecture's facts and its peaks.

    `arch` stands in for agents whose architecture the profile does not name (rocprofv3 CSV);
    it may not contradict one the profile names."""
    contexts: dict[int, DeviceContext] = {}
    for agent_id in sorted(set(trace.agent.tolist())):
        agent = trace.agent_by_id(int(agent_id))
        if agent and agent.type.upper() == "CPU":
            raise RocmPerfError(f"{shown}: the kernels ran on a CPU agent ({agent.product or agent.name}), as the host "
                                "backend runs them: there are no GPU hardware counters to analyze")
        named = (agent.name if agent else "").strip()
        if arch and named and _arch_differs(named, arch):
            raise RocmPerfError(f"{shown}: the profile ran on {named}, not --arch {arch}")
        spec = arch_spec(named or arch or "", shown=shown)
        device = device_of(agent if agent else Agent(int(agent_id), "GPU", spec.arch), spec)
        measured = agent.measured_peaks if agent else {}
        peaks = resolve_peaks(spec, device, measured, (agent.extra.get("measured_peaks_from", "") if agent else ""),
                              user_peaks, user_from)
        contexts[int(agent_id)] = DeviceContext(int(agent_id), spec, device, peaks)
    return contexts


def _arch_differs(named: str, arch: str) -> bool:
    try:
        return arch_spec(named).arch != arch_spec(arch).arch
    except RocmPerfError:
        return named.split(":")[0] != arch


def _sum_where(values: np.ndarray, rows: np.ndarray) -> float:
    return float(values[rows].sum())


def kernel_rooflines(trace: Trace, contexts: dict[int, DeviceContext], *, kernel_regex: str | None = None,
                     resources: dict[str, dict] | None = None, shown: str = "") -> list[KernelRoofline]:
    """One KernelRoofline per kernel display name (largest total time first), optionally only those
    whose name matches `kernel_regex`. `resources`: compile-check figures by kernel name."""
    if len(trace) == 0:
        raise RocmPerfError(f"{shown}: the profile holds no kernel dispatches")
    pattern = None
    if kernel_regex:
        try:
            pattern = re.compile(kernel_regex)
        except re.error as e:
            raise RocmPerfError(f"--kernel {kernel_regex!r}: not a regular expression ({e})") from None
    # Dispatch rows grouped by display name with one stable sort (a million rows stay cheap).
    group_of: dict[str, int] = {}
    symbol_group = np.array([group_of.setdefault(s.display_name, len(group_of)) for s in trace.symbols], dtype=np.int64)
    row_group = symbol_group[trace.kernel]
    order = np.argsort(row_group, kind="stable")
    bounds = np.searchsorted(row_group[order], np.arange(len(group_of) + 1))
    duration = (trace.end - trace.start).astype(np.int64)
    total_ns = int(duration.sum())
    groups = {name: order[bounds[g]:bounds[g + 1]] for name, g in group_of.items() if bounds[g + 1] > bounds[g]}
    if pattern is not None:
        groups = {n: r for n, r in groups.items() if pattern.search(n)}
        if not groups:
            listed = ", ".join(sorted(group_of)[:6])
            raise RocmPerfError(f"{shown}: no kernel matches --kernel {kernel_regex!r} (kernels: {listed})")
    quantities: dict[str, dict[str, np.ndarray | None]] = {}  # arch -> formula key -> column
    out = []
    for name, rows in groups.items():
        agents, counts = np.unique(trace.agent[rows], return_counts=True)
        ctx = contexts[int(agents[np.argmax(counts)])]
        spec = ctx.spec
        if spec.arch not in quantities:
            params = ctx.device.params()
            quantities[spec.arch] = {f.key: evaluate(f, trace.counters, params, len(trace)) for f in spec.formulas()}
        columns = quantities[spec.arch]
        sym = trace.symbols[int(trace.kernel[rows[0]])]
        out.append(_kernel(trace, name, sym, rows, duration, total_ns, ctx, columns, (resources or {})))
    out.sort(key=lambda k: (-k.duration_ns, k.name))
    return out


def _kernel(trace, name, sym, rows, duration, total_ns, ctx: DeviceContext, columns, resources) -> KernelRoofline:
    spec = ctx.spec
    finite = {f.key: np.isfinite(columns[f.key][rows]) for f in spec.formulas() if columns[f.key] is not None}

    def available(f: Formula) -> bool:
        return f.key in finite and bool(finite[f.key].any())

    unavailable = [f for f in spec.formulas() if not available(f)]
    kernel_counters = {k: v[rows] for k, v in trace.counters.items()} if unavailable else {}
    roof = [f for f in [*spec.flops.values(), *spec.bytes.values()] if available(f)]
    missing = sorted({c for f in unavailable if not f.optional for c in missing_counters(f, kernel_counters)})
    optional_missing = sorted({c for f in unavailable if f.optional for c in missing_counters(f, kernel_counters)})
    complete = np.ones(len(rows), dtype=bool)
    for f in roof:
        complete &= finite[f.key]
    has_counters = complete & bool(roof)
    positive = duration[rows] > 0
    zero_duration = int((has_counters & ~positive).sum())
    measured = rows[has_counters & positive]

    def total(f: Formula) -> float | None:
        if not available(f):
            return None
        return _sum_where(columns[f.key], measured) if len(measured) else None

    flops = {k: total(f) for k, f in spec.flops.items()}
    nbytes = {k: total(f) for k, f in spec.bytes.items()}
    other, other_rows = {}, {}
    for k, f in spec.other.items():
        with_value = rows[finite[f.key]] if f.key in finite else rows[:0]
        other[k] = _sum_where(columns[f.key], with_value) if len(with_value) else None
        other_rows[k] = len(with_value)

    res = _resources_for(resources, name, sym)
    waves_per_cu, waves_source = _waves_per_cu(trace, rows, other.get("waves"), other_rows.get("waves", 0), ctx, spec)
    lds = int(trace.lds_bytes[rows].max()) if trace.lds_bytes is not None else (sym.lds_bytes or 0)
    workgroup = int(np.prod(trace.workgroup[rows[0]]))
    occupancy = theoretical_occupancy(
        spec.occupancy,
        vgpr=res.get("vgpr", sym.vgpr), agpr=res.get("agpr", sym.agpr),
        lds_bytes=max(lds, int(res.get("lds_bytes") or 0)), workgroup_size=workgroup,
        compiler_waves_per_simd=res.get("occupancy"),
    )
    scratch = res.get("scratch_bytes", sym.scratch_bytes)
    return KernelRoofline(
        name=name, symbol=sym.name, agent_id=ctx.agent_id, arch=spec.arch,
        dispatches=len(rows), duration_ns=int(duration[rows].sum()),
        share=float(duration[rows].sum()) / total_ns if total_ns else 0.0,
        measured_dispatches=len(measured), measured_ns=int(duration[measured].sum()) if len(measured) else 0,
        zero_duration=zero_duration, flops=flops, bytes=nbytes, other=other,
        integer_types=tuple(k for k, f in spec.flops.items() if f.integer),
        flop_peak={k: f.peak or k for k, f in spec.flops.items()},
        peaks=dict(ctx.peaks), missing=missing, optional_missing=optional_missing,
        waves_per_cu=waves_per_cu, waves_source=waves_source, occupancy=occupancy,
        scratch_bytes=scratch, vgpr_spill=res.get("vgpr_spill"), sgpr_spill=res.get("sgpr_spill"),
    )


def _resources_for(resources: dict[str, dict], name: str, sym) -> dict:
    """The compile check's figures for this kernel: by display name, mangled name, or name without parameters."""
    for key in (name, sym.name, sym.name.removesuffix(".kd"), name.split("(", 1)[0].split(" ")[-1]):
        if key in resources:
            return {k: v for k, v in resources[key].items() if v is not None}
    return {}


def _waves_per_cu(trace, rows, waves_sum, waves_rows, ctx, spec) -> tuple[float | None, str]:
    """Waves launched per CU per dispatch: SQ_WAVES when collected, else from the grid."""
    cus = ctx.device.cu_count
    if waves_sum is not None and waves_rows:
        return waves_sum / waves_rows / cus, "SQ_WAVES"
    grid, wg = trace.grid[rows].astype(np.float64), trace.workgroup[rows].astype(np.float64)
    if (wg <= 0).any() or (grid <= 0).any():
        return None, ""
    groups = np.prod(np.ceil(grid / wg), axis=1)
    waves = groups * np.ceil(np.prod(wg, axis=1) / ctx.device.wave_size)
    return float(waves.mean()) / cus, "grid and workgroup size"


def dispatch_quantities(trace: Trace, contexts: dict[int, DeviceContext]) -> dict[str, np.ndarray]:
    """Every formula per dispatch (NaN where a dispatch lacks a counter or runs on another architecture)."""
    out: dict[str, np.ndarray] = {}
    for ctx in contexts.values():
        on_agent = trace.agent == ctx.agent_id
        for f in ctx.spec.formulas():
            column = evaluate(f, trace.counters, ctx.device.params(), len(trace))
            if column is None:
                continue
            target = out.setdefault(f.key, np.full(len(trace), np.nan))
            target[on_agent] = column[on_agent]
    return out
