"""The HTML and Markdown reports of a run or a sweep: jinja2 templates, inline SVG, no network.

Kernel names, paths, reasons and diffs are untrusted text. The HTML environment autoescapes;
the only markup marked safe is what this package builds itself (plots, highlighted diffs), and
that escapes its own text. The page carries a Content-Security-Policy that forbids scripts and
every network fetch, so even a mistake cannot reach out.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

import jinja2
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CppLexer

from rocm_perf import __version__
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.durations import duration
from rocm_perf.optimize.run_view import RunView, load_run
from rocm_perf.report.plots import interval_plot, rounds_plot, share_bars
from rocm_perf.sweep.ledger import SWEEP_DB
from rocm_perf.sweep.view import SweepView, load_sweep_view

_TEMPLATES = Path(__file__).parent / "templates"
_FORMATTER = HtmlFormatter(nowrap=True, classobj="hl", cssclass="hl")
_LEXER = CppLexer(stripnl=False, ensurenl=False)


def time_ns(ns: float | None) -> str:
    """A duration for people: ns, us or ms with four significant digits."""
    if ns is None:
        return "n/a"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.4g} us"
    if ns < 1e9:
        return f"{ns / 1e6:.4g} ms"
    return f"{ns / 1e9:.4g} s"


def speedup_text(speedup: float | None, interval: tuple[float, float] | None) -> str:
    if not speedup:
        return "n/a"
    text = f"{speedup:.3f}x"
    if interval:
        text += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
    return text


def dash(value) -> str:
    return "-" if value is None else str(value)


def highlight_diff(diff: str) -> Markup:
    """A unified diff as HTML: C++ highlighting of the code, added/removed/context lines marked."""
    if not diff:
        return Markup('<p class="muted">no diff recorded</p>')
    lines = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++", "diff ", "index ")):
            lines.append(f'<span class="line file">{escape(line)}</span>')
        elif line.startswith("@@"):
            lines.append(f'<span class="line hunk">{escape(line)}</span>')
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "ctx")
            code = highlight(line[1:], _LEXER, _FORMATTER).rstrip("\n")
            lines.append(f'<span class="line {kind}">{escape(line[:1] or " ")}{Markup(code)}</span>')
    return Markup('<pre class="diff hl">' + "".join(lines) + "</pre>")


def md_cell(value) -> str:
    """Text for a Markdown table cell: no pipes, no inline HTML, no line breaks, no code spans."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("|", "\\|").replace("`", "\\`").replace("\r", " ").replace("\n", " ")
    return re.sub(r"([*_\[\]])", r"\\\1", text)


def md_fenced(text: str, language: str = "") -> str:
    """A fenced code block that no backtick run inside the text can close early."""
    text = text or ""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip(chr(10))}\n{fence}"


def _environment(*, autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        trim_blocks=autoescape,  # Markdown keeps line ends after tags: its lines are its structure
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals.update(
        time_ns=time_ns, duration=duration, speedup_text=speedup_text, dash=dash,
        highlight_diff=highlight_diff, rounds_plot=rounds_plot, interval_plot=interval_plot, share_bars=share_bars,
        version=__version__,
    )
    env.filters.update(cell=md_cell, fenced=md_fenced)
    return env


def _roofline_images(run: RunView) -> list[dict]:
    """The run's roofline charts as {"title", "path", "src" (data URI)}: drawn once beside their
    analysis.json; a chart that cannot be drawn becomes a note."""
    import base64
    import json

    from rocm_perf.report.roofline_chart import write_roofline_chart

    images = []
    for entry in run.rooflines:
        analysis = run.path / entry["analysis"]
        svg = analysis.with_name("roofline.svg")
        try:
            if not svg.exists():
                write_roofline_chart(json.loads(analysis.read_text()), analysis.parent, title=entry["title"])
            src = "data:image/svg+xml;base64," + base64.b64encode(svg.read_bytes()).decode()
        except (OSError, ValueError, KeyError) as e:
            run.notes.append(f"{entry['title'].lower()}: not drawn ({e})")
            continue
        images.append({"title": entry["title"], "path": str(svg.relative_to(run.path)), "src": src})
    return images


def _context(view: RunView | SweepView) -> dict:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for run in [view] if isinstance(view, RunView) else view.runs:
        run.roofline_images = _roofline_images(run)
    if isinstance(view, SweepView):
        return {"title": f"sweep {view.name}", "sweep": view, "runs": view.runs, "generated": now}
    return {"title": f"run {view.name}", "sweep": None, "runs": [view], "generated": now}


def render_html(view: RunView | SweepView) -> str:
    """The self-contained page: inline CSS and SVG, no script, no external resource."""
    env = _environment(autoescape=True)
    css = Markup(_FORMATTER.get_style_defs(".hl"))
    return env.get_template("report.html.j2").render(pygments_css=css, **_context(view))


def render_markdown(view: RunView | SweepView) -> str:
    env = _environment(autoescape=False)
    text = env.get_template("report.md.j2").render(**_context(view))
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def resolve_report_target(target: Path, out_root: Path) -> Path:
    """A run or sweep directory, given as a path or as a name under the runs root."""
    for candidate in (target, out_root / target):
        if candidate.is_dir():
            return candidate
    raise RocmPerfError(f"{target}: no such run or sweep directory (looked in . and {out_root})")


def load_view(directory: Path) -> RunView | SweepView:
    """A sweep directory (it has sweep.db) or a run directory (ledger.db / summary.json)."""
    if (directory / SWEEP_DB).exists():
        return load_sweep_view(directory)
    return load_run(directory)


def write_run_html(run_dir: Path) -> None:
    """A finished run's report.html, beside the report.md the loop wrote (the loop's report hook)."""
    write_atomic(Path(run_dir) / "report.html", render_html(load_run(run_dir)))


def write_sweep_reports(sweep_dir: Path) -> None:
    """A sweep's report.html and report.md, from its ledger and its targets' runs (the sweep's hook)."""
    view = load_sweep_view(sweep_dir)
    write_atomic(Path(sweep_dir) / "report.html", render_html(view))
    write_atomic(Path(sweep_dir) / "report.md", render_markdown(view))


def run_report(target: Path, *, html: Path | None = None, markdown: Path | None = None, out_root: Path = Path("runs")) -> int:
    """`rocm-perf report RUN|SWEEP [--html OUT] [--md OUT]`: write both reports, print where."""
    directory = resolve_report_target(target, out_root)
    view = load_view(directory)
    html = html or directory / "report.html"
    markdown = markdown or directory / "report.md"
    write_atomic(html, render_html(view))
    write_atomic(markdown, render_markdown(view))
    print(f"wrote {html}")
    print(f"wrote {markdown}")
    return 0
