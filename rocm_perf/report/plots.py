"""Inline SVG plots for the HTML report: pure functions from numbers to markup, no network, no JS.

Every piece of text that goes into the SVG passes through markupsafe's escape, so callers may mark
the result safe for the template.
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

BASELINE_COLOR = "#4c72b0"
CANDIDATE_COLOR = "#dd8452"


def _fmt_us(ns: float) -> str:
    if ns < 1e6:
        return f"{ns / 1e3:.1f} us"
    return f"{ns / 1e6:.2f} ms" if ns < 1e9 else f"{ns / 1e9:.3f} s"


def rounds_plot(baseline_ns: list[float], candidate_ns: list[float], *, width: int = 520, height: int = 200, title: str = "",
                unit: str = "ns") -> Markup:
    """Interleaved round values, baseline vs candidate, one point per round in measurement order;
    `unit` "ns" shows times, anything else (instructions, cycles) counts of it."""
    fmt = _fmt_us if unit == "ns" else (lambda v: f"{v:.4g} {unit}")
    values = [v for v in list(baseline_ns) + list(candidate_ns) if v is not None and math.isfinite(v)]
    if not values:
        return Markup('<p class="muted">no round timings recorded</p>')
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo * 0.95, hi * 1.05 if hi else 1.0
    pad_l, pad_r, pad_t, pad_b = 64, 12, 22, 28
    n = max(len(baseline_ns), len(candidate_ns))
    inner_w, inner_h = width - pad_l - pad_r, height - pad_t - pad_b

    def x(i: int, which: int) -> float:
        # Baseline and candidate of round i sit side by side, in the order they ran (B then C).
        slot = 2 * i + which
        return pad_l + inner_w * (slot + 0.5) / max(1, 2 * n)

    def y(v: float) -> float:
        return pad_t + inner_h * (1 - (v - lo) / (hi - lo))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title or "round timings")}">',
        f'<rect x="{pad_l}" y="{pad_t}" width="{inner_w}" height="{inner_h}" fill="none" stroke="#ccc"/>',
        f'<text x="{pad_l}" y="14" font-size="12">{escape(title)}</text>',
        f'<text x="4" y="{pad_t + 10}" font-size="10">{escape(fmt(hi))}</text>',
        f'<text x="4" y="{pad_t + inner_h}" font-size="10">{escape(fmt(lo))}</text>',
        f'<text x="{pad_l}" y="{height - 6}" font-size="10">round 1</text>',
        f'<text x="{width - pad_r - 60}" y="{height - 6}" font-size="10">round {n}</text>',
    ]
    for which, (series, color, label) in enumerate(((baseline_ns, BASELINE_COLOR, "baseline"), (candidate_ns, CANDIDATE_COLOR, "candidate"))):
        points = [(x(i, which), y(v)) for i, v in enumerate(series) if v is not None and math.isfinite(v)]
        if len(points) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1" opacity="0.5"/>')
        for i, (px, py) in enumerate(points):
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"><title>{label} round {i + 1}: {escape(fmt(series[i]))}</title></circle>')
        lx = width - pad_r - 170 + which * 85
        parts.append(f'<circle cx="{lx}" cy="10" r="4" fill="{color}"/><text x="{lx + 7}" y="14" font-size="11">{label}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def interval_plot(estimate: float | None, low: float | None, high: float | None, *, threshold: float | None = None, width: int = 360, height: int = 46) -> Markup:
    """A ratio (candidate/baseline) with its confidence interval on an axis around 1.0 (no change)."""
    if estimate is None or low is None or high is None:
        return Markup('<span class="muted">no interval</span>')
    finite = [v for v in (low, high, estimate) if math.isfinite(v)]
    span = min(max([abs(v - 1) for v in finite] + [0.02]) * 1.25, 0.9)
    lo, hi = 1 - span, 1 + span
    pad = 10

    def x(v: float) -> float:
        # An interval open on one side (too few rounds) runs to the edge of the axis.
        v = min(max(v, lo), hi) if math.isfinite(v) else (hi if v > 0 else lo)
        return pad + (width - 2 * pad) * (v - lo) / (hi - lo)

    faster = high < 1
    color = "#2a9d55" if faster else ("#c0392b" if low > 1 else "#888")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ci" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="ratio {estimate:.4f} [{low:.4f}, {high:.4f}]">',
        f'<line x1="{pad}" y1="20" x2="{width - pad}" y2="20" stroke="#bbb"/>',
        f'<line x1="{x(1):.1f}" y1="8" x2="{x(1):.1f}" y2="32" stroke="#555" stroke-dasharray="3,2"/>',
        f'<text x="{x(1) - 8:.1f}" y="44" font-size="10">1.0</text>',
    ]
    if threshold is not None and lo < threshold < hi:
        parts.append(f'<line x1="{x(threshold):.1f}" y1="10" x2="{x(threshold):.1f}" y2="30" stroke="#2a9d55" stroke-dasharray="2,2"><title>accept below {threshold:.3f}</title></line>')
    parts += [
        f'<line x1="{x(low):.1f}" y1="20" x2="{x(high):.1f}" y2="20" stroke="{color}" stroke-width="5"/>',
        f'<circle cx="{x(estimate):.1f}" cy="20" r="5" fill="{color}"/>',
        f'<text x="{pad}" y="44" font-size="10">{lo:.3f}</text>',
        f'<text x="{width - pad - 30}" y="44" font-size="10">{hi:.3f}</text>',
        "</svg>",
    ]
    return Markup("".join(parts))


def share_bars(before: float | None, after: float | None, *, width: int = 240, height: int = 36) -> Markup:
    """Critical-path share before and after, as two bars on a 0-100 % scale."""
    if before is None and after is None:
        return Markup('<span class="muted">n/a</span>')
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="share" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="critical-path share">']
    for i, (label, value, color) in enumerate((("before", before, BASELINE_COLOR), ("after", after, CANDIDATE_COLOR))):
        y = 4 + i * 16
        parts.append(f'<text x="0" y="{y + 10}" font-size="10">{label}</text>')
        if value is not None:
            w = max(0.0, min(1.0, value)) * (width - 100)
            parts.append(f'<rect x="40" y="{y}" width="{w:.1f}" height="12" fill="{color}"/>')
            parts.append(f'<text x="{44 + w:.1f}" y="{y + 10}" font-size="10">{value * 100:.1f} %</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
