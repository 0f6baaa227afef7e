"""Screening many candidates at once: a race in rungs (successive halving with sequential looks).

Pure functions over paired round values; the screen stage (stages/screen.py) feeds them the ledger's rounds, and
search_simulation.py feeds them seeded synthetic candidates (tests, tests/bench).

Every candidate of a generation races against the same baseline in interleaved pairs, a rung at
a time: all candidates still in the race are measured to the same pair count (`rungs`, e.g. 5,
10, 20, 40, 80, 100), then each is judged on those pairs:

- passes screening: its Hodges-Lehmann interval of the median ratio candidate/baseline lies
  below 1 - min_gain at level look_alpha = alpha / len(rungs) per tail (Bonferroni over the
  looks, as the sequential test of acceptance.py: one candidate falsely passes with probability
  at most alpha);
- slower / not significant: the interval lies above 1 / above 1 - min_gain (acceptance.py's rules);
- inconclusive: still undecided at the last rung;
- outraced (stops; never accepted): not plausibly a min_gain gain any more (its interval at the
  lenient level `drop_alpha` lies above 1 - min_gain), or, from `futility_from` pairs, unable to
  pass screening even at the last rung (that lenient interval's optimistic end, widened by the
  half-width a last-rung interval would still have at its spread, lies above 1 - min_gain: a close
  call on a noisy program stops instead of running to the last rung inconclusive; before
  `futility_from` pairs, at the smaller of its own spread and the run's A/A spread, `known_spread`:
  in the simulation pipeline, 15 % spread and nothing to find, spent 52 % of exhaustive search's
  runs instead of 56 %, transpose 40 % instead of 44 %; replayed on the 175 races recorded in the
  last passes, 3 % fewer pairs and the same candidates passed), or behind a
  rival for the same loop (paired round by round with the loop's leader, its ratio over the
  leader's lies above 1 at the one-sided level `last_alpha`; or its interval lies entirely above the
  leader's: intervals alone cannot separate two rivals at a first rung's 5 pairs, where the strict
  interval is unbounded, and paired they can. stencil1d's first rung at 91098d3: three rivals slower
  than `unroll_manual x2` in every pair stop there; in the race's simulation of the 12 spaces, 200
  searches each, stencil1d met the goal in 80 % instead of 75 %, stencil2d spent 52 % of exhaustive
  search's runs instead of 56 %, no find rate moved), or in the slower part of
  its loop's rivals still racing or passed (successive halving: the best `keep` share of them by
  estimate, at least `min_keep` while none has passed, run the next rung), or slower by estimate
  than a rival that passed screening (it could only be confirmed after it: pipeline, 20 pairs
  more to choose between 0.872 and 0.877 at 15 % spread; stencil1d, 20 runs alone behind one).
  Halving two racers would keep the one ahead by estimate after a few pairs, a coin toss
  between close rivals: two race on until an interval separates them
  (matmul_tiled: x2 at 0.974 and x4 at 0.981 on one loop; in the race's simulation of its space,
  1,000 searches, it raised the share that accept x2 from 28 % to 35 %, for 0-15 % more pairs
  on the other eleven programs' spaces). Rivals are the candidates of one loop: at most one of
  them can be accepted;
- passes screening as its loop's last racer: when a loop is down to one racer (its rivals
  outraced, or passed and slower by estimate), from `last_from` pairs it passes once its interval
  at the one-sided level `last_alpha` (not divided over the looks) lies below 1 - min_gain. The
  race has nothing left to decide for that loop; only the fresh confirmation can accept, and the
  strict level would make it prove its gain twice (scan: a 3 % gain against the 2 % bar raced alone to 80 pairs, then 40
  more to confirm; matmul_tiled: one raced alone 100 pairs, then failed its confirmation in 20);
- passes screening as its loop's leader: the same rule for the racer ahead by estimate of rivals
  still racing, none passed, once it is also ahead of each of them pair by pair (their paired
  ratio over it, `ratio_to_rival`, has its 50 % interval above 1); they then stop as slower than
  a rival that passed. The strict level made the leader prove its gain twice here too (stencil1d
  at 7bc8f1a: `unroll_manual x2` at 0.928 raced `#pragma unroll 2` at 0.956 to 40 pairs, then 30
  more to confirm; on its pairs it passes at 20). Without the paired margin the leader by
  estimate passed between rivals that close pairs do not separate: in the pass at 35b7f8d
  stencil1d's `unroll_manual x4` (exhaustive 0.988) led `unroll_manual x2` 0.946 to 0.950 after
  10 pairs, passed, and took 30 pairs of confirmation to fail before x2 was settled (100
  confirming runs; the program missed its share of runs). In the race's simulation of the 12
  spaces (200 searches each, with the early futility rule below) stencil1d met the goal in 79 %
  of searches instead of 76 % without the leader's rule (82 % without the margin), matmul_tiled
  in 55 % instead of 53 %;
- budget: when the pairs left cannot take every candidate to its next rung, the candidates of
  highest expected value get them (`grant`); a first rung may use at most `first_share` of them.

Dropping a candidate can lose a gain but never accept one: every accept still needs a fresh
confirmation at alpha / (k (k + 1)) (acceptance.confirmation_alpha), so the run's family-wise
false-accept probability stays at most alpha, as before the race.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Sequence

from rocm_perf.optimize import acceptance as acc

OUTRACED = "outraced"
BUDGET = "budget"
LAST_RACER = "its loop's last racer"  # how a pass by judge_last's rule begins its detail
LEADER = "its loop's leader"  # ... or, with rivals still racing


@dataclass(frozen=True)
class RacePlan:
    """The rungs and error levels of a race; recorded in the ledger with every decision."""

    min_gain: float = 0.02
    alpha: float = 0.05  # one-sided level of each candidate's screening test (Bonferroni over rungs)
    rungs: tuple[int, ...] = (5, 10, 20, 40, 80, 100)
    keep: float = 0.5  # share of a loop's racing rivals that run the next rung
    drop_alpha: float = 0.25  # lenient tail level of "still plausibly a min_gain gain" (a 50 % interval)
    first_share: float = 0.5  # at most this share of the pairs left goes to first rungs
    method: str = "hodges-lehmann"
    futility: bool = True  # drop a candidate that could not pass even at the last rung (see judge)
    futility_from: int = 20  # pairs before the futility rule applies (fewer give no steady spread to go by)
    last_alpha: float = 0.05  # a loop's last racer passes screening at this one-sided level (90 % interval)
    last_from: int = 10  # ... from this many pairs
    min_keep: int = 2  # halving keeps at least this many of a loop's racers while none of them has passed
    # The spread in force (the A/A pairs', or the race's retake): the futility rule goes by it, or by the
    # racer's own where that is smaller, before futility_from (see judge). None: not before futility_from.
    known_spread: float | None = None

    def __post_init__(self) -> None:
        if not 0 < self.min_gain < 1:
            raise ValueError(f"min_gain must be in (0, 1), got {self.min_gain}")
        if not all(0 < a < 0.5 for a in (self.alpha, self.drop_alpha, self.last_alpha)):
            raise ValueError(f"alpha, drop_alpha and last_alpha must be in (0, 0.5), got {self.alpha}, "
                             f"{self.drop_alpha}, {self.last_alpha}")
        if not self.rungs or self.rungs[0] < 2 or list(self.rungs) != sorted(set(self.rungs)):
            raise ValueError(f"rungs must be increasing pair counts from at least 2, got {self.rungs}")
        if not 0 < self.keep <= 1 or not 0 < self.first_share <= 1:
            raise ValueError("keep and first_share must be in (0, 1]")

    @classmethod
    def doubling(cls, min_gain: float, alpha: float, first: int, last: int, **kw) -> "RacePlan":
        """Rungs first, 2 first, 4 first, ... and last (the --rounds and --max-rounds of a run)."""
        return cls(min_gain, alpha, tuple(acc.doubling_looks(first, last)), **kw)

    @property
    def look_alpha(self) -> float:
        return self.alpha / len(self.rungs)

    def to_json(self) -> dict:
        return {**asdict(self), "rungs": list(self.rungs), "look_alpha": self.look_alpha}


@dataclass
class Racer:
    """A candidate in the race: its loop (`group`), its expected value (`score`) and its pairs so far."""

    id: int
    group: str
    score: float
    baseline: Sequence[float] = field(default_factory=list)
    candidate: Sequence[float] = field(default_factory=list)

    @property
    def n(self) -> int:
        return min(len(self.baseline), len(self.candidate))


@dataclass(frozen=True)
class Call:
    """One racer's verdict at a rung: acc.ACCEPT (passes screening), acc.REJECT (with a reason),
    acc.INCONCLUSIVE, or acc.CONTINUE (runs the next rung)."""

    id: int
    verdict: str
    reason: str
    detail: str
    interval: acc.RatioInterval | None
    n: int

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "reason": self.reason, "detail": self.detail, "rounds": self.n,
                "interval": self.interval.to_json() if self.interval else None}


def judge(racer: Racer, n: int, plan: RacePlan) -> Call:
    """The screening test of one racer on its first n pairs (n a rung)."""
    b, c = list(racer.baseline)[:n], list(racer.candidate)[:n]
    iv = acc.median_ratio_interval(b, c, tail_alpha=plan.look_alpha, method=plan.method)
    threshold = 1.0 - plan.min_gain
    if iv.high < threshold:
        return Call(racer.id, acc.ACCEPT, acc.REASON_GAIN, "", iv, n)
    if iv.low > 1.0:
        return Call(racer.id, acc.REJECT, acc.REASON_SLOWER, "", iv, n)
    if iv.low > threshold:
        return Call(racer.id, acc.REJECT, acc.REASON_NOT_SIGNIFICANT, "", iv, n)
    if n >= plan.rungs[-1]:
        return Call(racer.id, acc.INCONCLUSIVE, acc.REASON_INCONCLUSIVE, "", iv, n)
    lenient = acc.median_ratio_interval(b, c, tail_alpha=plan.drop_alpha, method=plan.method)
    if lenient.low > threshold:
        return Call(racer.id, acc.REJECT, OUTRACED,
                    f"not plausibly {plan.min_gain:.1%} faster after {n} pairs (ratio {lenient.estimate:.3f}, "
                    f"{1 - 2 * plan.drop_alpha:.0%} interval from {lenient.low:.3f})", iv, n)
    why = ""
    if plan.futility and (n >= plan.futility_from or plan.known_spread):
        # Before futility_from a racer's own pairs give no steady spread; the known one does, and the
        # smaller of the two never drops a racer its own pairs would keep.
        spread = min(plan.known_spread, acc.paired_spread(b, c)) if n < plan.futility_from else None
        why = acc.out_of_reach(b, c, threshold, last_n=plan.rungs[-1], look_alpha=plan.look_alpha,
                               drop_alpha=plan.drop_alpha, method=plan.method, spread=spread)
    if why:
        return Call(racer.id, acc.REJECT, OUTRACED, why, iv, n)
    return Call(racer.id, acc.CONTINUE, "", "", iv, n)


def judge_rung(racers: list[Racer], n: int, plan: RacePlan, passed: dict[str, list[Call]] | None = None) -> dict[int, Call]:
    """Every racer's call at rung n (each has at least n pairs; judged on its first n).

    `passed`: calls of earlier rungs' racers that passed screening, by group: a racer behind one
    of them is outraced too, and they count among its loop's rivals in the halving."""
    calls = {r.id: judge(r, n, plan) for r in racers}
    groups: dict[str, list[Racer]] = {}
    for r in racers:
        groups.setdefault(r.group, []).append(r)
    for group, members in groups.items():
        rivals = [calls[r.id] for r in members if calls[r.id].verdict in (acc.CONTINUE, acc.ACCEPT)]
        rivals += list((passed or {}).get(group, []))
        leader = min(rivals, key=lambda c: (c.interval.estimate, c.id), default=None)
        racing = [r for r in members if calls[r.id].verdict == acc.CONTINUE]
        # A leader racing in this rung is compared pair by pair; one that passed earlier only by interval.
        leader_racer = {m.id: m for m in members}.get(leader.id) if leader is not None else None
        for r in racing:
            mine = calls[r.id]
            if leader is None or leader.id == r.id:
                continue
            paired = ratio_to_rival(r, leader_racer, n, plan) if leader_racer is not None else None
            if paired is not None and paired.low > 1.0:
                why = (f"; paired, its ratio over trial {leader.id}'s {paired.estimate:.3f} "
                       f"[{paired.low:.3f}, {paired.high:.3f}] lies above 1")
            elif mine.interval.low > leader.interval.high:
                why = ""
            else:
                continue
            calls[r.id] = Call(r.id, acc.REJECT, OUTRACED, f"behind trial {leader.id} of the same loop after {n} pairs "
                               f"(ratio {mine.interval.estimate:.3f} vs {leader.interval.estimate:.3f}{why})", mine.interval, n)
        still = [r for r in members if calls[r.id].verdict in (acc.CONTINUE, acc.INCONCLUSIVE)]
        if len(still) >= 2 and not (passed or {}).get(group) and \
                not any(calls[r.id].verdict == acc.ACCEPT for r in members):
            # The loop's leader passes as its last racer would, once ahead of each rival pair by pair (its
            # 50 % interval): by estimate alone close rivals are a coin toss. Its rivals then stop (below).
            top = min(still, key=lambda r: (calls[r.id].interval.estimate, r.id))
            if all(ratio_to_rival(r, top, n, plan, tail_alpha=plan.drop_alpha).low > 1.0 for r in still if r.id != top.id):
                calls[top.id] = judge_last(top, n, plan, calls[top.id], rivals=len(still) - 1)
        screened = [calls[r.id] for r in members if calls[r.id].verdict == acc.ACCEPT] + list((passed or {}).get(group, []))
        best_passed = min(screened, key=lambda c: (c.interval.estimate, c.id), default=None)
        for r in members:
            # A racer slower (by estimate) than a rival that passed could only be confirmed after it: it
            # stops. (stencil1d: pragma x2 at 0.960 raced 10 pairs more alone, 20 runs, behind manual x2
            # passed at 0.931, and the program missed half of exhaustive search's runs by 18.)
            mine = calls[r.id]
            if best_passed is not None and mine.verdict in (acc.CONTINUE, acc.INCONCLUSIVE) and \
                    (mine.interval.estimate, r.id) > (best_passed.interval.estimate, best_passed.id):
                calls[r.id] = Call(r.id, acc.REJECT, OUTRACED, f"slower than trial {best_passed.id}, which passed screening, "
                                   f"after {n} pairs (ratio {mine.interval.estimate:.3f} vs {best_passed.interval.estimate:.3f}): "
                                   "it could only be confirmed after it", mine.interval, n)
        # Halving counts the loop's screened rivals too (all racers left are ahead of them).
        standing = sorted([calls[r.id] for r in members if calls[r.id].verdict == acc.CONTINUE] + screened,
                          key=lambda c: (c.interval.estimate, c.id))
        keep = max(1 if screened else plan.min_keep, math.ceil(len(standing) * plan.keep))
        for c in standing[keep:]:
            if c.verdict == acc.CONTINUE:
                passed_note = f", {len(screened)} passed screening" if screened else ""
                calls[c.id] = Call(c.id, acc.REJECT, OUTRACED, f"in the slower part of {len(standing)} rivals for its loop "
                                   f"after {n} pairs (ratio {c.interval.estimate:.3f}; the best {keep} run on{passed_note})",
                                   c.interval, n)
        # At the last rung a lone racer's strict call is inconclusive, not continue: the lenient rule
        # applies there too (pipeline: `#pragma unroll 8` raced alone to 100 pairs, its 90 % interval
        # [0.923, 0.979] below the bar, and ended inconclusive instead of going to its re-measure).
        last = [r for r in members if calls[r.id].verdict in (acc.CONTINUE, acc.INCONCLUSIVE)]
        if len(last) == 1:
            calls[last[0].id] = judge_last(last[0], n, plan, calls[last[0].id])
    return calls


def ratio_to_rival(racer: Racer, rival: Racer, n: int, plan: RacePlan, tail_alpha: float | None = None) -> acc.RatioInterval:
    """The interval (tail plan.last_alpha, or tail_alpha) of racer's paired ratio over its rival's, pair by pair:
    (c / b) / (c' / b') of their i-th pairs, which were measured in the same round of the rung
    (sharing one baseline run when they were partners, and then just c / c'). Each pair still
    cancels the machine's speed, and a shared baseline run cancels out entirely."""
    mine = [c / b for b, c in zip(list(racer.baseline)[:n], list(racer.candidate)[:n])]
    theirs = [c / b for b, c in zip(list(rival.baseline)[:n], list(rival.candidate)[:n])]
    return acc.median_ratio_interval(theirs, mine, tail_alpha=plan.last_alpha if tail_alpha is None else tail_alpha,
                                     method=plan.method)


def judge_last(racer: Racer, n: int, plan: RacePlan, call: Call, rivals: int = 0) -> Call:
    """The call of a loop's last racer (no rival racing; any that passed are slower by estimate), or
    of its leader by estimate ahead of `rivals` racing, none passed: it passes screening once its
    interval at plan.last_alpha lies below 1 - min_gain (from plan.last_from pairs), else `call` stands."""
    if n < plan.last_from:
        return call
    b, c = list(racer.baseline)[:n], list(racer.candidate)[:n]
    iv = acc.median_ratio_interval(b, c, tail_alpha=plan.last_alpha, method=plan.method)
    if iv.high >= 1.0 - plan.min_gain:
        return call
    who = f"{LEADER} ahead of {rivals} racing" if rivals else LAST_RACER
    return Call(racer.id, acc.ACCEPT, acc.REASON_GAIN,
                f"{who}: after {n} pairs its {1 - 2 * plan.last_alpha:.0%} interval lies below "
                f"{1 - plan.min_gain:.3f} ({iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]); the fresh re-measure decides",
                call.interval, n)


def grant(racers: list[Racer], target: int, pairs_left: float, *, first: bool, plan: RacePlan) -> tuple[list[int], list[int]]:
    """(granted, refused) racer ids for measuring every racer to `target` pairs with `pairs_left`:
    by expected value (score, highest first), never first-come; a first rung gets at most
    plan.first_share of the pairs left, so later rungs of the best candidates stay affordable."""
    budget = pairs_left * (plan.first_share if first else 1.0)
    granted, refused = [], []
    for r in sorted(racers, key=lambda r: (-r.score, r.id)):
        need = max(0, target - r.n)
        if need <= budget:
            granted.append(r.id)
            budget -= need
        else:
            refused.append(r.id)
    return granted, refused


def next_rung(plan: RacePlan, rung_index: int) -> int | None:
    """The pair count of the rung after `rung_index` (-1: before the first), None after the last."""
    i = rung_index + 1
    return plan.rungs[i] if i < len(plan.rungs) else None
