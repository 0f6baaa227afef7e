"""The closed loop as an explicit state machine over the ledger.

    baseline -> noise-floor -> rank -> propose -> build -> screen -> confirm -> combine -> build -> ...
                                          \\-> final-check -> finish -> done

Compile first, then measure: `propose` plans every candidate of the top kernels' loops (at most
4 x --max-trials, by expected value), `build` renders, guards and builds all of them in parallel,
once per content (build_cache.py), compile-checks each with hipcc where present (resources, ISA,
the machine loop of the rewritten loop: isa_loops.py) and drops those whose built program is the
baseline's or another candidate's (`duplicate`). Then candidates are ordered by evidence (named
factors: critical-path share, headroom, loop heat, ISA deltas, the prior of earlier runs; plan.py)
and `screen` races them (racing.py): a few interleaved pairs each, more only for those still
plausibly ahead, the pairs left going to the highest expected value. When two or more loops have a
screened winner, `combine` joins them into one candidate, which `confirm` re-measures fresh first
(alpha spent across the run, acceptance.py); if it does not pay, each loop's winner is confirmed
alone, and after an accept `combine` carries the other loops' winners onto the new baseline
(combine.py).

Every state's handler is safe to run again from its start: it reads what the ledger already holds
and does only what is missing. The transition to the next state is committed before that state
runs, so a run killed at any moment resumes in the state it was in; a racing candidate goes on from
its last complete pair, a confirmation in flight is measured again from its first round, and no
decided candidate is ever measured again.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import shlex
import shutil
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from rocm_perf.backends.base import Backend
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize import racing, yardstick
from rocm_perf.optimize.build_cache import build_key, code_identity, compiler_identity, location_flags
from rocm_perf.optimize.close_calls import close_call, measured_phase, settle_limit, to_settle, unproven
from rocm_perf.optimize.confirmation import CONFIRMATION_PAIRS_RESERVED, confirmation_test
from rocm_perf.optimize.combine import find_loop, loop_range, plan_carry, plan_combination, render_carry
from rocm_perf.optimize.isa_loops import isa_delta, isa_identity, loop_mix
from rocm_perf.optimize.ledger import BASELINE_TRIAL, COMBINATION, Baseline, BuildRow, Ledger, RoundRow, Trial
from rocm_perf.optimize.measure import (METRIC_CPU_PATH, METRIC_UNDIVIDED, RoundResult, RoundRunner, adjusted_metric, metric_kind,
                                        metric_meaning, metric_of, metric_value, outputs_differ)
from rocm_perf.optimize.probe_exponent import fit_rounds
from rocm_perf.optimize.options import PAIRING_TOGETHER, OptimizeOptions, run_pairing, settle_metric
from rocm_perf.optimize.heat import HeatRounds
from rocm_perf.optimize.plan import Proposal, RankedKernel, evidence_factors, original_line_of, propose
from rocm_perf.optimize.progress import Reporter
from rocm_perf.optimize.search_prior import LOST_REASONS, SUPERSEDED, open_prior

BASELINE, NOISE, RANK, PROPOSE, BUILD, SCREEN, CONFIRM, COMBINE, FINAL_CHECK, FINISH, DONE = (
    "baseline", "noise-floor", "rank", "propose", "build", "screen", "confirm", "combine", "final-check", "finish", "done")

# Named reasons a candidate is rejected (MEASUREMENT.md and the issue); measurement adds
# slower / not significant / inconclusive / out of reach from acceptance.py, outraced and budget from racing.py.
R_GUARD, R_COMPILE, R_RESOURCES, R_WRONG_OUTPUT, R_CRASH, R_TIMEOUT = (
    "guard", "compile", "resources", "wrong output", "crash", "timeout")
R_SUPERSEDED = SUPERSEDED
R_BUDGET = racing.BUDGET
R_OUTRACED = racing.OUTRACED
R_DUPLICATE = "duplicate"  # its built program is the baseline's or another candidate's: it could only measure noise
# A project run's screened winner of another loop when one was accepted: its loop is planned again
# on the new baseline (carrying between a project's trees is not done).
R_REPLANNED = "re-planned"
R_CONFLICT = "conflict"  # its loop was rewritten by an accepted change: it cannot be carried onto the new baseline
# A combination whose fresh ratio is not below its best part's screened ones (their 50 % interval):
# the other parts added nothing that shows, and accepting it would end the search with less.
R_BEHIND_PART = "behind its best part"
# Evidence key of a candidate the build phase left unbuilt for the budget (reason `budget`): planned
# again when a race of its generation leaves room.
NOT_BUILT = "not_built"

_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}

# A combination's confirmation ends here: one whose gain does not show by then is a close call,
# which its loops' winners alone settle better (scan: a combination at 0.977 against a 0.98 bar took
# 100 pairs to end inconclusive; its best part alone, 0.957, passed). Fewer looks, each at a larger share of alpha.
COMBINATION_MAX_PAIRS = 20
# From this many pairs (and at any look where it would pass), a combination whose estimate is not
# below its best part's screened ratios (their 50 % interval) stops `behind its best part` (scan:
# 0.977 against 0.955 [0.953, 0.956]).
BEHIND_FROM = 10


OPEN_STATUSES = ("proposed", "built", "screening", "screened", "confirming")
CARRIED = "carried"  # terminal: its rewrite was accepted as part of a later trial (`components`)
# The planned space of one generation: at most this many times --max-trials candidates are built.
PLAN_FACTOR = 4
# Candidates a race runs against one baseline run (C1 B C2, then C2 B C1): 1.5 runs a pair instead of 2.
# The baseline run sits between them: each candidate is next to it. (Ordered B C1 C2, the candidate two
# runs away spread 11.3 % against its partner's 9.6 % over 590 pairs each of 15 bench_search races,
# more in 13 of them: about 40 % more pairs for the same interval.)
SHARED_BASELINE = 2
# The final check's pairs: --aa-rounds, then as many again while its interval still holds 1, up to
# this many times --aa-rounds. Ten pairs on a program at 13 % spread (kernels/pipeline.cu) read
# +1.0 % [-9 %, +12 %] for a change confirmed at +20 %, which 30 interleaved rounds measured at +14 %.
FINAL_CHECK_MAX_BLOCKS = 3


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
        self.pairing = run_pairing(ledger)  # how its pairs run, recorded with the metric
        self.svc = services
        self.report = services.reporter
        self.stop_requested = False
        self.session_start = services.clock()
        self.elapsed_before = float(ledger.get("elapsed_s", 0.0))
        alpha = 1.0 - options.confidence
        self.alpha = alpha
        self.base_plan = confirmation_test(options.min_gain, alpha, options.rounds, options.max_rounds, options.round_step)
        self._rules = None
        self._analyses: dict[tuple[str, str], Any] = {}
        self._baseline_analysis: dict | None = None  # the baseline's analysis.json, once read
        # A project run (optimize --project): the tree, its build and run commands, the sources.
        self.project: dict | None = ledger.get("project")
        self._project_env: dict[str, str] | None = None
        self._tree_flags: dict[Path, list[str]] = {}
        self._compiler: str | None = None

    # ---- driving ---------------------------------------------------------------------------

    def run(self) -> str:
        """Run from the ledger's state to `done` (or raise Stopped after a stop request)."""
        handlers = {BASELINE: self.baseline, NOISE: self.noise_floor, RANK: self.rank, PROPOSE: self.propose,
                    BUILD: self.build, SCREEN: self.screen, CONFIRM: self.confirm, COMBINE: self.combine,
                    FINAL_CHECK: self.final_check, FINISH: self.finish}
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
        """Build `source` into `out_dir`, independent of the directory (build_cache.location_flags)."""
        if out_dir.exists():
            shutil.rmtree(out_dir)  # a build a killed run left half-done
        out_dir.mkdir(parents=True)
        return self.svc.backend.build(source, out_dir, self.flags + location_flags(source), timeout=self.opt.build_timeout_s)

    @property
    def _isa_measured(self) -> bool:
        """Whether the measured program runs the AMD ISA (the rocm backend), so that the ISA counts
        as the program's identity and its deltas as evidence of speed."""
        return bool(getattr(self.svc.backend, "gpu_timings", False))

    def _check(self, source: Path, workdir: Path | None = None) -> dict | None:
        """The AMD compile check of `source`: {"resources": per kernel (demangled name), and with a
        `workdir` the kept ISA: "isa_identity", "isa_path"}, {"error": ...}, or None without a check."""
        if self.svc.compile_check is None:
            return None
        if workdir is None:
            report = self.svc.compile_check(source, arch=self.opt.arch, flags=tuple(self._flags_of(source)))
        else:  # -g: the ISA's .loc lines place each instruction in the source (isa_loops.py)
            report = self.svc.compile_check(source, arch=self.opt.arch, flags=(*self._flags_of(source), "-g"), keep_isa=True,
                                            workdir=workdir)
        if not getattr(report, "available", True):
            return None
        if not report.ok:
            return {"error": report.errors}
        out = {}
        for k in report.kernels:
            out[k.demangled or k.mangled] = {
                "mangled": k.mangled, "vgpr": k.vgpr, "sgpr": k.sgpr, "agpr": k.agpr,
                "scratch_bytes": k.scratch_bytes, "occupancy": k.occupancy,
                "vgpr_spill": k.vgpr_spill, "sgpr_spill": k.sgpr_spill, "lds_bytes": k.lds_bytes,
            }
        checked: dict[str, Any] = {"resources": out}
        isa_path = getattr(report, "isa_path", None)
        if isa_path and Path(isa_path).is_file():
            checked["isa_identity"] = isa_identity(Path(isa_path).read_text(errors="replace"))
            checked["isa_path"] = self._rel(Path(isa_path))
        return checked

    def _round(self, exe: str, trial_id: int, phase: str, idx: int, role: str) -> tuple[Path, Path, str]:
        """What the runner takes for one round: (executable, the round's directory, its key)."""
        where = self.run_dir / ("baseline" if trial_id == BASELINE_TRIAL else f"trials/{trial_id}") / "profiles" / f"{phase}-{idx}-{role}"
        return self._abs(exe), where, f"{trial_id}-{phase}-{idx}-{role}"

    def _run_round(self, exe: str, trial_id: int, phase: str, idx: int, role: str) -> tuple[RoundResult, float]:
        t0 = self.svc.clock()
        result = self.svc.runner(*self._round(exe, trial_id, phase, idx, role))
        return result, self.svc.clock() - t0

    def _run_pair(self, runs: list[tuple[str, int, str, int, str]]) -> list[tuple[RoundResult, float]]:
        """The rounds (exe, trial_id, phase, idx, role) of one pair, in this order when they run apart,
        all at once when the run's pairs run together (options.run_pairing; measure.ProfiledRounds.
        together); each with its share of the pair's seconds."""
        if self.pairing != PAIRING_TOGETHER:
            return [self._run_round(*r) for r in runs]
        t0 = self.svc.clock()
        results = self.svc.runner.together([self._round(*r) for r in runs])
        share = (self.svc.clock() - t0) / len(runs)
        return [(r, share) for r in results]

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
        t0 = self.svc.clock()
        with ThreadPoolExecutor(max_workers=min(2, self.opt.jobs)) as pool:
            builds = [pool.submit(self._build, src_copy, self.run_dir / "baseline" / d) for d in ("build", "twin")]
            program, twin = (f.result() for f in builds)
        self.ledger.set("baseline_build_seconds", self.svc.clock() - t0)  # the first estimate of a build wave
        checked = self._check(src_copy, self.run_dir / "baseline" / "check")
        if checked and "error" in checked:
            self.ledger.set("compile_check_error", checked["error"][:2000])
            self.report.message("AMD compile check failed on the baseline; candidates are checked without it")
            checked = None
        resources = checked["resources"] if checked else None
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
            # What the baseline's program is (build_cache.code_identity) and its ISA: duplicates are
            # recognized against it.
            self.ledger.set("baseline_build", {"identity": code_identity(program.executable),
                                               **{k: v for k, v in (checked or {}).items() if k.startswith("isa_")}})
            self.ledger.add_baseline(Baseline(0, None, original_sha, self._rel(src_copy),
                                              self._rel(program.executable), resources or {}))
        return NOISE

    def _baseline_project(self) -> str:
        """The baseline of a project: its tree copy built twice (the program and its A/A twin)."""
        tree = self.run_dir / "baseline" / "tree"
        if self._tree_digest(tree) != self.ledger.get("source_sha256"):
            raise RocmPerfError(f"{tree}: the run's copy of the project changed; start a new run")
        self.report.stage(BASELINE, "building")
        t0 = self.svc.clock()
        with ThreadPoolExecutor(max_workers=min(2, self.opt.jobs)) as pool:
            builds = [pool.submit(self._build_tree, tree, self.run_dir / "baseline" / d) for d in ("work", "twin")]
            work, twin = (f.result() for f in builds)
        self.ledger.set("baseline_build_seconds", self.svc.clock() - t0)
        resources: dict | None = {}
        for rel in self.sources:
            found = self._check(tree / rel)
            if found is None:
                resources = None
                break
            if "error" in found:
                self.ledger.set("compile_check_error", f"{rel}: " + found["error"][:2000])
                self.report.message(f"AMD compile check failed on {rel}; candidates are checked without it")
                resources = None
                break
            resources.update(found["resources"])
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
        rounds: dict[str, list[RoundResult]] = {"B": [], "C": []}
        pair_seconds = []
        for i in range(self.opt.aa_rounds):
            self._check_stop()
            secs_pair = 0.0
            order = pair_order(i, base.executable, twin)
            for (role, _), (r, secs) in zip(order, self._run_pair([(exe, BASELINE_TRIAL, "aa", i, role) for role, exe in order])):
                self._record_round(BASELINE_TRIAL, "aa", i, role, r)
                self._require_baseline_ok(r, f"A/A round {i}")
                rounds[role].append(r)
                secs_pair += secs
            pair_seconds.append(secs_pair)
            self.report.round(i + 1, "", secs)
        metric_record = self._choose_metric(rounds["B"], rounds["C"])
        b = [metric_value(r, self.opt.metric) for r in rounds["B"]]
        c = [metric_value(r, self.opt.metric) for r in rounds["C"]]
        floor = acc.noise_floor(b, c, confidence=self.opt.confidence, max_rounds=self.opt.max_rounds)
        effective = acc.effective_min_gain(self.opt.min_gain, floor)
        with self.ledger.transaction():
            if metric_record is not None:
                self.ledger.set("metric", metric_record)
            self.ledger.set("noise_floor", floor.to_json())
            self.ledger.set("effective_min_gain", effective)
            # What one interleaved pair costs: the race turns the time budget into pairs with it.
            self.ledger.set("pair_seconds", sorted(pair_seconds)[len(pair_seconds) // 2])
        if effective > self.opt.min_gain:
            self.report.message(f"A/A noise floor {floor.floor:.1%}: asking for at least {effective:.1%} instead of {self.opt.min_gain:.1%}")
        return RANK

    def _choose_metric(self, base: list[RoundResult], twin: list[RoundResult]) -> dict | None:
        """Where the run fits adjusted-path's exponent (options.fits_exponent): the adjusted path
        at the exponent these A/A rounds fit (probe_exponent.py) becomes the run's metric
        (self.opt.metric), first of the `steadier_of` the race may still turn to. Else, with
        alternatives (options.auto_alternatives), the steadiest of them over these pairs. Returns
        the ledger's new `metric` record; None when the metric was settled before the run."""
        record = self.ledger.get("metric") or {}
        choices = list(record.get("steadier_of") or [])
        fitted, fit = None, None
        if record.get("fit_exponent"):
            fit = fit_rounds([base, twin])
            # No fit (a round without the probe, or its readings never moved): the alternatives as before.
            fitted = adjusted_metric(fit.exponent) if fit else None
            choices = list(dict.fromkeys([fitted, *choices] if fitted else choices or [METRIC_CPU_PATH]))
        if not choices:
            return None
        spreads = {}
        for m in choices:
            b = [metric_of(r.cp_ns, r.outputs, m) for r in base]
            c = [metric_of(r.cp_ns, r.outputs, m) for r in twin]
            if all(v is not None and v > 0 for v in b + c):
                spreads[m] = acc.paired_spread(b, c)
        if fitted in spreads:
            chosen = fitted
        else:  # no fit, or a round lacks the fitted path: as before, the steadier of what every round has
            choices = [m for m in choices if m != fitted] or [METRIC_CPU_PATH]
            fitted = None
            chosen = acc.steadier_metric(spreads, choices)
        self.opt = replace(self.opt, metric=chosen)
        said = ", ".join(f"{m} {s:.1%}" for m, s in spreads.items())
        how = (f"slope {fit.slope:.2f} of log cpu-path on the log of the probe over the {fit.rounds} A/A rounds; "
               if fit and chosen == fitted else "")
        self.report.message(f"decision metric: {chosen} ({how}A/A paired spread {said})")
        new = {**record, "name": chosen, "meaning": metric_meaning(chosen), "aa_spreads": spreads}
        if record.get("fit_exponent"):
            new["exponent_fit"] = fit.to_json() if fitted else None
        if fitted and record.get("steadier_of"):  # the race's check keeps the fitted metric unless an end is clearly steadier
            new["steadier_of"] = [chosen, *[m for m in choices if m != chosen]]
        return new

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

    def _measured(self) -> int:
        """Candidates that entered a race (carries of screened ones do not count again): --max-trials."""
        return sum(1 for t in self.ledger.trials() if not t.components
                   and (t.status == "screening" or self.ledger.decision(t.id, "screen") is not None))

    def propose(self) -> str:
        """Plan the next generation's candidates: every rule x factor of every untried loop of the
        top kernels, by expected value (cold loops last), at most PLAN_FACTOR x the trials left."""
        if self._open_trials():
            return BUILD  # a proposal was recorded before the run stopped
        measured = self._measured()
        if measured >= self.opt.max_trials:
            self.ledger.set("stop_reason", f"--max-trials {self.opt.max_trials} reached")
            return FINAL_CHECK
        if self.elapsed() >= self.opt.time_budget_s:
            self.ledger.set("stop_reason", f"--time-budget {self.opt.time_budget_s:.0f} s spent")
            return FINAL_CHECK
        base = self.ledger.current_baseline()
        revive = lambda: self._revive_not_built(base.generation)  # noqa: E731
        if self._deferred(base.generation) and self._with_reserve_lent(revive, base.generation):
            return BUILD
        top = [RankedKernel(**r) for r in self.ledger.get("top_kernels", [])]
        first = self.ledger.baselines()[0]
        trials = self.ledger.trials()
        latest: dict[str, int] = {}
        for t in trials:
            latest[t.loop_key] = max(latest.get(t.loop_key, -1), t.generation)
        # A loop re-planned in its latest generation is planned again (a project's carry).
        replanned = {t.loop_key for t in trials if t.reason == R_REPLANNED and t.generation == latest[t.loop_key]}
        # So is a loop some of whose candidates an earlier generation left unbuilt (the budget went
        # elsewhere then), when there is room: on the new baseline its candidates are new programs.
        unbuilt = {t.loop_key for t in trials
                   if t.generation == latest[t.loop_key] < base.generation and t.evidence.get(NOT_BUILT)}
        if unbuilt and self._with_reserve_lent(lambda: self._room_for_a_wave(base.generation), base.generation):
            replanned |= unbuilt
        tried = {t.loop_key for t in trials} - replanned
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
        planned = sorted(((rel, p) for g in groups for rel, p in g),
                         key=lambda rp: (rp[1].cold, -rp[1].expected_value, rp[1].loop_key, rp[1].rule, rp[1].factor))
        room = PLAN_FACTOR * (self.opt.max_trials - measured)
        chosen = planned[:room]
        cold = sorted({p.loop_id for _, p in planned if p.cold})
        if cold and not self.ledger.get("cold_loops"):
            self.report.message(f"{len(cold)} loop(s) without samples come after every sampled one")
        with self.ledger.transaction():
            for rel, p in chosen:
                self.ledger.add_trial(generation=base.generation, loop_key=p.loop_key, kernel=p.kernel, loop_id=p.loop_id,
                                      rule=p.rule, factor=p.factor, expected_value=p.expected_value, file=rel,
                                      ordering={"factors": p.factors, "shape": p.shape, "heat": p.heat, "cold": p.cold})
            self.ledger.set("cold_loops", cold)
            self.ledger.set("candidates_left_estimate", len(planned) - len(chosen))
        self.report.message(f"generation {base.generation}: {len(chosen)} candidates planned over "
                            f"{len({p.loop_key for _, p in chosen})} loops (of {len(planned)}); building all before measuring any")
        return BUILD

    def _room_for_a_wave(self, generation: int) -> bool:
        """Whether one more build wave is worth its time: the same test the build phase makes before
        each wave (_no_room_to_build), so that planning again and building never disagree. The wave is
        granted (`build` builds it without asking again): each grant builds at least one candidate,
        so planning again always makes progress."""
        if self._no_room_to_build(generation):
            return False
        self.ledger.set("wave_granted", generation)
        return True

    def _with_reserve_lent(self, attempt, generation: int) -> bool:
        """`attempt()`, tried again after each confirmation lent (_lend_confirmation_reserve) until it succeeds."""
        done = attempt()
        while not done and self._lend_confirmation_reserve(generation):
            done = attempt()
        return done

    def _lend_confirmation_reserve(self, generation: int) -> bool:
        """Hold back one confirmation fewer (of the two `_pairs_left` keeps), when the generation's race is
        over with nothing awaiting confirmation (the caller has candidates left unbuilt for the budget):
        else the run would stop with the reserve unspent. A confirmation that then runs over the budget beats candidates
        never measured. At most twice a run, so planning again cannot go on without end."""
        reserved = int(self.ledger.get("reserved_confirmations", 2))
        if reserved <= 0 or self.elapsed() >= self.opt.time_budget_s:
            return False
        if any(t.status in ("built", "screening", "screened", "confirming") for t in self.ledger.trials(generation=generation)):
            return False
        self.ledger.set("reserved_confirmations", reserved - 1)
        return True

    def _deferred(self, generation: int) -> list[Trial]:
        """The generation's candidates the build phase left unbuilt for the budget."""
        return [t for t in self.ledger.trials(generation=generation, status="rejected")
                if t.reason == R_BUDGET and t.evidence.get(NOT_BUILT)]

    def _revive_not_built(self, generation: int) -> bool:
        """Plan again the generation's candidates the build phase left unbuilt for the budget, when the
        pairs left (after one more build wave) can give one of them a first rung."""
        deferred = self._deferred(generation)
        if not deferred or not self._room_for_a_wave(generation):
            return False
        with self.ledger.transaction():
            for t in deferred:
                self.ledger.update_trial(t.id, status="proposed", reason="", detail="", evidence={})
        self.report.message(f"the race left room: building {len(deferred)} candidates it had left unbuilt")
        return True

    @staticmethod
    def _resources_by_kernel(resources: dict, top: list[RankedKernel]) -> dict[str, dict]:
        out = {}
        for r in top:
            for name, res in resources.items():
                if name == r.kernel or name.startswith(r.kernel + "("):
                    out[r.kernel] = res
        return out

    # ---- 4. compile first: render, guard, build once per content, check, drop duplicates ---

    def _compiler_id(self) -> str:
        if self._compiler is None:
            self._compiler = compiler_identity(self.svc.backend)
        return self._compiler

    def build(self) -> str:
        """Build the generation's proposed candidates in waves of --jobs, best first (expected value
        times the prior of earlier runs), until the pairs the time budget leaves can race no more
        candidates than are built: the rest are recorded as `budget` (not built), and planned again
        when a race leaves room (`propose`)."""
        base = self.ledger.current_baseline()
        pending = self.ledger.trials(status="proposed")
        if not pending:
            return SCREEN
        stale = [t for t in pending if t.generation < base.generation]
        if stale:  # deferred before a rewrite was accepted: it would rewrite a program that is gone
            self._not_built(stale, f"the time budget went to candidates of higher expected value, and generation "
                            f"{base.generation} replaced the program it was planned on")
        pending = [t for t in pending if t.generation == base.generation]
        wave = max(1, self.opt.jobs)
        # The run's first wave is built whatever the budget says: a run that measured nothing helps no one.
        first = self._measured() == 0 and not any(t.build_key for t in self.ledger.trials() if not t.components)
        # So is a wave `propose` granted when it planned again what an earlier wave left unbuilt.
        if self.ledger.get("wave_granted") == base.generation:
            first = True
            self.ledger.set("wave_granted", None)
        # Carries (screened winners moved onto a newer baseline) are always built: their screening is
        # paid for, and leaving one unbuilt would only have `combine` plan it again.
        carries = [t for t in pending if t.components]
        if carries:
            self._build_wave(base, carries)
        pending = [t for t in pending if not t.components]
        weights = self._prior_weights(pending)
        pending.sort(key=lambda t: (-t.expected_value * weights[t.id], t.id))  # best first
        for k in range(0, len(pending), wave):
            batch = pending[k: k + wave]
            if k or not first:
                reason = self._no_room_to_build(base.generation)
                if reason:
                    self._not_built(pending[k:], reason)
                    self.report.message(f"{len(pending) - k} candidates not built: {reason}")
                    break
            t0 = self.svc.clock()
            self._build_wave(base, batch)
            seconds = list(self.ledger.get("build_wave_seconds") or []) + [self.svc.clock() - t0]
            self.ledger.set("build_wave_seconds", seconds[-8:])
        return SCREEN

    def _not_built(self, trials: list[Trial], reason: str) -> None:
        """Record `trials` as `budget` (not built); `propose` plans them again when a race leaves room."""
        with self.ledger.transaction():
            for t in trials:
                self.ledger.reject(t.id, R_BUDGET, f"not built: {reason}")
                self.ledger.update_trial(t.id, evidence={NOT_BUILT: True})
        for t in trials:
            self._write_verdict(t.id)
            self._drop_trees(t.id)

    def _prior_weights(self, trials: list[Trial]) -> dict[int, float]:
        """Each trial's weight from the prior of earlier runs (1 when none is known), from one opening
        of the prior's database."""
        weights = {t.id: 1.0 for t in trials}
        shaped = [t for t in trials if t.ordering.get("shape")]
        prior = open_prior(prior_root(self.run_dir)) if shaped else None
        if prior is None:
            return weights
        machine = f"{self.ledger.get('backend')}|{self.ledger.get('device')}"
        try:
            for t in shaped:
                found = prior.factor(machine, t.rule, t.factor, t.ordering["shape"]).to_json()
                weights[t.id] = float(found["factor"]) if found.get("tried") else 1.0
        finally:
            prior.close()
        return weights

    def _wave_seconds(self) -> float:
        """What building one more wave is expected to take: the median of this run's waves, else the
        baseline's two builds."""
        seen = sorted(self.ledger.get("build_wave_seconds") or [])
        if seen:
            return seen[len(seen) // 2]
        return float(self.ledger.get("baseline_build_seconds") or 0.0)

    def _no_room_to_build(self, generation: int) -> str:
        """Why building another wave would be wasted ('' when it would not): after it, the pairs the
        budget leaves (_pairs_left) could give no more candidates a first rung than are built."""
        pair_s = self.ledger.get("pair_seconds")
        if not pair_s:
            return ""
        plan = self._race_plan()
        built = sum(1 for t in self.ledger.trials(generation=generation) if t.status == "built" and not t.components)
        pairs = self._pairs_left(extra_s=self._wave_seconds())
        racable = math.floor(pairs * plan.first_share / plan.rungs[0])
        if built < racable:
            return ""
        return (f"the time budget left ({max(0.0, self.opt.time_budget_s - self.elapsed()):.0f} s of "
                f"{self.opt.time_budget_s:.0f} s) races at most {racable} candidate{'s' if racable != 1 else ''} at "
                f"{pair_s:.1f} s a pair, and {built} of higher expected value {'is' if built == 1 else 'are'} built")

    def _build_wave(self, base: Baseline, pending: list[Trial]) -> None:
        """Render, guard, build (once per content, in parallel) and settle `pending`."""
        rendered: dict[int, bytes] = {}
        self.report.stage(BUILD, f"rendering and guarding {len(pending)} candidates")
        for t in pending:
            self._check_stop()
            data = self._render(t, self._source_of(base, t.file))
            if data is not None:
                rendered[t.id] = data
        # A project candidate is its tree: the digest of its sources (the rest is the baseline's copy).
        keys = {tid: build_key(data if not self.project else self.ledger.trial(tid).source_sha256.encode(),
                               self.flags, self._compiler_id()) for tid, data in rendered.items()}
        todo: dict[str, tuple[bytes, int, str]] = {}
        by_id = {t.id: t for t in pending}
        for tid, key in keys.items():
            if key not in todo and self.ledger.build(key) is None:
                todo[key] = (rendered[tid], tid, by_id[tid].file)
        check = bool(self.ledger.get("compile_check"))  # the ledger stays on this thread
        self.report.stage(BUILD, f"{len(todo)} builds for {len(rendered)} candidates, {self.opt.jobs} at a time"
                          + (", each compile-checked" if check else ""))
        with ThreadPoolExecutor(max_workers=self.opt.jobs) as pool:
            futures = [pool.submit(self._build_content, key, data, check, tid, rel) for key, (data, tid, rel) in todo.items()]
            for n, future in enumerate(as_completed(futures), 1):
                self.ledger.add_build(future.result())  # committed as each finishes: a resume keeps it
                self.report.round(n, f"built {n} of {len(todo)}", 0.0)
        self._settle_builds(base, [t for t in pending if t.id in rendered], keys)

    def _render(self, t: Trial, base_path: Path) -> bytes | None:
        """The candidate's source (also written to trials/<id>/source.cu with its diff), or None
        when it was rejected (the rewrite could not be made, or a guard said no)."""
        tools = self.svc.tools
        trial_dir = self.run_dir / "trials" / str(t.id)
        trial_dir.mkdir(parents=True, exist_ok=True)
        if t.components:
            original = self._abs(self.ledger.baselines()[0].source_path).read_text(errors="replace")
            comps = [self.ledger.trial(c) for c in t.components]
            done = render_carry(base_path, original, comps, tools=tools, rules=self._rules_list(), flags=self.flags,
                                analysis_of=self._analysis, workdir=trial_dir / "steps")
            if done.failed:
                # A combination without one of its rewrites is not that combination (accepted, it would
                # count the left-out one as carried): rejected, its components go on alone.
                self._reject(t, R_CONFLICT, "; ".join(f"trial {c}: {why}" for c, why in done.failed.items()))
                return None
            data, diff = done.source, done.diff
        else:
            analysis = self._analysis(base_path)
            try:
                cand = tools.make_candidate(base_path, analysis, t.loop_id, t.rule, t.factor, rules=self._rules_list())
            except RocmPerfError as e:
                self._reject(t, R_GUARD, f"the rewrite could not be made: {e}")
                return None
            failed = [v for v in tools.guard_candidate(cand, self._flags_of(base_path)) if not v.ok]
            data, diff = cand.rewritten, cand.diff
            if self.project:  # the diff names the project's file
                from rocm_perf.optimize.artifacts import unified_diff

                diff = unified_diff(base_path.read_text(errors="replace"), data.decode(errors="replace"), t.file)
            if failed:
                (trial_dir / "source.cu").write_bytes(data)
                self.ledger.update_trial(t.id, source_sha256=sha256_bytes(data), diff=diff)
                self._reject(t, R_GUARD, "; ".join(f"{v.name}: {v.reason}" for v in failed))
                return None
        if self.project:  # the candidate: the baseline's tree with this one file changed
            from rocm_perf.optimize.project import copy_tree

            tree = trial_dir / "tree"
            copy_tree(self._abs(self.ledger.current_baseline().source_path), tree)
            (tree / t.file).write_bytes(data)
            sha = self._tree_digest(tree)
        else:
            (trial_dir / "source.cu").write_bytes(data)
            sha = sha256_bytes(data)
        (trial_dir / "diff").write_text(diff)
        self.ledger.update_trial(t.id, source_sha256=sha, diff=diff)
        return data

    def _build_content(self, key: str, data: bytes, check: bool, trial_id: int = 0, rel: str = "") -> BuildRow:
        """One build under builds/<key>/ (in a worker thread: no ledger here). A project's build is
        trial `trial_id`'s tree built by the project's own command; its identity is its content key
        (the code of a tree's programs is not compared)."""
        d = self.run_dir / "builds" / key
        if d.exists():
            shutil.rmtree(d)  # a build a killed run left unrecorded
        d.mkdir(parents=True)
        sha = sha256_bytes(data)
        if self.project:
            tree = self.run_dir / "trials" / str(trial_id) / "tree"
            src = tree / rel
            try:
                work = self._build_tree(tree, d / "work")
            except RocmPerfError as e:
                return BuildRow(key, sha, "", "", error=str(e)[:2000])
            checked = self._check(src, d / "check") if check else None
            if checked and "error" in checked:
                return BuildRow(key, sha, self._rel(work), f"tree:{key}", error="AMD compile check: " + checked["error"][:2000])
            return BuildRow(key, sha, self._rel(work), f"tree:{key}", checked=checked or {})
        src = d / "source.cu"
        src.write_bytes(data)
        try:
            program = self._build(src, d / "build")
        except RocmPerfError as e:
            return BuildRow(key, sha, "", "", error=str(e)[:2000])
        checked = self._check(src, d / "check") if check else None
        if checked and "error" in checked:
            return BuildRow(key, sha, self._rel(program.executable), code_identity(program.executable),
                            error="AMD compile check: " + checked["error"][:2000])
        return BuildRow(key, sha, self._rel(program.executable), code_identity(program.executable), checked=checked or {})

    def _baseline_build(self, base: Baseline) -> dict:
        """The current baseline's code identity and ISA ({"identity", "isa_identity", "isa_path"})."""
        if base.trial_id is None:
            return self.ledger.get("baseline_build") or {}
        row = self.ledger.build(self.ledger.trial(base.trial_id).build_key)
        if row is None:
            return {}
        return {"identity": row.identity, **{k: v for k, v in row.checked.items() if k.startswith("isa_")}}

    def _identity(self, info: dict) -> tuple:
        """What makes two built programs the same: the code the backend measures (and the AMD ISA
        when that is what runs)."""
        return (info.get("identity"), info.get("isa_identity") if self._isa_measured else None)

    def _settle_builds(self, base: Baseline, trials: list[Trial], keys: dict[int, str]) -> None:
        """Each rendered candidate's build verdict: compile failure, resource regression, duplicate
        (of the baseline or of a candidate of higher expected value), else built with its place in
        the order (named factors) recorded."""
        base_info = self._baseline_build(base)
        generation = base.generation
        seen: dict[tuple, Trial] = {}
        for other in self.ledger.trials(generation=generation):
            if other.build_key and other.status != "proposed" and other.reason != R_DUPLICATE:
                row = self.ledger.build(other.build_key)
                if row is not None and not row.error:
                    seen.setdefault(self._identity({"identity": row.identity, **row.checked}), other)
        prior = open_prior(prior_root(self.run_dir))
        machine = f"{self.ledger.get('backend')}|{self.ledger.get('device')}"
        try:
            for t in sorted(trials, key=lambda t: (-t.expected_value, t.id)):
                row = self.ledger.build(keys[t.id])
                resources = (row.checked or {}).get("resources") or {}
                self.ledger.update_trial(t.id, build_key=row.key, executable=row.executable, resources=resources)
                if row.error:
                    self._reject(t, R_COMPILE, row.error)
                    continue
                reason = self._resource_regression(base.resources, resources, t.kernel)
                if reason:
                    self._reject(t, R_RESOURCES, reason)
                    continue
                info = {"identity": row.identity, **row.checked}
                ident = self._identity(info)
                isa_note = self._isa_note(info, base_info)
                if ident == self._identity(base_info):
                    self._reject(t, R_DUPLICATE, f"duplicate of the baseline (generation {generation}): its built program "
                                 f"is the same code{isa_note}")
                    continue
                if ident in seen and seen[ident].id != t.id:
                    twin = seen[ident]
                    self._reject(t, R_DUPLICATE, f"duplicate of trial {twin.id} ({twin.rule} x{twin.factor} on "
                                 f"{twin.loop_id}): its built program is the same code{self._isa_note(info, self._build_info(twin))}")
                    continue
                seen[ident] = t
                ordering = self._ordering(t, info, base_info, base, prior, machine)
                if t.components:
                    comps = [self.ledger.trial(c) for c in t.components]
                    screen = {"carried_from": t.components, "generation": comps[0].generation,
                              "critical_path": comps[0].evidence.get("screen", {}).get("critical_path")}
                    self.ledger.update_trial(t.id, status="screened", ordering=ordering, evidence={"screen": screen})
                else:
                    self.ledger.update_trial(t.id, status="built", ordering=ordering)
        finally:
            if prior is not None:
                prior.close()

    def _build_info(self, t: Trial) -> dict:
        row = self.ledger.build(t.build_key) if t.build_key else None
        return {} if row is None else {"identity": row.identity, **row.checked}

    def _isa_note(self, cand: dict, other: dict) -> str:
        """What the AMD ISA says about a duplicate on a backend that does not run it."""
        if self._isa_measured or not cand.get("isa_identity") or not other.get("isa_identity"):
            return ""
        if cand["isa_identity"] == other["isa_identity"]:
            return "; its AMD ISA is the same too"
        return "; its AMD ISA differs (the rocm backend would measure that)"

    def _ordering(self, t: Trial, info: dict, base_info: dict, base: Baseline, prior, machine: str) -> dict:
        """The candidate's place in the order: its named factors (plan.py) with the built evidence
        (ISA deltas of its loop, the prior of earlier runs) and their product, the score."""
        ordering = dict(t.ordering)
        isa = None if t.components else self._isa_evidence(t, info, base_info, base)
        shape = ordering.get("shape", "")
        prior_record = prior.factor(machine, t.rule, t.factor, shape).to_json() if (prior is not None and shape) else None
        extra, notes = evidence_factors(isa, prior_record, apply_isa=self._isa_measured)
        factors = {**ordering.get("factors", {}), **extra}
        ordering.update({"factors": factors, "score": math.prod(factors.values()) if factors else t.expected_value,
                         "isa": isa, "prior": prior_record, "notes": notes})
        return ordering

    def _isa_evidence(self, t: Trial, info: dict, base_info: dict, base: Baseline) -> dict | None:
        """isa_loops.IsaDelta of the candidate's loop (None without both ISAs)."""
        if not info.get("isa_path") or not base_info.get("isa_path"):
            return None
        base_path = self._abs(base.source_path)
        analysis = self._analysis(base_path)
        try:
            loop = analysis.loop(t.loop_id)
        except (KeyError, ValueError, RocmPerfError):
            return None
        base_res = self._resources_by_kernel(base.resources, [RankedKernel("", t.kernel, 0, 0)]).get(t.kernel) or {}
        cand_res = self._resources_by_kernel(t.resources or self.ledger.trial(t.id).resources,
                                             [RankedKernel("", t.kernel, 0, 0)]).get(t.kernel) or {}
        mangled = base_res.get("mangled") or cand_res.get("mangled")
        if not mangled:
            return None
        base_asm = self._abs(base_info["isa_path"]).read_text(errors="replace")
        cand_asm = self._abs(info["isa_path"]).read_text(errors="replace")
        shift = len(self._abs(f"trials/{t.id}/source.cu").read_text(errors="replace").splitlines()) - len(
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
        with self.ledger.transaction():
            self.ledger.reject(t.id, reason, detail)
            self._settle_components(t, accepted=False, reason=reason, detail=detail)
        self._write_verdict(t.id)
        self._drop_trees(t.id)
        self.report.verdict(t.label, f"{reason}" + (f" ({detail.splitlines()[0][:120]})" if detail else ""), False)

    def _drop_trees(self, trial_id: int) -> None:
        """A rejected project candidate's trees: its diff and verdict say what it was; the copies
        (a whole tree each, and a built one) are not kept."""
        if self.project:
            for name in ("tree", "work"):
                shutil.rmtree(self.run_dir / "trials" / str(trial_id) / name, ignore_errors=True)

    def _settle_components(self, t: Trial, *, accepted: bool, reason: str = "", detail: str = "") -> None:
        """A carry decided: its components are carried (accepted), or, for one carried alone,
        rejected with the carry's reason (a rejected combination's go on, each alone)."""
        if not t.components:
            return
        if accepted:
            for c in t.components:
                self.ledger.update_trial(c, status=CARRIED, detail=f"accepted through trial {t.id}")
        elif len(t.components) == 1:
            self.ledger.update_trial(t.components[0], status="rejected", reason=reason,
                                     detail=f"when carried onto a newer baseline as trial {t.id}: {detail}".rstrip(": "))

    def _write_verdict(self, trial_id: int) -> None:
        """trials/<id>/verdict.json: derived from the ledger (rebuilt by `finish` as well)."""
        t = self.ledger.trial(trial_id)
        d = self.run_dir / "trials" / str(trial_id)
        d.mkdir(parents=True, exist_ok=True)
        verdict = {"id": t.id, "candidate": t.label, "status": t.status, "reason": t.reason, "detail": t.detail,
                   "evidence": t.evidence, "resources": t.resources, "ordering": t.ordering, "components": t.components}
        tmp = d / "verdict.json.tmp"
        tmp.write_text(json.dumps(verdict, indent=2))
        tmp.replace(d / "verdict.json")

    # ---- 5. measure ------------------------------------------------------------------------

    def _pair(self, t: Trial, phase: str, i: int, base: Baseline) -> tuple[str, str, float]:
        """Interleaved pair i of `t` against `base`, recorded; (reject reason or '', detail, seconds)."""
        return self._shared_pairs([t], {t.id: i}, phase, base)[t.id]

    def _shared_pairs(self, ts: list[Trial], idx: dict[int, int], phase: str, base: Baseline,
                      name: tuple[int, int] | None = None) -> dict[int, tuple[str, str, float]]:
        """Pair idx[t] of every candidate in `ts` against one run of `base`, all recorded (the
        baseline run under each of them): the baseline run in the middle (B C alone, C1 B C2 for
        two) when the pair index is even, reversed when odd, so that each candidate has the
        baseline on either side equally often and two are both next to it (all at once when the
        run's pairs run together: _run_pair). `name`: the (trial,
        index) the baseline run is filed under (default: the first candidate's)."""
        owner, i0 = name or (ts[0].id, idx[ts[0].id])
        order: list[tuple[str, Trial | None]] = [("C", t) for t in ts]
        order.insert(len(ts) // 2, ("B", None))
        if i0 % 2:
            order.reverse()
        results: dict[int, RoundResult] = {}
        rb, seconds = None, 0.0
        ran = self._run_pair([(base.executable, owner, phase, i0, "B") if t is None else (t.executable, t.id, phase, idx[t.id], "C")
                              for _, t in order])
        for (role, t), (r, secs) in zip(order, ran):
            if t is None:
                rb = r
                if len(ts) > 1:  # one run, filed under each candidate it is paired with
                    rb.outputs = {**rb.outputs, "baseline_run": f"{owner}-{phase}-{i0}-B"}
                for x in ts:
                    self._record_round(x.id, phase, idx[x.id], "B", rb)
            else:
                results[t.id] = r
                self._record_round(t.id, phase, idx[t.id], "C", results[t.id])
            seconds += secs
        self._require_baseline_ok(rb, f"round {i0} against candidate{'s' if len(ts) > 1 else ''} "
                                      f"{', '.join(str(t.id) for t in ts)}")
        reference = self.ledger.get("reference_outputs")
        out = {}
        share = seconds / len(ts)
        for t in ts:
            rc, i = results[t.id], idx[t.id]
            if not rc.ok:
                reason = R_TIMEOUT if rc.failure == "timeout" else R_CRASH
                tail = rc.outputs.get("stderr_tail", "")
                out[t.id] = (reason, f"round {i}: {rc.failure}, exit {rc.outputs.get('returncode')}" + (f": {tail}" if tail else ""), share)
                continue
            differ = outputs_differ(reference, rc.outputs)
            out[t.id] = (R_WRONG_OUTPUT, f"round {i}: {differ}", share) if differ else ("", "", share)
        return out

    def _pairs(self, t: Trial, phase: str, n: int | None = None, metric: str | None = None) -> tuple[list[float], list[float]]:
        """The decision values (or `metric`'s) of `t`'s complete pairs in `phase` (the first n); a
        pair with a failed round (crash, timeout) ends them: it has no value, and it ended the trial."""
        metric = metric or self.opt.metric
        b, c = [], []
        for rb, rc in self._complete_pairs(t.id, phase, n):
            b.append(metric_value(_as_result(rb), metric))
            c.append(metric_value(_as_result(rc), metric))
        return b, c

    def _complete_pairs(self, trial_id: int, phase: str, n: int | None = None) -> list[tuple[RoundRow, RoundRow]]:
        """The (baseline, candidate) rounds of a trial's complete pairs in `phase` (the first n), up
        to the first pair with a failed round."""
        rows = {(r.idx, r.role): r for r in self.ledger.rounds(trial_id, phase)}
        out = []
        while (len(out), "B") in rows and (len(out), "C") in rows and (n is None or len(out) < n):
            rb, rc = rows[(len(out), "B")], rows[(len(out), "C")]
            if not (rb.ok and rc.ok):
                break
            out.append((rb, rc))
        return out

    def _evidence(self, t: Trial, phase: str, n: int, tail: float) -> dict:
        """The intervals of `t`'s first n pairs in `phase`: decision metric, kernel, plain sum."""
        rows = {(r.idx, r.role): r for r in self.ledger.rounds(t.id, phase)}
        b, c = self._pairs(t, phase, n)
        symbols = [r["symbol"] for r in self.ledger.get("top_kernels", []) if r["kernel"] in t.kernel.split(",")]
        kb, kc = [], []
        for i in range(len(b)):
            kernel_b = [rows[(i, "B")].kernel_ns[s] for s in symbols if s in rows[(i, "B")].kernel_ns]
            kernel_c = [rows[(i, "C")].kernel_ns[s] for s in symbols if s in rows[(i, "C")].kernel_ns]
            if kernel_b and kernel_c:
                kb.append(sum(kernel_b))
                kc.append(sum(kernel_c))
        evidence: dict[str, Any] = {"rounds": len(b), "metric": self.opt.metric,
                                    "critical_path": acc.median_ratio_interval(b, c, tail_alpha=tail).to_json()}
        if len(kb) == len(b) and kb:
            evidence["kernel"] = acc.median_ratio_interval(kb, kc, tail_alpha=tail).to_json()
        plain = METRIC_UNDIVIDED.get(metric_kind(self.opt.metric))
        if plain and len(b) >= 2:  # a probe-divided metric: did the candidate move the probe? (yardstick.py)
            pb, pc = self._pairs(t, phase, n, metric=plain)
            evidence["probe_shift"] = yardstick.probe_shift(pb, pc, b, c, yardstick.SHIFT_TAIL).to_json()
            evidence["plain"] = {"metric": plain, **acc.median_ratio_interval(pb, pc, tail_alpha=tail).to_json()}
        evidence["sum"] = acc.median_ratio_interval([rows[(i, "B")].sum_ns for i in range(len(b))],
                                                    [rows[(i, "C")].sum_ns for i in range(len(b))], tail_alpha=tail).to_json()
        reference = self.ledger.get("reference_outputs") or {}
        evidence["outputs"] = {"digests": reference.get("digests"), "stdout_matched": True, "rounds_checked": len(c)}
        return evidence

    def _measure(self, t: Trial, phase: str, plan: acc.SequentialPlan, done: int, left: int,
                 must_beat: tuple[float, str] | None = None) -> tuple[str, str, dict]:
        """Fresh interleaved rounds against the current baseline until the sequential test stops.
        `must_beat` (ratio, why): at its looks from BEHIND_FROM pairs on, and when it would accept,
        a candidate whose estimate is not below that ratio stops `behind its best part` (a rule
        that only ever rejects).

        Returns (verdict, reason, evidence); verdict is accept / reject / inconclusive."""
        base = self.ledger.current_baseline()
        self.report.trial(t.label, phase, done, left, plan.max_rounds)
        decision = acc.Decision(acc.CONTINUE, "", None, 0)
        for i in range(plan.max_rounds):
            self._check_stop()
            if i >= self.opt.max_rounds and self.elapsed() >= self.opt.time_budget_s:
                # Past --max-rounds only while the budget lasts; ending a test early never accepts anything.
                decision = acc.Decision(acc.INCONCLUSIVE, acc.REASON_INCONCLUSIVE, decision.interval, i,
                                        f"--time-budget {self.opt.time_budget_s:.0f} s spent after {i} pairs, "
                                        f"past --max-rounds {self.opt.max_rounds}")
                break
            reason, detail, secs = self._pair(t, phase, i, base)
            if reason:
                return acc.REJECT, reason, {"rounds": i + 1, "detail": detail}
            b, c = self._pairs(t, phase)
            decision = acc.sequential_decision(b, c, plan)
            plain = METRIC_UNDIVIDED.get(metric_kind(self.opt.metric))
            if plain and decision.verdict == acc.ACCEPT:  # yardstick.py: not on a probe the candidate moved
                decision = yardstick.guard_accept(decision, plan, *self._pairs(t, phase, metric=plain), b, c, plain)
            est = ""
            if decision.interval is not None:
                iv = decision.interval
                est = f"ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]"
            elif len(b) >= 2:
                est = f"ratio ~{acc.median_ratio_interval(b, c, tail_alpha=0.5).estimate:.3f}"
            self.report.round(i + 1, est, secs)
            n = i + 1
            iv = decision.interval  # at a look: the test's interval
            if must_beat and iv is not None and (decision.verdict == acc.ACCEPT or (
                    n >= BEHIND_FROM and decision.verdict == acc.CONTINUE)):  # the test's own rejections stand
                if iv.estimate >= must_beat[0]:
                    decision = acc.Decision(acc.REJECT, R_BEHIND_PART, iv, n,
                                            f"ratio {iv.estimate:.3f} after {n} fresh pairs; {must_beat[1]}")
            if decision.verdict != acc.CONTINUE:
                break
        evidence = {"decision": decision.to_json(), "plan": plan.to_json(),
                    **self._evidence(t, phase, decision.rounds or plan.max_rounds, plan.look_alpha)}
        if decision.detail:
            evidence["detail"] = decision.detail
        return decision.verdict, decision.reason, evidence

    def _counts(self) -> tuple[int, int]:
        trials = self.ledger.trials()
        done = sum(t.status not in OPEN_STATUSES for t in trials)
        left = sum(t.status in OPEN_STATUSES for t in trials) + int(self.ledger.get("candidates_left_estimate", 0) or 0)
        return done, left

    def _plan(self, alpha: float) -> acc.SequentialPlan:
        return self.base_plan.with_min_gain(float(self.ledger.get("effective_min_gain", self.opt.min_gain))).with_alpha(alpha)

    def _race_plan(self) -> racing.RacePlan:
        return racing.RacePlan.doubling(float(self.ledger.get("effective_min_gain", self.opt.min_gain)), self.alpha,
                                        self.opt.rounds, self.opt.max_rounds, known_spread=self._spread_in_force())

    def _spread_in_force(self) -> float | None:
        """The paired spread the bar was set at: the A/A pairs', or the race's last retake's."""
        floor = self.ledger.get("noise_floor")
        if not floor:
            return None
        retakes = self.ledger.get("noise_floor_retakes") or []
        spread = float(retakes[-1]["spread"] if retakes else floor["spread"])
        return spread if math.isfinite(spread) and spread > 0 else None

    def _pairs_left(self, extra_s: float = 0.0) -> float:
        """The pairs the time budget still pays for (after `extra_s` more seconds of other work), after
        room for two confirmations (fewer once lent) and the final check (at most half the budget: with a short budget on
        a slow program that room would leave the race no pair at all, and a confirmation that runs over
        the budget beats a run that measured nothing)."""
        pair_s = self.ledger.get("pair_seconds")
        if not pair_s:
            return math.inf
        confirmations = int(self.ledger.get("reserved_confirmations", 2))  # fewer once lent (_lend_confirmation_reserve)
        pairs = confirmations * min(self.opt.max_rounds, CONFIRMATION_PAIRS_RESERVED) + self.opt.aa_rounds
        reserve_s = min(pairs * pair_s, 0.5 * self.opt.time_budget_s)
        return max(0.0, (self.opt.time_budget_s - self.elapsed() - extra_s - reserve_s) / pair_s)

    @staticmethod
    def _score(t: Trial) -> float:
        return float(t.ordering.get("score", t.expected_value))

    # ---- 5b. screen: the race (racing.py) ---------------------------------------------------

    def _racers(self, generation: int, statuses: tuple[str, ...]) -> list[Trial]:
        return sorted((t for t in self.ledger.trials(generation=generation) if t.status in statuses and not t.components),
                      key=lambda t: (-self._score(t), t.id))

    def screen(self) -> str:
        base = self.ledger.current_baseline()
        generation = base.generation
        plan = self._race_plan()
        race = self.ledger.get("race") or {}
        # A new race: a new generation's, or one of candidates built after the generation's race (not built then)
        if race.get("generation") != generation or self._racers(generation, ("built",)):
            if not self._racers(generation, ("built", "screening")):
                return CONFIRM
            self._start_race(generation, plan)
        while True:
            self._check_stop()
            plan = self._race_plan()  # its bar falls when the race re-takes the noise floor (_retake_floor)
            rung = int(self.ledger.get("race")["rung"])
            target = racing.next_rung(plan, rung)
            racers = self._racers(generation, ("screening",))
            if not racers or target is None:
                break
            self._race_to(racers, target, base)
            self._judge(generation, rung + 1, target, plan)
        self._settle_close_calls(generation)
        return CONFIRM

    def _settle_close_calls(self, generation: int) -> bool:
        """After the race, and again once the confirmations have no candidate left: each loop without a
        screened or accepted candidate sends the close call that a few fresh pairs could settle
        (close_calls.to_settle, --settle-close-calls) to the confirmations as a screened winner goes,
        once per loop. True when it sent one. (matmul_tiled: `unroll_manual x4` stopped at 0.976 after
        20 pairs as slower than `unroll_manual x2`, which had passed screening at 0.970 and then failed
        its re-measure; about 23 pairs at the race's 0.7 % spread would show a 2.4 % gain.) Not in a
        project run: a stopped candidate's tree is not kept (_drop_trees)."""
        max_pairs = self.opt.settle_close_calls
        if not max_pairs > 0 or self.project:
            return False
        trials = self.ledger.trials()
        before = [int(i) for i in self.ledger.get("settled_close_calls") or []]
        decided = {t.loop_key for t in trials if t.status in ("screened", "confirming", "accepted", CARRIED)}
        decided |= {t.loop_key for t in trials if t.id in before}  # once per loop
        stopped = [t for t in trials if t.generation == generation and not t.components and t.loop_key not in decided
                   and unproven(t.status, t.reason) and measured_phase(t.evidence) == "screen"]
        if not stopped:
            return False
        threshold = 1.0 - float(self.ledger.get("effective_min_gain", self.opt.min_gain))
        tail = self._plan(acc.confirmation_alpha(self.alpha, 1)).look_alpha  # the report's level for close calls
        calls = {}
        for t in stopped:
            call = close_call(t.id, t.label, t.status, t.reason, t.detail, t.evidence, threshold, self._pairs(t, "screen"), tail)
            if call is not None:
                calls[t.id] = call
        chosen = to_settle(list(calls.values()), {t.id: t.loop_key for t in stopped}, decided, max_pairs, self._pairs_left())
        if not chosen:
            return False
        by_id = {t.id: t for t in stopped}
        with self.ledger.transaction():
            for tid in chosen:
                self.ledger.update_trial(tid, status="screened", reason="", detail="",
                                         evidence={**by_id[tid].evidence, "close_call": calls[tid].to_json()})
            self.ledger.set("settled_close_calls", before + chosen)
        for tid in chosen:
            call = calls[tid]
            self.report.message(f"{by_id[tid].label}: a close call ({call.estimate:.3f} after {call.pairs} pairs, "
                                f"stopped {call.reason}; about {math.ceil(call.pairs_to_settle)} pairs would settle it): "
                                "to be re-measured")
        return True

    def _start_race(self, generation: int, plan: racing.RacePlan) -> None:
        """The race's entrants (--max-trials, by score) and their first rung (the budget, by score)."""
        entrants = self._racers(generation, ("built",))
        room = max(0, self.opt.max_trials - self._measured())
        over, entrants = entrants[room:], entrants[:room]
        racers = [racing.Racer(t.id, t.loop_key, self._score(t)) for t in entrants]
        granted, refused = racing.grant(racers, plan.rungs[0], self._pairs_left(), first=True, plan=plan)
        if racers and not granted and self._measured() == 0 and self.elapsed() < self.opt.time_budget_s:
            # Nothing measured yet: the best candidate races into the reserve rather than the run ending empty.
            granted, refused = [racers[0].id], [r.id for r in racers[1:]]
        with self.ledger.transaction():
            for t in over:
                self.ledger.reject(t.id, R_BUDGET, f"not measured: --max-trials {self.opt.max_trials} went to candidates "
                                   "of higher expected value")
            for tid in refused:
                self.ledger.reject(tid, R_BUDGET, "not measured: the time budget's pairs went to candidates of higher "
                                   "expected value" if granted else "not measured: the time budget left pays for no "
                                   "pairs beyond two confirmations and the final check")
            for tid in granted:
                self.ledger.update_trial(tid, status="screening")
            self.ledger.set("race", {"generation": generation, "rung": -1, "plan": plan.to_json()})
        for t in over + [self.ledger.trial(i) for i in refused]:
            self._write_verdict(t.id)
            self._drop_trees(t.id)
        self.report.message(f"race of {len(granted)} candidates: rungs {', '.join(map(str, plan.rungs))} pairs"
                            + (f"; {len(over) + len(refused)} not measured (budget)" if over or refused else ""))

    def _race_to(self, racers: list[Trial], target: int, base: Baseline) -> None:
        """Measure every racer to `target` complete pairs, round-robin, highest score first, two
        candidates to one baseline run (SHARED_BASELINE): partners are fixed for the rung, so that
        a resumed race files each baseline run as the uninterrupted one would have."""
        counts = {t.id: len(self._pairs(t, "screen")[0]) for t in racers}
        alive = {t.id for t in racers}
        groups = [sorted(racers[k: k + SHARED_BASELINE], key=lambda t: t.id) for k in range(0, len(racers), SHARED_BASELINE)]
        while True:
            if not any(counts[t] < target for t in alive):
                return
            for group in groups:
                members = [t for t in group if t.id in alive and counts[t.id] < target]
                if not members:
                    continue
                self._check_stop()
                if self.elapsed() >= self.opt.time_budget_s:
                    for other in [t for t in racers if t.id in alive]:
                        self._decide_racer(other, acc.REJECT, R_BUDGET, f"--time-budget {self.opt.time_budget_s:.0f} s spent "
                                           f"after {counts[other.id]} pairs", counts[other.id], None)
                    return
                done, left = self._counts()
                self.report.trial(" + ".join(t.label for t in members), f"race to {target}", done, left, target)
                if len({counts[t.id] for t in members}) == 1:
                    batches = [members]
                else:  # a partner is a pair behind (a resumed race): each goes alone, filed as before
                    batches = [[t] for t in members]
                for batch in batches:
                    outcome = self._shared_pairs(batch, {t.id: counts[t.id] for t in batch}, "screen", base,
                                                 name=(group[0].id, counts[batch[0].id]))
                    for t in batch:
                        reason, detail, secs = outcome[t.id]
                        counts[t.id] += 1
                        self.report.round(counts[t.id], "", secs)
                        if reason:
                            self._decide_racer(t, acc.REJECT, reason, detail, counts[t.id], None)
                            alive.discard(t.id)

    def _decide_racer(self, t: Trial, verdict: str, reason: str, detail: str, n: int, call: racing.Call | None,
                      plan: racing.RacePlan | None = None) -> None:
        """Record a racer's screening decision (committed with its status), then say it."""
        with self.ledger.transaction():
            evidence = self._record_racer(t, verdict, reason, detail, n, call, plan or self._race_plan())
        self._announce_racer(t, verdict, reason, detail, evidence)

    def _record_racer(self, t: Trial, verdict: str, reason: str, detail: str, n: int, call: racing.Call | None,
                      plan: racing.RacePlan) -> dict:
        """A racer's screening decision and status, inside the caller's transaction; its evidence."""
        t = self.ledger.trial(t.id)
        complete = len(self._pairs(t, "screen")[0])
        evidence: dict[str, Any] = self._evidence(t, "screen", min(n, complete), plan.look_alpha) if complete else {"rounds": n}
        evidence.update({"decision": call.to_json() if call else {"verdict": verdict, "reason": reason, "rounds": n},
                         "plan": plan.to_json(), "race": {"score": self._score(t)}})
        if detail:
            evidence["detail"] = detail
        self.ledger.add_decision(t.id, "screen", verdict, reason, evidence)
        if verdict == acc.ACCEPT:
            self.ledger.update_trial(t.id, status="screened", evidence={"screen": evidence})
        else:
            self.ledger.update_trial(t.id, status="rejected", reason=reason,
                                     detail=detail or _ratio_text(evidence), evidence={"screen": evidence})
        return evidence

    def _announce_racer(self, t: Trial, verdict: str, reason: str, detail: str, evidence: dict) -> None:
        if verdict == acc.ACCEPT:
            last = f" as {detail.split(':')[0]}" if detail.startswith((racing.LAST_RACER, racing.LEADER)) else ""
            self.report.message(f"{t.label}: passed screening{last} ({_ratio_text(evidence)}); to be re-measured")
        else:
            self._write_verdict(t.id)
            self._drop_trees(t.id)
            self.report.verdict(t.label, f"{reason} ({detail or _ratio_text(evidence)})"[:200], False)

    def _judge(self, generation: int, rung: int, n: int, plan: racing.RacePlan) -> None:
        """Every racer's call at rung `rung` (n pairs), and who runs the next rung: committed in one
        transaction with the race's new rung, so that a resumed race never judges a rung twice."""
        trials = self._racers(generation, ("screening",))
        self._recheck_metric(trials, n)
        racers = []
        for t in trials:
            b, c = self._pairs(t, "screen", n)
            racers.append(racing.Racer(t.id, t.loop_key, self._score(t), b, c))
        if self._retake_floor(racers, n):
            plan = self._race_plan()
        passed: dict[str, list[racing.Call]] = {}
        for t in self.ledger.trials(generation=generation):
            d = self.ledger.decision(t.id, "screen")
            # (a close call sent to its confirmation did not pass screening: it is no rival's bar)
            if t.status == "screened" and d and not t.components and d.get("decision", {}).get("interval") \
                    and "close_call" not in t.evidence:
                iv = acc.RatioInterval(**d["decision"]["interval"])
                passed.setdefault(t.loop_key, []).append(racing.Call(t.id, acc.ACCEPT, acc.REASON_GAIN, "", iv, iv.n))
        calls = racing.judge_rung(racers, n, plan, passed)
        continuing = [r for r in racers if calls[r.id].verdict == acc.CONTINUE]
        nxt = racing.next_rung(plan, rung)
        granted, refused = (racing.grant(continuing, nxt, self._pairs_left(), first=False, plan=plan)
                            if nxt is not None and continuing else ([r.id for r in continuing], []))
        by_id = {t.id: t for t in trials}
        said = []
        with self.ledger.transaction():
            for r in racers:
                call = calls[r.id]
                if call.verdict != acc.CONTINUE:
                    said.append((r.id, call.verdict, call.reason, call.detail,
                                 self._record_racer(by_id[r.id], call.verdict, call.reason, call.detail, n, call, plan)))
                elif r.id in refused:
                    detail = (f"stopped after {n} pairs: the time budget's pairs went to candidates of higher expected "
                              "value" if granted else f"stopped after {n} pairs: the time budget left pays for no pairs "
                              "beyond two confirmations and the final check")
                    said.append((r.id, acc.REJECT, R_BUDGET, detail,
                                 self._record_racer(by_id[r.id], acc.REJECT, R_BUDGET, detail, n, None, plan)))
            self.ledger.set("race", {"generation": generation, "rung": rung, "plan": plan.to_json()})
        for tid, verdict, reason, detail, evidence in said:
            self._announce_racer(by_id[tid], verdict, reason, detail, evidence)

    def _recheck_metric(self, trials: list[Trial], n: int) -> bool:
        """Under --metric auto, once, before the run's first race judges its first rung: choose the
        metric again over the A/A pairs and that rung's pairs together (acc.steadier_metric_pooled,
        the same margin). Ten A/A pairs can fall in a moment of load that one clock path cancels
        and the other does not, and the metric they choose then decides the whole run: in 84 loop
        runs of seven 12-program passes the A/A pairs chose probed-path six times, and in four of
        them the race's pairs spread two to three times as much on it as on cpu-path (matmul_tiled:
        3.9 % vs 1.6 % over the A/A, 1.3 % vs 3.1 % over the race's 55 pairs; its 2-3 % gain was
        dropped at the first rung). A switch takes the noise floor again on the new metric: the A/A's
        offset, the resolution at the pooled spread. Screening only, as everything the race decides:
        every accept is still a fresh confirmation on pairs the choice never saw. True on a switch."""
        record = self.ledger.get("metric") or {}
        choices = record.get("steadier_of")
        if not choices or "race_check" in record or not trials:
            return False
        if len(self.ledger.baselines()) > 1 or self.ledger.trials(status="screened"):
            return False  # a run from before this check, resumed past its first race: the metric has decided already
        groups = {}
        for m in choices:  # a metric some round lacks (pipeline: no probe beside overlapping streams) is no choice
            pairs_m = [self._recorded_pairs(BASELINE_TRIAL, "aa", m)] + [self._recorded_pairs(t.id, "screen", m, n) for t in trials]
            if all(p is not None for p in pairs_m):
                groups[m] = pairs_m
        chosen, spreads, pairs = acc.steadier_metric_pooled(groups, choices)
        before = self.opt.metric
        check = {"rung": n, "racers": len(trials), "pairs": pairs, "spreads": spreads, "from": before}
        if chosen == before or chosen not in spreads:
            with self.ledger.transaction():
                self.ledger.set("metric", {**record, "race_check": check})
            return False
        b, c = groups[chosen][0]  # the A/A pairs
        aa = acc.noise_floor(b, c, confidence=self.opt.confidence, max_rounds=self.opt.max_rounds)
        floor = acc.floor_at_spread(aa.interval, spreads[chosen], confidence=self.opt.confidence, max_rounds=self.opt.max_rounds)
        effective = acc.effective_min_gain(self.opt.min_gain, floor)
        with self.ledger.transaction():
            self.ledger.set("metric", {**record, "name": chosen, "meaning": metric_meaning(chosen), "race_check": check})
            self.ledger.set("noise_floor", floor.to_json())
            self.ledger.set("effective_min_gain", effective)
        self.opt = replace(self.opt, metric=chosen)
        said = ", ".join(f"{m} {s:.1%}" for m, s in spreads.items())
        self.report.message(f"decision metric: {chosen} instead of {before}: over the A/A pairs and the first rung's, "
                            f"{pairs} pairs, its paired spread is lower ({said}); min gain {effective:.1%}")
        return True

    def _recorded_pairs(self, trial_id: int, phase: str, metric: str, n: int | None = None) -> tuple[list[float], list[float]] | None:
        """`metric`'s values of a trial's complete pairs (as _pairs), or None when a round of them has
        no positive value (where _pairs raises: the decision metric must be there)."""
        b, c = [], []
        for rb, rc in self._complete_pairs(trial_id, phase, n):
            vb, vc = metric_of(rb.cp_ns, rb.outputs, metric), metric_of(rc.cp_ns, rc.outputs, metric)
            if not (vb and vb > 0 and vc and vc > 0):
                return None
            b.append(vb)
            c.append(vc)
        return b, c

    def _retake_floor(self, racers: list[racing.Racer], n: int) -> bool:
        """Take the noise floor again from the rung's pairs when they are clearly steadier than the
        spread in force (acc.RETAKE_FACTOR: the machine left the noisy mode the A/A pairs fell in),
        have more pairs than the A/A had, and set a lower bar: that bar then judges this rung and
        everything after it. True when it did."""
        floor = self.ledger.get("noise_floor")
        if not floor:
            return False
        retakes = list(self.ledger.get("noise_floor_retakes") or [])
        in_force = self._spread_in_force()
        if in_force is None:
            return False
        spread, pairs = acc.pooled_spread([(r.baseline, r.candidate) for r in racers])
        if pairs < 2 * self.opt.aa_rounds or not acc.clearly_steadier(in_force, spread):
            return False
        retaken = acc.floor_at_spread(acc.RatioInterval(**floor["interval"]), spread,
                                      confidence=self.opt.confidence, max_rounds=self.opt.max_rounds)
        bar = float(self.ledger.get("effective_min_gain", self.opt.min_gain))
        lower = acc.effective_min_gain(self.opt.min_gain, retaken)
        if lower >= bar:
            return False
        record = {"rung": n, "racers": len(racers), "pairs": pairs, "spread": spread, "from_spread": in_force,
                  "floor": retaken.floor, "from_min_gain": bar, "min_gain": lower}
        with self.ledger.transaction():
            self.ledger.set("noise_floor_retakes", retakes + [record])
            self.ledger.set("effective_min_gain", lower)
        than = "the last rung's" if retakes else "the A/A's"
        self.report.message(f"the race's {pairs} pairs are steadier than {than} (spread {spread:.1%} vs {in_force:.1%}): "
                            f"asking for at least {lower:.1%} instead of {bar:.1%}")
        return True

    # ---- 6. confirm and decide -------------------------------------------------------------

    @staticmethod
    def _estimate(t: Trial) -> float:
        cp = (t.evidence.get("screen") or {}).get("critical_path") or {}
        return float(cp.get("estimate") or 1.0)

    def confirm(self) -> str:
        """Each loop's screened candidates, best loop first, re-measured fresh (alpha spent across
        the run) until one is accepted; combinations and carries (combine.py) before them, and
        the loops' winners first combined when two or more loops have one (`combine` plans it)."""
        for t in self.ledger.trials(status="confirming"):
            self.ledger.forget_rounds(t.id, "confirm")
            self.ledger.update_trial(t.id, status="screened")
        generation = self.ledger.current_baseline().generation
        while True:
            self._check_stop()
            contenders = [t for t in self.ledger.trials(status="screened") if t.generation == generation]
            if not contenders:
                if self._settle_close_calls(generation):
                    continue  # a loop whose screened winners all failed their re-measure has its close call confirmed
                return COMBINE
            carries = [t for t in contenders if t.components]
            if carries:
                group = carries[:1]
            elif self._combination_due(generation):
                return COMBINE  # it plans the combination of the loops' winners, confirmed before each alone
            else:
                loops: dict[str, list[Trial]] = {}
                for t in sorted(contenders, key=lambda t: (self._estimate(t), t.id)):
                    loops.setdefault(t.loop_key, []).append(t)
                group = min(loops.values(), key=lambda g: (self._estimate(g[0]), g[0].id))
            for t in group:
                if self._confirm_one(t):
                    return COMBINE

    def _confirm_one(self, t: Trial) -> bool:
        self._check_stop()
        k = sum(1 for _ in self.ledger.decisions("confirm")) + 1
        alpha_k = acc.confirmation_alpha(self.alpha, k)
        self.ledger.update_trial(t.id, status="confirming")
        done, left = self._counts()
        plan, must_beat = self._plan(alpha_k), None
        # A combination on the baseline its parts were screened on (their ratios compare with its own)
        combination = t.rule == COMBINATION and all(self.ledger.trial(c).generation == t.generation for c in t.components)
        if combination:
            plan = plan.ending_by(COMBINATION_MAX_PAIRS)
            must_beat = self._best_part(t)
        close = "close_call" in t.evidence
        if close:
            plan = plan.ending_by(settle_limit(self.opt.settle_close_calls))
        verdict, reason, evidence = self._measure(t, "confirm", plan, done, left, must_beat)
        evidence["confirmation"] = {"k": k, "alpha": alpha_k}
        if verdict != acc.ACCEPT and combination and not evidence.get("detail"):
            evidence["detail"] = (f"not confirmed within {plan.max_rounds} pairs, a combination's limit: each loop's "
                                  "winner is confirmed alone")
        if verdict != acc.ACCEPT and close and not evidence.get("detail"):
            evidence["detail"] = f"not confirmed within {plan.max_rounds} pairs, a close call's limit (twice --settle-close-calls)"
        both = {"screen": t.evidence.get("screen", {}), "confirm": evidence,
                **({"close_call": t.evidence["close_call"]} if "close_call" in t.evidence else {})}
        if verdict == acc.ACCEPT:
            self._accept(t, evidence, both)
            return True
        detail = evidence.get("detail", "on a fresh re-measure after passing screening")
        with self.ledger.transaction():
            self.ledger.add_decision(t.id, "confirm", verdict, reason, evidence)
            self.ledger.update_trial(t.id, status="rejected", reason=reason, detail=detail, evidence=both)
            self._settle_components(t, accepted=False, reason=reason, detail=detail)
        self._write_verdict(t.id)
        self._drop_trees(t.id)
        self.report.verdict(t.label, f"{reason} on re-measure ({_ratio_text(evidence)})", False)
        return False

    def _best_part(self, t: Trial) -> tuple[float, str]:
        """What a combination must beat: the upper end of its best part's lenient screened interval
        (the race's 50 %), and the words that say so. Not the part's estimate: that is the best of a
        race (biased low), and on matmul_regblock a combination at 0.866, better than its best part
        alone (0.907 on fresh pairs), was behind that part's screened 0.864."""
        best = min((self.ledger.trial(c) for c in t.components), key=lambda c: (self._estimate(c), c.id))
        b, c = self._pairs(best, "screen", int(best.evidence["screen"]["rounds"]))  # the pairs it passed screening on
        drop_alpha = self._race_plan().drop_alpha
        lenient = acc.median_ratio_interval(b, c, tail_alpha=drop_alpha, method=self.base_plan.method)
        return lenient.high, (f"its best part alone (trial {best.id}, {best.rule} x{best.factor} on {best.loop_id}) screened "
                              f"at {lenient.estimate:.3f}, {1 - 2 * drop_alpha:.0%} interval up to {lenient.high:.3f}: "
                              "each loop's winner is confirmed alone")

    def _accept(self, t: Trial, evidence: dict, both: dict) -> None:
        base = self.ledger.current_baseline()
        # The other screened candidates of the accepted loops (a combination's: each of its components')
        loops = {t.loop_key, *(self.ledger.trial(c).loop_key for c in t.components)}
        superseded = [other.id for other in self.ledger.trials(status="screened") if other.loop_key in loops
                      and other.generation <= t.generation and not other.components and other.id not in t.components]
        with self.ledger.transaction():
            self.ledger.add_decision(t.id, "confirm", acc.ACCEPT, acc.REASON_GAIN, evidence)
            self.ledger.update_trial(t.id, status="accepted", reason=acc.REASON_GAIN, evidence=both)
            for other in superseded:
                self.ledger.update_trial(other, status="rejected", reason=R_SUPERSEDED,
                                         detail=f"trial {t.id} was accepted for the same loop")
            self._settle_components(t, accepted=True)
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

    # ---- 6b. combine: the loops' winners as one candidate, or carried onto the new baseline (combine.py)

    def combine(self) -> str:
        if self.ledger.trials(status="proposed"):
            return BUILD  # a carry was planned before the run stopped
        base = self.ledger.current_baseline()
        components = self._combination_due(base.generation)
        if components:
            with self.ledger.transaction():
                self._propose_carry([self.ledger.trial(c) for c in components], base.generation)
            return BUILD
        stale = [t for t in self.ledger.trials(status="screened") if t.generation < base.generation]
        if not stale:
            return PROPOSE
        if self.project:  # carrying rewrites between a project's trees is not done: the loops are planned again
            with self.ledger.transaction():
                for t in stale:
                    self.ledger.update_trial(t.id, status="rejected", reason=R_REPLANNED,
                                             detail=f"another loop's candidate was accepted first; its loop is planned "
                                             f"again on generation {base.generation}")
            for t in stale:
                self._write_verdict(t.id)
                self._drop_trees(t.id)
            return PROPOSE
        tried_together = {c for x in self.ledger.trials() if x.rule == COMBINATION and x.status not in OPEN_STATUSES
                          for c in x.components}
        carry = plan_carry(stale, self._estimate, self._loop_ranges(stale, base), tried_together)
        with self.ledger.transaction():
            for tid, best in carry.superseded.items():
                self.ledger.update_trial(tid, status="rejected", reason=R_SUPERSEDED,
                                         detail=f"trial {best} is its loop's best screened candidate")
            for tid, why in carry.conflicts.items():
                self.ledger.update_trial(tid, status="rejected", reason=R_CONFLICT, detail=why)
            if carry.components:
                comps = [self.ledger.trial(c) for c in carry.components]
                self._propose_carry(comps, base.generation)
        for tid in [*carry.superseded, *carry.conflicts]:
            self._write_verdict(tid)
        return BUILD if carry.components else PROPOSE

    def _loop_ranges(self, trials: list[Trial], base: Baseline) -> dict[str, tuple[int, int] | None]:
        """Each trial's loop as it is in `base`'s source: its line range, or None when it is not
        there any more as it was (an accepted change rewrote it)."""
        base_path = self._abs(base.source_path)
        analysis = self._analysis(base_path)
        original = self._abs(self.ledger.baselines()[0].source_path).read_text(errors="replace")
        to_original = original_line_of(original, base_path.read_text(errors="replace"))
        ranges: dict[str, tuple[int, int] | None] = {}
        for t in trials:
            loop = find_loop(analysis, to_original, t.loop_key)
            ranges[t.loop_key] = None if loop is None else loop_range(loop)
        return ranges

    def _combination_due(self, generation: int) -> list[int]:
        """The generation's loops' screened winners to confirm together before any of them alone
        (combine.plan_combination), or [] (a project's loops are each confirmed alone: carrying
        rewrites between its trees is not done)."""
        if self.project:
            return []
        screened = [t for t in self.ledger.trials(status="screened") if t.generation == generation and not t.components]
        if len({t.loop_key for t in screened}) < 2:
            return []
        tried = {c for x in self.ledger.trials() if x.rule == COMBINATION for c in x.components}
        if any(t.id in tried for t in screened):
            return []  # once per generation (before the loops' source is analysed again)
        return plan_combination(screened, self._estimate, self._loop_ranges(screened, self.ledger.current_baseline()), tried)

    def _propose_carry(self, comps: list[Trial], generation: int) -> int:
        ordering = {"factors": {"carried: screened gain": 1 / max(1e-9, min(self._estimate(c) for c in comps))},
                    "carried_from": [c.id for c in comps]}
        if len(comps) == 1:
            c = comps[0]
            tid = self.ledger.add_trial(generation=generation, loop_key=c.loop_key, kernel=c.kernel, loop_id=c.loop_id,
                                        rule=c.rule, factor=c.factor, expected_value=c.expected_value, ordering=ordering,
                                        components=[c.id])
            self.report.message(f"carrying trial {c.id} ({c.rule} x{c.factor} on {c.loop_id}) onto the new baseline")
            return tid
        kernels = ",".join(dict.fromkeys(c.kernel for c in comps))
        tid = self.ledger.add_trial(generation=generation, loop_key="+".join(c.loop_key for c in comps), kernel=kernels,
                                    loop_id="; ".join(c.loop_id for c in comps), rule=COMBINATION, factor=0,
                                    expected_value=sum(c.expected_value for c in comps), ordering=ordering,
                                    components=[c.id for c in comps])
        where = ("confirmed before any of them alone" if comps[0].generation == generation
                 else "on the new baseline")
        self.report.message(f"combining the screened winners of {len(comps)} loops (trials "
                            f"{', '.join(str(c.id) for c in comps)}) into one candidate, {where}")
        return tid

    # ---- 7. finish -------------------------------------------------------------------------

    def final_check(self) -> str:
        """Original against final, interleaved: the run's overall speedup, for the report only.
        --aa-rounds pairs, and as many again while the interval still holds 1 (a gain the run
        accepted, not yet visible in the pairs of a noisy program), up to FINAL_CHECK_MAX_BLOCKS
        times and within the time budget."""
        self.ledger.forget_rounds(BASELINE_TRIAL, "final")
        bases = self.ledger.baselines()
        if len(bases) < 2:
            return FINISH
        b: list[float] = []
        c: list[float] = []
        tail = (1 - self.opt.confidence) / 2
        self._final_pairs(bases[0].executable, bases[-1].executable, b, c)
        iv = acc.median_ratio_interval(b, c, tail_alpha=tail)
        for _ in range(FINAL_CHECK_MAX_BLOCKS - 1):
            if iv.high < 1.0 or iv.low > 1.0 or self.elapsed() >= self.opt.time_budget_s:
                break
            self._final_pairs(bases[0].executable, bases[-1].executable, b, c)
            iv = acc.median_ratio_interval(b, c, tail_alpha=tail)
        self.ledger.set("final_check", iv.to_json())
        return FINISH

    def _final_pairs(self, original: str, final: str, b: list[float], c: list[float]) -> None:
        """--aa-rounds more pairs of the final check after the len(b) measured, their values appended to b and c."""
        start = len(b)
        for i in range(start, start + self.opt.aa_rounds):
            self._check_stop()
            order = pair_order(i, original, final)
            for (role, _), (r, secs) in zip(order, self._run_pair([(exe, BASELINE_TRIAL, "final", i, role) for role, exe in order])):
                self._record_round(BASELINE_TRIAL, "final", i, role, r)
                if not r.ok or outputs_differ(self.ledger.get("reference_outputs"), r.outputs):
                    raise RocmPerfError(f"{self.run_dir}: the final program failed or changed its outputs in the "
                                        f"final check (round {i}); its accepted changes must not be applied")
                (b if role == "B" else c).append(metric_value(r, self.opt.metric))
            self.report.round(i + 1, "", secs)

    def finish(self) -> str:
        from rocm_perf.optimize.artifacts import write_artifacts

        bases = self.ledger.baselines()
        if len(bases) > 1 and (self.ledger.get("roofline") or {}).get("how") == "counter round":
            self._roofline("final", self._abs(bases[-1].executable))  # the accepted result's roofline
        for t in self.ledger.trials():
            if t.status not in OPEN_STATUSES:
                self._write_verdict(t.id)
        self._record_prior()
        write_artifacts(self.run_dir, self.ledger, state=DONE)
        self._write_report()
        return DONE

    def _record_prior(self) -> None:
        """What this run measured, for the order of later runs on this machine (search_prior.py)."""
        prior = open_prior(prior_root(self.run_dir))
        if prior is None:
            return
        machine = f"{self.ledger.get('backend')}|{self.ledger.get('device')}"
        rows = []
        for t in self.ledger.trials():
            shape = t.ordering.get("shape")
            if t.components or not shape:
                continue
            if t.status in ("accepted", CARRIED):
                rows.append((t.id, machine, t.rule, t.factor, shape, True, 1 / self._estimate(t) - 1))
            elif t.status == "rejected" and t.reason in LOST_REASONS:
                rows.append((t.id, machine, t.rule, t.factor, shape, False, 1 / self._estimate(t) - 1))
        try:
            prior.record(self.run_dir.name, rows)
        except RocmPerfError as e:
            self.report.message(f"search prior not updated: {e}")
        finally:
            prior.close()

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


def prior_root(run_dir: Path) -> Path:
    """Where the search prior lives: the sweep directory a run belongs to, else the runs root."""
    for parent in list(Path(run_dir).parents)[:4]:
        if (parent / "sweep.db").exists():
            return parent
    return Path(run_dir).parent


def _as_result(row: RoundRow) -> RoundResult:
    """A recorded round as measure.metric_value reads it."""
    return RoundResult(row.ok, row.failure, row.cp_ns, row.sum_ns, row.kernel_ns, row.outputs.get("cp_share", {}),
                       row.outputs)


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
