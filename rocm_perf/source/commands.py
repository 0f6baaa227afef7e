"""`rocm-perf loops` and `rocm-perf rewrite`: print what the analysis and one candidate look like.
Neither touches the input file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.source.analysis import SourceAnalysis, analyze_source
from rocm_perf.source.guards import failed, guard_candidate
from rocm_perf.source.libclang_check import require_libclang
from rocm_perf.source.loops import LoopInfo
from rocm_perf.source.rewrite import make_candidate
from rocm_perf.source.rules import Rule, applicable_rules, load_rules

_FLAG_NAMES = {
    "has_break": "break", "has_continue": "continue", "has_goto": "goto", "has_return": "return",
    "has_label": "label", "has_barrier": "barrier", "has_atomic": "atomic",
    "writes_induction_var": "writes-iv", "declares_shared": "shared-decl", "declares_static": "static-decl",
}  # fmt: skip


def loops_report(analysis: SourceAnalysis, rules: list[Rule], kernel: str | None = None) -> dict:
    """The JSON of `rocm-perf loops`: kernels, and every loop with its applicable rules."""
    kernels = [k for k in analysis.kernels if kernel is None or kernel in (k.name, k.qualified_name, k.mangled)]
    if kernel is not None and not kernels:
        names = ", ".join(k.name for k in analysis.kernels) or "none"
        raise RocmPerfError(f"{analysis.path}: no kernel {kernel!r} (kernels: {names})")
    names = {k.name for k in kernels}
    loops = []
    for loop in analysis.loops:
        if loop.kernel not in names:
            continue
        entry = loop.to_json()
        entry["rules"] = [{"name": r.name, "factors": f} for r, f in applicable_rules(loop, rules)]
        entry["not_applicable"] = {r.name: r.reasons_not(loop) for r in rules if r.reasons_not(loop)}
        loops.append(entry)
    return {
        "source": str(analysis.path),
        "mode": analysis.mode,
        "flags": list(analysis.flags),
        "warnings": analysis.warnings,
        "kernels": [k.to_json() for k in kernels],
        "loops": loops,
    }


def _flags_text(loop: LoopInfo) -> str:
    names = [short for name, short in _FLAG_NAMES.items() if getattr(loop.flags, name)]
    return ",".join(names) or "-"


def _rules_text(entry: dict) -> str:
    if entry["rules"]:
        return "; ".join(f"{r['name']} x{','.join(map(str, r['factors']))}" for r in entry["rules"])
    return "none"


def format_loops(report: dict, analysis: SourceAnalysis) -> str:
    by_id = {l.id: l for l in analysis.loops}
    lines = [f"{report['source']} ({report['mode']} HIP headers)"]
    for kernel in report["kernels"]:
        mangled = kernel["mangled"] or f"template, instantiations start {kernel['instantiations'] or '(none seen)'}"
        lines.append("")
        lines.append(f"kernel {kernel['qualified_name']}  [{mangled}]  lines {kernel['line']}-{kernel['end_line']}")
        entries = [e for e in report["loops"] if e["kernel"] == kernel["name"]]
        if not entries:
            lines.append("  (no loops)")
            continue
        header = ("id", "kind", "depth", "var", "trip", "pragma", "body", "rules")
        rows = []
        for e in entries:
            loop = by_id[e["id"]]
            trip = str(loop.trip_count) if loop.trip_count is not None else "?"
            rows.append((e["id"], loop.kind, str(loop.depth), loop.induction_var or "-", trip,
                         loop.pragma or "-", _flags_text(loop), _rules_text(e)))  # fmt: skip
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header) - 1)]
        for row in [header] + rows:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
        for e in entries:
            loop = by_id[e["id"]]
            notes = []
            if loop.skip_reason:
                notes.append(f"skipped: {loop.skip_reason}")
            if loop.trip_count is None and loop.trip_count_note and not loop.skip_reason:
                notes.append(f"trip count unknown: {loop.trip_count_note}")
            if notes:
                lines.append(f"    {e['id']}: " + "; ".join(notes))
    for warning in report["warnings"]:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def loops_document(source: Path, *, kernel: str | None = None, cflags: str = "") -> dict:
    """`loops --json` of `source` as data (the MCP `loops` tool)."""
    return loops_report(analyze_source(Path(source), cflags), load_rules(), kernel)


def run_loops(source: Path, *, kernel: str | None = None, cflags: str = "", as_json: bool = False) -> int:
    require_libclang()
    analysis = analyze_source(Path(source), cflags)
    report = loops_report(analysis, load_rules(), kernel)
    print(json.dumps(report, indent=2) if as_json else format_loops(report, analysis))
    return 0


def rewrite_preview(source: Path, *, loop_id: str, rule: str, factor: int, cflags: str = "") -> dict:
    """One rewrite candidate of `source` as data, never written anywhere (the MCP `rewrite_preview`
    tool): the diff `rewrite` prints, each guard's verdict, and whether every guard passed."""
    source = Path(source)
    candidate = make_candidate(source, analyze_source(source, cflags), loop_id, rule, factor, rules=load_rules())
    verdicts = guard_candidate(candidate, cflags)
    return {"source": str(source), "loop": loop_id, "rule": rule, "factor": factor, "diff": candidate.diff,
            "guards": [{"name": v.name, "ok": v.ok, "reason": v.reason} for v in verdicts],
            "all_guards_pass": not failed(verdicts)}


def run_rewrite(
    source: Path, *, loop_id: str, rule: str, factor: int, cflags: str = "", write: Path | None = None
) -> int:
    """Print one candidate's diff (stdout) and its guard verdicts (stderr); write it to `write`
    only when every guard passes. A failed guard is an error naming it."""
    source = Path(source)
    if write is not None and write.resolve() == source.resolve():
        raise RocmPerfError(f"--write {write}: that is the input file; rewrite never modifies it (use `rocm-perf apply`)")
    require_libclang()
    analysis = analyze_source(source, cflags)
    candidate = make_candidate(source, analysis, loop_id, rule, factor, rules=load_rules())
    verdicts = guard_candidate(candidate, cflags)
    sys.stdout.write(candidate.diff)
    print(candidate.summary + (f"; formatted with {candidate.formatted}" if candidate.formatted else ""), file=sys.stderr)
    for v in verdicts:
        print(f"guard {v.name}: {'ok' if v.ok else 'FAILED'} ({v.reason})", file=sys.stderr)
    bad = failed(verdicts)
    if bad:
        raise RocmPerfError(f"guard {bad[0].name} failed: {bad[0].reason}", exit_code=1)
    if write is not None:
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_bytes(candidate.rewritten)
        print(f"wrote {write}", file=sys.stderr)
    return 0
