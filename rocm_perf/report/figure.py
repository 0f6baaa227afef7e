"""One way to turn a matplotlib figure into the SVG the reports hold (inline in the HTML page, a file
under figures/ for a pull request to embed).

Every figure has a title and labelled axes: `svg_figure` refuses one without, so a figure cannot
reach a report unlabelled. The SVG keeps its text as text (`svg.fonttype: none`: small, searchable,
readable by a screen reader), starts with a <title> and carries role="img" and an aria-label
naming the title and the axes. Its ids are prefixed with a hash of the figure's name so that many figures can
share one HTML page. Text from the run (kernel names, reasons) is escaped by matplotlib's SVG
writer and never parsed as mathtext.
"""

from __future__ import annotations

import functools
import hashlib
import io
import math
import re
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # no display, ever
import matplotlib.pyplot as plt  # noqa: E402
from markupsafe import Markup, escape  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogFormatter  # noqa: E402

STYLE = {
    "svg.fonttype": "none",  # text stays <text>: a tenth of the size of glyph paths
    "svg.hashsalt": "rocm-perf",  # the same figure gives the same file
    "text.parse_math": False,  # a `$` in a kernel name is a dollar sign
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],  # matplotlib measures with DejaVu; short in every <text>
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "axes.axisbelow": True,  # grid lines behind the bars
    "figure.dpi": 96,
}

# One palette for every figure: the baseline, the candidate / final program, and the verdicts.
BASELINE = "#4c72b0"
CANDIDATE = "#dd8452"
ACCEPTED = "#2a9d55"
SLOWER = "#c0392b"
NOT_SIGNIFICANT = "#8c8c8c"
INCONCLUSIVE = "#e0a800"
OTHER_REJECTION = "#8e6bb8"
CRITICAL_PATH = "#111111"


def verdict_color(decision: str, reason: str) -> str:
    """The colour of a candidate by what was decided (and, for a rejection, why)."""
    if decision == "accepted":
        return ACCEPTED
    words = (reason or "").lower()
    if words.startswith("slower"):
        return SLOWER
    if words.startswith("not significant"):
        return NOT_SIGNIFICANT
    if words.startswith("inconclusive"):
        return INCONCLUSIVE
    return OTHER_REJECTION


@dataclass
class Figure:
    """A finished figure: its file name (stem.svg), title, axis labels and SVG document."""

    stem: str
    title: str
    axes: list[tuple[str, str]]  # (x label, y label) of each labelled panel
    svg: str  # the <svg> element, standalone (the file adds an XML declaration)

    @property
    def file_name(self) -> str:
        return f"{self.stem}.svg"

    def inline(self) -> Markup:
        """The figure for the HTML page (its text was escaped by the SVG writer)."""
        return Markup(self.svg)

    def file_text(self) -> str:
        return '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + self.svg + "\n"


def styled(draw):
    """Decorator: `draw` runs in the report's matplotlib style (everything it creates takes it)."""

    @functools.wraps(draw)
    def in_style(*args, **kwargs):
        with plt.rc_context(STYLE):
            return draw(*args, **kwargs)

    return in_style


def new_figure(width_in: float, height_in: float, **subplots):
    """A figure and its axes (plt.subplots arguments); call it inside a @styled function."""
    return plt.subplots(figsize=(width_in, height_in), **subplots)


def _labelled_axes(fig) -> list[tuple[str, str]]:
    """(x label, y label) of every axes that draws data; ValueError naming the first without."""
    labels = []
    for ax in fig.get_axes():
        if not ax.get_visible() or not ax.axison:
            continue
        x, y = ax.get_xlabel().strip(), ax.get_ylabel().strip()
        if not x or not y:
            raise ValueError(f"figure axes {ax.get_title()!r} lack an axis label (x {x!r}, y {y!r})")
        labels.append((x, y))
    if not labels:
        raise ValueError("figure has no labelled axes")
    return labels


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def _power_of_ten(value: float, _pos=None) -> str:
    """A log axis's major tick as plain text: 10 with a superscript exponent (10\u00b9\u2075), else the number."""
    if value <= 0:
        return ""
    exponent = math.log10(value)
    if abs(exponent - round(exponent)) < 1e-9:
        return "10" + str(round(exponent)).translate(_SUPERSCRIPT)
    return f"{value:g}"


def _plain_log_ticks(fig) -> None:
    """Log axes label their ticks with mathtext by default, which the report's style does not parse
    (a `$` in a kernel name must stay a dollar sign): plain-text labels instead."""
    for ax in fig.get_axes():
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                axis.set_major_formatter(FuncFormatter(_power_of_ten))
                axis.set_minor_formatter(LogFormatter(labelOnlyBase=False))


def svg_figure(fig, stem: str, title: str) -> Figure:
    """`fig` as a report Figure named `stem` (closed afterwards). The title is drawn as the
    figure's suptitle unless an axes already shows it; refuses a figure without axis labels."""
    try:
        if not title.strip():
            raise ValueError(f"figure {stem} has no title")
        axes = _labelled_axes(fig)
        for ax in fig.get_axes():  # ids the browser test (and a screen reader's tree) can find
            ax.xaxis.label.set_gid("x-label")
            ax.yaxis.label.set_gid("y-label")
        _plain_log_ticks(fig)
        with plt.rc_context(STYLE):
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    finally:
        plt.close(fig)
    return Figure(stem, title, axes, _tidy_svg(buffer.getvalue(), stem, title, axes))


_TAG = re.compile(r"<[^>]+>")


def _tidy_svg(text: str, stem: str, title: str, axes: list[tuple[str, str]]) -> str:
    """The bare <svg> element: no XML prolog or metadata; ids prefixed; a <title> and aria-label."""
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    # Short and unique per figure name: ids repeat in every element, and one page holds many figures.
    prefix = "f" + hashlib.sha1(stem.encode()).hexdigest()[:8]

    def prefixed(tag: re.Match) -> str:
        t = tag.group(0)
        t = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', t)
        t = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m.group(1)}"', t)
        return re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", t)

    text = _TAG.sub(prefixed, text)
    described = "; ".join(f"x axis: {x}; y axis: {y}" for x, y in axes)
    label = escape(f"{title}. {described}")
    root_end = text.index(">") + 1
    root = text[:root_end].replace("<svg ", f'<svg role="img" aria-label="{label}" class="figure" ', 1)
    return root + f"\n <title>{escape(title)}</title>" + text[root_end:]
