"""The closed loop as an explicit state machine over the ledger.

    baseline -> noise-floor -> rank -> propose -> build -> screen -> confirm -> propose -> ...
                                          \\-> final-check -> finish -> done

Every state's handler is safe to run again from its start: it reads what the ledger already holds
and does only what is missing. The transition to the next state is committed before that state
runs, so a run killed at any moment resumes in the state it was in; a candidate whose measurement
was in flight ("screening"/"confirming") is measured again from its first round, and no decided
candidate is ever measured again.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import shlex
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from rocm_perf.backends.base import Backend
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.ledger import BASELINE_TRIAL, Baseline, Ledger, RoundRow, Trial
from rocm_perf.optimize.measure import RoundResult, RoundRunner, metric_value, outputs_differ
from rocm_perf.optimize.options import OptimizeOptions, settle_metric
from rocm_perf.optimize.heat import HeatRounds
from rocm_perf.optimize.plan import Proposal, RankedKernel, propose
from rocm_perf.optimize.progress import Reporter

BASELINE, NOISE, RANK, PROPOSE, BUILD, SCREEN, CONFIRM, FINAL_CHECK, FINISH, DONE = (
    "baseline", "noise-floor", "rank", "propose", "build", "screen", "confirm", "final-check", "finish", "done")

# Named reasons a candidate is rejected (MEASUREMENT.md and the issue); measurement adds
# slower / not significant / inconclusive from acceptance.py.
R_GUARD, R_COMPILE, R_RESOURCES, R_WRONG_OUTPUT, R_CRASH, R_TIMEOUT = (
    "guard", "compile", "resources", "wrong output", "crash", "timeout")
R_SUPERSEDED = "superseded"
R_BUDGET = "budget"

_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}

OPEN_STATUSES = ("proposed", "built", "screening", "screened", "confirming")


class Stopped(Exception):
    """SIGINT/SIGTERM: the loop stopped after recording; `--resume` continues it."""


@dataclass
class SourceTools:
    """The source-analysis entry points (rocm_perf.source), injectable for tests."""

    analyze_source: Callable
    match_kernel: Callable
    load_rules: Callable
    applicable_rules: Callable
    make_candidate: Callable
    guard_candidate: Callable

    @classmethod
    def default(cls) -> "SourceTools":
        from rocm_perf import source

        return cls(source.analyze_source, source.match_kernel, source.load_rules, source.applicable_rules,
                   source.make_candidate, source.guard_candidate)


@dataclass
class Services:
    """Everything the loop does to the outside world."""

    backend: Backend
    runner: RoundRunner
    tools: SourceTools
    compile_check: Callable | None  # compile_check(source, arch=, flags=) -> CompileReport, or None
    reporter: Reporter = field(default_factory=Reporter)
    clock: Callable[[], float] = time.monotonic
    # Writes the finished run's report.html (the report layer's; the CLI hands it in). None: no page.
    write_report: Callable[[Path], None] | None = None
    heat: Callable | None = None  # heat.HeatRounds-like; None: derived from `runner` when it profiles for real


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class OptimizeLoop:
    """One run of the loop in `run_dir`, driven by (and recorded in) `ledger`."""

    def __init__(self, run_dir: Path, ledger: Ledger, options: OptimizeOptions, services: Services):
        self.run_dir = Path(run_dir)
        self.ledger = ledger
        # The decision metric, resolved for this backend and recorded once (options.settle_metric).
        self.opt = replace(options, metric=settle_metric(ledger, options, services.backend))
        self.svc = services
        self.report = services.reporter
        self.stop_requested = False
        self.session_start = services.clock()
        self.elapsed_before = float(ledger.get("elapsed_s", 0.0))
        alpha = 1.0 - options.confidence
        self.alpha = alpha
        self.base_plan = acc.SequentialPlan(options.min_gain, alpha, options.rounds, options.max_rounds, options.round_step)
        self._rules = None
        self._analyses: dict[tuple[str, str], Any] = {}
        self._baseline_analysis: dict | None = None  # the baseline's analysis.json, once read
        # A project run (optimize --project): the tree, its build and run commands, the sources.
        self.project: dict | None = ledger.get("project")
        self._project_env: dict[str, str] | None = None
        self._tree_flags: dict[Path, list[str]] = {}

    # ---- driving ---------------------------------------------------------------------------

    def run(self) -> str:
        """Run from the ledger's state to `done` (or raise Stopped after a stop request)."""
        handlers = {BASELINE: self.baseline, NOISE: self.noise_floor, RANK: self.rank, PROPOSE: self.propose,
                    BUILD: self.build, SCREEN: self.screen, CONFIRM: self.confirm, FINAL_CHECK: self.final_check,
                    FINISH: self.finish}
        state = self.ledger.state
        if state is None:
            state = BASELINE
            self.ledger.transition(state)
        while state != DONE:
            self._check_stop()
            self.report.stage(state)
            try:
                nxt = handlers[state]()
            except OSError as e:
                if e.errno in _WRITE_ERRORS:
                    raise RocmPerfError(f"{self.run_dir}: cannot write the run's files ({e.strerror}: {e.filename}); "
                                        f"the ledger is intact: free space, then `rocm-perf optimize --resume {self.run_dir}`") from e
                raise
            self.ledger.set("elapsed_s", self.elapsed())
            self.ledger.transition(nxt)
            state = nxt
        return state

    def elapsed(self) -> float:
        return self.elapsed_before + (self.svc.clock() - self.session_start)

    def request_stop(self) -> None:
        self.stop_requested = True

    def _check_stop(self) -> None:
        if self.stop_requested:
            raise Stopped("stopped on request; everything so far is recorded")

    # ---- helpers ---------------------------------------------------------------------------

    @property
    def flags(self) -> list[str]:
        return list(self.opt.cflags)

    def _rel(self, p: Path) -> str:
        return str(Path(p).relative_to(self.run_dir))

    def _abs(self, rel: str) -> Path:
        return self.run_dir / rel

    def _analysis(self, path: Path):
        """The source analysis of `path`, once per content (libclang parses take seconds)."""
        key = (str(path), sha256_bytes(path.read_bytes()))
        if key not in self._analyses:
            self._analyses[key] = self.svc.tools.analyze_source(path, self._flags_of(path))
        return self._analyses[key]

    # ---- projects: a tree per baseline and per candidate -------------------------------------

    @property
    def sources(self) -> list[str]:
        """The files rewrites may change: a project's sources (relative to its root), or the one source."""
        return list(self.project["sources"]) if self.project else [""]

    def _source_of(self, base: Baseline, rel: str) -> Path:
        """A source of a baseline: its tree's file `rel` (project), or its one source."""
        return self._abs(base.source_path) / rel if self.project else self._abs(base.source_path)

    def _flags_of(self, path: Path) -> list[str]:
        """Parse and compile-check flags for `path`: the run's, and for a file of a project tree
        -I for the tree's root and its header directories (the build's own flags are unknown)."""
        if not self.project:
            return self.flags
        from rocm_perf.optimize.project import include_flags

        tree = next((p for p in Path(path).parents if p.name == "tree"), None)
        if tree is None:
            return self.flags
        if tree not in self._tree_flags:
            files = [str(f.relative_to(tree)) for f in tree.rglob("*") if f.is_file()]
            self._tree_flags[tree] = self.flags + include_flags(tree, files)
        return self._tree_flags[tree]

    def _env(self) -> dict[str, str]:
        """What a project's build sees (on the host backend: the hipcc-compatible wrapper)."""
        if self._project_env is None:
            from rocm_perf.optimize.project import build_environment

            self._project_env = build_environment(self.svc.backend, self.run_dir / "bin")
        return self._project_env

    def _build_tree(self, tree: Path, work: Path) -> Path:
        """Copy a pristine tree to `work` and run the project's build command there."""
        from rocm_perf.optimize.project import build_tree, copy_tree

        copy_tree(tree, work)
        build_tree(work, self.project["build"], self._env(), self.opt.build_timeout_s, work.parent / f"{work.name}.build.log",
                   self.project["root"])
        return work

    def _tree_digest(self, tree: Path) -> str:
        from rocm_perf.optimize.project import file_digests, tree_digest

        return tree_digest(file_digests(tree, self.sources))

    def _rules_list(self) -> list:
        if self._rules is None:
            self._rules = self.svc.tools.load_rules(self.opt.rules_dir)
        return self._rules

    def _build(self, source: Path, out_dir: Path):
        if out_dir.exists():
            shutil.rmtree(out_dir)  # a build a killed run left half-done
        out_dir.mkdir(parents=True)
        return self.svc.backend.build(source, out_dir, self.flags, timeout=self.opt.build_timeout_s)

    def _resources(self, source: Path) -> dict[str, dict] | None:
        """Per-kernel AMD resources from the compile check, keyed by demangled name (None = no check)."""
        if self.svc.compile_check is None:
            return None
        report = self.svc.compile_check(source, arch=self.opt.arch, flags=tuple(self._flags_of(source)))
        if not getattr(report, "available", True):
            return None
        if not report.ok:
            return {"__error__": {"errors": report.errors}}
        out = {}
        for k in report.kernels:
            out[k.demangled or k.mangled] = {
                "mangled": k.mangled, "vgpr": k.vgpr, "sgpr": k.sgpr, "agpr": k.agpr,
                "scratch_bytes": k.scratch_bytes, "occupancy": k.occupancy,
                "vgpr_spill": k.vgpr_spill, "sgpr_spill": k.sgpr_spill, "lds_bytes": k.lds_bytes,
            }
        return out

    def _run_round(self, exe: str, trial_id: int, phase: str, idx: int, role: str) -> tuple[RoundResult, float]:
        key = f"{trial_id}-{phase}-{idx}-{role}"
        round_dir = self.run_dir / ("baseline" if trial_id == BASELINE_TRIAL else f"trials/{trial_id}") / "profiles" / f"{phase}-{idx}-{role}"
        t0 = time.monotonic()
        result = self.svc.runner(self._abs(exe), round_dir, key)
        return result, time.monotonic() - t0

    def _record_round(self, trial_id: int, phase: str, idx: int, role: str, r: RoundResult) -> None:
        self.ledger.add_round(RoundRow(trial_id, phase, idx, role, r.ok, r.failure, r.cp_ns, r.sum_ns, r.kernel_ns,
                                       {**r.outputs, "cp_share": r.cp_share}))

    # ---- 1. baseline -----------------------------------------------------------------------

    def baseline(self) -> str:
        if self.project:
            return self._baseline_project()
        src_copy = self.run_dir / "baseline" / "source.cu"
        original_sha = self.ledger.get("source_sha256")
        if sha256_bytes(src_copy.read_bytes()) != original_sha:
            raise RocmPerfError(f"{src_copy}: the run's copy of the source changed; start a new run")
        self.report.stage(BASELINE, "building")
        with ThreadPoolExecutor(max_workers=min(2, self.opt.jobs)) as pool:
            builds = [pool.submit(self._build, src_copy, self.run_dir / "baseline" / d) for d in ("build", "twin")]
            program, twin = (f.result() for f in builds)
        resources = self._resources(src_copy)
        if resources and "__error__" in resources:
            self.ledger.set("compile_check_error", resources["__error__"]["errors"][:2000])
            self.report.message("AMD compile check failed on the baseline; candidates are checked without it")
            resources = None
        self.ledger.set("compile_check", resources is not None)
        self.report.stage(BASELINE, "reference run")
        ref, _ = self._run_round(self._rel(program.executable), BASELINE_TRIAL, "reference", 0, "B")
        self._record_round(BASELINE_TRIAL, "reference", 0, "B", ref)
        if not ref.ok:
            why = ref.outputs.get("stderr_tail", "")
            raise RocmPerfError(f"{self.opt.source}: the baseline program fails ({ref.failure}, exit "
                                f"{ref.outputs.get('returncode')}): {why}".rstrip(": "))
        self._roofline("baseline", program.executable)
        with self.ledger.transaction():
            self.ledger.set("reference_outputs", ref.outputs)
            self.ledger.set("twin_executable", self._rel(twin.executable))
            self.ledger.add_baseline(Baseline(0, None, original_sha, self._rel(src_copy),
                                              self._rel(program.executable), resources or {}))
        return NOISE

    def _baseline_project(self) -> str:
        """The baseline of a project: its tree copy built twice (the program and its A/A twin)."""
        tree = self.run_dir / "baseline" / "tree"
        if self._tree_digest(tree) != self.ledger.get("source_sha256"):
            raise RocmPerfError(f"{tree}: the run's copy of the project changed; start a new run")
        self.report.stage(BASELINE, "building")
        with ThreadPoolExecutor(max_workers=min(2, self.opt.jobs)) as pool:
            builds = [pool.submit(self._build_tree, tree, self.run_dir / "baseline" / d) for d in ("work", "twin")]
            work, twin = (f.result() for f in builds)
        resources: dict | None = {}
        for rel in self.sources:
            found = self._resources(tree / rel)
            if found is None:
                resources = None
                break
            if "__error__" in found:
                self.ledger.set("compile_check_error", f"{rel}: " + found["__error__"]["errors"][:2000])
                self.report.message(f"AMD compile check failed on {rel}; candidates are checked without it")
                resources = None
                break
            resources.update(found)
        self.ledger.set("compile_check", resources is not None)
        self.report.stage(BASELINE, "reference run")
        ref, _ = self._run_round(self._rel(work), BASELINE_TRIAL, "reference", 0, "B")
        self._record_round(BASELINE_TRIAL, "reference", 0, "B", ref)
        if ref.outputs.get("processes") == 0:
            why = ref.outputs.get("stderr_tail", "") or ref.outputs.get("stdout_tail", "")
            raise RocmPerfError(
                f"{self.project['root']}: the run command `{self.project['run']}` (exit {ref.outputs.get('returncode')}) "
                "started no HIP program: no trace was written. It runs from the top of the built tree and must start "
                f"the program the build makes" + (f" ({why.strip().splitlines()[-1][:200]})" if why.strip() else ""))
        if not ref.ok:
            why = ref.outputs.get("stderr_tail", "")
            raise RocmPerfError(f"{self.project['root']}: the baseline program fails under `{self.project['run']}` "
                                f"({ref.failure}, exit {ref.outputs.get('returncode')}): {why}".rstrip(": "))
        self._roofline("baseline", work)
        with self.ledger.transaction():
            self.ledger.set("reference_outputs", ref.outputs)
            self.ledger.set("twin_executable", self._rel(twin))
            self.ledger.add_baseline(Baseline(0, None, self.ledger.get("source_sha256"), self._rel(tree),
                                              self._rel(work), resources or {}))
        return NOISE

    # ---- 1b. A/A noise floor ---------------------------------------------------------------

    def noise_floor(self) -> str:
        self.ledger.forget_rounds(BASELINE_TRIAL, "aa")
        base = self.ledger.baselines()[0]
        twin = self.ledger.get("twin_executable")
        b, c = [], []
        for i in range(self.opt.aa_rounds):
            self._check_stop()
            for role, exe in pair_order(i, base.executable, twin):
                r, secs = self._run_round(exe, BASELINE_TRIAL, "aa", i, role)
                self._record_round(BASELINE_TRIAL, "aa", i, role, r)
                self._require_baseline_ok(r, f"A/A round {i}")
                (b if role == "B" else c).append(metric_value(r, self.opt.metric))
            self.report.round(i + 1, "", secs)
        floor = acc.noise_floor(b, c, confidence=self.opt.confidence, max_rounds=self.opt.max_rounds)
        effective = acc.effective_min_gain(self.opt.min_gain, floor)
        with self.ledger.transaction():
            self.ledger.set("noise_floor", floor.to_json())
            self.ledger.set("effective_min_gain", effective)
        if effective > self.opt.min_gain:
            self.report.message(f"A/A noise floor {floor.floor:.1%}: asking for at least {effective:.1%} instead of {self.opt.min_gain:.1%}")
        return RANK

    def _require_baseline_ok(self, r: RoundResult, where: str) -> None:
        if not r.ok:
            raise RocmPerfError(f"{self.opt.source}: the baseline failed in {where} ({r.failure}); "
                                "the program must run reliably to be measured")
        differ = outputs_differ(self.ledger.get("reference_outputs"), r.outputs)
        if differ:
            raise RocmPerfError(f"{self.opt.source}: the baseline's outputs change from run to run ({where}: {differ}); "
                                "mark timing lines with --timing-lines or make the program deterministic")

    # ---- 2. rank ---------------------------------------------------------------------------

    def rank(self) -> str:
        shares: dict[str, list[float]] = {}
        medians: dict[str, list[float]] = {}
        for phase in ("reference", "aa"):
            for row in self.ledger.rounds(BASELINE_TRIAL, phase):
                if row.role != "B" or not row.ok:
                    continue
                for sym, share in row.outputs.get("cp_share", {}).items():
                    shares.setdefault(sym, []).append(share)
                for sym, ns in row.kernel_ns.items():
                    medians.setdefault(sym, []).append(ns)
        base = self.ledger.baselines()[0]
        analyses = [(rel, self._analysis(self._source_of(base, rel))) for rel in self.sources]
        ranking, skipped = [], []
        for sym in sorted(shares, key=lambda s: -sum(shares[s]) / len(shares[s])):
            kernel, file = "", ""
            for rel, analysis in analyses:  # a project: the file that defines the kernel
                info = self.svc.tools.match_kernel(sym, analysis)
                if info is not None:
                    kernel, file = getattr(info, "name", ""), rel
                    break
            if self.opt.kernels and not any(k in (kernel or sym) for k in self.opt.kernels):
                continue
            share = sum(shares[sym]) / len(shares[sym])
            median = sorted(medians.get(sym, [0.0]))[len(medians.get(sym, [0.0])) // 2]
            verdict = self._roofline_verdict(sym, kernel)
            if verdict and verdict["blocked"] and kernel:
                skipped.append({"kernel": kernel, "symbol": sym, "reason": verdict["blocked"]})
                continue  # at its memory roof: no unroll candidate can help
            ranking.append(RankedKernel(sym, kernel, share, median, verdict["headroom"] if verdict else None,
                                        verdict["bound"] if verdict else "", file=file))
        ranking.sort(key=lambda r: -r.value)  # critical-path share x headroom (the share alone without counters)
        self.ledger.set("roofline_skipped", skipped)
        for entry in skipped:
            self.report.message(f"{entry['kernel']}: no unroll candidates: {entry['reason']}")
        # The top kernels: those making up 90 % of the critical path, at most four (all named ones).
        top, covered = [], 0.0
        for r in ranking:
            if not r.kernel or r.cp_share <= 0:
                continue
            if not self.opt.kernels and (covered >= 0.9 or len(top) >= 4):
                break
            top.append(r)
            covered += r.cp_share
        self.ledger.set("ranking", [r.__dict__ for r in ranking])
        self.ledger.set("top_kernels", [r.__dict__ for r in top])
        if not top:
            self.report.message("no profiled kernel maps to a kernel of the source; nothing to optimize")
        self._measure_heat(base)
        return PROPOSE

    def _measure_heat(self, base: Baseline) -> None:
        """Loop heat from untimed sampled rounds of the baseline (optimize/heat.py), when the backend
        can sample; the ledger records it (or why there is none) and the candidates' order uses it."""
        if self.project:
            self.ledger.set("loop_heat", None)
            self.ledger.set("loop_heat_note", "no loop heat for a project run: the sampled build takes one source")
            return
        probe = self.svc.heat if self.svc.heat is not None else HeatRounds.like(self.svc.runner)
        top = {r["kernel"] for r in self.ledger.get("top_kernels", [])}
        loops = [l for l in self._analysis(self._abs(base.source_path)).loops if l.kernel in top]
        if probe is None or len(loops) < 2:  # one loop or none: there is no order to decide
            self.ledger.set("loop_heat", None)
            return
        self.report.stage(RANK, "sampling the baseline for loop heat")
        heat, why = probe(self._abs(base.source_path), self.run_dir / "baseline" / "heat", self.flags,
                          build_timeout_s=self.opt.build_timeout_s, write_to=self.run_dir / "hotspots.json")
        with self.ledger.transaction():
            self.ledger.set("loop_heat", heat)
            self.ledger.set("loop_heat_note", why)
        if why:
            self.report.message(why)
        if heat:
            hottest = max(heat["loops"].items(), key=lambda kv: kv[1], default=None)
            where = f"; hottest loop {hottest[0]} ({hottest[1]:.0%} of its kernel)" if hottest else ""
            self.report.message(f"loop heat from {heat['samples']:,.0f} {heat['unit']} ({heat['evidence']}){where}")

    # ---- 3. propose ------------------------------------------------------------------------

    def _open_trials(self) -> list[Trial]:
        return [t for t in self.ledger.trials() if t.status in OPEN_STATUSES]

    def propose(self) -> str:
        if self._open_trials():
            return BUILD  # a proposal was recorded before the run stopped
        used = len(self.ledger.trials())
        if used >= self.opt.max_trials:
            self.ledger.set("stop_reason", f"--max-trials {self.opt.max_trials} reached")
            return FINAL_CHECK
        if self.elapsed() >= self.opt.time_budget_s:
            self.ledger.set("stop_reason", f"--time-budget {self.opt.time_budget_s:.0f} s spent")
            return FINAL_CHECK
        top = [RankedKernel(**r) for r in self.ledger.get("top_kernels", [])]
        base = self.ledger.current_baseline()
        first = self.ledger.baselines()[0]
        tried = {t.loop_key for t in self.ledger.trials()}
        groups: list[list[tuple[str, Proposal]]] = []
        for rel in self.sources:
            ranked_here = [r for r in top if r.file == rel]
            if not ranked_here:
                continue
            current_path = self._source_of(base, rel)
            # A project's loop keys carry their file: the same kernel and line may exist in two files.
            prefix = f"{rel}::" if self.project else ""
            for g in propose(
                ranking=ranked_here, analysis=self._analysis(current_path), rules=self._rules_list(),
                applicable_rules=self.svc.tools.applicable_rules,
                original_text=self._source_of(first, rel).read_text(errors="replace"),
                current_text=current_path.read_text(errors="replace"),
                tried_loop_keys={k[len(prefix):] for k in tried if k.startswith(prefix)}, only_rules=self.opt.rules,
                only_factors=self.opt.factors, resources=self._resources_by_kernel(base.resources, ranked_here),
                heat=self.ledger.get("loop_heat"),
            ):
                groups.append([(rel, replace(p, loop_key=prefix + p.loop_key)) for p in g])
        groups.sort(key=lambda g: (g[0][1].cold, -g[0][1].expected_value, g[0][1].loop_key))  # as propose orders
        if not groups:
            self.ledger.set("stop_reason", "every candidate of the top kernels was tried")
            return FINAL_CHECK
        group = groups[0][: self.opt.max_trials - used]
        if group[0][1].cold:
            cold = sorted({p.loop_id for g in groups for _, p in g if p.cold})
            if not self.ledger.get("cold_loops"):
                self.report.message(f"every sampled loop was tried; {len(cold)} loop(s) without samples come last")
            self.ledger.set("cold_loops", cold)
        with self.ledger.transaction():
            for rel, p in group:
                self.ledger.add_trial(generation=base.generation, loop_key=p.loop_key, kernel=p.kernel, loop_id=p.loop_id,
                                      rule=p.rule, factor=p.factor, expected_value=p.expected_value, file=rel)
        self.ledger.set("candidates_left_estimate", sum(len(g) for g in groups) - len(group))
        return BUILD

    @staticmethod
    def _resources_by_kernel(resources: dict, top: list[RankedKernel]) -> dict[str, dict]:
        out = {}
        for r in top:
            for name, res in resources.items():
                if name == r.kernel or name.startswith(r.kernel + "("):
                    out[r.kernel] = res
        return out

    # ---- 4. guard, build, compile check ----------------------------------------------------

    def build(self) -> str:
        base = self.ledger.current_baseline()
        pending = self.ledger.trials(status="proposed")
        if not pending:
            return SCREEN
        tools = self.svc.tools
        to_build = []
        for t in pending:
            self._check_stop()
            base_path = self._source_of(base, t.file)
            analysis = self._analysis(base_path)
            trial_dir = self.run_dir / "trials" / str(t.id)
            trial_dir.mkdir(parents=True, exist_ok=True)
            try:
                cand = tools.make_candidate(base_path, analysis, t.loop_id, t.rule, t.factor, rules=self._rules_list())
            except RocmPerfError as e:
                self._reject(t, R_GUARD, f"the rewrite could not be made: {e}")
                continue
            if self.project:
                # The candidate: the baseline's tree with this one file changed.
                from rocm_perf.optimize.artifacts import unified_diff
                from rocm_perf.optimize.project import copy_tree

                tree = trial_dir / "tree"
                copy_tree(self._abs(base.source_path), tree)
                (tree / t.file).write_bytes(cand.rewritten)
                diff = unified_diff(base_path.read_text(errors="replace"), cand.rewritten.decode(errors="replace"), t.file)
                sha = self._tree_digest(tree)
            else:
                (trial_dir / "source.cu").write_bytes(cand.rewritten)
                diff, sha = cand.diff, sha256_bytes(cand.rewritten)
            (trial_dir / "diff").write_text(diff)
            self.ledger.update_trial(t.id, source_sha256=sha, diff=diff)
            failed = [v for v in tools.guard_candidate(cand, self._flags_of(base_path)) if not v.ok]
            if failed:
                self._reject(t, R_GUARD, "; ".join(f"{v.name}: {v.reason}" for v in failed))
                continue
            to_build.append(t)
        self.report.stage(BUILD, f"{len(to_build)} candidates, {self.opt.jobs} at a time")
        check = bool(self.ledger.get("compile_check"))  # the ledger stays on this thread
        with ThreadPoolExecutor(max_workers=self.opt.jobs) as pool:
            futures = {t.id: pool.submit(self._build_and_check, t, check) for t in to_build}
            results = {tid: f.result() for tid, f in futures.items()}
        for t in to_build:
            verdict, detail, exe, resources = results[t.id]
            if verdict:
                self._reject(t, verdict, detail)
                continue
            reason = self._resource_regression(base.resources, resources or {}, t.kernel)
            if reason:
                self.ledger.update_trial(t.id, resources=resources or {})
                self._reject(t, R_RESOURCES, reason)
                continue
            self.ledger.update_trial(t.id, status="built", executable=exe, resources=resources or {})
        return SCREEN

    def _build_and_check(self, t: Trial, check: bool) -> tuple[str, str, str, dict | None]:
        """(reject reason or '', detail, executable, resources) for one candidate."""
        trial_dir = self.run_dir / "trials" / str(t.id)
        src = trial_dir / "tree" / t.file if self.project else trial_dir / "source.cu"
        try:
            if self.project:
                executable = self._build_tree(trial_dir / "tree", trial_dir / "work")
            else:
                executable = self._build(src, trial_dir / "build").executable
        except RocmPerfError as e:
            return R_COMPILE, str(e)[:2000], "", None
        resources = self._resources(src) if check else None
        if resources and "__error__" in resources:
            return R_COMPILE, "AMD compile check: " + resources["__error__"]["errors"][:2000], "", None
        return "", "", self._rel(executable), resources

    def _resource_regression(self, base: dict, cand: dict, kernel: str) -> str:
        """Why the candidate's AMD resources are worse than the baseline's ('' when they are not)."""
        problems = []
        for name, b in base.items():
            c = cand.get(name)
            if c is None:
                continue
            for key in ("vgpr_spill", "sgpr_spill", "scratch_bytes"):
                if (c.get(key) or 0) > (b.get(key) or 0):
                    problems.append(f"{name}: {key} {b.get(key) or 0} -> {c.get(key)}")
            if not self.opt.allow_lower_occupancy and b.get("occupancy") and c.get("occupancy") and c["occupancy"] < b["occupancy"]:
                problems.append(f"{name}: occupancy {b['occupancy']} -> {c['occupancy']} waves/SIMD")
        return "; ".join(problems)

    def _reject(self, t: Trial, reason: str, detail: str) -> None:
        self.ledger.reject(t.id, reason, detail)
        self._write_verdict(t.id)
        self._drop_trees(t.id)
        self.report.verdict(t.label, f"{reason}" + (f" ({detail.splitlines()[0][:120]})" if detail else ""), False)

    def _drop_trees(self, trial_id: int) -> None:
        """A rejected project candidate's trees: its diff and verdict say what it was; the copies
        (a whole tree each, and a built one) are not kept."""
        if self.project:
            for name in ("tree", "work"):
                shutil.rmtree(self.run_dir / "trials" / str(trial_id) / name, ignore_errors=True)

    def _write_verdict(self, trial_id: int) -> None:
        """trials/<id>/verdict.json: derived from the ledger (rebuilt by `finish` as well)."""
        t = self.ledger.trial(trial_id)
        d = self.run_dir / "trials" / str(trial_id)
        d.mkdir(parents=True, exist_ok=True)
        verdict = {"id": t.id, "candidate": t.label, "status": t.status, "reason": t.reason, "detail": t.detail,
                   "evidence": t.evidence, "resources": t.resources}
        tmp = d / "verdict.json.tmp"
        tmp.write_text(json.dumps(verdict, indent=2))
        tmp.replace(d / "verdict.json")

    # ---- 5. measure ------------------------------------------------------------------------

    def _measure(self, t: Trial, phase: str, plan: acc.SequentialPlan, done: int, left: int) -> tuple[str, str, dict]:
        """Interleaved rounds against the current baseline until the sequential test stops.

        Returns (verdict, reason, evidence); verdict is accept / reject / inconclusive."""
        base = self.ledger.current_baseline()
        reference = self.ledger.get("reference_outputs")
        self.report.trial(t.label, phase, done, left, plan.max_rounds)
        b: list[float] = []
        c: list[float] = []
        kb: list[float] = []
        kc: list[float] = []
        symbols = [r["symbol"] for r in self.ledger.get("top_kernels", []) if r["kernel"] == t.kernel]
        decision = acc.Decision(acc.CONTINUE, "", None, 0)
        for i in range(plan.max_rounds):
            self._check_stop()
            results = {}
            for role, exe in pair_order(i, base.executable, t.executable):
                results[role] = self._run_round(exe, t.id, phase, i, role)
                self._record_round(t.id, phase, i, role, results[role][0])
            (rb, sb), (rc, sc) = results["B"], results["C"]
            self._require_baseline_ok(rb, f"round {i} against candidate {t.id}")
            if not rc.ok:
                reason = R_TIMEOUT if rc.failure == "timeout" else R_CRASH
                tail = rc.outputs.get("stderr_tail", "")
                detail = f"round {i}: {rc.failure}, exit {rc.outputs.get('returncode')}" + (f": {tail}" if tail else "")
                return acc.REJECT, reason, {"rounds": i + 1, "detail": detail}
            differ = outputs_differ(reference, rc.outputs)
            if differ:
                return acc.REJECT, R_WRONG_OUTPUT, {"rounds": i + 1, "detail": f"round {i}: {differ}"}
            b.append(metric_value(rb, self.opt.metric))
            c.append(metric_value(rc, self.opt.metric))
            kernel_b = [rb.kernel_ns[s] for s in symbols if s in rb.kernel_ns]
            kernel_c = [rc.kernel_ns[s] for s in symbols if s in rc.kernel_ns]
            if kernel_b and kernel_c:
                kb.append(sum(kernel_b))
                kc.append(sum(kernel_c))
            decision = acc.sequential_decision(b, c, plan)
            est = ""
            if decision.interval is not None:
                iv = decision.interval
                est = f"ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]"
            elif len(b) >= 2:
                est = f"ratio ~{acc.median_ratio_interval(b, c, tail_alpha=0.5).estimate:.3f}"
            self.report.round(i + 1, est, sb + sc)
            if decision.verdict != acc.CONTINUE:
                break
        evidence: dict[str, Any] = {"decision": decision.to_json(), "plan": plan.to_json(), "rounds": len(b),
                                    "metric": self.opt.metric}
        tail = plan.look_alpha
        evidence["critical_path"] = acc.median_ratio_interval(b, c, tail_alpha=tail).to_json()
        if len(kb) == len(b) and kb:
            evidence["kernel"] = acc.median_ratio_interval(kb, kc, tail_alpha=tail).to_json()
        evidence["sum"] = acc.median_ratio_interval(
            [r.sum_ns for r in self.ledger.rounds(t.id, phase) if r.role == "B"][: len(b)],
            [r.sum_ns for r in self.ledger.rounds(t.id, phase) if r.role == "C"][: len(c)], tail_alpha=tail).to_json()
        evidence["outputs"] = {"digests": reference.get("digests"), "stdout_matched": True, "rounds_checked": len(c)}
        return decision.verdict, decision.reason, evidence

    def _counts(self) -> tuple[int, int]:
        trials = self.ledger.trials()
        done = sum(t.status not in OPEN_STATUSES for t in trials)
        left = sum(t.status in OPEN_STATUSES for t in trials) + int(self.ledger.get("candidates_left_estimate", 0) or 0)
        return done, left

    def _plan(self, alpha: float) -> acc.SequentialPlan:
        return self.base_plan.with_min_gain(float(self.ledger.get("effective_min_gain", self.opt.min_gain))).with_alpha(alpha)

    def screen(self) -> str:
        for t in self.ledger.trials(status="screening"):
            self.ledger.forget_rounds(t.id, "screen")  # half-done: redo from its first round
            self.ledger.update_trial(t.id, status="built")
        for t in self.ledger.trials(status="built"):
            self._check_stop()
            if self.elapsed() >= self.opt.time_budget_s:
                self._reject(t, R_BUDGET, f"not measured: --time-budget {self.opt.time_budget_s:.0f} s spent")
                continue
            self.ledger.update_trial(t.id, status="screening")
            done, left = self._counts()
            verdict, reason, evidence = self._measure(t, "screen", self._plan(self.alpha), done, left)
            with self.ledger.transaction():
                self.ledger.add_decision(t.id, "screen", verdict, reason, evidence)
                if verdict == acc.ACCEPT:
                    self.ledger.update_trial(t.id, status="screened", evidence={"screen": evidence})
                else:
                    self.ledger.update_trial(t.id, status="rejected", reason=reason,
                                             detail=evidence.get("detail") or _ratio_text(evidence), evidence={"screen": evidence})
            if verdict == acc.ACCEPT:
                self.report.message(f"{self.ledger.trial(t.id).label}: passed screening ({_ratio_text(evidence)}); to be re-measured")
            else:
                self._write_verdict(t.id)
                self._drop_trees(t.id)
                self.report.verdict(self.ledger.trial(t.id).label, f"{reason} ({_ratio_text(evidence)})", False)
        return CONFIRM

    # ---- 6. confirm and decide -------------------------------------------------------------

    def confirm(self) -> str:
        for t in self.ledger.trials(status="confirming"):
            self.ledger.forget_rounds(t.id, "confirm")
            self.ledger.update_trial(t.id, status="screened")
        contenders = sorted(self.ledger.trials(status="screened"),
                            key=lambda t: (t.evidence["screen"]["critical_path"]["estimate"], t.id))
        for t in contenders:
            self._check_stop()
            k = sum(1 for _ in self.ledger.decisions("confirm")) + 1
            alpha_k = acc.confirmation_alpha(self.alpha, k)
            self.ledger.update_trial(t.id, status="confirming")
            done, left = self._counts()
            verdict, reason, evidence = self._measure(t, "confirm", self._plan(alpha_k), done, left)
            evidence["confirmation"] = {"k": k, "alpha": alpha_k}
            both = {"screen": t.evidence["screen"], "confirm": evidence}
            if verdict == acc.ACCEPT:
                self._accept(t, evidence, both)
                return PROPOSE
            with self.ledger.transaction():
                self.ledger.add_decision(t.id, "confirm", verdict, reason, evidence)
                self.ledger.update_trial(t.id, status="rejected", reason=reason,
                                         detail=evidence.get("detail", "on a fresh re-measure after passing screening"),
                                         evidence=both)
            self._write_verdict(t.id)
            self._drop_trees(t.id)
            self.report.verdict(t.label, f"{reason} on re-measure ({_ratio_text(evidence)})", False)
        return PROPOSE

    def _accept(self, t: Trial, evidence: dict, both: dict) -> None:
        base = self.ledger.current_baseline()
        superseded = [other.id for other in self.ledger.trials(status="screened")]
        with self.ledger.transaction():
            self.ledger.add_decision(t.id, "confirm", acc.ACCEPT, acc.REASON_GAIN, evidence)
            self.ledger.update_trial(t.id, status="accepted", reason=acc.REASON_GAIN, evidence=both)
            for other in self.ledger.trials(status="screened"):
                self.ledger.update_trial(other.id, status="rejected", reason=R_SUPERSEDED,
                                         detail=f"trial {t.id} was accepted for the same loop")
            if self.project:  # the candidate's tree is the new baseline's; its resources replace its file's
                self.ledger.add_baseline(Baseline(base.generation + 1, t.id, t.source_sha256, f"trials/{t.id}/tree",
                                                  t.executable, {**base.resources, **(t.resources or {})}))
            else:
                self.ledger.add_baseline(Baseline(base.generation + 1, t.id, t.source_sha256, f"trials/{t.id}/source.cu",
                                                  t.executable, t.resources or base.resources))
        self._write_verdict(t.id)
        for other in superseded:
            self._drop_trees(other)
        self.report.verdict(t.label, f"ACCEPTED ({_ratio_text(evidence)})", True)

    # ---- 7. finish -------------------------------------------------------------------------

    def final_check(self) -> str:
        """Original against final, interleaved: the run's overall speedup, for the report only."""
        self.ledger.forget_rounds(BASELINE_TRIAL, "final")
        bases = self.ledger.baselines()
        if len(bases) < 2:
            return FINISH
        b, c = [], []
        for i in range(self.opt.aa_rounds):
            self._check_stop()
            for role, exe in pair_order(i, bases[0].executable, bases[-1].executable):
                r, secs = self._run_round(exe, BASELINE_TRIAL, "final", i, role)
                self._record_round(BASELINE_TRIAL, "final", i, role, r)
                if not r.ok or outputs_differ(self.ledger.get("reference_outputs"), r.outputs):
                    raise RocmPerfError(f"{self.run_dir}: the final program failed or changed its outputs in the "
                                        f"final check (round {i}); its accepted changes must not be applied")
                (b if role == "B" else c).append(metric_value(r, self.opt.metric))
            self.report.round(i + 1, "", secs)
        iv = acc.median_ratio_interval(b, c, tail_alpha=(1 - self.opt.confidence) / 2)
        self.ledger.set("final_check", iv.to_json())
        return FINISH

    def finish(self) -> str:
        from rocm_perf.optimize.artifacts import write_artifacts

        bases = self.ledger.baselines()
        if len(bases) > 1 and (self.ledger.get("roofline") or {}).get("how") == "counter round":
            self._roofline("final", self._abs(bases[-1].executable))  # the accepted result's roofline
        for t in self.ledger.trials():
            if t.status not in OPEN_STATUSES:
                self._write_verdict(t.id)
        write_artifacts(self.run_dir, self.ledger, state=DONE)
        self._write_report()
        return DONE

    # ---- the roofline (roofline_round.py) ---------------------------------------------------

    def _roofline(self, label: str, executable: Path) -> None:
        """An analysis of `executable` (the baseline or the final result), recorded in the ledger
        under `roofline` / `roofline_final`. A failure is a message, never the end of the run."""
        from rocm_perf.optimize import roofline_round as rr
        from rocm_perf.optimize.measure import program_argv

        key = "roofline" if label == "baseline" else "roofline_final"
        if self.ledger.get(key) is not None:
            return  # done before the run stopped
        backend = self.svc.backend
        arch = getattr(backend, "target_arch", lambda: None)() or self.opt.arch
        try:
            if label == "baseline" and self.opt.analysis:
                data, how = rr.load_given(self.opt.analysis, arch), f"given: {self.opt.analysis}"
            elif self.opt.counters == "off":
                self.ledger.set(key, {"how": "off", "note": "--counters off: kernels ranked by critical-path time alone"})
                return
            elif not backend.has_counters:
                self.ledger.set(key, {"how": "none", "note": f"{backend.no_counters_message()}; kernels ranked by critical-path time alone"})
                return
            else:
                self.report.stage(BASELINE if label == "baseline" else FINISH, "counter round")
                if self.project:  # the run command, from the top of the built tree
                    argv = ["/bin/sh", "-c", f"cd {shlex.quote(str(Path(executable).resolve()))} && {self.project['run']}"]
                else:
                    argv = program_argv(Path(executable), self.opt.program_args, self.opt.run)
                data = rr.counter_round(backend, argv, self.run_dir / label / "counters", arch, self.opt.timeout_s)
                how = "counter round"
        except RocmPerfError as e:
            self.ledger.set(key, {"how": "failed", "note": f"no roofline: {e}"})
            self.report.message(f"no roofline for the {label}: {e}")
            return
        path = rr.save(self.run_dir, label, data)
        self.ledger.set(key, {"how": how, "analysis": self._rel(path)})

    def _roofline_verdict(self, symbol: str, kernel: str) -> dict | None:
        from rocm_perf.optimize import roofline_round as rr

        record = self.ledger.get("roofline") or {}
        if not record.get("analysis"):
            return None
        if self._baseline_analysis is None:
            self._baseline_analysis = json.loads(self._abs(record["analysis"]).read_text())
        return rr.kernel_verdict(self._baseline_analysis, symbol, kernel)

    def _write_report(self) -> None:
        """Hand the finished run directory to the report writer (report.html beside report.md)."""
        if self.svc.write_report is None:
            return
        try:
            self.svc.write_report(self.run_dir)
        except RocmPerfError as e:
            self.ledger.set("report_html_error", str(e))
            self.report.message(f"report.html not written: {e}")


def pair_order(i: int, baseline: str, candidate: str) -> list[tuple[str, str]]:
    """Pair i runs B then C when i is even, C then B when odd: a position effect (a warm cache
    for the second run) then cancels out in the median instead of favouring the candidate."""
    pair = [("B", baseline), ("C", candidate)]
    return pair if i % 2 == 0 else pair[::-1]


def _ratio_text(evidence: dict) -> str:
    cp = evidence.get("critical_path")
    if not cp or not cp.get("n"):
        return evidence.get("detail", "")
    high = "inf" if math.isinf(cp["high"]) else f"{cp['high']:.3f}"
    return f"ratio {cp['estimate']:.3f} [{cp['low']:.3f}, {high}] after {cp['n']} rounds"
