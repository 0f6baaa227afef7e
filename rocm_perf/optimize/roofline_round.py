"""The roofline's part in the loop: an analysis of the baseline, and what it tells the ranking.

With counters for the baseline (a counter round on a backend that has them, or a profile or
analysis.json the user gave with --analysis), a kernel's expected value is its critical-path share
times its headroom (the fraction of its time the roofline allows to save), and a kernel whose
findings block unrolling (at its memory roof) gets no unroll candidates, with the reason recorded.
Without counters nothing changes: kernels are ranked by critical-path time alone.

Analyses are written as run_dir/analysis/<label>/analysis.json; the report draws their charts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rocm_perf.analysis.analyze import SCHEMA, analyze_trace
from rocm_perf.analysis.gpu_arch import arch_spec
from rocm_perf.atomic_file import write_atomic
from rocm_perf.backends.base import Backend
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.names import short_name

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext

ANALYSIS_DIR = "analysis"


def analysis_path(run_dir: Path, label: str) -> Path:
    return Path(run_dir) / ANALYSIS_DIR / label / "analysis.json"


def load_given(path: Path, arch: str | None) -> dict:
    """--analysis: an analysis.json that `rocm-perf analyze` wrote, or any profile with counters."""
    path = Path(path)
    if path.is_file() and path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise RocmPerfError(f"--analysis {path}: not a readable analysis.json ({e})") from e
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise RocmPerfError(f"--analysis {path}: not an analysis.json of `rocm-perf analyze` (schema {SCHEMA})")
        return data
    trace = load_trace(path)
    named = any(a.name for a in trace.gpu_agents())
    return analyze_trace(trace, arch=None if named else arch).to_json()


def counter_round(backend: Backend, argv: list[str], out_dir: Path, arch: str, timeout: float) -> dict:
    """One counter round of `argv` (every counter the roofline of `arch` needs), analyzed."""
    folder = backend.collect_counters(argv, arch_spec(arch).required_counters(), Path(out_dir), timeout=timeout)
    trace = load_trace(folder)
    named = any(a.name for a in trace.gpu_agents())
    return analyze_trace(trace, arch=None if named else arch).to_json()


def save(run_dir: Path, label: str, data: dict) -> Path:
    path = analysis_path(run_dir, label)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2) + "\n")
    return path


def kernel_verdict(data: dict, symbol: str, kernel: str = "") -> dict | None:
    """What the analysis says of one profiled kernel: {"headroom": fraction or None, "bound": label,
    "blocked": reason unrolling cannot help ("" when it can)}; None when the analysis lacks the kernel."""
    wanted = {symbol, short_name(symbol)} | ({kernel} if kernel else set())
    for k in data.get("kernels", []):
        if k["name"] in wanted or short_name(k["name"]) in wanted:
            headroom = k.get("headroom") or {}
            blocking = [f for f in k.get("findings", []) if "unroll" in f.get("blocks", [])]
            reason = f"{blocking[0]['title']}: {blocking[0]['measured']}; {blocking[0]['advice']}" if blocking else ""
            return {"headroom": headroom.get("fraction"), "bound": (k.get("bound") or {}).get("label", ""),
                    "blocked": reason}
    return None


def record_roofline(ctx: "RunContext", label: str, executable: Path, stage: str) -> None:
    """An analysis of `executable` (the baseline, or the final result), recorded in the ledger under
    `roofline` / `roofline_final` (`stage`: the loop's state, for the progress line). A failure is
    a message, never the end of the run."""
    key = "roofline" if label == "baseline" else "roofline_final"
    if ctx.ledger.get(key) is not None:
        return  # done before the run stopped
    backend = ctx.svc.backend
    arch = getattr(backend, "target_arch", lambda: None)() or ctx.opt.arch
    try:
        if label == "baseline" and ctx.opt.analysis:
            data, how = load_given(ctx.opt.analysis, arch), f"given: {ctx.opt.analysis}"
        elif ctx.opt.counters == "off":
            ctx.ledger.set(key, {"how": "off", "note": "--counters off: kernels ranked by critical-path time alone"})
            return
        elif not backend.has_counters:
            ctx.ledger.set(key, {"how": "none", "note": f"{backend.no_counters_message()}; kernels ranked by critical-path time alone"})
            return
        else:
            ctx.report.stage(stage, "counter round")
            data = counter_round(backend, ctx.program.argv(executable), ctx.run_dir / label / "counters", arch, ctx.opt.timeout_s)
            how = "counter round"
    except RocmPerfError as e:
        ctx.ledger.set(key, {"how": "failed", "note": f"no roofline: {e}"})
        ctx.report.message(f"no roofline for the {label}: {e}")
        return
    path = save(ctx.run_dir, label, data)
    ctx.ledger.set(key, {"how": how, "analysis": ctx.rel(path)})


def roofline_verdict(ctx: "RunContext", symbol: str, kernel: str) -> dict | None:
    """kernel_verdict of the baseline's recorded analysis; None without one."""
    data = ctx.baseline_analysis()
    return None if data is None else kernel_verdict(data, symbol, kernel)
