"""Classify a kernel from its roofline numbers: its bound and findings, by the rules in
analysis/rules/bottlenecks.toml (package data). Each finding says what was measured, the threshold,
and what usually helps; the rules file documents the names its expressions may use.

`ROCM_PERF_BOTTLENECK_RULES` names another rules file (same layout), for experiments.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
try:
    import tomllib  # novermin: Python 3.11+; tomli below is the same parser for 3.10
except ModuleNotFoundError:
    import tomli as tomllib

import jinja2

from rocm_perf.analysis.gpu_arch import MEMORY_LEVELS
from rocm_perf.analysis.roofline import KernelRoofline
from rocm_perf.errors import RocmPerfError

RULES_FILE = Path(__file__).with_name("rules") / "bottlenecks.toml"
SEVERITIES = ("high", "medium", "low", "info")


def _pct(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value * 100:.0f} %" if value >= 0.1 else f"{value * 100:.1f} %"


def _rate(value: float | None) -> str:
    """1.23e12 -> '1.23 T' (the unit follows in the template)."""
    if value is None or not math.isfinite(value):
        return "n/a "
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:.3g} "


def _num(value: float | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.3g}"


ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
ENV.filters.update(pct=_pct, rate=_rate, num=_num)


@dataclass(frozen=True)
class Rule:
    key: str  # finding id, or bound kind
    when: str
    threshold: float | None
    severity: str = ""
    title: str = ""
    measured: str = ""
    threshold_text: str = ""
    advice: str = ""
    label: str = ""
    explain: str = ""
    blocks: tuple[str, ...] = ()

    def holds(self, context: dict) -> bool:
        try:
            return bool(_expression(self.when)(**context, threshold=self.threshold))
        except jinja2.TemplateError as e:
            raise RocmPerfError(f"bottleneck rule {self.key!r}: cannot evaluate `{self.when}` ({e})") from None

    def render(self, template: str, context: dict) -> str:
        try:
            return _template(template).render(**context, threshold=self.threshold).strip()
        except jinja2.TemplateError as e:
            raise RocmPerfError(f"bottleneck rule {self.key!r}: cannot render {template!r} ({e})") from None


@dataclass(frozen=True)
class Rules:
    bounds: tuple[Rule, ...]
    findings: tuple[Rule, ...]
    path: Path = field(default=RULES_FILE)


@functools.cache
def _template(text: str) -> jinja2.Template:
    return ENV.from_string(text)


@functools.cache
def _expression(text: str):
    return ENV.compile_expression(text, undefined_to_none=False)


def _rule(body: dict, path: Path, kind: str) -> Rule:
    key = body.get("id") or body.get("kind")
    if not key or "when" not in body:
        raise RocmPerfError(f"{path}: every [[{kind}]] needs {'kind' if kind == 'bound' else 'id'} and when")
    severity = body.get("severity", "")
    if kind == "finding" and severity not in SEVERITIES:
        raise RocmPerfError(f"{path}: finding {key}: severity must be one of {', '.join(SEVERITIES)}")
    try:
        _expression(body["when"])
    except jinja2.TemplateSyntaxError as e:
        raise RocmPerfError(f"{path}: rule {key}: `{body['when']}` is not an expression ({e})") from None
    threshold = body.get("threshold")
    return Rule(
        key=key, when=body["when"], threshold=float(threshold) if threshold is not None else None,
        severity=severity, title=body.get("title", ""), measured=body.get("measured", ""),
        threshold_text=body.get("threshold_text", ""), advice=body.get("advice", ""),
        label=body.get("label", key), explain=body.get("explain", ""), blocks=tuple(body.get("blocks", ())),
    )


@functools.cache
def load_rules(path: Path | None = None) -> Rules:
    """The bottleneck rules (the package's file, or ROCM_PERF_BOTTLENECK_RULES, or `path`)."""
    path = Path(path or os.environ.get("ROCM_PERF_BOTTLENECK_RULES") or RULES_FILE)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read the bottleneck rules ({e.strerror or e})") from e
    except tomllib.TOMLDecodeError as e:
        raise RocmPerfError(f"{path}: not a TOML rules file ({e})") from e
    bounds = tuple(_rule(b, path, "bound") for b in data.get("bound", []))
    findings = tuple(_rule(f, path, "finding") for f in data.get("finding", []))
    if not bounds:
        raise RocmPerfError(f"{path}: no [[bound]] rules")
    return Rules(bounds, findings, path)


def rule_context(k: KernelRoofline, *, cu_count: int, simd_per_cu: int, waves_per_simd_max: int) -> dict[str, Any]:
    """The names the rules may use, for one kernel (documented in the rules file)."""
    util = k.utilization()
    top, top_util = k.top()
    achieved = k.achieved()
    if top in MEMORY_LEVELS:
        top_kind, top_achieved = "memory", achieved["bytes_per_s"].get(top)
        intensity = k.intensity().get(top)
        peak = k.peaks.get(top)
    elif top is not None:
        top_kind, intensity = "compute", None
        dtype = k.top_dtype(top)
        top_achieved = sum(v for d, v in achieved["flops_per_s"].items() if d.startswith(top + "_") and v)
        peak = k.peaks.get(k.flop_peak.get(dtype, "")) if dtype else None
    else:
        top_kind, top_achieved, intensity, peak = "none", None, None, None
    conflicts, uncontended = k.other.get("lds_bank_conflict_cycles"), k.other.get("lds_uncontended_cycles")
    occ = k.occupancy
    headroom = k.headroom()
    return {
        "have_roofline": k.have_roofline,
        "top": top or "none",
        "top_kind": top_kind,
        "top_util": top_util,
        "top_dtype": (k.top_dtype(top) if top in ("valu", "mfma") else None) or "",
        "util": util,
        "achieved": top_achieved,
        "peak": peak.value if peak else None,
        "peak_source": peak.source if peak else "",
        "intensity": intensity,
        "headroom": headroom["fraction"] if headroom else None,
        "waves_per_cu": k.waves_per_cu,
        "waves_source": k.waves_source,
        "cu_count": cu_count,
        "simd_per_cu": simd_per_cu,
        "occupancy": occ.waves_per_simd if occ else None,
        "occupancy_limiter": occ.limiter if occ else "",
        "occupancy_detail": occ.detail if occ else "",
        "waves_per_simd_max": waves_per_simd_max,
        "occupancy_compiler": occ.limits.get("compiler") if occ else None,
        "lds_conflict_rate": (conflicts / uncontended) if conflicts is not None and uncontended else None,
        "scratch_bytes": k.scratch_bytes,
        "vgpr_spill": k.vgpr_spill,
        "sgpr_spill": k.sgpr_spill,
        "missing": list(k.missing),
        "optional_missing": list(k.optional_missing),
        "dispatches": k.dispatches,
        "measured_dispatches": k.measured_dispatches,
        "zero_duration": k.zero_duration,
    }


def classify(k: KernelRoofline, context: dict[str, Any], rules: Rules | None = None) -> None:
    """Set the kernel's bound, findings (by severity) and blocks, from the rules."""
    rules = rules or load_rules()
    for rule in rules.bounds:
        if rule.holds(context):
            k.bound = {
                "kind": rule.key,
                "resource": context["top"] if rule.key in ("memory", "compute") else None,
                "label": rule.render(rule.label, context),
                "pct_of_peak": context["top_util"] if k.have_roofline else None,
                "evidence": rule.render(rule.explain, context),
            }
            break
    findings = []
    for order, rule in enumerate(rules.findings):
        if rule.holds(context):
            finding = {
                "rule": rule.key,
                "severity": rule.severity,
                "title": rule.render(rule.title, context),
                "measured": rule.render(rule.measured, context),
                "threshold": rule.render(rule.threshold_text, context),
                "advice": rule.render(rule.advice, context),
            }
            if rule.blocks:
                finding["blocks"] = list(rule.blocks)  # what optimize must not propose for this kernel
            findings.append((SEVERITIES.index(rule.severity), order, finding))
            k.blocks.update(rule.blocks)
    k.findings = [f for _, _, f in sorted(findings, key=lambda t: (t[0], t[1]))]
