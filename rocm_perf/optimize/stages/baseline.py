"""State `baseline`: build the program and its A/A twin, compile-check it for AMD, run it once for
the reference outputs, and read the baseline's roofline. Commits generation 0 of the baseline, the
reference outputs, the twin and what the baseline's program is (for duplicates). After the reference
round it says what the time budget holds, or stops when the budget cannot pay for the A/A floor."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.amd_check import compile_check
from rocm_perf.optimize.build_cache import code_identity
from rocm_perf.optimize.interleaved import record_round, run_round
from rocm_perf.optimize.ledger import BASELINE_TRIAL, Baseline
from rocm_perf.optimize.options import PAIRING_TOGETHER
from rocm_perf.optimize.roofline_round import record_roofline
from rocm_perf.optimize.round_budget import announce_round_budget
from rocm_perf.optimize.states import BASELINE, NOISE

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def run(ctx: "RunContext") -> str:
    if ctx.project:
        return _project(ctx)
    src_copy = ctx.run_dir / "baseline" / "source.cu"
    original_sha = ctx.ledger.get("source_sha256")
    if ctx.program.digest(src_copy) != original_sha:
        raise RocmPerfError(f"{src_copy}: the run's copy of the source changed; start a new run")
    program, twin = _build_both(ctx, src_copy)
    checked = compile_check(ctx, src_copy, ctx.run_dir / "baseline" / "check")
    if checked and "error" in checked:
        ctx.ledger.set("compile_check_error", checked["error"][:2000])
        ctx.report.message("AMD compile check failed on the baseline; candidates are checked without it")
        checked = None
    resources = checked["resources"] if checked else None
    ctx.ledger.set("compile_check", resources is not None)
    ref, ref_s = _reference_run(ctx, program)
    if not ref.ok:
        why = ref.outputs.get("stderr_tail", "")
        raise RocmPerfError(f"{ctx.opt.source}: the baseline program fails ({ref.failure}, exit "
                            f"{ref.outputs.get('returncode')}): {why}".rstrip(": "))
    # What the baseline's program is (build_cache.code_identity) and its ISA: duplicates are
    # recognized against it.
    build = {"identity": code_identity(program), **{k: v for k, v in (checked or {}).items() if k.startswith("isa_")}}
    return _commit(ctx, ref, ref_s, program, twin, Baseline(0, None, original_sha, ctx.rel(src_copy), ctx.rel(program),
                                                            resources or {}), build)


def _project(ctx: "RunContext") -> str:
    """The baseline of a project: its tree copy built twice (the program and its A/A twin)."""
    tree = ctx.run_dir / "baseline" / "tree"
    if ctx.program.digest(tree) != ctx.ledger.get("source_sha256"):
        raise RocmPerfError(f"{tree}: the run's copy of the project changed; start a new run")
    work, twin = _build_both(ctx, tree)
    resources: dict | None = {}
    for rel in ctx.sources:
        found = compile_check(ctx, tree / rel)
        if found is None:
            resources = None
            break
        if "error" in found:
            ctx.ledger.set("compile_check_error", f"{rel}: " + found["error"][:2000])
            ctx.report.message(f"AMD compile check failed on {rel}; candidates are checked without it")
            resources = None
            break
        resources.update(found["resources"])
    ctx.ledger.set("compile_check", resources is not None)
    ref, ref_s = _reference_run(ctx, work)
    project = ctx.project
    if ref.outputs.get("processes") == 0:
        why = ref.outputs.get("stderr_tail", "") or ref.outputs.get("stdout_tail", "")
        raise RocmPerfError(
            f"{project['root']}: the run command `{project['run']}` (exit {ref.outputs.get('returncode')}) "
            "started no HIP program: no trace was written. It runs from the top of the built tree and must start "
            f"the program the build makes" + (f" ({why.strip().splitlines()[-1][:200]})" if why.strip() else ""))
    if not ref.ok:
        why = ref.outputs.get("stderr_tail", "")
        raise RocmPerfError(f"{project['root']}: the baseline program fails under `{project['run']}` "
                            f"({ref.failure}, exit {ref.outputs.get('returncode')}): {why}".rstrip(": "))
    return _commit(ctx, ref, ref_s, work, twin, Baseline(0, None, ctx.ledger.get("source_sha256"), ctx.rel(tree),
                                                         ctx.rel(work), resources or {}))


def _build_both(ctx: "RunContext", source):
    """The baseline's program and its A/A twin, built at once; their build time is the first
    estimate of a build wave."""
    ctx.report.stage(BASELINE, "building")
    t0 = ctx.svc.clock()
    with ThreadPoolExecutor(max_workers=min(2, ctx.opt.jobs)) as pool:
        builds = [pool.submit(ctx.program.build, source, ctx.run_dir / "baseline" / d) for d in ctx.program.baseline_dirs]
        program, twin = (f.result() for f in builds)
    ctx.ledger.set("baseline_build_seconds", ctx.svc.clock() - t0)
    return program, twin


def _reference_run(ctx: "RunContext", program):
    """The reference round and its seconds: its outputs are what every later round must give."""
    ctx.report.stage(BASELINE, "reference run")
    ref, seconds = run_round(ctx, ctx.rel(program), BASELINE_TRIAL, "reference", 0, "B")
    record_round(ctx, BASELINE_TRIAL, "reference", 0, "B", ref)
    return ref, seconds


def _commit(ctx: "RunContext", ref, ref_s: float, program, twin, baseline: Baseline, build: dict | None = None) -> str:
    """After a reference round that passed: what the budget holds, the baseline's roofline, then
    generation 0 of the baseline, its reference outputs and its twin in one ledger transaction."""
    _announce_budget(ctx, ref_s)
    record_roofline(ctx, "baseline", program, BASELINE)
    with ctx.ledger.transaction():
        ctx.ledger.set("reference_outputs", ref.outputs)
        ctx.ledger.set("twin_executable", ctx.rel(twin))
        if build is not None:
            ctx.ledger.set("baseline_build", build)
        ctx.ledger.add_baseline(baseline)
    return NOISE


def _announce_budget(ctx: "RunContext", round_s: float) -> None:
    """What the time budget holds after a first round of `round_s` (a program sized for a GPU can
    take minutes a round on the host backend); RocmPerfError when it cannot pay for the A/A floor."""
    announce_round_budget(round_s, ctx.opt, ctx.elapsed(), ctx.pairing == PAIRING_TOGETHER, ctx.report.message)
