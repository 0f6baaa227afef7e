"""The HTML/Markdown report: untrusted names render as text; every figure has a title and axis
labels; a real run's page, a 30-candidate run's page and a sweep's page load in Chromium."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import DATA, IN_CI
from rocm_perf.process import run as run_process
from rocm_perf.cli import main
from rocm_perf.report.figure import new_figure, styled, svg_figure
from rocm_perf.report.run_headline import headline
from rocm_perf.report.html import highlight_diff, md_cell, md_code, md_fenced, render_html, render_markdown
from rocm_perf.optimize.measure import metric_kind, metric_meaning
from rocm_perf.optimize.run_view import KernelTime, Resources, RoundPoint, RunView, TrialView, load_run
from rocm_perf.sweep.view import SessionSpan, SweepRow, SweepView, WorkSpan

EVIL = '<script>console.error("xss")</script>'
EVIL_FILE = '/tmp/<img src=x onerror=alert(1)>.cu'


def evil_run() -> RunView:
    rounds = [RoundPoint(phase, i, role, v) for phase in ("screen", "confirm") for i in range(3)
              for role, v in (("B", 10e3 + 100 * i), ("C", 8e3 + 50 * i))]
    accepted = TrialView(
        id="1", kernel=EVIL, loop_id=f"{EVIL}:L1", rule="unroll_pragma", factor=4, decision="accepted",
        reason="significant gain", diff=f"--- a/{EVIL}\n+++ b/{EVIL}\n@@ -1,2 +1,3 @@\n-  x = 1; // {EVIL}\n+#pragma unroll 4\n+  x = 1; // </pre>{EVIL}\n",
        ratio=0.8, ratio_low=0.7, ratio_high=0.9, accept_below=0.98, baseline_rounds=[10e3, 11e3, 10.5e3],
        candidate_rounds=[8e3, 8.2e3, 8.1e3], resources_before=Resources(vgpr=32, occupancy=8, vgpr_spill=0),
        resources_after=Resources(vgpr=36, occupancy=8, vgpr_spill=0), cp_share_before=0.7, cp_share_after=0.6,
        phase="confirm", rounds=rounds, evidence=[(f"factor {EVIL}", f"value {EVIL}")],
    )
    rejected = TrialView(id="2", kernel=EVIL, rule="unroll_manual", factor=8, decision="rejected", reason=f"slower {EVIL}",
                         ratio=1.2, ratio_low=1.1, ratio_high=1.3)
    return RunView(name=f"run-{EVIL}", path=Path("/tmp"), source=EVIL_FILE, backend="host", state="done",
                   baseline_ns=10.5e3, final_ns=8.1e3, ratio=0.77, ratio_low=0.7, ratio_high=0.85,
                   trials=[accepted, rejected], accepted_diff=accepted.diff,
                   environment={"hostname": EVIL, f"key{EVIL}": "v"}, notes=[f"note {EVIL}"], failure="",
                   effective_min_gain=0.02, noise_floor=0.01, confidence=0.95,
                   kernel_times=[KernelTime(EVIL, 10e3, 8e3), KernelTime("k$x$_{2}", 5e3, 5e3)],
                   ranking=[{"symbol": EVIL, "kernel": EVIL, "cp_share": 0.7, "headroom": None, "bound": ""}],
                   top_kernels=[{"symbol": EVIL, "kernel": EVIL, "cp_share": 0.7, "headroom": 0.5, "bound": f"bound {EVIL}"}])


def evil_sweep() -> SweepView:
    run = evil_run()
    return SweepView(name=f"sweep{EVIL}", path=Path("/tmp"), budget_s=3600, used_s=60, state="finished",
                     rows=[SweepRow(target=EVIL, status="done", run=run, used_s=50),
                           SweepRow(target=EVIL_FILE, status="quarantined", reason=EVIL, attempts=3, used_s=10)],
                     sessions=[SessionSpan(1000.0, 1060.0, "finished")],
                     spans=[WorkSpan(EVIL, 1001.0, 1051.0, "done"), WorkSpan(EVIL_FILE, 1051.0, 1059.0, "quarantined")])


class Figures(HTMLParser):
    """The figures of a page: per <svg class="figure">, its <title> and the texts of its axis labels."""

    def __init__(self, page: str):
        super().__init__()
        self.figures: list[dict] = []
        self._svg_depth = 0
        self._capture: str | None = None
        self._label_depth = 0
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg":
            if self._svg_depth == 0 and "figure" in (attrs.get("class") or "").split():
                self.figures.append({"title": "", "x": [], "y": [], "aria": attrs.get("aria-label", ""), "role": attrs.get("role")})
                self._svg_depth = 1
            elif self._svg_depth:
                self._svg_depth += 1
            return
        if not self._svg_depth:
            return
        if tag == "title" and self._capture is None:
            self._capture = "title"
        elif tag == "g" and re.search(r"-(x|y)-label$", attrs.get("id") or ""):
            self._capture = attrs["id"][-7]  # "x" or "y"
            self.figures[-1][self._capture].append("")
            self._label_depth = 1
        elif tag == "g" and self._label_depth:
            self._label_depth += 1

    def handle_endtag(self, tag):
        if tag == "svg" and self._svg_depth:
            self._svg_depth -= 1
        elif tag == "title" and self._capture == "title":
            self._capture = None
        elif tag == "g" and self._label_depth:
            self._label_depth -= 1
            if self._label_depth == 0:
                self._capture = None

    def handle_data(self, data):
        if self._capture == "title":
            self.figures[-1]["title"] += data
        elif self._capture in ("x", "y"):
            self.figures[-1][self._capture][-1] += data


def assert_figures_labelled(page: str, at_least: int) -> list[dict]:
    """Every figure of the page has a title, and every panel an x and a y axis label (non-empty)."""
    figures = Figures(page).figures
    assert len(figures) >= at_least, [f["title"] for f in figures]
    for f in figures:
        assert f["title"].strip() and f["role"] == "img" and f["title"].strip() in f["aria"], f
        assert f["x"] and f["y"] and len(f["x"]) == len(f["y"]), f
        assert all(t.strip() for t in f["x"] + f["y"]), f
    assert "\\mathdefault" not in page  # no mathtext left unparsed (log axes' ticks)
    return figures


def test_untrusted_names_render_as_text_in_html():
    for page in (render_html(evil_run()), render_html(evil_sweep())):
        # The templates hold no script at all, so any "<script" would be injected markup.
        assert "<script" not in page.lower()
        assert "<img" not in page.lower()
        assert "&lt;script&gt;console.error(" in page
        assert "onerror=alert(1)&gt;" in page
        assert page.count("<pre") == page.count("</pre>")
        # No network: nothing is fetched from anywhere, and the policy forbids it anyway.
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
        assert "default-src 'none'" in page
    # The figures hold the names too (axis ticks, titles): escaped by the SVG writer, and a `$`
    # in a name is a dollar sign, not mathtext.
    figures = assert_figures_labelled(render_html(evil_run()), 4)
    assert {"Per kernel: original and final program", "Candidates: 2 measured, 1 accepted",
            "Trial 1: interleaved rounds"} <= {f["title"] for f in figures}
    page = render_html(evil_run())
    svg_text = "".join(re.findall(r"<svg .*?</svg>", page, flags=re.S))
    assert "&lt;script&gt;console.error" in svg_text and "$x$_{2}" in svg_text


def test_untrusted_names_render_as_text_in_markdown():
    md = render_markdown(SweepView(name="s", path=Path("/tmp"), rows=[SweepRow(target=f"a|b{EVIL}", status="done", run=evil_run())]))
    # Outside code fences (where Markdown renders HTML) no tag survives; inside, text is verbatim.
    outside = re.sub(r"(?ms)^(`{3,})diff\n.*?^\1$", "", md)
    assert "```" not in outside
    # Inline code (kernel names, paths) is verbatim too: Markdown renders no tag inside it.
    assert "`<script>console.error(\"xss\")</script>`" in outside
    outside = re.sub(r"(`+)(?!`).+?(?<!`)\1(?!`)", "", outside)
    assert "<script" not in outside and "&lt;script&gt;" in outside
    assert f"// {EVIL}" in md  # the diff itself is shown as it is
    assert "a\\|b" in md  # a pipe in a name cannot split the table row
    # Diffs are fenced: their text is verbatim inside the fence, which no backtick run can close.
    assert md_fenced("x ``` y", "diff").startswith("````diff\n")
    assert md_cell("a\nb|c") == "a b\\|c"


def test_markdown_links_the_figures_it_writes_beside_the_page(tmp_path):
    from rocm_perf.report.html import write_reports

    written = write_reports(evil_sweep(), tmp_path / "out" / "report.html", tmp_path / "md" / "report.md")
    files = {p.name for p in written if p.suffix == ".svg"}
    assert {"sweep-targets.svg", "sweep-budget.svg"} <= files
    assert all(p.parent == tmp_path / "out" / "figures" for p in written if p.suffix == ".svg")
    md = (tmp_path / "md" / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert sorted(Path(link).name for link in links) == sorted(files)
    assert all((tmp_path / "md" / link).resolve().is_file() for link in links)  # relative to the Markdown file
    # Each file is the page's figure, standalone.
    svg = (tmp_path / "out" / "figures" / "sweep-budget.svg").read_text()
    assert svg.startswith("<?xml") and "<title>Budget over the night</title>" in svg


def test_a_figure_without_a_title_or_axis_labels_is_refused():
    @styled
    def draw(xlabel, ylabel, title):
        fig, ax = new_figure(3, 2)
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        return svg_figure(fig, "f", title)

    assert "<title>t</title>" in draw("x", "y", "t").svg
    for args in (("", "y", "t"), ("x", "", "t"), ("x", "y", " ")):
        with pytest.raises(ValueError):
            draw(*args)


def test_a_final_check_too_short_to_bound_the_gain_is_not_called_a_speed_up():
    """--aa-rounds 4: the final check's interval is open on both sides; the estimate is shown as
    an estimate, the interval as open, never as [0.00x, infx]."""
    run = evil_run()
    run.ratio, run.ratio_low, run.ratio_high, run.final_rounds = 0.93, 0.0, float("inf"), 4
    line = headline(run)
    assert line.tone == "neutral" and "1.08x faster by the estimate, not proven" in line.text
    assert "still open after 4 rounds" in line.text
    page = render_html(run)
    assert "1.075x [open, open]" in page and "inf" not in re.sub(r"<svg .*?</svg>", "", page, flags=re.S)
    run.ratio_low, run.ratio_high = 0.90, 0.95
    assert headline(run).tone == "good" and headline(run).text.startswith("Critical-path time 1.08x faster [1.05x, 1.11x")


def test_an_unfinished_run_says_none_accepted_so_far_not_source_unchanged():
    run = evil_run()
    run.trials = [t for t in run.trials if not t.accepted]
    run.state = "screen"
    assert "None so far: the run has not finished (state: screen)" in render_html(run)
    assert "None so far: the run has not finished (state: screen)" in render_markdown(run)
    run.state = "done"
    assert "None: the source is unchanged." in render_html(run) and "None so far" not in render_html(run)


def test_inline_code_in_markdown_cannot_be_closed_early():
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x") == "`` `x ``"
    assert md_code("a|b\nc") == "`a\\|b c`"


def test_highlighted_diff_keeps_text_and_marks_lines():
    html = highlight_diff("--- a/x.cu\n+++ b/x.cu\n@@ -1 +1 @@\n-for (int i = 0; i < n; ++i) {}\n+#pragma unroll 4\n")
    assert '<span class="line del">' in html and '<span class="line add">' in html
    text = re.sub(r"<[^>]+>", "", str(html))
    assert "for (int i = 0; i &lt; n; ++i) {}" in text
    assert "#pragma unroll 4" in text


def test_report_of_a_missing_run_is_one_line_error(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocm-perf: error:") and err.count("\n") == 1


def test_report_that_cannot_be_written_is_one_line_error(tmp_path, capsys):
    from test_sweep import finished_run

    run = finished_run(tmp_path, tmp_path / "k.cu", accepted=1)
    (tmp_path / "a-file").write_text("x")
    assert main(["report", str(run), "--html", str(tmp_path / "a-file" / "report.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocm-perf: error:") and "cannot write the report" in err and err.count("\n") == 1


# ---- a real run, in a real browser ---------------------------------------------------------------

def chromium() -> str:
    """Debian's chromium: skip visibly where it is missing, fail under CI=true."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        message = "chromium not installed (apt-get install -y chromium): the report's browser test needs it"
        if IN_CI:
            pytest.fail(message + "; CI must have it")
        pytest.skip(message)
    return path


def load_in_chromium(page: Path, profile_dir: Path) -> tuple[str, list[str]]:
    """(the DOM after load, console messages) of a page opened in headless Chromium."""
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile_dir}",
            "--enable-logging=stderr", "--v=0", "--dump-dom", page.resolve().as_uri()]
    done = run_process(argv, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def test_chromium_harness_sees_console_errors(tmp_path):
    """The check below can fail: a page that logs an error is caught."""
    page = tmp_path / "control.html"
    page.write_text('<!DOCTYPE html><html><body><script>console.error("control error")</script><p>x</p></body></html>')
    dom, console = load_in_chromium(page, tmp_path / "profile")
    assert any("control error" in line for line in console)


def test_untrusted_names_stay_inert_in_chromium(tmp_path):
    page = tmp_path / "evil.html"
    page.write_text(render_html(evil_run()))
    dom, console = load_in_chromium(page, tmp_path / "profile")
    assert console == []
    assert "&lt;script&gt;console.error(" in dom  # shown as text, not run


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """A real `rocm-perf optimize` run on the host backend (built, run, measured, decided)."""
    out = tmp_path_factory.mktemp("runs")
    source = DATA / "programs" / "unroll_wins.cu"
    argv = ["optimize", str(source), "--backend", "host", "--out", str(out), "--max-trials", "1", "--rounds", "3",
            "--max-rounds", "6", "--aa-rounds", "3", "--compile-check", "off", "--quiet", "--new"]
    assert main(argv) == 0
    (run_dir,) = [p for p in out.iterdir() if (p / "ledger.db").exists()]
    return run_dir


@pytest.mark.slow
@pytest.mark.long
def test_real_run_report_loads_in_chromium_without_console_errors(real_run, tmp_path):
    html = tmp_path / "report.html"
    md = tmp_path / "report.md"
    assert main(["report", str(real_run), "--html", str(html), "--md", str(md)]) == 0
    view = load_run(real_run)
    assert view.backend == "host" and view.state == "done" and view.trials
    dom, console = load_in_chromium(html, tmp_path / "profile")
    assert console == [], console
    # The first screen: the result in one line, the backend warning, the facts, per kernel.
    assert 'class="headline' in dom and 'class="run-facts"' in dom and 'class="environment"' in dom
    assert f"Run {real_run.name}" in dom
    assert "CPU timings" in dom
    trial = view.trials[0]
    assert trial.rule in dom and trial.kernel in dom
    titles = {f["title"] for f in assert_figures_labelled(dom, 4)}
    # The baseline's reference profile was kept: its timeline and critical path are drawn.
    assert view.baseline_profiles and "Where the baseline's time goes" in titles
    assert any(t.startswith("Baseline timeline: 8 dispatches on 1 stream") for t in titles)
    assert any(t.startswith("Candidates: 1 measured") for t in titles)
    text = md.read_text()
    assert f"## Run {real_run.name}".replace("_", "\\_") in text
    # Which metric decided (the host backend's default), with rounds in its units.
    # (auto: the adjusted path at the exponent the run's A/A pairs fit: cpu-path at 0, probed-path at 1)
    assert metric_kind(view.metric) in ("cpu-path", "probed-path", "adjusted-path") and view.metric_unit == "ns"
    assert "decided on" in dom and metric_meaning(view.metric) in dom
    assert f"decided on: {view.metric}" in text
    from rocm_perf.optimize.ledger import open_ledger

    ledger = open_ledger(real_run)
    phase = "confirm" if ledger.rounds(int(trial.id), "confirm") else "screen"
    rows = [r for r in ledger.rounds(int(trial.id), phase) if r.role == "B" and r.ok]
    ledger.close()
    assert trial.baseline_rounds == [r.outputs["metrics"][view.metric] for r in rows] != [r.cp_ns for r in rows]
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (md.parent / link).is_file()
    # The loop's own report hook wrote the same page and the figures beside it.
    assert (real_run / "report.html").is_file() and (real_run / "figures" / "candidates.svg").is_file()


@pytest.fixture(scope="module")
def thirty_run(tmp_path_factory) -> Path:
    from report_runs import thirty_candidate_run

    return thirty_candidate_run(tmp_path_factory.mktemp("thirty"))


@pytest.mark.slow
def test_a_run_with_thirty_candidates_stays_small_and_shows_every_candidate(thirty_run, tmp_path):
    page = thirty_run / "report.html"
    assert page.stat().st_size < 2 * 1024 * 1024
    dom, console = load_in_chromium(page, tmp_path / "profile")
    assert console == [], console
    view = load_run(thirty_run)
    assert len(view.measured) == 30 and view.accepted
    figures = assert_figures_labelled(dom, 5)
    (forest,) = [f for f in figures if f["title"].startswith("Candidates:")]
    assert forest["title"] == f"Candidates: 30 measured, {len(view.accepted)} accepted"
    forest_svg = re.search(r'<figure class="plot" id="fig-candidates">.*?</figure>', dom, flags=re.S).group(0)
    # One row per candidate, its verdict's reason beside it (no click needed), the lines drawn.
    for t in view.measured:
        assert f"#{t.id} " in forest_svg
    for reason in {t.reason for t in view.rejected}:
        assert reason in forest_svg
    assert "A/A noise floor" in forest_svg and "accept below" in forest_svg
    assert 'class="headline good"' in dom and "faster" in dom
    # The accepted change: its diff, its rounds (screen and confirm), its evidence.
    (accepted,) = view.accepted
    assert f"Trial {accepted.id}: interleaved rounds" in {f["title"] for f in figures}
    assert {p.phase for p in accepted.rounds} == {"screen", "confirm"}
    assert "confirmation" in dom and 'class="line add"' in dom
    # Files beside the page for a pull request, linked from report.md.
    md = (thirty_run / "report.md").read_text()
    for f in figures:
        assert f["title"] in md.replace("\\", "")
    print(f"30-candidate page: {page.stat().st_size / 1024:.0f} KiB")


@pytest.mark.slow
def test_a_sweep_report_loads_in_chromium_with_its_figures(tmp_path):
    from test_sweep import REPORTS, Script, settings, write_sources
    from rocm_perf.sweep.loop import Sweep

    write_sources(tmp_path / "k", ["broken", "bad", "good", "also_good"])
    script = Script(cp={"good": 4e3, "also_good": 3e3, "bad": 2e3},
                    fail={"bad": [RuntimeError(f"bad.cu: crashed {EVIL}") for _ in range(9)]})
    sweep_dir = tmp_path / "s"
    Sweep(sweep_dir, settings([tmp_path / "k"], max_attempts=2), triage=script.triage, optimize=script.optimize,
          **REPORTS).run()
    page = sweep_dir / "report.html"
    dom, console = load_in_chromium(page, tmp_path / "profile")
    assert console == [], console
    titles = {f["title"] for f in assert_figures_labelled(dom, 2)}
    assert "Targets: 2 of 4 done" in titles and "Budget over the night" in titles
    assert 'class="quarantined"' in dom and "&lt;script&gt;" in dom and "<script" not in dom.lower()
    assert "does not build" in dom  # the failed target's reason, in the open
    assert (sweep_dir / "figures" / "sweep-budget.svg").is_file()


@pytest.fixture(scope="module")
def evidence(tmp_path_factory) -> Path:
    from report_runs import evidence_run

    return evidence_run(tmp_path_factory.mktemp("evidence"))


@pytest.mark.slow
@pytest.mark.long
def test_the_evidence_of_counters_hotspots_and_compare_shows_in_chromium(evidence, tmp_path):
    """An accepted change's page holds what the other stages found: the rooflines before and after
    (counters), the hot loop's annotated source (the host sampler), the comparison table (compare)."""
    view = load_run(evidence)
    (accepted, *_) = view.accepted
    assert [r["title"] for r in view.rooflines] == ["Roofline of the baseline", "Roofline of the accepted result"]
    assert view.hot_source and view.before_after and view.baseline_profiles
    dom, console = load_in_chromium(evidence / "report.html", tmp_path / "profile")
    assert console == [], console
    titles = {f["title"] for f in assert_figures_labelled(dom, 7)}
    assert {"Roofline of the baseline", "Roofline of the accepted result", f"Trial {accepted.id}: interleaved rounds",
            "Where the baseline's time goes"} <= titles
    # The hot loop's annotated source: the sampled kernel's lines with their share, the hottest loop named.
    hot = re.search(r'<table class="hot-source">.*?</table>', dom, flags=re.S).group(0)
    assert view.hot_source["loops"][0]["id"] in dom
    assert "acc += values[c]" in hot and 'class="heatbar"' in hot
    # The comparison table: every kernel of both programs, original against final.
    table = re.search(r'<table class="before-after">.*?</table>', dom, flags=re.S).group(0)
    for kernel in view.before_after["kernels"]:
        assert kernel["name"].split("(")[0] in table
    # The diff, highlighted as C++: keywords and types are their own tokens, added lines marked.
    diff = re.search(r'<div class="trial accepted".*?<pre class="diff hl">(.*?)</pre>', dom, flags=re.S).group(1)
    assert '<span class="line add">' in diff and '<span class="k">for</span>' in diff
    assert re.search(r'<span class="kt">(int|unsigned)</span>', diff)
    assert re.search(r"\.hl \.k \{[^}]*color", dom)  # the tokens have colours
    md = (evidence / "report.md").read_text()
    assert "### Before / after, per kernel" in md and "](figures/roofline-final.svg)" in md
    hot_md = md.split("#### Where the time goes in", 1)[1].split("###", 1)[0]
    assert view.hot_source["loops"][0]["id"] in hot_md and "`acc += values[c]" in hot_md
