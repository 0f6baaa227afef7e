"""Guards every candidate passes before anything is built or run. Each failure is a named reason.

1. parse_clean: the rewritten file parses with no error diagnostics.
2. signatures_unchanged: every kernel's normalized signature is byte-for-byte the same.
3. diff_inside_loop: the diff hunks lie inside the loop's lines (its pragma line included), and
   every byte outside the replaced region is unchanged.
4. Structural: loop_exists_once (the rule leaves the number of loops it declares where the loop
   was, and every other loop is still there), no_new_goto_or_labels, barriers_uniform (a loop
   with a barrier only where its trip count is the same for the whole block).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from rocm_perf.errors import RocmPerfError
from rocm_perf.source.analysis import SourceAnalysis, analyze_bytes
from rocm_perf.source.rewrite import Candidate

GUARD_NAMES = ("parse_clean", "signatures_unchanged", "diff_inside_loop", "loop_exists_once",
               "no_new_goto_or_labels", "barriers_uniform")  # fmt: skip


@dataclass
class GuardVerdict:
    name: str
    ok: bool
    reason: str  # why it failed, or what was checked

    def to_json(self) -> dict:
        return {"name": self.name, "ok": self.ok, "reason": self.reason}


def _signatures(analysis: SourceAnalysis) -> list[tuple[str, str]]:
    return [(k.qualified_name, k.signature) for k in analysis.kernels]


def check_signatures(before: SourceAnalysis, after: SourceAnalysis) -> GuardVerdict:
    old, new = _signatures(before), _signatures(after)
    if old == new:
        return GuardVerdict("signatures_unchanged", True, f"{len(old)} kernel signatures identical")
    for a, b in zip(old, new):
        if a != b:
            return GuardVerdict("signatures_unchanged", False, f"kernel {a[0]}: signature {a[1]!r} became {b[1]!r}")
    return GuardVerdict("signatures_unchanged", False, f"kernels changed: {[n for n, _ in old]} -> {[n for n, _ in new]}")


def _line_of(data: bytes, offset: int) -> int:
    """0-based line index of a byte offset."""
    return data.count(b"\n", 0, offset)


def check_diff_extent(c: Candidate) -> GuardVerdict:
    start, end = c.region
    tail = len(c.original) - end
    if c.original[:start] != c.rewritten[:start] or c.original[end:] != c.rewritten[len(c.rewritten) - tail :]:
        return GuardVerdict("diff_inside_loop", False, "bytes outside the loop and its pragma changed")
    first, last = _line_of(c.original, start), _line_of(c.original, max(start, end - 1))
    a = c.original.splitlines(keepends=True)
    b = c.rewritten.splitlines(keepends=True)
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        touched_last = i2 - 1 if i2 > i1 else i1  # an insertion sits before line i1
        if i1 < first or touched_last > last + (1 if i2 == i1 else 0):
            return GuardVerdict(
                "diff_inside_loop", False, f"a hunk changes lines {i1 + 1}-{max(i1 + 1, i2)}, outside the loop's lines {first + 1}-{last + 1}"
            )
    return GuardVerdict("diff_inside_loop", True, f"all hunks inside lines {first + 1}-{last + 1}")


def _outermost_in(analysis: SourceAnalysis, begin: int, end: int, kernel: str):
    inside = [l for l in analysis.loops if l.kernel == kernel and begin <= l.start < end]
    ids = {l.id for l in inside}
    return [l for l in inside if l.parent_id not in ids], inside


def _text_of(data: bytes, loop) -> str:
    return " ".join(data[loop.start : loop.end].decode(errors="replace").split())


def check_structure(c: Candidate, after: SourceAnalysis) -> list[GuardVerdict]:
    verdicts = []
    loop, (old_begin, old_end), (new_begin, new_end) = c.loop, c.region, c.new_region
    outer, inside = _outermost_in(after, new_begin, new_end, loop.kernel)
    shift = (new_end - new_begin) - (old_end - old_begin)
    before_outside = sorted((l.kernel, l.function, l.kind, l.start if l.start < old_begin else l.start + shift)
                            for l in c.analysis.loops if not old_begin <= l.start < old_end)  # fmt: skip
    after_outside = sorted((l.kernel, l.function, l.kind, l.start)
                           for l in after.loops if not new_begin <= l.start < new_end)  # fmt: skip
    if len(outer) != c.result_loops:
        verdicts.append(GuardVerdict("loop_exists_once", False,
                                     f"expected {c.result_loops} loop(s) where loop {loop.id} was, found {len(outer)}"))  # fmt: skip
    elif before_outside != after_outside:
        verdicts.append(GuardVerdict("loop_exists_once", False, "loops outside the rewritten one changed"))
    else:
        verdicts.append(GuardVerdict("loop_exists_once", True, f"{len(outer)} loop(s) in the region, others unchanged"))

    old_jumps, new_jumps = c.analysis.jumps, after.jumps
    verdicts.append(
        GuardVerdict("no_new_goto_or_labels", new_jumps <= old_jumps,
                     f"goto/labels: {old_jumps} before, {new_jumps} after")  # fmt: skip
    )

    barrier_loops = [l for l in inside if l.flags.has_barrier]
    # The generated loops (main, remainder) stand for the rewritten one, whose header the analysis
    # may no longer read as uniform; a copy of a loop nested in it is judged by its own header.
    nested = {_text_of(c.original, l) for l in c.analysis.loops if l.parent_id == loop.id}
    generated = {l.id for l in outer if _text_of(c.rewritten, l) not in nested}
    bad = [l for l in barrier_loops if not (loop.uniform_trip_count if l.id in generated else l.uniform_trip_count)]
    if bad:
        verdicts.append(GuardVerdict("barriers_uniform", False,
                                     f"loop at line {bad[0].line} has a barrier but its trip count may differ between threads of a block"))  # fmt: skip
    else:
        verdicts.append(GuardVerdict("barriers_uniform", True,
                                     "no barrier in the loop" if not barrier_loops else "barriers only under a block-uniform trip count"))  # fmt: skip
    return verdicts


def guard_candidate(candidate: Candidate, flags=()) -> list[GuardVerdict]:
    """Every guard's verdict for a candidate (all of them, so a report shows the whole picture)."""
    try:
        after = analyze_bytes(candidate.path, candidate.rewritten, flags)
    except RocmPerfError as e:
        verdicts = [GuardVerdict("parse_clean", False, str(e))]
        verdicts.append(check_diff_extent(candidate))
        skipped = "not checked: the rewritten file does not parse"
        return verdicts + [GuardVerdict(n, False, skipped) for n in GUARD_NAMES if n not in ("parse_clean", "diff_inside_loop")]
    verdicts = [GuardVerdict("parse_clean", True, f"parses with no errors ({after.mode} HIP headers)")]
    verdicts.append(check_signatures(candidate.analysis, after))
    verdicts.append(check_diff_extent(candidate))
    verdicts.extend(check_structure(candidate, after))
    return verdicts


def failed(verdicts: list[GuardVerdict]) -> list[GuardVerdict]:
    return [v for v in verdicts if not v.ok]
