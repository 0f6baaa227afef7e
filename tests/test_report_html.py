"""The HTML/Markdown report: untrusted names render as text; a real run's page loads in Chromium."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import DATA, IN_CI
from rocm_perf.process import run as run_process
from rocm_perf.cli import main
from rocm_perf.report.html import highlight_diff, md_cell, md_fenced, render_html, render_markdown
from rocm_perf.optimize.run_view import Resources, RunView, TrialView, load_run
from rocm_perf.sweep.view import SweepRow, SweepView

EVIL = '<script>console.error("xss")</script>'
EVIL_FILE = '/tmp/<img src=x onerror=alert(1)>.cu'


def evil_run() -> RunView:
    accepted = TrialView(
        id="1", kernel=EVIL, loop_id=f"{EVIL}:L1", rule="unroll_pragma", factor=4, decision="accepted",
        reason="significant gain", diff=f"--- a/{EVIL}\n+++ b/{EVIL}\n@@ -1,2 +1,3 @@\n-  x = 1; // {EVIL}\n+#pragma unroll 4\n+  x = 1; // </pre>{EVIL}\n",
        ratio=0.8, ratio_low=0.7, ratio_high=0.9, accept_below=0.98, baseline_rounds=[10e3, 11e3, 10.5e3],
        candidate_rounds=[8e3, 8.2e3, 8.1e3], resources_before=Resources(vgpr=32, occupancy=8, vgpr_spill=0),
        resources_after=Resources(vgpr=36, occupancy=8, vgpr_spill=0), cp_share_before=0.7, cp_share_after=0.6,
    )
    rejected = TrialView(id="2", kernel=EVIL, rule="unroll_manual", factor=8, decision="rejected", reason=f"slower {EVIL}",
                         ratio=1.2, ratio_low=1.1, ratio_high=1.3)
    return RunView(name=f"run-{EVIL}", path=Path("/tmp"), source=EVIL_FILE, backend="host", state="done",
                   baseline_ns=10.5e3, final_ns=8.1e3, ratio=0.77, ratio_low=0.7, ratio_high=0.85,
                   trials=[accepted, rejected], accepted_diff=accepted.diff,
                   environment={"hostname": EVIL, f"key{EVIL}": "v"}, notes=[f"note {EVIL}"], failure="")


def test_untrusted_names_render_as_text_in_html():
    run = evil_run()
    sweep = SweepView(name=f"sweep{EVIL}", path=Path("/tmp"), budget_s=3600, used_s=60, state="finished",
                      rows=[SweepRow(target=EVIL, status="done", run=run), SweepRow(target=EVIL_FILE, status="quarantined", reason=EVIL)])
    for page in (render_html(run), render_html(sweep)):
        # The templates hold no script at all, so any "<script" would be injected markup.
        assert "<script" not in page.lower()
        assert "<img" not in page.lower()
        assert "&lt;script&gt;console.error(" in page
        assert "onerror=alert(1)&gt;" in page
        assert page.count("<pre") == page.count("</pre>")
        # No network: nothing is fetched from anywhere, and the policy forbids it anyway.
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
        assert "default-src 'none'" in page


def test_untrusted_names_render_as_text_in_markdown():
    md = render_markdown(SweepView(name="s", path=Path("/tmp"), rows=[SweepRow(target=f"a|b{EVIL}", status="done", run=evil_run())]))
    # Outside code fences (where Markdown renders HTML) no tag survives; inside, text is verbatim.
    outside = re.sub(r"(?ms)^(`{3,})diff\n.*?^\1$", "", md)
    assert "```" not in outside
    assert "<script" not in outside and "&lt;script&gt;" in outside
    assert f"// {EVIL}" in md  # the diff itself is shown as it is
    assert "a\\|b" in md  # a pipe in a name cannot split the table row
    # Diffs are fenced: their text is verbatim inside the fence, which no backtick run can close.
    assert md_fenced("x ``` y", "diff").startswith("````diff\n")
    assert md_cell("a\nb|c") == "a b\\|c"


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
def test_real_run_report_loads_in_chromium_without_console_errors(real_run, tmp_path):
    html = tmp_path / "report.html"
    md = tmp_path / "report.md"
    assert main(["report", str(real_run), "--html", str(html), "--md", str(md)]) == 0
    view = load_run(real_run)
    assert view.backend == "host" and view.state == "done" and view.trials
    dom, console = load_in_chromium(html, tmp_path / "profile")
    assert console == [], console
    # The expected tables: the run's facts, its trial(s), the environment.
    assert 'class="run-facts"' in dom and 'class="environment"' in dom
    assert f"Run {real_run.name}" in dom
    assert "CPU timings" in dom
    trial = view.trials[0]
    assert trial.rule in dom and trial.kernel in dom
    assert "<svg" in dom  # plots are inline
    text = md.read_text()
    assert f"## Run {real_run.name}".replace("_", "\\_") in text
    # Which metric decided (the host backend's default), with rounds in its units.
    assert view.metric == "cpu-path" and view.metric_unit == "ns"
    assert "decided on" in dom and "critical path in CPU time of the threads that ran each dispatch" in dom
    assert "decided on: cpu-path" in text
    from rocm_perf.optimize.ledger import open_ledger

    ledger = open_ledger(real_run)
    phase = "confirm" if ledger.rounds(int(trial.id), "confirm") else "screen"
    rows = [r for r in ledger.rounds(int(trial.id), phase) if r.role == "B" and r.ok]
    ledger.close()
    assert trial.baseline_rounds == [r.outputs["metrics"]["cpu-path"] for r in rows] != [r.cp_ns for r in rows]
