"""Diffs a reviewer approves (issue 61): the stencil2d loops' manual unrolls and their combination
as one minimal diff, the changed region in the user's clang-format style, the copies of a nested
loop not taken for the loop itself, and each hunk's one-line summary."""

from __future__ import annotations

import functools
import types
from pathlib import Path

import pytest

from conftest import KERNELS
from rocm_perf.optimize.change_summary import diff_hunks, diff_size, summarize
from rocm_perf.optimize.combine import find_loop, render_carry
from rocm_perf.optimize.plan import original_line_of
from rocm_perf.source import analyze_bytes, analyze_source, guard_candidate, load_rules, make_candidate
from rocm_perf.source.formatting import clang_format_binary, style_file_for

STENCIL2D = KERNELS / "stencil2d.cu"
TOOLS = types.SimpleNamespace(make_candidate=make_candidate, guard_candidate=guard_candidate)


@functools.cache
def rules():
    return load_rules()


def loop_at(analysis, line):
    return next(l for l in analysis.loops if l.line == line)


def added_lines(diff: str) -> list[str]:
    return [l[1:] for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]


def test_stencil2d_inner_loop_unrolled_as_a_person_would():
    analysis = analyze_source(STENCIL2D)
    dx = loop_at(analysis, 38)
    cand = make_candidate(STENCIL2D, analysis, dx.id, "unroll_manual", 2, rules=rules())
    assert not [v for v in guard_candidate(cand) if not v.ok]
    assert cand.summary == "dx loop, line 38: unrolled x2, 3 iterations: one pair and one remainder"
    added = added_lines(cand.diff)
    removed = [l for l in cand.diff.splitlines() if l.startswith("-") and not l.startswith("---")]
    # The header's init before the loop (no block around it: nothing else in the dy body is named
    # dx), the plain test (-1 and 1 are constants: dx + 1 cannot overflow), the increment in its
    # place, and the third iteration written out where the loop was: its body's lines are unchanged.
    assert added[:2] == ["        int dx = -1;", "        for (; dx + 1 <= 1; ++dx) {"]
    assert removed == ["-        for (int dx = -1; dx <= 1; ++dx) {"]
    assert added.count("            {") == 2 and added.count("            ++dx;") == 1  # one block per copy
    assert added[-1] == "        {" and len(added) == 15
    assert "unsigned long long" not in cand.diff and "#pragma unroll" not in cand.diff


def _trial(tid, line, factor):
    return types.SimpleNamespace(id=tid, loop_key=f"stencil_2d@{line}", rule="unroll_manual", factor=factor)


def test_stencil2d_combination_is_one_minimal_diff(tmp_path):
    base = tmp_path / "source.cu"
    base.write_bytes(STENCIL2D.read_bytes())
    done = render_carry(base, STENCIL2D.read_text(), [_trial(1, 37, 2), _trial(2, 38, 2)], tools=TOOLS,
                        rules=rules(), flags=[], analysis_of=analyze_source, workdir=tmp_path / "steps")  # fmt: skip
    assert done.failed == {} and done.applied == [2, 1]  # the inner loop first: the outer one copies it
    size = diff_size(done.diff)
    assert size == {"added": 62, "removed": 2, "hunks": 1}
    # One block level everywhere: each copy of the dy body is its own block holding dx's rewrite, and
    # that rewrite's copies are blocks of their own (they declare xx and yy); no block in a block.
    lines = done.source.decode().splitlines()
    assert not any(a.strip() == "{" and b.strip() == "{" for a, b in zip(lines, lines[1:]))
    assert "unsigned long long" not in done.diff and "#pragma unroll" not in done.diff
    assert added_lines(done.diff)[:2] == ["    int dy = -1;", "    for (; dy + 1 <= 1; ++dy) {"]
    after = analyze_bytes(base, done.source)
    assert len(after.loops) == 4  # dy's main loop; dx's main loop in each of dy's three copies


def test_a_copy_of_a_nested_loop_is_not_that_loop(tmp_path):
    """After dy alone is unrolled, dx's lines still match the original in one of its copies (the
    straight remainder is the dy body where it was). That copy is not the dx loop: a carry of dx's
    winner must not rewrite one copy of three."""
    analysis = analyze_source(STENCIL2D)
    cand = make_candidate(STENCIL2D, analysis, loop_at(analysis, 37).id, "unroll_manual", 2, rules=rules())
    after = analyze_bytes(STENCIL2D, cand.rewritten)
    to_original = original_line_of(STENCIL2D.read_text(), cand.rewritten.decode())
    matching = [l for l in after.loops if to_original.get(l.line) == 38]
    assert len(matching) == 1  # the line mapping alone would take it for the dx loop
    assert find_loop(after, to_original, "stencil_2d@38") is None
    assert find_loop(analysis, original_line_of(STENCIL2D.read_text(), STENCIL2D.read_text()), "stencil_2d@38") is not None


def test_each_hunk_says_what_it_does():
    analysis = analyze_source(STENCIL2D)
    dx = loop_at(analysis, 38)
    cand = make_candidate(STENCIL2D, analysis, dx.id, "unroll_manual", 2, rules=rules())
    (hunk,) = summarize(cand.diff, [(dx.line, dx.end_line, cand.summary), (1, 5, "elsewhere")])
    assert hunk.summary == ["dx loop, line 38: unrolled x2, 3 iterations: one pair and one remainder"]
    assert (hunk.added, hunk.removed) == (15, 1) and hunk.text.startswith("@@ -35,")
    two = diff_hunks(cand.diff + cand.diff.replace("@@ -35,7 +35,21 @@", "@@ -90,7 +104,21 @@"))
    assert [h.old_start for h in two] == [35, 90]


# ---- the user's clang-format style on the changed lines --------------------------------------


needs_clang_format = pytest.mark.skipif(clang_format_binary() is None, reason="clang-format (PyPI) not installed")


@needs_clang_format
def test_the_changed_region_takes_the_users_clang_format_style(tmp_path):
    source = tmp_path / "stencil2d.cu"
    source.write_bytes(STENCIL2D.read_bytes())
    (tmp_path / ".clang-format").write_text("BasedOnStyle: LLVM\nIndentWidth: 4\nColumnLimit: 100\nBreakBeforeBraces: Allman\n")
    analysis = analyze_source(source)
    cand = make_candidate(source, analysis, loop_at(analysis, 38).id, "unroll_manual", 2, rules=rules())
    assert cand.formatted == f"clang-format ({tmp_path / '.clang-format'})"
    added = added_lines(cand.diff)
    assert added[:3] == ["        int dx = -1;", "        for (; dx + 1 <= 1; ++dx)", "        {"]  # Allman, in the region only
    start, end = cand.new_region
    data = STENCIL2D.read_bytes()
    assert cand.rewritten[:start] == data[:start] and cand.rewritten[end:] == data[cand.region[1]:]
    assert b"for (int dy = -1; dy <= 1; ++dy) {" in cand.rewritten  # the line before the region keeps its brace
    assert not [v for v in guard_candidate(cand) if not v.ok]


def test_without_a_style_file_nothing_is_run(tmp_path):
    source = tmp_path / "stencil2d.cu"
    source.write_bytes(STENCIL2D.read_bytes())
    (tmp_path / "ledger.db").write_bytes(b"")  # a run directory: the search stops there
    (tmp_path.parent / ".clang-format").write_text("BasedOnStyle: LLVM\n")
    try:
        assert style_file_for(source) is None
        analysis = analyze_source(source)
        cand = make_candidate(source, analysis, loop_at(analysis, 38).id, "unroll_manual", 2, rules=rules())
        assert cand.formatted == "" and "        int dx = -1;" in added_lines(cand.diff)
    finally:
        (tmp_path.parent / ".clang-format").unlink()
    assert style_file_for(Path("/nonexistent/dir/x.cu")) is None


def test_review_markdown_shows_each_hunk_under_its_summary_and_the_size():
    from rocm_perf.optimize.artifacts import _change_markdown

    analysis = analyze_source(STENCIL2D)
    dx = loop_at(analysis, 38)
    cand = make_candidate(STENCIL2D, analysis, dx.id, "unroll_manual", 2, rules=rules())
    hunks = [h.to_json() for h in summarize(cand.diff, [(dx.line, dx.end_line, cand.summary)])]
    text = "\n".join(_change_markdown({"diff": cand.diff, "hunks": hunks, "diff_size": diff_size(cand.diff)}))
    assert "Diff: +15 -1 lines in 1 hunk." in text
    assert "- dx loop, line 38: unrolled x2, 3 iterations: one pair and one remainder (+15 -1)\n\n```diff\n@@ -35,7 +35,21 @@" in text
    # Where no rule's summary covers a hunk (a patch, a rule since removed), it says which lines it changes.
    bare = [h.to_json() for h in summarize(cand.diff, [])]
    assert "- lines 35-41 (+15 -1)" in "\n".join(_change_markdown({"diff": cand.diff, "hunks": bare, "diff_size": diff_size(cand.diff)}))
