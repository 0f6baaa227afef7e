"""The HTML and Markdown reports of a run or a sweep: jinja2 templates over one `Report` (the
run's record, its figures, its headline), inline SVG, no network.

Both formats render the same data: the HTML page holds the figures inline, the Markdown file links
to the same figures written as files under figures/ beside the page.

Kernel names, paths, reasons and diffs are untrusted text. The HTML environment autoescapes;
the only markup marked safe is what this package builds itself (figures, highlighted diffs), and
that escapes its own text. The page carries a Content-Security-Policy that forbids scripts and
every network fetch, so even a mistake cannot reach out.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from dataclasses import dataclass
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
from rocm_perf.optimize.alternatives import INTRO as ALTERNATIVES_INTRO
from rocm_perf.optimize.run_view import RunView, load_run, speedup_text
from rocm_perf.report.figure import Figure
from rocm_perf.report.run_figures import RunFigures, run_figures
from rocm_perf.report.run_headline import Headline, headline
from rocm_perf.report.sweep_figures import SweepFigures, sweep_figures
from rocm_perf.sweep.ledger import SWEEP_DB
from rocm_perf.sweep.view import SweepView, load_sweep_view

_TEMPLATES = Path(__file__).parent / "templates"
FIGURES_DIR = "figures"  # beside the report: the SVG files a pull request can embed
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


def md_code(value) -> str:
    """Inline code that no backtick in the text can close early (Markdown shows it verbatim: no
    markup, no HTML); one line, and pipes escaped so a table row stays whole."""
    text = ("" if value is None else str(value)).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


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
        time_ns=time_ns, duration=duration, speedup_text=speedup_text, dash=dash, ratio_text=ratio_text,
        highlight_diff=highlight_diff, version=__version__,
    )
    env.filters.update(cell=md_cell, code=md_code, fenced=md_fenced)
    return env


def ratio_text(estimate: float | None, low: float | None, high: float | None) -> str:
    """candidate / baseline with its interval; an interval still open on one side says so."""
    if estimate is None:
        return "not measured"
    if low is None or high is None:
        return f"{estimate:.4f}"
    high_text = "open" if high == float("inf") else f"{high:.4f}"
    return f"{estimate:.4f} [{low:.4f}, {high_text}]"


def _stem_prefix(name: str) -> str:
    """A file-name-safe prefix for a run's figures in a sweep's report (run names are untrusted)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60].strip("._") + "-"


@dataclass
class RunPage:
    """One run as a report shows it: the run's record, its figures, its headline."""

    run: RunView
    figures: RunFigures
    headline: Headline
    index: int


@dataclass
class Report:
    """Everything both templates render: the same data for the HTML page and the Markdown file."""

    title: str
    sweep: SweepView | None
    pages: list[RunPage]
    sweep_figures: SweepFigures | None
    generated: str

    def figures(self) -> list[Figure]:
        out = self.sweep_figures.all() if self.sweep_figures else []
        for page in self.pages:
            out += page.figures.all()
        return out


def build_report(view: RunView | SweepView) -> Report:
    """The report of a run or a sweep: its runs' figures and headlines (drawn once, for both formats)."""
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(view, SweepView):
        runs = view.runs
        pages = [RunPage(r, run_figures(r, _stem_prefix(f"{i}-{r.name}")), headline(r), i) for i, r in enumerate(runs, 1)]
        return Report(f"sweep {view.name}", view, pages, sweep_figures(view), now)
    return Report(f"run {view.name}", None, [RunPage(view, run_figures(view), headline(view), 1)], None, now)


def render_html(view: RunView | SweepView, report: Report | None = None) -> str:
    """The self-contained page: inline CSS and SVG, no script, no external resource."""
    report = report or build_report(view)
    env = _environment(autoescape=True)
    css = Markup(_FORMATTER.get_style_defs(".hl"))
    return env.get_template("report.html.j2").render(pygments_css=css, report=report, **_context(report))


def render_markdown(view: RunView | SweepView, report: Report | None = None, figures_href: str = FIGURES_DIR) -> str:
    """The Markdown report (for a pull request); figures are links to `figures_href`/<name>.svg."""
    report = report or build_report(view)
    env = _environment(autoescape=False)
    text = env.get_template("report.md.j2").render(report=report, figures_href=figures_href.rstrip("/"), **_context(report))
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def _context(report: Report) -> dict:
    return {"title": report.title, "sweep": report.sweep, "pages": report.pages, "generated": report.generated,
            "alternatives_intro": ALTERNATIVES_INTRO}


def write_reports(view: RunView | SweepView, html: Path, markdown: Path) -> list[Path]:
    """report.html, report.md and figures/*.svg beside the HTML page; the paths written."""
    report = build_report(view)
    figures_dir = Path(html).parent / FIGURES_DIR
    written = []
    try:
        for folder in (figures_dir, Path(markdown).parent):
            folder.mkdir(parents=True, exist_ok=True)
        for figure in report.figures():
            path = figures_dir / figure.file_name
            write_atomic(path, figure.file_text())
            written.append(path)
        href = os.path.relpath(figures_dir, Path(markdown).parent).replace(os.sep, "/")
        write_atomic(html, render_html(view, report))
        write_atomic(markdown, render_markdown(view, report, href))
    except OSError as e:
        raise RocmPerfError(f"{e.filename or html}: cannot write the report ({e.strerror or e})") from e
    return [Path(html), Path(markdown), *written]


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


def write_run_reports(run_dir: Path) -> None:
    """A finished run's report.html, report.md and figures/ (the loop's report hook: the Markdown
    replaces the plain one the loop wrote, with the same facts and the figures linked)."""
    run_dir = Path(run_dir)
    write_reports(load_run(run_dir), run_dir / "report.html", run_dir / "report.md")


def write_sweep_reports(sweep_dir: Path) -> None:
    """A sweep's report.html, report.md and figures/, from its ledger and its targets' runs (the sweep's hook)."""
    sweep_dir = Path(sweep_dir)
    write_reports(load_sweep_view(sweep_dir), sweep_dir / "report.html", sweep_dir / "report.md")


RUN_FILES = ("report.md", "report.html", "summary.json", "accepted.diff", "final.cu", "metadata.json", "ledger.db")


def report_files(target: Path, *, out_root: Path = Path("runs"), regenerate: bool = False) -> dict:
    """The report files of a run (or sweep) directory, writing report.html, report.md and the
    figures first when they are missing or `regenerate` asks (as `rocm-perf report` does; only in
    that directory): {"dir", "files": {name: path} of those that exist, "figures": [paths]}."""
    directory = resolve_report_target(Path(target), Path(out_root))
    if regenerate or not (directory / "report.html").exists():
        write_reports(load_view(directory), directory / "report.html", directory / "report.md")
    figures = sorted(str(p) for p in (directory / FIGURES_DIR).glob("*")) if (directory / FIGURES_DIR).is_dir() else []
    return {"dir": str(directory), "files": {n: str(directory / n) for n in RUN_FILES if (directory / n).exists()},
            "figures": figures}


def run_report(target: Path, *, html: Path | None = None, markdown: Path | None = None, out_root: Path = Path("runs")) -> int:
    """`rocm-perf report RUN|SWEEP [--html OUT] [--md OUT]`: write both reports and the figures, print where."""
    directory = resolve_report_target(target, out_root)
    view = load_view(directory)
    html = html or directory / "report.html"
    markdown = markdown or directory / "report.md"
    written = write_reports(view, html, markdown)
    print(f"wrote {html}")
    print(f"wrote {markdown}")
    if len(written) > 2:
        print(f"wrote {len(written) - 2} figures in {Path(html).parent / FIGURES_DIR}")
    return 0
