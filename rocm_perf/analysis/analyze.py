"""`analyze`'s answer for a whole profile: every kernel's roofline, bound, headroom and findings,
which counters are missing, and the command that collects them.

Pure: a Trace (and optional peaks and compile-check figures) in, an Analysis out. The command
(report/analyze_report.py) prints and writes it; optimize and sweep read its expected values.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from rocm_perf.analysis.bottlenecks import Rules, classify, rule_context
from rocm_perf.analysis.pass_plan import plan_passes
from rocm_perf.analysis.roofline import DeviceContext, KernelRoofline, device_contexts, kernel_rooflines
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Trace
from rocm_perf.trace.names import short_name

SCHEMA = "rocm-perf.analysis/1"


@dataclass
class Analysis:
    profile: str
    format: str
    runtime_ns: int
    devices: dict[int, DeviceContext]
    kernels: list[KernelRoofline]
    missing_counters: list[str] = field(default_factory=list)
    collect_command: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def has_roofline(self) -> bool:
        return any(k.have_roofline for k in self.kernels)

    def kernel(self, name: str) -> KernelRoofline | None:
        return next((k for k in self.kernels if k.name == name or k.symbol == name), None)

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "profile": self.profile,
            "format": self.format,
            "runtime_ns": self.runtime_ns,
            "devices": [{"agent_id": c.agent_id, "family": c.spec.family, **c.device.to_json(),
                         "peaks": {k: p.to_json() for k, p in c.peaks.items()},
                         "kernels": [k.name for k in self.kernels if k.agent_id == c.agent_id]}
                        for c in self.devices.values()],
            "missing_counters": list(self.missing_counters),
            "collect": {"rocprofv3": self.collect_command} if self.collect_command else None,
            "notes": list(self.notes),
            "kernels": [k.to_json() for k in self.kernels],
        }


def analyze_trace(
    trace: Trace,
    *,
    arch: str | None = None,
    kernel_regex: str | None = None,
    user_peaks: dict[str, float] | None = None,
    user_peaks_from: str = "",
    resources: dict[str, dict] | None = None,
    rules: Rules | None = None,
) -> Analysis:
    """The roofline analysis of `trace`. RocmPerfError (one line) for a profile it cannot answer:
    no dispatches, no or unknown architecture, no kernel matching `kernel_regex`, only zero durations."""
    shown = str(trace.metadata.get("source_path") or "profile")
    contexts = device_contexts(trace, arch=arch, user_peaks=user_peaks, user_from=user_peaks_from, shown=shown)
    kernels = kernel_rooflines(trace, contexts, kernel_regex=kernel_regex, resources=resources, shown=shown)
    for k in kernels:
        ctx = contexts[k.agent_id]
        limits = ctx.spec.occupancy
        classify(k, rule_context(k, cu_count=ctx.device.cu_count, simd_per_cu=limits.simd_per_cu,
                                 waves_per_simd_max=limits.waves_per_simd), rules)
    if not any(k.have_roofline for k in kernels) and any(k.zero_duration for k in kernels):
        raise RocmPerfError(f"{shown}: every dispatch with counters has a zero duration (end == start): "
                            "no rates can be computed")
    notes = [f"{k.zero_duration} of {k.dispatches} dispatches of {short_name(k.name)} have a zero duration "
             "and are left out of its rates" for k in kernels if k.zero_duration]
    notes += [f"{k.measured_dispatches} of {k.dispatches} dispatches of {short_name(k.name)} have every counter; "
              "its rates come from those" for k in kernels
              if k.have_roofline and 0 < k.measured_dispatches < k.dispatches - k.zero_duration]
    with_rates = [k for k in kernels if k.have_roofline]
    without = [k for k in kernels if not k.have_roofline and not k.zero_duration]
    if with_rates and without:
        # Counters collected for some kernels only (rocprofv3 --kernel-include-regex): name those kernels,
        # and count as missing only what the measured kernels lack.
        names = ", ".join(short_name(k.name) for k in without[:5]) + (", ..." if len(without) > 5 else "")
        notes.append(f"{len(without)} kernel(s) have no roofline counters (collected for other kernels only?): {names}")
    missing = sorted({c for k in (with_rates or kernels) for c in k.missing})
    optional = sorted({c for k in kernels for c in k.optional_missing} - set(missing))
    if optional and any(k.have_roofline for k in kernels):
        notes.append(f"optional counters not in the profile (their FLOPs are not counted): {', '.join(optional)}")
    command = None
    if missing:
        spec = next(iter(contexts.values())).spec
        command = collect_command(spec.required_counters(), program=trace.metadata.get("command"),
                                  kernel_regex=kernel_regex)
    return Analysis(
        profile=shown, format=str(trace.metadata.get("format", "")), runtime_ns=trace.runtime_ns,
        devices=contexts, kernels=kernels, missing_counters=missing, collect_command=command, notes=notes,
    )


def collect_command(counters: list[str], *, program: str | None = None, kernel_regex: str | None = None,
                    out: str = "counters") -> str:
    """One shell line of rocprofv3 runs, one per pass, that collects `counters` into `out/pmc_<n>/`
    (the layout an input file with one `pmc:` line per pass leaves), which `analyze out` reads."""
    app = program.strip() if program and program.strip() else "PROGRAM ARGS"
    runs = []
    for n, counters_of_pass in enumerate(plan_passes(counters), start=1):
        argv = ["rocprofv3", "--pmc", *counters_of_pass]
        if kernel_regex:
            argv += ["--kernel-include-regex", kernel_regex]
        argv += ["--output-format", "csv", "-d", f"{out}/pmc_{n}", "--"]
        runs.append(" ".join(shlex.quote(a) for a in argv) + " " + app)
    return " && ".join(runs)
