"""Candidates ordered by measured loop heat (optimize/plan.py, optimize/heat.py).

The ordering on the real source analysis of corpus kernels with given heat; the heat itself from
real sampled rounds of a program with one cheap and one expensive loop.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocm_perf.backends.host import HostBackend
from rocm_perf.optimize.heat import HEAT_MAX_ROUNDS, HEAT_MIN_SAMPLES, HeatRounds, measure_loop_heat, samples_recorded
from rocm_perf.optimize.plan import COLD_SHARE, RankedKernel, expected_value, loop_key, propose
from rocm_perf.source import analyze_source, applicable_rules, load_rules

ROOT = Path(__file__).resolve().parents[1]
REGBLOCK = ROOT / "kernels" / "matmul_regblock.cu"
TWO_LOOPS = ROOT / "tests" / "data" / "host" / "sampler_two_loops.cu"
SHORT_TWO_LOOPS = ROOT / "tests" / "data" / "programs" / "two_loops.cu"


def groups_for(source: Path, kernel: str, heat: dict | None) -> list[list]:
    analysis = analyze_source(source)
    text = source.read_text()
    return propose(ranking=[RankedKernel("sym", kernel, 1.0, 1.0)], analysis=analysis, rules=load_rules(),
                   applicable_rules=applicable_rules, original_text=text, current_text=text, tried_loop_keys=set(),
                   only_rules=[], only_factors=[], resources={}, heat=heat)


def test_heat_puts_the_measured_hottest_loop_first_and_cold_loops_last():
    analysis = analyze_source(REGBLOCK)
    loops = [l for l in analysis.loops if l.kernel == "matmul_micro4x4"]
    by_line = {l.line: l for l in loops}
    assert {35, 43} <= set(by_line)
    without = groups_for(REGBLOCK, "matmul_micro4x4", None)
    # Heat says: line 43's loop (the fma loop) holds 70 %, the p loop around it 25 %, the rest nothing.
    heat = {"kernels": {"matmul_micro4x4": 1000.0},
            "loops": {loop_key("matmul_micro4x4", 43): 0.70, loop_key("matmul_micro4x4", 35): 0.25}}
    with_heat = groups_for(REGBLOCK, "matmul_micro4x4", heat)
    order = [g[0].loop_id for g in with_heat]
    assert order[0] == by_line[43].id and order[1] == by_line[35].id
    assert all(g[0].cold for g in with_heat[2:]) and not any(g[0].cold for g in with_heat[:2])
    assert with_heat[0][0].heat == 0.70
    # Without heat the guess decides (the runtime-trip p loop first: its trip count is unknown).
    guess_order = [g[0].loop_id for g in without]
    assert guess_order[0] == by_line[35].id
    assert sorted(order) == sorted(g[0].loop_id for g in without)  # same loops, other order: nothing skipped


def test_heat_is_its_own_factor_of_the_expected_value():
    analysis = analyze_source(REGBLOCK)
    loop = next(l for l in analysis.loops if l.line == 43)
    guess = expected_value(0.5, loop, 2, None)
    trip_weight = min(1.0, 0.25 + loop.trip_count / 64.0)
    assert expected_value(0.5, loop, 2, None, heat=0.4) == pytest.approx(guess / ((1 + 0.5 * loop.depth) * trip_weight) * 0.4)
    # A cold loop keeps its guess for ordering among the cold ones; `cold` puts it last.
    assert expected_value(0.5, loop, 2, None, heat=COLD_SHARE / 2) == pytest.approx(guess)


def test_kernels_the_heat_did_not_measure_keep_the_guess():
    heat = {"kernels": {"some_other_kernel": 10.0}, "loops": {}}
    assert [[p.expected_value for p in g] for g in groups_for(REGBLOCK, "matmul_micro4x4", heat)] == \
        [[p.expected_value for p in g] for g in groups_for(REGBLOCK, "matmul_micro4x4", None)]


@pytest.mark.slow
def test_heat_rounds_sample_an_untimed_build(tmp_path):
    """HeatRounds: the timed backend stays unsampled; a -g twin of it samples two runs."""
    timed = HostBackend(threads=1)
    assert not timed.sample and timed.evidence_backend().sample
    probe = HeatRounds(timed, program_args=[], run_template=None, timeout_s=300, cwd=tmp_path)
    heat, why = probe(TWO_LOOPS, tmp_path / "profiles", [], build_timeout_s=300, write_to=tmp_path / "hotspots.json")
    assert why == ""
    # Thousands of samples in its two runs: no third run is needed.
    assert len(list((tmp_path / "profiles").glob("round-*/host_samples_*.json"))) == 2
    assert heat["evidence"] == "host-sampler" and heat["samples"] > HEAT_MIN_SAMPLES
    assert heat["loops"][loop_key("two_loops", 19)] > 0.8
    assert heat["loops"][loop_key("two_loops", 15)] < 0.1
    assert json.loads((tmp_path / "hotspots.json").read_text())["kernels"][0]["loops"][0]["id"] == "two_loops:two_loops:2:19"
    groups = groups_for(TWO_LOOPS, "two_loops", heat)
    assert groups[0][0].loop_id == "two_loops:two_loops:2:19"


@pytest.mark.slow
def test_a_short_program_runs_again_until_its_heat_has_enough_samples(tmp_path, monkeypatch):
    """tests/data/programs/two_loops.cu runs its kernels in about a millisecond: two sampled runs
    hold about 20 samples, too few to give its loops' bodies any share; the heat rounds go on until
    HEAT_MIN_SAMPLES (or the cap of runs), and each run is kept apart. The cap on their seconds is
    lifted: on a loaded machine it, not the rule under test, could end them."""
    import rocm_perf.optimize.heat as heat_rounds

    monkeypatch.setattr(heat_rounds, "HEAT_MAX_SECONDS", 1e9)
    probe = HeatRounds(HostBackend(), program_args=[], run_template=None, timeout_s=300, cwd=tmp_path)
    heat, why = probe(SHORT_TWO_LOOPS, tmp_path / "profiles", [], build_timeout_s=300)
    assert why == ""
    runs = sorted((tmp_path / "profiles").glob("round-*/host_samples_*.json"),
                  key=lambda f: int(f.parent.name.removeprefix("round-")))  # round-10 after round-9
    # Counted as the heat rounds count them: the samples the instruction profile attributes (a
    # file's own "samples" total also holds ones outside the kernels: 201 against the floor's 200 once).
    per_run = [samples_recorded(f.parent) for f in runs]
    # Two sampled runs first; more exactly when those held too few samples (how many a run holds
    # follows how long its kernels ran, so the count of runs is not asserted, only the rule).
    assert 2 <= len(runs) <= HEAT_MAX_ROUNDS
    assert (len(runs) > 2) == (sum(per_run[:2]) < HEAT_MIN_SAMPLES)
    # It stopped at the first run that reached the floor (or at the cap), not before and not after.
    assert sum(per_run[:-1]) < HEAT_MIN_SAMPLES
    assert sum(per_run) >= HEAT_MIN_SAMPLES or len(runs) == HEAT_MAX_ROUNDS
    assert heat["samples"] == sum(per_run)
    assert heat["loops"][loop_key("row_xor_sum", 18)] > 0.5


def test_no_evidence_means_no_heat(tmp_path):
    (tmp_path / "profiles").mkdir()
    assert measure_loop_heat(tmp_path / "profiles", TWO_LOOPS, []) is None


@pytest.mark.slow
def test_the_loop_samples_its_baseline_and_proposes_the_hot_loop_first(tmp_path):
    """The real loop on the host backend: timed rounds unsampled, heat from its own sampled rounds."""
    from rocm_perf.optimize import driver
    from rocm_perf.optimize.command import create_run
    from rocm_perf.optimize.loop import OptimizeLoop
    from rocm_perf.optimize.services import Services, SourceTools
    from rocm_perf.optimize.measure import ProfiledRounds
    from rocm_perf.optimize.options import OptimizeOptions

    backend = HostBackend()
    opt = OptimizeOptions(source=TWO_LOOPS, out=tmp_path / "runs", backend="host", compile_check="off", quiet=True,
                          aa_rounds=2)
    run_dir, ledger = create_run(opt, backend.name, backend.describe(), ["test"])
    runner = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=300, cwd=tmp_path,
                            timing_lines=opt.timing_lines, keep_profiles=lambda key: True)
    loop = OptimizeLoop(run_dir, ledger, opt, Services(backend, runner, SourceTools.default(), None))
    driver.STAGES["baseline"](loop.ctx)
    driver.STAGES["noise-floor"](loop.ctx)
    driver.STAGES["rank"](loop.ctx)
    assert not list((run_dir / "baseline" / "profiles").rglob("host_samples*"))  # timed rounds: no sampling
    heat = ledger.get("loop_heat")
    assert heat["loops"][loop_key("two_loops", 19)] > 0.8
    assert (run_dir / "hotspots.json").is_file()
    driver.STAGES["propose"](loop.ctx)
    first = ledger.trials()[0]
    # Without heat the two loops tie (same depth, runtime trips) and the cheap one (line 15) would lead.
    assert first.loop_id == "two_loops:two_loops:2:19"
    tie = groups_for(TWO_LOOPS, "two_loops", None)
    assert tie[0][0].loop_id == "two_loops:two_loops:1:15"
