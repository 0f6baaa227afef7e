"""The rules' outputs on every `kernels/` program, held in tests/data/rewrites/<program>.md: each
candidate (loop x rule x factor) with its one-line summary, the form of its "N iterations remain"
test, and its diff. A change of a rule shows there, line by line, where a reviewer sees it.

Regenerate after a deliberate change: ROCM_PERF_WRITE_OUTPUTS=1 .venv/bin/python -m pytest tests/test_rewrite_outputs.py
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from conftest import DATA, KERNELS
from rocm_perf.source import analyze_source, applicable_rules, guard_candidate, load_rules, make_candidate
from rocm_perf.source.unroll_plan import unroll_plan

CORPUS = sorted(KERNELS.glob("*.cu"))
OUTPUTS = DATA / "rewrites"


@functools.cache
def rules():
    return load_rules()


def outputs_of(path: Path) -> str:
    analysis = analyze_source(path)
    out = [f"# Rule outputs on kernels/{path.name}", ""]
    for loop in analysis.loops:
        for rule, factors in applicable_rules(loop, rules()):
            for factor in factors:
                cand = make_candidate(path, analysis, loop.id, rule.name, factor, rules=rules())
                failed = [f"{v.name}: {v.reason}" for v in guard_candidate(cand) if not v.ok]
                form = f"; test: {unroll_plan(loop, factor).test_form}" if rule.name == "unroll_manual" else ""
                added = sum(1 for l in cand.diff.splitlines() if l.startswith("+") and not l.startswith("+++"))
                removed = sum(1 for l in cand.diff.splitlines() if l.startswith("-") and not l.startswith("---"))
                out += [f"## {loop.id} {rule.name} x{factor}", "",
                        f"{cand.summary} (+{added} -{removed}{form})" + (f"; guards failed: {failed}" if failed else ""),
                        "", "```diff", cand.diff.rstrip(), "```", ""]  # fmt: skip
    return "\n".join(out)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_rule_outputs_are_as_recorded(path):
    text = outputs_of(path)
    recorded = OUTPUTS / f"{path.stem}.md"
    if os.environ.get("ROCM_PERF_WRITE_OUTPUTS"):
        OUTPUTS.mkdir(exist_ok=True)
        recorded.write_text(text)
    assert recorded.read_text() == text, f"rerun with ROCM_PERF_WRITE_OUTPUTS=1 and review {recorded}"
