"""The manual unroll on random loops: every spelling of its "N iterations remain" test, every
remainder shape, run next to the original loop and compared iteration by iteration.

Each loop is drawn near an edge of its types (tests/unroll_cases.py): bounds at INT_MAX, at
UINT_MAX, at LLONG_MIN, at zero for unsigned loops counting down; starts, bounds and steps as
literals, named constants and run-time arguments of the variable's type or another; factors 2,
4 and 8. The original and the rewritten program are built by g++ with UBSan (a signed overflow
the rewrite introduced stops the program) and again at -O3, and must print the same values in
the same order, and the values the loop is known to run.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import shutil

import pytest

from rocm_perf.process import run
from rocm_perf.source import analyze_source, load_rules, make_candidate
from rocm_perf.source.unroll_plan import unroll_plan
from unroll_cases import draw, expected_output, source

CASES = 260
SEEDS = [int(s) for s in os.environ.get("ROCM_PERF_UNROLL_SEEDS", "61").split(",")]
FORMS = {"plain", "folded", "distance", "guarded", "safe"}
REMAINDERS = {"none", "straight", "loop"}


def _rewrite_all(path, cases):
    """The program with every loop unrolled by its case's factor (the largest one allowed when the
    loop runs fewer times), rewritten from the end so earlier offsets stay valid; the plans used."""
    analysis = analyze_source(path)
    manual = next(r for r in load_rules() if r.name == "unroll_manual")
    by_kernel = {l.kernel: l for l in analysis.loops}
    plans = []
    current = analysis
    for case in sorted(cases, key=lambda c: -by_kernel[f"loop_{c.index}"].start):
        loop = by_kernel[f"loop_{case.index}"]
        assert not manual.reasons_not(loop), (case, manual.reasons_not(loop))
        factors = manual.factors_for(loop)
        if not factors:
            continue  # runs fewer than two times
        factor = case.factor if case.factor in factors else max(factors)
        plans.append(unroll_plan(loop, factor))
        cand = make_candidate(path, current, loop.id, "unroll_manual", factor, rules=[manual])
        current = dataclasses.replace(current, data=cand.rewritten)
    return current.data, plans


def _build_and_run(source_path, exe, flags):
    done = run(["g++", "-std=c++17", *flags, "-x", "c++", str(source_path), "-o", str(exe)], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = run([str(exe)], timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]  # UBSan: a runtime error ends the program
    return ran.stdout


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("seed", SEEDS)
def test_unrolled_loops_run_every_iteration_in_order(tmp_path, seed):
    rng = random.Random(seed)
    cases = [draw(rng, i) for i in range(CASES)]
    original = tmp_path / "loops.cu"
    original.write_text(source(cases))
    rewritten_bytes, plans = _rewrite_all(original, cases)
    rewritten = tmp_path / "unrolled.cu"
    rewritten.write_bytes(rewritten_bytes)
    forms = collections.Counter(p.test_form for p in plans)
    remainders = collections.Counter(p.remainder for p in plans)
    assert set(forms) == FORMS, forms  # every spelling of the test is exercised
    assert set(remainders) == REMAINDERS, remainders
    sanitize = ["-O1", "-fsanitize=undefined", "-fno-sanitize-recover=undefined"]
    expected = expected_output(cases)
    assert _build_and_run(original, tmp_path / "original", sanitize) == expected
    assert _build_and_run(rewritten, tmp_path / "unrolled", sanitize) == expected
    assert _build_and_run(rewritten, tmp_path / "unrolled_o3", ["-O3"]) == expected
