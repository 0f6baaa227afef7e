"""State `build`: compile first, then measure. The generation's proposed candidates are rendered by
their proposers, guarded by their kind's source guards, built in waves of --jobs (once per content,
build_cache.py, in parallel), compile-checked for AMD where hipcc is present (resources, the ISA of
the rewritten loop: isa_loops.py), and settled: a compile failure, a resource regression or a
duplicate program (the baseline's or another candidate's code: it could only measure noise) ends a
candidate here, the rest are `built` with their place in the race's order. Waves stop once the
pairs the budget leaves could race no more candidates than are built; the rest wait as `budget`
(not built), planned again when a race leaves room."""

from __future__ import annotations

import math
import re
import shutil
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.amd_check import compile_check, resource_regression
from rocm_perf.optimize.artifacts import unified_diff
from rocm_perf.optimize.budget import measured, no_room_to_build
from rocm_perf.optimize.build_cache import build_key
from rocm_perf.optimize.combine import render_carry
from rocm_perf.optimize.isa_loops import isa_delta, loop_mix
from rocm_perf.optimize.ledger import Baseline, BuildRow, Trial
from rocm_perf.optimize.plan import RankedKernel, evidence_factors, resources_by_kernel
from rocm_perf.optimize.run_context import sha256_bytes
from rocm_perf.optimize.search_prior import open_prior, prior_root
from rocm_perf.optimize.states import (BUILD, NOT_BUILT, R_BUDGET, R_COMPILE, R_CONFLICT, R_DUPLICATE, R_GUARD, R_RESOURCES,
                                       SCREEN)
from rocm_perf.optimize.verdicts import drop_copies, reject, write_verdict

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def run(ctx: "RunContext") -> str:
    """Build the generation's proposed candidates in waves of --jobs, best first (expected value
    times the prior of earlier runs), until the pairs the time budget leaves can race no more
    candidates than are built: the rest are recorded as `budget` (not built), and planned again
    when a race leaves room (`propose`)."""
    base = ctx.ledger.current_baseline()
    pending = ctx.ledger.trials(status="proposed")
    if not pending:
        return SCREEN
    stale = [t for t in pending if t.generation < base.generation]
    if stale:  # deferred before a rewrite was accepted: it would rewrite a program that is gone
        not_built(ctx, stale, f"the time budget went to candidates of higher expected value, and generation "
                  f"{base.generation} replaced the program it was planned on")
    pending = [t for t in pending if t.generation == base.generation]
    wave = max(1, ctx.opt.jobs)
    # The run's first wave is built whatever the budget says: a run that measured nothing helps no one.
    first = measured(ctx) == 0 and not any(t.build_key for t in ctx.ledger.trials() if not t.components)
    # So is a wave `propose` granted when it planned again what an earlier wave left unbuilt.
    if ctx.ledger.get("wave_granted") == base.generation:
        first = True
        ctx.ledger.set("wave_granted", None)
    # Carries (screened winners moved onto a newer baseline) are always built: their screening is
    # paid for, and leaving one unbuilt would only have `combine` plan it again.
    carries = [t for t in pending if t.components]
    if carries:
        build_wave(ctx, base, carries)
    pending = [t for t in pending if not t.components]
    weights = prior_weights(ctx, pending)
    pending.sort(key=lambda t: (-t.expected_value * weights[t.id], t.id))  # best first
    for k in range(0, len(pending), wave):
        batch = pending[k: k + wave]
        if k or not first:
            reason = no_room_to_build(ctx, base.generation)
            if reason:
                not_built(ctx, pending[k:], reason)
                ctx.report.message(f"{len(pending) - k} candidates not built: {reason}")
                break
        t0 = ctx.svc.clock()
        build_wave(ctx, base, batch)
        seconds = list(ctx.ledger.get("build_wave_seconds") or []) + [ctx.svc.clock() - t0]
        ctx.ledger.set("build_wave_seconds", seconds[-8:])
    return SCREEN


def not_built(ctx: "RunContext", trials: list[Trial], reason: str) -> None:
    """Record `trials` as `budget` (not built); `propose` plans them again when a race leaves room."""
    with ctx.ledger.transaction():
        for t in trials:
            ctx.ledger.reject(t.id, R_BUDGET, f"not built: {reason}")
            ctx.ledger.update_trial(t.id, evidence={NOT_BUILT: True})
    for t in trials:
        write_verdict(ctx, t.id)
        drop_copies(ctx, t.id)


def prior_weights(ctx: "RunContext", trials: list[Trial]) -> dict[int, float]:
    """Each trial's weight from the prior of earlier runs (1 when none is known), from one opening
    of the prior's database."""
    weights = {t.id: 1.0 for t in trials}
    shaped = [t for t in trials if t.ordering.get("shape")]
    prior = open_prior(prior_root(ctx.run_dir)) if shaped else None
    if prior is None:
        return weights
    try:
        for t in shaped:
            found = prior.factor(ctx.machine(), t.rule, t.factor, t.ordering["shape"]).to_json()
            weights[t.id] = float(found["factor"]) if found.get("tried") else 1.0
    finally:
        prior.close()
    return weights


def build_wave(ctx: "RunContext", base: Baseline, pending: list[Trial]) -> None:
    """Render, guard, build (once per content, in parallel) and settle `pending`."""
    rendered: dict[int, bytes] = {}
    ctx.report.stage(BUILD, f"rendering and guarding {len(pending)} candidates")
    for t in pending:
        ctx.check_stop()
        data = render(ctx, t, ctx.source_of(base, t.file))
        if data is not None:
            rendered[t.id] = data
    keys = {tid: build_key(ctx.ledger.trial(tid).source_sha256.encode() if ctx.program.keys_by_digest else data,
                           ctx.flags, ctx.compiler_id()) for tid, data in rendered.items()}
    todo: dict[str, tuple[bytes, int, str]] = {}
    by_id = {t.id: t for t in pending}
    for tid, key in keys.items():
        if key not in todo and ctx.ledger.build(key) is None:
            todo[key] = (rendered[tid], tid, by_id[tid].file)
    check = bool(ctx.ledger.get("compile_check"))  # the ledger stays on this thread
    ctx.report.stage(BUILD, f"{len(todo)} builds for {len(rendered)} candidates, {ctx.opt.jobs} at a time"
                     + (", each compile-checked" if check else ""))
    with ThreadPoolExecutor(max_workers=ctx.opt.jobs) as pool:
        futures = [pool.submit(build_content, ctx, key, data, check, tid, rel) for key, (data, tid, rel) in todo.items()]
        for n, future in enumerate(as_completed(futures), 1):
            ctx.ledger.add_build(future.result())  # committed as each finishes: a resume keeps it
            ctx.report.round(n, f"built {n} of {len(todo)}", 0.0)
    settle_builds(ctx, base, [t for t in pending if t.id in rendered], keys)


def render(ctx: "RunContext", t: Trial, base_path: Path) -> bytes | None:
    """The candidate's changed file (placed in trials/<id>/ with its diff by the runner), or None
    when it was rejected (it could not be made, or a source guard of its kind said no). A carry is
    its components' rewrites applied to the new baseline (combine.render_carry)."""
    trial_dir = ctx.run_dir / "trials" / str(t.id)
    trial_dir.mkdir(parents=True, exist_ok=True)
    if t.components:
        original = ctx.abs(ctx.ledger.baselines()[0].source_path).read_text(errors="replace")
        comps = [ctx.ledger.trial(c) for c in t.components]
        done = render_carry(base_path, original, comps, tools=ctx.svc.tools, rules=ctx.rules(), flags=ctx.flags,
                            analysis_of=ctx.analysis, workdir=trial_dir / "steps")
        if done.failed:
            # A combination without one of its rewrites is not that combination (accepted, it would
            # count the left-out one as carried): rejected, its components go on alone.
            reject(ctx, t, R_CONFLICT, "; ".join(f"trial {c}: {why}" for c, why in done.failed.items()))
            return None
        data, diff = done.source, done.diff
    else:
        made = ctx.proposer_of(t).render(ctx, t, base_path)
        if made.error:
            reject(ctx, t, R_GUARD, f"the rewrite could not be made: {made.error}")
            return None
        data, diff = made.data, made.diff
        if made.notes:  # what a guard that passed wants said (a host change --allow-host-changes let through)
            ctx.ledger.update_trial(t.id, provenance={**t.provenance, "guard_notes": made.notes})
        if ctx.project:  # the diff names the project's file
            diff = unified_diff(base_path.read_text(errors="replace"), data.decode(errors="replace"), t.file)
        if made.failed:
            (trial_dir / "source.cu").write_bytes(data)
            ctx.ledger.update_trial(t.id, source_sha256=sha256_bytes(data), diff=diff)
            reject(ctx, t, R_GUARD, "; ".join(made.failed))  # each reason names its guard and line
            return None
    sha = ctx.program.place(trial_dir, ctx.abs(ctx.ledger.current_baseline().source_path), t.file, data)
    (trial_dir / "diff").write_text(diff)
    ctx.ledger.update_trial(t.id, source_sha256=sha, diff=diff)
    return data


def build_content(ctx: "RunContext", key: str, data: bytes, check: bool, trial_id: int = 0, rel: str = "") -> BuildRow:
    """One build under builds/<key>/ (in a worker thread: no ledger here), by the runner, then the
    AMD compile check of its changed file."""
    d = ctx.run_dir / "builds" / key
    if d.exists():
        shutil.rmtree(d)  # a build a killed run left unrecorded
    d.mkdir(parents=True)
    sha = sha256_bytes(data)
    try:
        built = ctx.program.build_candidate(d, data, ctx.run_dir / "trials" / str(trial_id), rel)
    except RocmPerfError as e:
        return BuildRow(key, sha, "", "", error=str(e)[:2000])
    checked = compile_check(ctx, built.checked_source, d / "check") if check else None
    if checked and "error" in checked:
        return BuildRow(key, sha, ctx.rel(built.executable), built.identity, error="AMD compile check: " + checked["error"][:2000])
    return BuildRow(key, sha, ctx.rel(built.executable), built.identity, checked=checked or {})


def baseline_build(ctx: "RunContext", base: Baseline) -> dict:
    """The current baseline's code identity and ISA ({"identity", "isa_identity", "isa_path"})."""
    if base.trial_id is None:
        return ctx.ledger.get("baseline_build") or {}
    row = ctx.ledger.build(ctx.ledger.trial(base.trial_id).build_key)
    if row is None:
        return {}
    return {"identity": row.identity, **{k: v for k, v in row.checked.items() if k.startswith("isa_")}}


def _identity(ctx: "RunContext", info: dict) -> tuple:
    """What makes two built programs the same: the code the backend measures (and the AMD ISA
    when that is what runs)."""
    return (info.get("identity"), info.get("isa_identity") if ctx.isa_measured else None)


def settle_builds(ctx: "RunContext", base: Baseline, trials: list[Trial], keys: dict[int, str]) -> None:
    """Each rendered candidate's build verdict, by the guards its kind names (proposers.GuardSet):
    compile failure, resource regression, duplicate (of the baseline or of a candidate of higher
    expected value), else built with its place in the order (named factors) recorded."""
    base_info = baseline_build(ctx, base)
    generation = base.generation
    seen: dict[tuple, Trial] = {}
    for other in ctx.ledger.trials(generation=generation):
        if other.build_key and other.status != "proposed" and other.reason != R_DUPLICATE:
            row = ctx.ledger.build(other.build_key)
            if row is not None and not row.error:
                seen.setdefault(_identity(ctx, {"identity": row.identity, **row.checked}), other)
    prior = open_prior(prior_root(ctx.run_dir))
    try:
        for t in sorted(trials, key=lambda t: (-t.expected_value, t.id)):
            guards = ctx.proposer_of(t).guards
            row = ctx.ledger.build(keys[t.id])
            resources = (row.checked or {}).get("resources") or {}
            ctx.ledger.update_trial(t.id, build_key=row.key, executable=row.executable, resources=resources)
            if row.error:
                reject(ctx, t, R_COMPILE, build_failure(row.error))
                continue
            reason = resource_regression(base.resources, resources, ctx.opt.allow_lower_occupancy) if guards.resources else ""
            if reason:
                reject(ctx, t, R_RESOURCES, reason)
                continue
            info = {"identity": row.identity, **row.checked}
            ident = _identity(ctx, info)
            # A comment-only or whitespace-only change, a renamed local: the same machine code, never measured.
            if guards.duplicate and ident == _identity(ctx, base_info):
                reject(ctx, t, R_DUPLICATE, f"no change in machine code: duplicate of the baseline (generation "
                       f"{generation}), its built program is the same code{_isa_note(ctx, info, base_info)}")
                continue
            if guards.duplicate and ident in seen and seen[ident].id != t.id:
                twin = seen[ident]
                reject(ctx, t, R_DUPLICATE, f"no change in machine code: duplicate of trial {twin.id} ({twin.label}), its "
                       f"built program is the same code{_isa_note(ctx, info, _build_info(ctx, twin))}")
                continue
            seen[ident] = t
            ordering = _ordering(ctx, t, info, base_info, base, prior)
            if t.components:
                comps = [ctx.ledger.trial(c) for c in t.components]
                screen = {"carried_from": t.components, "generation": comps[0].generation,
                          "critical_path": comps[0].evidence.get("screen", {}).get("critical_path")}
                ctx.ledger.update_trial(t.id, status="screened", ordering=ordering, evidence={"screen": screen})
            else:
                ctx.ledger.update_trial(t.id, status="built", ordering=ordering)
    finally:
        if prior is not None:
            prior.close()


def build_failure(error: str) -> str:
    """A build's error as its rejection says it: `does not build: line 33: expected ';'` (the
    compiler's first error in the candidate's file) before the compiler's own lines."""
    m = re.search(r":(\d+):(?:\d+:)? (?:fatal )?error: (.+)", error)
    if m is None:
        return f"does not build: {error}"
    return f"does not build: line {m.group(1)}: {m.group(2).strip()}\n{error}"


def _build_info(ctx: "RunContext", t: Trial) -> dict:
    row = ctx.ledger.build(t.build_key) if t.build_key else None
    return {} if row is None else {"identity": row.identity, **row.checked}


def _isa_note(ctx: "RunContext", cand: dict, other: dict) -> str:
    """What the AMD ISA says about a duplicate on a backend that does not run it."""
    if ctx.isa_measured or not cand.get("isa_identity") or not other.get("isa_identity"):
        return ""
    if cand["isa_identity"] == other["isa_identity"]:
        return "; its AMD ISA is the same too"
    return "; its AMD ISA differs (the rocm backend would measure that)"


def _ordering(ctx: "RunContext", t: Trial, info: dict, base_info: dict, base: Baseline, prior) -> dict:
    """The candidate's place in the order: its named factors (plan.py) with the built evidence
    (ISA deltas of its loop, the prior of earlier runs) and their product, the score."""
    ordering = dict(t.ordering)
    isa = None if t.components else _isa_evidence(ctx, t, info, base_info, base)
    shape = ordering.get("shape", "")
    prior_record = prior.factor(ctx.machine(), t.rule, t.factor, shape).to_json() if (prior is not None and shape) else None
    extra, notes = evidence_factors(isa, prior_record, apply_isa=ctx.isa_measured)
    factors = {**ordering.get("factors", {}), **extra}
    ordering.update({"factors": factors, "score": math.prod(factors.values()) if factors else t.expected_value,
                     "isa": isa, "prior": prior_record, "notes": notes})
    return ordering


def _isa_evidence(ctx: "RunContext", t: Trial, info: dict, base_info: dict, base: Baseline) -> dict | None:
    """isa_loops.IsaDelta of the candidate's loop (None without both ISAs)."""
    if not info.get("isa_path") or not base_info.get("isa_path"):
        return None
    base_path = ctx.abs(base.source_path)
    analysis = ctx.analysis(base_path)
    try:
        loop = analysis.loop(t.loop_id)
    except (KeyError, ValueError, RocmPerfError):
        return None
    base_res = resources_by_kernel(base.resources, [RankedKernel("", t.kernel, 0, 0)]).get(t.kernel) or {}
    cand_res = resources_by_kernel(t.resources or ctx.ledger.trial(t.id).resources,
                                   [RankedKernel("", t.kernel, 0, 0)]).get(t.kernel) or {}
    mangled = base_res.get("mangled") or cand_res.get("mangled")
    if not mangled:
        return None
    base_asm = ctx.abs(base_info["isa_path"]).read_text(errors="replace")
    cand_asm = ctx.abs(info["isa_path"]).read_text(errors="replace")
    shift = len(ctx.abs(f"trials/{t.id}/source.cu").read_text(errors="replace").splitlines()) - len(
        base_path.read_text(errors="replace").splitlines())
    base_mix = cand_mix = None
    current = loop
    while current is not None and base_mix is None:  # a loop unrolled away lives in the loop around it
        last = getattr(current, "end_line", 0) or current.line
        base_mix = loop_mix(base_asm, mangled, "source.cu", current.line, last)
        cand_mix = loop_mix(cand_asm, mangled, "source.cu", current.line, last + shift)
        parent = getattr(current, "parent_id", None)
        current = analysis.loop(parent) if parent else None
    delta = isa_delta(base_mix, cand_mix, base_res, cand_res).to_json()
    delta["loops"] = {"baseline": base_mix.to_json() if base_mix else None,
                      "candidate": cand_mix.to_json() if cand_mix else None}
    return delta
