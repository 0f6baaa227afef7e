"""Apply a rule to one loop: render the rule's template and splice it into the file's bytes."""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.source.analysis import SourceAnalysis, analyze_source
from rocm_perf.source.body_text import body_copy, loop_body
from rocm_perf.source.cursors import newline_of, text
from rocm_perf.source.formatting import format_region
from rocm_perf.source.loops import LoopInfo
from rocm_perf.source.rules import Rule, find_rule, load_rules


@dataclass
class Candidate:
    """One rewrite of one loop. `region` is the original byte range replaced, `new_region` its
    replacement's range in `rewritten`."""

    path: Path
    loop_id: str
    rule: str
    factor: int
    original: bytes = field(repr=False)
    rewritten: bytes = field(repr=False)
    diff: str = field(repr=False)
    region: tuple[int, int]
    new_region: tuple[int, int]
    result_loops: int  # loops the rule leaves in the region (the structure guard checks it)
    loop: LoopInfo = field(repr=False)
    analysis: SourceAnalysis = field(repr=False, compare=False)
    summary: str = ""  # one line for a reviewer (the rule's `summary:`)
    formatted: str = ""  # how the region was formatted: "clang-format (<style file>)" or ""

    def to_json(self) -> dict:
        return {"path": str(self.path), "loop_id": self.loop_id, "rule": self.rule, "factor": self.factor,
                "region": list(self.region), "new_region": list(self.new_region), "diff": self.diff,
                "summary": self.summary, "formatted": self.formatted}  # fmt: skip


def _lf(s: str) -> str:
    return s.replace("\r\n", "\n")


def _pragmas_at_column_0(data: bytes) -> bool:
    indents = [m.group(1) for m in re.finditer(rb"^([ \t]*)#[ \t]*pragma\b", data, re.M)]
    return bool(indents) and all(not i for i in indents)


def render_context(analysis: SourceAnalysis, loop: LoopInfo, factor: int) -> dict:
    """What a rule template sees: the loop record, the factor, and the loop's texts (LF endings)."""
    data = analysis.data
    body = _lf(text(data, loop.body_start, loop.body_end))
    unit = "\t" if loop.indent.startswith("\t") else "    "
    # Between an existing pragma and the loop: keep it (comments, other pragmas) but make sure a
    # `#pragma` written in its place ends its line.
    gap = _lf(text(data, loop.pragma_end, loop.start)) if loop.pragma_end is not None else ""
    pragma_gap = gap if "\n" in gap else "\n" + loop.indent + gap.lstrip()
    return {
        "loop": loop,
        "factor": factor,
        "loop_text": _lf(text(data, loop.start, loop.end)),
        "body": body,
        "body_block": body if loop.body_is_compound else "{ " + body + " }",
        "unit": unit,
        "inc": loop.inc,  # inside a jinja for, `loop` is jinja's own
        "pragma_gap": pragma_gap,  # what follows a `#pragma` line up to the loop
        # What lies between an existing pragma and the loop (comments, other pragmas), a line each.
        "pragma_lines": [line.strip() for line in gap.split("\n") if line.strip()],
        # body_copy(at, braced): the body as one copy at indentation `at`; loop_body(at): the body
        # as written, for a loop header at `at` (body_text.py).
        "body_copy": functools.partial(body_copy, data, loop, unit),
        # The file writes its pragmas at column 0 (clang-format's habit): a generated one follows it.
        "pragmas_at_column_0": _pragmas_at_column_0(data),
        "loop_body": functools.partial(loop_body, data, loop, unit),
    }


def unified_diff(path: Path, original: bytes, rewritten: bytes) -> str:
    a = original.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    b = rewritten.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    name = Path(path).name
    lines = difflib.unified_diff(a, b, fromfile=f"a/{name}", tofile=f"b/{name}")
    return "".join(l if l.endswith("\n") else l + "\n\\ No newline at end of file\n" for l in lines)


def apply_rule(analysis: SourceAnalysis, loop: LoopInfo, rule: Rule, factor: int) -> Candidate:
    """Render `rule` for `loop` at `factor`; RocmPerfError when the rule does not apply."""
    reasons = rule.reasons_not(loop) or rule.factor_reasons_not(loop, factor)
    if reasons:
        raise RocmPerfError(f"rule {rule.name} x{factor} does not apply to loop {loop.id}: {'; '.join(reasons)}")
    rendered = rule.template.render(**render_context(analysis, loop, factor)).rstrip("\n")
    replacement = rendered.replace("\n", newline_of(analysis.data)).encode("utf-8", errors="surrogateescape")
    data = analysis.data
    rewritten = data[: loop.region_start] + replacement + data[loop.end :]
    rewritten, replacement, formatted = format_region(analysis.path, data, rewritten, loop.region_start,
                                                      len(replacement))  # fmt: skip
    return Candidate(
        path=analysis.path,
        loop_id=loop.id,
        rule=rule.name,
        factor=factor,
        original=data,
        rewritten=rewritten,
        diff=unified_diff(analysis.path, data, rewritten),
        region=(loop.region_start, loop.end),
        new_region=(loop.region_start, loop.region_start + len(replacement)),
        result_loops=rule.loops_left(loop, factor),
        loop=loop,
        analysis=analysis,
        summary=rule.describe(loop, factor),
        formatted=formatted,
    )


def make_candidate(
    path: Path, analysis: SourceAnalysis | None, loop_id: str, rule_name: str, factor: int,
    *, rules: list[Rule] | None = None, flags=(),
) -> Candidate:  # fmt: skip
    """The rewrite of loop `loop_id` by rule `rule_name` at `factor` (nothing is written).

    `analysis` is the file's analysis (made here with `flags` when None); the rewrite edits the
    bytes that analysis saw."""
    if analysis is None:
        analysis = analyze_source(Path(path), flags)
    rule = find_rule(rules if rules is not None else load_rules(), rule_name)
    return apply_rule(analysis, analysis.loop(loop_id), rule, factor)
