"""What an accepted change does, hunk by hunk, for a reviewer: each hunk of its diff with one line
per loop it rewrote ("dx loop, line 38: unrolled x2, 3 iterations: one pair and one remainder"),
and the diff's size.

The lines come from the rules' own `summary:` (rewrites/*.j2) over the loop as the analysis sees
it in the baseline the change was made on (the run's copy, parsed with the run's flags); a hunk
is matched to the loops whose lines it covers there. Where that cannot be done (a rule no longer
there, a source that no longer parses), a hunk says which lines it changes, nothing more: a
report is never lost to its summary.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.combine import find_loop, loop_range
from rocm_perf.optimize.ledger import Ledger, Trial
from rocm_perf.optimize.plan import original_line_of

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    header: str  # the `@@ -a,b +c,d @@` line
    old_start: int
    old_lines: int
    added: int
    removed: int
    text: str  # the hunk's lines, its header first
    summary: list[str] = field(default_factory=list)  # one line per rewritten loop the hunk covers

    def to_json(self) -> dict:
        return asdict(self)


def diff_hunks(diff: str) -> list[Hunk]:
    """The hunks of a unified diff (of one file or several: each file's hunks in turn)."""
    hunks: list[Hunk] = []
    for line in diff.splitlines():
        m = _HUNK.match(line)
        if m:
            hunks.append(Hunk(line, int(m.group(1)), int(m.group(2) or 1), 0, 0, line))
            continue
        if not hunks or line.startswith(("--- ", "+++ ", "diff ", "index ")):
            continue
        hunk = hunks[-1]
        hunk.text += "\n" + line
        if line.startswith("+"):
            hunk.added += 1
        elif line.startswith("-"):
            hunk.removed += 1
    return hunks


def diff_size(diff: str) -> dict:
    """Lines added and removed, and hunks, of a unified diff."""
    hunks = diff_hunks(diff)
    return {"added": sum(h.added for h in hunks), "removed": sum(h.removed for h in hunks), "hunks": len(hunks)}


def size_text(size: dict) -> str:
    return f"+{size['added']} -{size['removed']} lines in {size['hunks']} hunk{'s' if size['hunks'] != 1 else ''}"


def _parts(ledger: Ledger, trial: Trial) -> list[Trial]:
    """The rewrites a trial applies: a combination's components, a carry's one, else itself."""
    if trial.components:
        return [ledger.trial(c) for c in trial.components]
    return [trial]


def _base_source(run_dir: Path, ledger: Ledger, trial: Trial) -> Path | None:
    bases = [b for b in ledger.baselines() if b.generation == trial.generation]
    if not bases:
        return None
    path = run_dir / bases[0].source_path
    return path / trial.file if trial.file else path


def loop_lines(run_dir: Path, ledger: Ledger, trial: Trial, *, analyze=None, rules=None) -> list[tuple[int, int, str]]:
    """(first line, last line, summary) in the trial's baseline of every loop the trial rewrites."""
    from rocm_perf.source import analyze_source, load_rules
    from rocm_perf.source.rules import find_rule

    base = _base_source(run_dir, ledger, trial)
    if base is None or not base.is_file():
        return []
    options = ledger.get("options") or {}
    analysis = (analyze or analyze_source)(base, list(options.get("cflags") or []))
    if rules is None:
        rules_dir = options.get("rules_dir")
        rules = load_rules(Path(rules_dir) if rules_dir else None)
    first = ledger.baselines()[0]
    original_path = run_dir / first.source_path
    original_path = original_path / trial.file if trial.file else original_path
    to_original = original_line_of(original_path.read_text(errors="replace"), base.read_text(errors="replace"))
    out = []
    names = {r.name for r in rules}
    for part in _parts(ledger, trial):
        if "@" not in (part.loop_key or "") or part.rule not in names:
            continue  # not a rule's rewrite of a loop (a patch, a tunable): its hunks say where they are
        loop = find_loop(analysis, to_original, part.loop_key)
        if loop is None:
            continue
        rule = find_rule(rules, part.rule)
        low, high = loop_range(loop)
        pragma_line = analysis.data.count(b"\n", 0, loop.region_start) + 1
        out.append((min(low, pragma_line), high, rule.describe(loop, part.factor)))
    return out


def summarize(diff: str, loops: list[tuple[int, int, str]]) -> list[Hunk]:
    """The diff's hunks, each with the summaries of the loops whose lines it covers (a hunk's old
    side: its first line to its last, context included)."""
    hunks = diff_hunks(diff)
    for hunk in hunks:
        end = hunk.old_start + max(hunk.old_lines, 1) - 1
        hunk.summary = [text for first, last, text in sorted(loops) if first <= end and last >= hunk.old_start]
    return hunks


def trial_hunks(run_dir: Path, ledger: Ledger, trial: Trial) -> list[Hunk]:
    """The trial's diff hunk by hunk with what each does (or without, when that cannot be said)."""
    try:
        loops = loop_lines(run_dir, ledger, trial)
    except (RocmPerfError, OSError, ValueError) as e:  # the summary is a help, never a reason to lose a report
        loops = []
        note = f"(no summary: {e})"
        hunks = summarize(trial.diff, loops)
        for h in hunks:
            h.summary = [note]
        return hunks
    return summarize(trial.diff, loops)
