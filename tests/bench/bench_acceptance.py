"""Benchmark: the acceptance protocol on real host-backend measurements (prints tables).

1. False accepts: A/A pairs (tests/data/programs/bench_twin.cu, or --program, built twice), each screened as the
   loop screens a lone candidate (a race of one, fresh interleaved rounds) and, when it passes,
   confirmed on fresh rounds; also what the peers' rule (mean of 3 rounds, accept when more than
   2 % faster) does on the first three pairs of the same data.
2. Power: a kernel against its deliberately slower twin (3 %, 5 %, 10 % more work, so the plain
   build is that much faster): acceptance rate and rounds per decision, against a fixed 30 rounds.

Both on the machine as it is (`--loads idle`, the default) and/or with `--busy` (default 2) busy
processes beside the measurement (`--loads idle,loaded`), decided on any `--metric` (critical-path
is kept as the default here so earlier tables compare), or on `--metric auto` as the loop's A/A
pairs choose on the host backend: adjusted-path at the exponent each load's 10 A/A floor pairs fit.
`--program` takes another twin: bench_twin_stencil.cu sweeps a stencil over 1 MiB, whose CPU time
follows the speed probe where bench_twin.cu's integer chain does not.

Usage: .venv/bin/python tests/bench/bench_acceptance.py [--aa 50] [--aa-seconds S] [--trials 10] [--gains 3,5,10]
       [--metric cpu-path|auto|...] [--program tests/data/programs/bench_twin_stencil.cu] [--loads idle,loaded] [--busy 2] [--busy-kind cpu|memory] [--pin] [--pairing apart|together] [--max-rounds 30]
Progress goes to stderr, one line per decision; the tables to stdout.
Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from busy_load import BUSY_KINDS, busy_processes, machine_load, steal_ticks  # noqa: E402
from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize import racing  # noqa: E402
from rocm_perf.optimize.close_calls import SETTLE_MAX_PAIRS, close_call, settle_limit, to_settle  # noqa: E402
from rocm_perf.optimize.confirmation import confirmation_test  # noqa: E402
from rocm_perf.optimize.interleaved import pair_order  # noqa: E402
from rocm_perf.optimize import yardstick  # noqa: E402
from rocm_perf.optimize.measure import (ADJUSTED_STEPS, METRIC_ADJUSTED_PATH, METRIC_AUTO, METRIC_CPU_PATH,  # noqa: E402
                                        METRIC_PROBED_PATH, METRICS, METRIC_UNDIVIDED, ProfiledRounds, adjusted_metric,
                                        metric_kind, metric_value)
from rocm_perf.optimize.options import OptimizeOptions  # noqa: E402
from rocm_perf.optimize.probe_exponent import fit_rounds  # noqa: E402

PROGRAM = ROOT / "tests" / "data" / "programs" / "bench_twin.cu"
PAIRING = "apart"  # --pairing; together: each pair's two builds run at once (ProfiledRounds.together)


def measure_pair(runner, base_exe: Path, cand_exe: Path, i: int, work: Path, tag: str, metric: str,
                 plain: list[tuple[float, float]] | None = None, rounds: dict | None = None) -> tuple[float, float]:
    """Interleaved pair i: (baseline value, candidate value); on a probe-divided metric the pair's
    plain-metric values are appended to `plain` when given (the confirmation's guard, yardstick.py);
    each role's round to `rounds[role]` when given."""
    values, plain_values = {}, {}
    order = pair_order(i, str(base_exe), str(cand_exe))
    rounds_of_pair = [(Path(exe), work / f"{tag}-{i}-{role}", f"{tag}-{i}-{role}") for role, exe in order]
    ran = runner.together(rounds_of_pair) if PAIRING == "together" else [runner(*x) for x in rounds_of_pair]
    for (role, exe), r in zip(order, ran):
        if not r.ok:
            raise SystemExit(f"{exe}: round failed ({r.failure})")
        if rounds is not None:
            rounds.setdefault(role, []).append(r)
        values[role] = metric_value(r, metric)
        if metric_kind(metric) in METRIC_UNDIVIDED:
            plain_values[role] = metric_value(r, METRIC_UNDIVIDED[metric_kind(metric)])
    if plain is not None and plain_values:
        plain.append((plain_values["B"], plain_values["C"]))
    return values["B"], values["C"]


def sequential(runner, base_exe: Path, cand_exe: Path, plan: acc.SequentialPlan, work: Path, tag: str, metric: str):
    """One decision with fresh interleaved rounds, with the loop's guard on a probe-divided metric
    (an accept the candidate's shifted probe flatters must pass on the plain metric too); returns
    (decision, baseline values, candidate values)."""
    b: list[float] = []
    c: list[float] = []
    plain: list[tuple[float, float]] = []
    d = acc.Decision(acc.CONTINUE, "", None, 0)
    for i in range(plan.max_rounds):
        vb, vc = measure_pair(runner, base_exe, cand_exe, i, work, tag, metric, plain)
        b.append(vb)
        c.append(vc)
        d = acc.sequential_decision(b, c, plan)
        if d.verdict == acc.ACCEPT and plain:
            d = yardstick.guard_accept(d, plan, [p[0] for p in plain], [p[1] for p in plain], b, c,
                                       METRIC_UNDIVIDED[metric_kind(metric)])
            if d.detail:  # the guard acted: the probe read slower in the candidate's rounds
                print(f"  guard: {d.verdict}: {d.detail}", file=sys.stderr, flush=True)
        if d.verdict != acc.CONTINUE:
            return d, b, c
    return d, b, c


def raced(runner, base_exe: Path, cand_exe: Path, plan: racing.RacePlan, work: Path, tag: str, metric: str):
    """One candidate screened as the loop screens a lone one: a race of one racer, rung by rung
    (racing.judge_rung, so its loop's-last-racer rule applies); returns (decision, baseline values,
    candidate values)."""
    b: list[float] = []
    c: list[float] = []
    for n in plan.rungs:
        while len(b) < n:
            vb, vc = measure_pair(runner, base_exe, cand_exe, len(b), work, tag, metric)
            b.append(vb)
            c.append(vc)
        call = racing.judge_rung([racing.Racer(1, "loop", 1.0, b, c)], n, plan)[1]
        if call.verdict != acc.CONTINUE:
            return acc.Decision(call.verdict, call.reason, call.interval, n, call.detail), b, c
    raise AssertionError("the last rung always decides")


def settled(d: acc.Decision, b: list[float], c: list[float], screen: racing.RacePlan, confirm: acc.SequentialPlan):
    """The confirmation plan the loop would re-measure a lone candidate with that did not pass
    screening but is a close call it settles (stages/screen.py settle_close_calls), or None."""
    if d.verdict == acc.ACCEPT or d.interval is None:
        return None
    evidence = {"screen": {"critical_path": d.interval.to_json()}}
    call = close_call(1, "candidate", "rejected", d.reason, d.detail, evidence, 1.0 - screen.min_gain, (b, c), confirm.look_alpha)
    if call is None or not to_settle([call], {1: "loop"}, set()):
        return None
    return confirm.ending_by(settle_limit(SETTLE_MAX_PAIRS))


def peer_rule(b: list[float], c: list[float]) -> bool:
    """rocm-perf-lab's rule: the mean of 3 runs, accept when more than 2 % faster."""
    return float(np.mean(c[:3])) < 0.98 * float(np.mean(b[:3]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--aa", type=int, default=50, help="A/A decisions (default 50; 0 skips them)")
    ap.add_argument("--aa-seconds", type=float, default=0, help="start no A/A decision after this many seconds (default: no limit)")
    ap.add_argument("--trials", type=int, default=10, help="decisions per known gain (default 10; 0 skips the power table)")
    ap.add_argument("--gains", default="3,5,10", help="known gains in percent (default 3,5,10)")
    # adjusted-path at a fixed exponent (a loop fits its own on its A/A rounds): adjusted-path:0.1 ... 0.9
    fixed = [m for m in METRICS if m != METRIC_ADJUSTED_PATH] + [adjusted_metric(k / ADJUSTED_STEPS) for k in range(1, ADJUSTED_STEPS)]
    ap.add_argument("--metric", default="critical-path", choices=[METRIC_AUTO, *fixed],
                    help="the decision metric (default critical-path, so earlier tables compare); auto: as the loop's A/A "
                         "pairs choose it on the host backend, adjusted-path at the exponent the load's A/A floor pairs fit")
    ap.add_argument("--loads", default="idle", help="idle, loaded, or idle,loaded (default idle)")
    ap.add_argument("--busy", type=int, default=2, help="busy processes beside the measurement when loaded (default 2)")
    ap.add_argument("--busy-kind", default="cpu", choices=list(BUSY_KINDS),
                    help="what the busy processes do: spin on a core (cpu, the default) or stream 128 MiB copies (memory)")
    ap.add_argument("--program", type=Path, default=PROGRAM,
                    help="the .cu program and its twins (built with -DEXTRA_PERMILLE=N for N/1000 more work; default "
                         "bench_twin.cu, an integer chain; bench_twin_stencil.cu is a stencil whose time follows the speed probe)")
    ap.add_argument("--pin", action="store_true", help="pin the block workers (ROCM_PERF_HOST_PIN=1)")
    ap.add_argument("--pairing", default="apart", choices=["apart", "together"],
                    help="how each pair's two builds run (optimize --pairing; default apart, as the earlier tables; "
                    "the loop's default on the host backend is together, where --metric auto means cpu-path)")
    ap.add_argument("--max-rounds", type=int, default=OptimizeOptions.max_rounds, help="pairs at most per decision (optimize --max-rounds; default: its default)")
    args = ap.parse_args()

    backend = HostBackend(pin=args.pin)
    global PAIRING
    PAIRING = args.pairing
    work = Path(tempfile.mkdtemp(prefix="bench_acceptance-"))
    runner = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=120, cwd=work,
                            timing_lines=r"(?!)", keep_profiles=lambda key: False)
    # The loop's rules: a lone candidate races alone (rungs of doubling pairs; it stops when it could
    # not pass by the last rung, 50 % lenient interval, and passes as its loop's last racer at a 90 %
    # interval from 10 pairs), and its confirmation stops likewise at 80 % (loop.py); both from 20 pairs,
    # the race's before that at the smaller of a racer's own spread and the A/A pairs' (taken per load).
    screen = racing.RacePlan.doubling(0.02, 0.05, OptimizeOptions.rounds, args.max_rounds)
    confirm = confirmation_test(0.02, 0.05, OptimizeOptions.rounds, args.max_rounds).with_alpha(acc.confirmation_alpha(0.05, 1))
    print(f"# acceptance benchmark on {backend.describe()}, {args.program.name}; plan: min_gain 2 %, screening as a race of one: rungs "
          f"{list(screen.rungs)}, alpha 0.05 (per rung {screen.look_alpha:.4f}), its loop's last racer passing at a "
          f"{1 - 2 * screen.last_alpha:.0%} interval from {screen.last_from} pairs; first confirmation alpha {confirm.alpha:.4f}, "
          f"looks {confirm.looks()}; futility from {screen.futility_from} pairs (lenient intervals {1 - 2 * screen.drop_alpha:.0%} "
          f"screening, {1 - 2 * confirm.drop_alpha:.0%} confirmation); metric {args.metric}, pairs run {args.pairing}, at most {args.max_rounds} pairs")

    t0 = time.time()
    if not args.program.is_file():
        raise SystemExit(f"--program {args.program}: no such file")
    a = backend.build(args.program, work / "a", [])
    a2 = backend.build(args.program, work / "a2", [])
    slow = {}
    for g in (float(x) for x in args.gains.split(",")):
        permille = round(1000 * (g / 100) / (1 - g / 100))
        slow[g] = backend.build(args.program, work / f"slow{permille}", [f"-DEXTRA_PERMILLE={permille}"])
    for load in args.loads.split(","):
        if load not in ("idle", "loaded"):
            raise SystemExit(f"--loads {args.loads!r}: expected idle, loaded or idle,loaded")
        with busy_processes(args.busy if load == "loaded" else 0, args.busy_kind):
            steal0 = steal_ticks()
            busy = f"{args.busy} busy ({args.busy_kind})" if load == "loaded" else "no busy"
            print(f"\n# {load}: {busy} processes started here; {machine_load()}")
            # As the loop does, A/A pairs first: the race's futility rule goes by their spread before
            # futility_from pairs (racing.RacePlan.known_spread).
            rounds: dict = {}
            floor = [measure_pair(runner, a.executable, a2.executable, i, work, f"{load}-floor",
                                  METRIC_CPU_PATH if args.metric == METRIC_AUTO else args.metric, rounds=rounds)
                     for i in range(OptimizeOptions.aa_rounds)]
            load_args = args
            if args.metric == METRIC_AUTO and PAIRING == "together":  # as options.settle_metric: no probe to fit
                load_args = argparse.Namespace(**{**vars(args), "metric": METRIC_CPU_PATH})
                print(f"# {load}: --metric auto decides on cpu-path (pairs run together)")
            elif args.metric == METRIC_AUTO:
                load_args = argparse.Namespace(**{**vars(args), "metric": auto_metric(rounds, load)})
                floor = list(zip(*([metric_value(r, load_args.metric) for r in rounds[role]] for role in "BC")))
            spread = acc.paired_spread([p[0] for p in floor], [p[1] for p in floor])
            print(f"# {load}: A/A spread over {len(floor)} pairs {spread:.1%} (the race's futility rule goes by it "
                  f"before {screen.futility_from} pairs)")
            measure(load_args, runner, replace(screen, known_spread=spread), confirm, a, a2, slow, work, load)
            print(f"\n({load}: steal {steal_ticks() - steal0} ticks; {machine_load()} at the end)")
    print(f"\n(total {time.time() - t0:.0f} s; work dir {work})")
    return 0


def auto_metric(rounds: dict, load: str) -> str:
    """What --metric auto decides on over these A/A rounds, as the loop's A/A pairs choose on the
    host backend (stages/noise_floor.py choose_metric): the adjusted path at the exponent they fit, or where there
    is no fit the steadier of cpu-path and probed-path. The loop's second look at its race's first
    rung (stages/screen.py _recheck_metric) has no counterpart here: a bench decision races one candidate."""
    fit = fit_rounds([rounds["B"], rounds["C"]])
    if fit:
        chosen = adjusted_metric(fit.exponent)
        how = f"slope {fit.slope:.2f} over {fit.rounds} A/A rounds, correlation {fit.correlation:.2f}"
    else:
        ends = [METRIC_CPU_PATH, METRIC_PROBED_PATH]
        spreads = {m: acc.paired_spread(*([metric_value(r, m) for r in rounds[role]] for role in "BC")) for m in ends}
        chosen, how = acc.steadier_metric(spreads, ends), "no exponent fit: the steadier end"
    print(f"# {load}: --metric auto decides on {chosen} ({how})")
    return chosen


def measure(args, runner, screen, confirm, a, a2, slow, work: Path, load: str) -> None:
    """Sections 1 and 2 under the current load (a section with a count of 0 is skipped)."""
    if args.aa:
        false_accepts(args, runner, screen, confirm, a, a2, work, load)
    if args.trials:
        power(args, runner, screen, confirm, a, slow, work, load)


def false_accepts(args, runner, screen, confirm, a, a2, work: Path, load: str) -> None:
    t0 = time.time()
    accepts = {"screen": 0, "settled": 0, "confirm": 0, "peer": 0}
    verdicts: dict[str, int] = {}
    rounds = []
    spreads = []
    for k in range(args.aa):
        if args.aa_seconds and time.time() - t0 > args.aa_seconds:
            break  # out of time: the table says how many decisions it covers
        d, b, c = raced(runner, a.executable, a2.executable, screen, work, f"{load}-aa{k}", args.metric)
        verdicts[d.reason] = verdicts.get(d.reason, 0) + 1
        rounds.append(d.rounds)
        spreads.append(acc.paired_spread(b, c))
        accepts["screen"] += d.verdict == acc.ACCEPT
        # as in the loop: a screened winner, or a close call it settles, is re-measured fresh
        plan = confirm if d.verdict == acc.ACCEPT else settled(d, b, c, screen, confirm)
        if plan is not None:
            accepts["settled"] += d.verdict != acc.ACCEPT
            again, _, _ = sequential(runner, a.executable, a2.executable, plan, work, f"{load}-aa{k}-confirm", args.metric)
            accepts["confirm"] += again.verdict == acc.ACCEPT
        accepts["peer"] += peer_rule(b, c)
        print(f"A/A {k + 1}/{args.aa}: {d.reason} after {d.rounds} pairs; accepts so far {accepts}", file=sys.stderr, flush=True)
    n = len(rounds)
    print(f"\n## 1. False accepts over {n} A/A pairs (same source built twice), {load}, {args.metric}"
          + (f" (of {args.aa} asked: --aa-seconds {args.aa_seconds:.0f} ran out)" if n < args.aa else "") + "\n")
    print("| rule | accepts | rate |")
    print("|---|---|---|")
    for name, label in (("screen", "screening (a race of one)"), ("settled", "close calls re-measured (--settle-close-calls)"),
                        ("confirm", "screening then fresh confirmation (what the loop accepts)"),
                        ("peer", "peers: mean of 3, > 2 % faster")):
        print(f"| {label} | {accepts[name]} / {n} | {accepts[name] / max(n, 1):.0%} |")
    print(f"\nverdicts: {verdicts}; rounds per decision: mean {np.mean(rounds):.1f}, max {max(rounds)}; "
          f"paired spread (robust sd of log ratio): median {np.median(spreads):.3f}; {time.time() - t0:.0f} s", flush=True)


def power(args, runner, screen, confirm, a, slow, work: Path, load: str) -> None:
    t0 = time.time()
    print(f"\n## 2. Power: a kernel against its slower twin, {load}, {args.metric}\n")
    print("| known gain | measured ratio (median over all rounds) | paired spread (median) | passed screening | close calls re-measured | accepted (screening + fresh confirmation) | rounds per decision (mean, both phases) | fixed-30 rounds |")
    print("|---|---|---|---|---|---|---|---|")
    for g, twin in slow.items():
        acc_screen = acc_confirm = settles = 0
        n_rounds = []
        ratios = []
        spreads = []
        for k in range(args.trials):
            d, b, c = raced(runner, twin.executable, a.executable, screen, work, f"{load}-g{g:.0f}-{k}", args.metric)
            acc_screen += d.verdict == acc.ACCEPT
            n_rounds.append(d.rounds)
            spreads.append(acc.paired_spread(b, c))
            plan = confirm if d.verdict == acc.ACCEPT else settled(d, b, c, screen, confirm)
            if plan is not None:
                settles += d.verdict != acc.ACCEPT
                again, b2, c2 = sequential(runner, twin.executable, a.executable, plan, work, f"{load}-g{g:.0f}-{k}-confirm", args.metric)
                acc_confirm += again.verdict == acc.ACCEPT
                n_rounds[-1] += again.rounds
            ratios.extend(np.array(c) / np.array(b))
            print(f"{g:.0f} % {k + 1}/{args.trials}: {d.reason} after {d.rounds} pairs", file=sys.stderr, flush=True)
        print(f"| {g:.0f} % | {np.median(ratios):.3f} | {np.median(spreads):.3f} | {acc_screen} / {args.trials} | {settles} | {acc_confirm} / {args.trials} "
              f"| {np.mean(n_rounds):.1f} | 30 |", flush=True)
    print(f"\n({load}: {time.time() - t0:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
