"""State `whole-program`: where the measured program is a part cut out of a whole one (a replayed
kernel: runners/replay.py, `ProgramRunner.origin`), the run's accepted result is carried into the
whole program's source and measured there against the original, interleaved, before the run reports
it accepted: its outputs must be the original's in every round, and the protocol's sequential test
on the decision metric must find the whole program faster (a gain of any size the pairs resolve: the
kernel's gain, diluted by the rest of the program). Commits `whole_program`: the verdict (confirmed,
not confirmed, failed, not checked), its interval and what it was measured on; `apply` writes only a
confirmed result to the original. The replay's own original-against-final check (final-check) gives
the kernel's number; this gives the program's.

Rounds are recorded under the baseline's trial in phases `whole-reference` and `whole`; a run killed
here measures them again from the start."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.artifacts import unified_diff
from rocm_perf.optimize.confirmation import with_confirmation_rules
from rocm_perf.optimize.interleaved import pair_order, record_round
from rocm_perf.optimize.ledger import BASELINE_TRIAL
from rocm_perf.optimize.measure import ProfiledRounds, metric_value, outputs_differ
from rocm_perf.optimize.options import PAIRING_TOGETHER
from rocm_perf.optimize.output_tolerance import KeptOutputs
from rocm_perf.tolerance import parse_tolerance
from rocm_perf.optimize.project import build_environment, copy_files, project_files
from rocm_perf.optimize.runners.project_tree import ProjectTree
from rocm_perf.optimize.runners.source_file import SourceFile
from rocm_perf.optimize.states import FINISH

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext

CONFIRMED, NOT_CONFIRMED, FAILED, NOT_CHECKED, NOTHING = (
    "confirmed", "not confirmed", "failed", "not checked", "nothing accepted")
PHASE, REFERENCE = "whole", "whole-reference"
# Any gain the pairs can resolve: the bar is the kernel's, the program only has to be faster for it.
WHOLE_MIN_GAIN = 0.001
DIFF_NAME = "whole_program.diff"


def run(ctx: "RunContext") -> str:
    origin = ctx.program.origin()
    if origin is None:
        return FINISH
    ctx.ledger.forget_rounds(BASELINE_TRIAL, REFERENCE)
    ctx.ledger.forget_rounds(BASELINE_TRIAL, PHASE)
    bases = ctx.ledger.baselines()
    if len(bases) < 2:
        ctx.ledger.set("whole_program", {"verdict": NOTHING, "program": str(origin.path)})
        return FINISH
    ctx.report.stage("whole-program", f"confirming on {origin.record.get('display', origin.path)}")
    try:
        record = _check(ctx, origin, bases)
    except _Verdict as v:
        record = v.record
    record = {"program": str(origin.path), **record}
    ctx.ledger.set("whole_program", record)
    ctx.report.message(f"whole program: {record['verdict']}" + (f": {record['detail']}" if record.get("detail") else ""))
    return FINISH


class _Verdict(Exception):
    """The check ended before its pairs were done (the record says why)."""

    def __init__(self, verdict: str, detail: str, **extra):
        super().__init__(detail)
        self.record = {"verdict": verdict, "detail": detail, **extra}


def _check(ctx: "RunContext", origin, bases) -> dict:
    try:
        original = origin.path.read_bytes()
    except OSError as e:
        raise _Verdict(NOT_CHECKED, f"{origin.path}: cannot read it ({e.strerror or e})") from e
    if hashlib.sha256(original).hexdigest() != origin.sha256:
        raise _Verdict(NOT_CHECKED, f"{origin.path} changed since the kernel was captured from it")
    try:
        final = origin.carry(ctx.abs(bases[0].source_path).read_bytes(), ctx.abs(bases[-1].source_path).read_bytes(), original)
    except RocmPerfError as e:
        raise _Verdict(NOT_CHECKED, str(e)) from e
    where = ctx.run_dir / "whole"
    write_atomic(ctx.run_dir / DIFF_NAME, unified_diff(original.decode(errors="replace"), final.decode(errors="replace"),
                                                       origin.rel).encode())
    runner = whole_runner(ctx, origin, where)
    sources = runner.place_both(original, final)
    with ThreadPoolExecutor(max_workers=min(2, ctx.opt.jobs)) as pool:
        builds = [pool.submit(runner.program.build, src, where / f"build-{name}") for name, src in sources.items()]
        try:
            exe_original = builds[0].result()
        except RocmPerfError as e:
            raise _Verdict(NOT_CHECKED, f"the original program does not build: {e}") from e
        try:
            exe_final = builds[1].result()
        except RocmPerfError as e:
            raise _Verdict(FAILED, f"the accepted change does not build in the whole program: {e}") from e
    ref = runner.program.round(exe_original, where / "profiles" / "reference", f"0-{REFERENCE}-0-B")
    record_round(ctx, BASELINE_TRIAL, REFERENCE, 0, "B", ref)
    if not ref.ok:
        raise _Verdict(NOT_CHECKED, f"the original program fails ({ref.failure}, exit {ref.outputs.get('returncode')})")
    plan = with_confirmation_rules(acc.SequentialPlan(WHOLE_MIN_GAIN, ctx.alpha, ctx.opt.rounds, ctx.opt.max_rounds))
    b: list[float] = []
    c: list[float] = []
    decision = acc.Decision(acc.CONTINUE, "", None, 0)
    for i in range(plan.max_rounds):
        ctx.check_stop()
        order = pair_order(i, "B", "C")
        exes = {"B": exe_original, "C": exe_final}
        rounds = [(exes[role], where / "profiles" / f"{i}-{role}", f"0-{PHASE}-{i}-{role}") for role, _ in order]
        t0 = ctx.svc.clock()
        results = runner.program.together(rounds) if ctx.pairing == PAIRING_TOGETHER else [runner.program.round(*r) for r in rounds]
        for (role, _), r in zip(order, results):
            record_round(ctx, BASELINE_TRIAL, PHASE, i, role, r)
            if not r.ok:
                if role == "B":
                    raise _Verdict(NOT_CHECKED, f"the original program failed in pair {i} ({r.failure})")
                raise _Verdict(FAILED, f"the changed program failed in pair {i} ({r.failure}, exit "
                                       f"{r.outputs.get('returncode')}): {r.outputs.get('stderr_tail', '')}".rstrip(": "))
            differ = outputs_differ(ref.outputs, r.outputs, ctx.run_outputs)
            if differ:
                raise _Verdict(FAILED if role == "C" else NOT_CHECKED, f"pair {i}: the "
                               f"{'changed' if role == 'C' else 'original'} program's outputs differ: {differ}")
            (b if role == "B" else c).append(metric_value(r, ctx.opt.metric))
        decision = acc.sequential_decision(b, c, plan)
        est = f"ratio {decision.interval.estimate:.3f}" if decision.interval else ""
        ctx.report.round(i + 1, est, ctx.svc.clock() - t0)
        if decision.verdict != acc.CONTINUE:
            break
        if i + 1 >= ctx.opt.rounds and ctx.elapsed() >= ctx.opt.time_budget_s:
            decision = acc.Decision(acc.INCONCLUSIVE, acc.REASON_INCONCLUSIVE, decision.interval, i + 1,
                                    f"--time-budget spent after {i + 1} pairs")
            break
    interval = acc.median_ratio_interval(b, c, tail_alpha=plan.look_alpha)
    verdict = CONFIRMED if decision.verdict == acc.ACCEPT else NOT_CONFIRMED
    same = "outputs identical" if not ctx.opt.tolerance else f"outputs within {ctx.run_outputs}"
    detail = (f"ratio {acc.interval_text(interval.to_json())} over {len(b)} pairs, {same}"
              + ("" if verdict == CONFIRMED else f"; {decision.reason}" + (f" ({decision.detail})" if decision.detail else "")))
    return {"verdict": verdict, "detail": detail, "metric": ctx.opt.metric, "critical_path": interval.to_json(),
            "decision": decision.to_json(), "plan": plan.to_json(), "diff": DIFF_NAME,
            "program_sha256": origin.sha256, "final_sha256": hashlib.sha256(final).hexdigest()}


class _WholeRunner:
    """The whole program as a runner builds and measures it, and where the two sources go."""

    def __init__(self, program, origin, where: Path):
        self.program = program
        self.origin = origin
        self.where = where

    def place_both(self, original: bytes, final: bytes) -> dict[str, Path]:
        """The original and the changed source (a file, or a tree copy with the file replaced)."""
        out = {}
        for name, data in (("original", original), ("final", final)):
            if self.origin.kind == "project":
                tree = self.where / name
                copy_files(self.origin.root, project_files(self.origin.root, int(self.origin.record.get("max_files", 5000))), tree)
                write_atomic(tree / self.origin.rel, data)
                out[name] = tree
            else:
                path = self.where / name / Path(self.origin.rel).name
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, data)
                out[name] = path
        return out


def whole_runner(ctx: "RunContext", origin, where: Path) -> _WholeRunner:
    """The whole program's runner, as `optimize` on the original would have measured it."""
    backend = ctx.svc.backend
    record = origin.record
    # Under the run's tolerance the whole program's outputs are compared within it, with its own
    # reference round's (the replay compared the kernel's memory within it, against the capture).
    outputs = (KeptOutputs(where, parse_tolerance(ctx.opt.tolerance, ctx.opt.tolerance_type), f"0-{REFERENCE}-0-B")
               if ctx.opt.tolerance else None)
    if origin.kind == "project":
        bin_dir = where / "bin"
        rounds = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=ctx.opt.timeout_s, cwd=where,
                                timing_lines=ctx.opt.timing_lines, project_run=record["run"],
                                env=build_environment(backend, bin_dir), warmup=ctx.opt.warmup, outputs=outputs)
        project = {"root": str(origin.root), "build": record["build"], "run": record["run"], "sources": [origin.rel]}
        program = ProjectTree(backend, rounds, project, flags=[], build_timeout_s=ctx.opt.build_timeout_s, run_dir=where)
    else:
        args = list(record.get("args", []))
        rounds = ProfiledRounds(backend, program_args=args, run_template=None, timeout_s=ctx.opt.timeout_s,
                                cwd=Path(record.get("cwd") or "."), timing_lines=ctx.opt.timing_lines, warmup=ctx.opt.warmup,
                                outputs=outputs)
        program = SourceFile(backend, rounds, flags=list(record.get("cflags", [])), build_timeout_s=ctx.opt.build_timeout_s,
                             program_args=args, run_template=None)
    return _WholeRunner(program, origin, where)
