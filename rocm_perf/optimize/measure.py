"""One measured round: run a built program under the backend's profiler and reduce its trace.

A round yields the decision metrics, the plain sum of dispatch durations, each kernel's median
dispatch duration, each kernel's critical-path share (for ranking), and the evidence of
correctness: exit status, output digests, standard output. The correctness of a candidate is
checked on these very timed runs (MEASUREMENT.md).

The decision metrics (`optimize --metric`), each the length of a path through the dispatch DAG:
- critical-path: wall clock, each dispatch weighted by its end - start (the rocm backend's default);
- median-path: the wall-clock critical path with each dispatch at its kernel's median duration;
- cpu-path: the critical path with each dispatch weighted by the CPU time of the threads that ran
  its blocks (time spent descheduled by other processes does not count);
- probed-path: the cpu-path with each dispatch's CPU time divided by that of the speed probe timed
  just before it (dispatch_clocks.h), in units of a 1 ms probe (what --metric auto takes on the host
  backend where a run's A/A pairs find it clearly steadier): a core that runs load-heavy code at two
  speeds, as some virtual machines do for seconds at a time, slows the probe with the kernel, and the
  ratio stays. The probe is the same machine code at the same alignments in every build, so a
  candidate cannot move its own yardstick (inlined, it read 35-56 % slower in one candidate's build);
- adjusted-path: between the two, each dispatch's CPU time times (1 ms / its probe) to a power b
  in [0, 1] (b = 0 is cpu-path, b = 1 probed-path) that the run fits on its A/A rounds
  (probe_exponent.py): how much of the probe's swings the program's CPU time follows. A kernel
  that is not load-heavy slows less than the probe does when the core's speed drops, and dividing
  by the whole probe then adds the probe's swings instead of cancelling them. Rounds record the
  path at b = 0.1, 0.2, ..., 0.9 (`adjusted-path:0.4`); what --metric auto takes on the host backend;
- instructions, cycles: the same with the dispatch's user-space instructions or cycles (host
  backend, where perf_event_open is allowed).

The loop only sees the `RoundRunner` signature, so that tests can inject measurements.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rocm_perf.backends.base import Backend
from rocm_perf.disk_space import check_space
from rocm_perf.process import last_lines
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.output_tolerance import KeptOutputs, kept_stdout, tolerance_differ
from rocm_perf.tolerance import BIT_IDENTICAL
from rocm_perf.trace.host_clocks import HOST_CPU_TIME_NS, HOST_CYCLES, HOST_INSTRUCTIONS, HOST_PROBE_NS

FAIL_CRASH = "crash"
FAIL_TIMEOUT = "timeout"
FAIL_NO_TRACE = "no trace"


@dataclass
class RoundResult:
    """What one run of a program said about speed and about its outputs."""

    ok: bool
    failure: str = ""  # "", crash, timeout, no trace
    cp_ns: float = 0.0  # critical-path time of the dispatch DAG
    sum_ns: float = 0.0  # SUM(end - start) of all dispatches
    kernel_ns: dict[str, float] = field(default_factory=dict)  # median dispatch duration per kernel
    cp_share: dict[str, float] = field(default_factory=dict)  # critical-path share per kernel
    outputs: dict = field(default_factory=dict)  # returncode, digests, stdout fingerprint, tails

    def to_json(self) -> dict:
        return asdict(self)


METRIC_AUTO = "auto"
METRIC_CRITICAL_PATH = "critical-path"
METRIC_MEDIAN_PATH = "median-path"
METRIC_CPU_PATH = "cpu-path"
METRIC_PROBED_PATH = "probed-path"
METRIC_ADJUSTED_PATH = "adjusted-path"
METRIC_INSTRUCTIONS = "instructions"
METRIC_CYCLES = "cycles"
METRICS = (METRIC_CRITICAL_PATH, METRIC_MEDIAN_PATH, METRIC_CPU_PATH, METRIC_PROBED_PATH, METRIC_ADJUSTED_PATH,
           METRIC_INSTRUCTIONS, METRIC_CYCLES)
# The adjusted path's exponents a round records: 1/ADJUSTED_STEPS apart, strictly between 0 and 1
# (the ends are cpu-path and probed-path). The slope fitted on 10 A/A pairs moves by an sd of 0.02-0.29
# between random halves of 20 (tests/bench/bench_probe_exponent.py's data): a finer grid resolves nothing.
ADJUSTED_STEPS = 10
# The per-dispatch clock (trace/host_clocks.py) each clock-weighted path is taken in; probed-path
# divides its clock by the probe's.
METRIC_CLOCK = {METRIC_CPU_PATH: HOST_CPU_TIME_NS, METRIC_PROBED_PATH: HOST_CPU_TIME_NS,
                METRIC_INSTRUCTIONS: HOST_INSTRUCTIONS, METRIC_CYCLES: HOST_CYCLES}
METRIC_DIVISOR = {METRIC_PROBED_PATH: HOST_PROBE_NS}
# What a metric needs the backend to record, whatever the run's exponent (options.resolve_metric).
METRIC_NEEDS = {m: tuple(c for c in (clock, METRIC_DIVISOR.get(m)) if c) for m, clock in METRIC_CLOCK.items()}
METRIC_NEEDS[METRIC_ADJUSTED_PATH] = METRIC_NEEDS[METRIC_PROBED_PATH]
# The same clock's path without the divisor: what an accept on a divided metric must also pass
# where the candidate moved the divisor (yardstick.py); looked up by metric_kind.
METRIC_UNDIVIDED = {METRIC_PROBED_PATH: METRIC_CPU_PATH, METRIC_ADJUSTED_PATH: METRIC_CPU_PATH}
PROBE_UNIT_NS = 1e6  # a probed-path value: the CPU time the path would take where the probe takes 1 ms
_ADJUSTED_MEANING = "critical path in CPU time, each dispatch times (1 ms / the speed probe timed before it) to the power {}"
# For reports: what a round's value is under each metric.
METRIC_MEANING = {
    METRIC_CRITICAL_PATH: "wall-clock critical-path time",
    METRIC_MEDIAN_PATH: "critical path at each kernel's median dispatch duration",
    METRIC_CPU_PATH: "critical path in CPU time of the threads that ran each dispatch",
    METRIC_PROBED_PATH: "critical path in CPU time, each dispatch divided by the speed probe timed before it (ns per 1 ms of probe)",
    METRIC_ADJUSTED_PATH: _ADJUSTED_MEANING.format("the A/A pairs fitted"),
    METRIC_INSTRUCTIONS: "critical path in retired user-space instructions",
    METRIC_CYCLES: "critical path in user-space core cycles",
}


def adjusted_metric(exponent: float) -> str:
    """The metric of the adjusted path at `exponent`, on the grid the rounds record: cpu-path at
    0, probed-path at 1, else `adjusted-path:0.4`."""
    step = round(min(1.0, max(0.0, exponent)) * ADJUSTED_STEPS)
    if step == 0:
        return METRIC_CPU_PATH
    if step == ADJUSTED_STEPS:
        return METRIC_PROBED_PATH
    return f"{METRIC_ADJUSTED_PATH}:{step / ADJUSTED_STEPS:.1f}"


def metric_kind(metric: str) -> str:
    """The metric's name without its exponent: `adjusted-path` for `adjusted-path:0.4`."""
    return metric.split(":", 1)[0]


def metric_exponent(metric: str) -> str:
    """The exponent a metric's name carries (`0.4` for `adjusted-path:0.4`), "" where none."""
    return metric.split(":", 1)[1] if ":" in metric else ""


def metric_meaning(metric: str) -> str:
    """What a round's value is under `metric`, for reports and the ledger."""
    if metric_exponent(metric):
        return _ADJUSTED_MEANING.format(f"{metric_exponent(metric)} (fitted on the A/A pairs)")
    return METRIC_MEANING.get(metric, metric)


def metric_of(cp_ns: float, outputs: dict, metric: str) -> float | None:
    """A recorded round's value under `metric` (its cp_ns and outputs, as the ledger keeps
    them); None when the round did not record it."""
    if metric == METRIC_CRITICAL_PATH:
        return float(cp_ns)
    if metric == METRIC_MEDIAN_PATH:
        return float(outputs.get("median_path_ns", cp_ns))
    value = (outputs.get("metrics") or {}).get(metric)
    return None if value is None else float(value)


def metric_value(r: RoundResult, metric: str) -> float:
    """The decision value of a round under `metric` (--metric); RocmPerfError when the round does
    not carry it (a clock this machine refused)."""
    value = metric_of(r.cp_ns, r.outputs, metric)
    if value is None or not value > 0:
        why = r.outputs.get("metrics_missing", {}).get(metric_kind(metric), "the profile has no such per-dispatch clock")
        raise RocmPerfError(f"--metric {metric}: a round has no {metric} value ({why}); "
                            f"choose another --metric (`rocm-perf doctor` shows which clocks this machine gives)")
    return value


# (executable, directory for this round's files, a key naming the round) -> RoundResult
RoundRunner = Callable[[Path, Path, str], RoundResult]


def program_argv(executable: Path, program_args: list[str], run_template: str | None) -> list[str]:
    """The command of one round: the program and its arguments, or the harness with {exe} filled in."""
    if run_template:
        return [part.replace("{exe}", str(executable)) for part in shlex.split(run_template)] + list(program_args)
    return [str(executable), *program_args]


COPY_DIGESTS_KEPT = 64  # per round, in the ledger's outputs


def output_fingerprint(returncode: int, digests: list[str], stdout: str, timing_lines: str) -> dict:
    """What must match between baseline and candidate: exit status, digests, stdout minus timings."""
    timing = re.compile(timing_lines)
    kept = [line.rstrip() for line in stdout.splitlines() if not timing.search(line)]
    return {
        "returncode": returncode,
        "digests": len(digests),
        "digests_sha256": hashlib.sha256("\n".join(digests).encode()).hexdigest(),
        # The first copies' own digests ("hash:bytes"), so that a mismatch can name its copy.
        "copy_digests": digests[:COPY_DIGESTS_KEPT],
        "stdout_sha256": hashlib.sha256("\n".join(kept).encode()).hexdigest(),
        "stdout_tail": "\n".join(kept[-3:]),
    }


def outputs_differ(reference: dict, outputs: dict, criterion: str = BIT_IDENTICAL) -> str:
    """Empty when the outputs match the reference, else what differs (one line). `criterion`: a
    GuardSet's `outputs`, bit-identical (copy digests and standard output) or a tolerance (the
    round's element-by-element comparison, output_tolerance.py)."""
    if criterion != BIT_IDENTICAL:
        return tolerance_differ(outputs)
    if outputs.get("digests_sha256") != reference.get("digests_sha256"):
        mine, theirs = outputs.get("copy_digests") or [], reference.get("copy_digests") or []
        differing = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), None)
        if differing is not None and outputs.get("digests") == reference.get("digests"):
            size = str(mine[differing]).rpartition(":")[2]
            return (f"outputs differ: device-to-host copy {differing + 1} of {outputs.get('digests')} ({size} bytes): "
                    "digests differ from the baseline's (bit-identical outputs asked; --tolerance compares within one)")
        return (f"outputs differ: device-to-host copy digests differ ({outputs.get('digests')} copies vs "
                f"{reference.get('digests')} in the baseline)")
    if outputs.get("stdout_sha256") != reference.get("stdout_sha256"):
        return f"standard output differs: {outputs.get('stdout_tail', '')!r} vs {reference.get('stdout_tail', '')!r}"
    return ""


def reduce_traces(traces: list) -> tuple[float, float, dict[str, float], dict[str, float], float]:
    """(critical-path ns, sum ns, median ns per kernel, critical-path share per kernel,
    median-path ns) over the traces of one round (one per profiled process: their critical paths
    add up). The median-path time is the critical path with each of its dispatches at its
    kernel's median duration in this round: one dispatch stretched by a preemption on a loaded
    host then moves it by a median's worth, not by the whole stall."""
    from rocm_perf.analysis.critical_path import analyze_critical_path

    cp = 0.0
    median_path = 0.0
    total = 0.0
    durations: dict[str, list[np.ndarray]] = {}
    cp_by_symbol: dict[str, float] = {}
    for trace in traces:
        if len(trace) == 0:
            continue
        result = analyze_critical_path(trace)
        cp += float(result.critical_path_ns)
        kernel_median = {int(k): float(np.median(trace.duration[trace.kernel == k])) for k in np.unique(trace.kernel)}
        median_path += sum(kernel_median[int(trace.kernel[row])] for row in np.asarray(result.path, dtype=np.int64))
        total += float(trace.runtime_ns)
        for w in result.symbols:
            cp_by_symbol[w.name] = cp_by_symbol.get(w.name, 0.0) + float(w.cp_ns)
        dur = trace.duration
        for k, sym in enumerate(trace.symbols):
            rows = trace.kernel == k
            if rows.any():
                durations.setdefault(sym.display_name, []).append(dur[rows])
    medians = {name: float(np.median(np.concatenate(parts))) for name, parts in durations.items()}
    shares = {name: (ns / cp if cp > 0 else 0.0) for name, ns in cp_by_symbol.items()}
    return cp, total, medians, shares, median_path


def pinning(traces: list) -> str:
    """Where the host runtime pinned each traced process's block workers ("cpu 1"; the clocks record
    of dispatch_clocks.h), "" when none was pinned."""
    found = [a.extra.get("clocks", {}).get("pinning", "") for t in traces for a in t.agents]
    return "; ".join(p for p in found if p and p != "off")


def clock_paths(traces: list) -> tuple[dict[str, float], dict[str, str]]:
    """The clock-weighted paths of one round ({metric: length}, summed over its traces like the
    critical path; the adjusted path at each exponent of its grid), and for each clock metric the
    round cannot give, why not."""
    from rocm_perf.analysis.critical_path import critical_path_lengths

    totals: dict[str, float] = {}
    missing: dict[str, str] = {}
    for trace in traces:
        if len(trace) == 0:
            continue
        columns: dict[str, np.ndarray] = {}
        for metric, clock in METRIC_CLOCK.items():
            if metric in missing:
                continue
            column, why = _clock_weights(trace, clock, METRIC_DIVISOR.get(metric))
            if column is None:
                missing[metric] = why
            else:
                columns[metric] = column
        if METRIC_CPU_PATH in columns and METRIC_PROBED_PATH in columns:
            # cpu x (1 ms / probe)^b = cpu^(1 - b) x probed^b
            log_cpu, log_probed = np.log(np.maximum(columns[METRIC_CPU_PATH], 1.0)), np.log(np.maximum(columns[METRIC_PROBED_PATH], 1.0))
            for step in range(1, ADJUSTED_STEPS):
                b = step / ADJUSTED_STEPS
                columns[adjusted_metric(b)] = np.exp((1.0 - b) * log_cpu + b * log_probed)
        elif METRIC_PROBED_PATH in missing:
            missing[METRIC_ADJUSTED_PATH] = missing[METRIC_PROBED_PATH]
        for metric, length in zip(columns, critical_path_lengths(trace, list(columns.values()))):
            totals[metric] = totals.get(metric, 0.0) + length
    paths = {m: v for m, v in totals.items() if metric_kind(m) not in missing and v > 0}
    return paths, missing


def _clock_weights(trace, clock: str, divisor: str | None) -> tuple[np.ndarray | None, str]:
    """(each dispatch's weight, "") for a clock-weighted path: the clock's column, or its ratio to
    the divisor's in PROBE_UNIT_NS; (None, why) when some dispatch lacks either."""
    columns: dict[str, np.ndarray] = {}
    for name in (clock,) if divisor is None else (clock, divisor):
        if name not in trace.counters:
            return None, f"no {name} in the profile"
        column = columns[name] = np.asarray(trace.counters[name], dtype=np.float64)
        usable = np.isfinite(column)
        if name == divisor:  # a reading is a positive time; the runtime drops one taken beside another launch
            usable &= column > 0
        if not usable.all():
            why = " (the speed probe is not kept beside another launch: streams overlap)" if name == divisor else ""
            return None, f"{int((~usable).sum())} dispatch(es) without {name}{why}"
    if divisor is None:
        return columns[clock], ""
    return columns[clock] / columns[divisor] * PROBE_UNIT_NS, ""


def keep_baseline_profiles(key: str) -> bool:
    """Whether a round's profile databases stay in the run directory: the baseline's reference
    round (the report draws its timeline and critical path) and the final check's rounds (the
    report's before/after comparison). Keys are `<trial>-<phase>-<round>-<role>`, trial 0 the
    baseline. Every other round's profile is reduced to its ledger row and deleted."""
    return key.startswith(("0-reference-", "0-final-"))


class ProfiledRounds:
    """The real RoundRunner: backend.profile -> load_trace -> critical paths and medians.

    `warmup`: untimed runs of each program before its first timed round: a program's first run
    after its build is much slower in wall clock than the runs after it (tests/bench/bench_noise.py),
    and the first pair must not pay for that."""

    def __init__(self, backend: Backend, *, program_args: list[str], run_template: str | None, timeout_s: float,
                 cwd: Path, timing_lines: str, keep_profiles: Callable[[str], bool] = keep_baseline_profiles,
                 project_run: str | None = None, env: dict[str, str] | None = None, warmup: int = 1,
                 outputs: KeptOutputs | None = None, stderr_tail: bool = False):
        """`project_run`: a project's run command; the "executable" of a round is then the built
        tree, in which the command runs (through the shell, with `env`). `warmup`: untimed runs of
        each executable before its first timed round. `outputs`: under --tolerance, what keeps the
        reference round's outputs and compares every other round's with them (its record goes to
        the round's outputs as `tolerance`). `stderr_tail`: keep the last lines of standard error of
        a round that succeeded too (a replay harness says there what its tolerance let through)."""
        self.stderr_tail = stderr_tail
        self.backend = backend
        self.project_run = project_run
        self.env = env
        self.program_args = program_args
        self.run_template = run_template
        self.timeout_s = timeout_s
        self.cwd = cwd
        self.timing_lines = timing_lines
        self.keep_profiles = keep_profiles
        self.warmup = warmup
        self.warmed: set[str] = set()
        self.outputs = outputs

    def _argv(self, executable: Path) -> tuple[list[str], Path]:
        """The command of one run and where it runs: a project's run command in its built tree, or the program."""
        if self.project_run is not None:
            return ["/bin/sh", "-c", self.project_run], Path(executable)
        return program_argv(executable, self.program_args, self.run_template), self.cwd

    def _warm_up(self, executable: Path, round_dir: Path) -> RoundResult | None:
        """Run `executable` untimed `warmup` times, once per runner. The timed round that follows
        is what counts, so a warm-up's outputs are not looked at; only a hang ends the round there
        (waiting out the timeout twice would say nothing new)."""
        key = str(Path(executable).resolve())
        if key in self.warmed:
            return None
        self.warmed.add(key)
        for i in range(self.warmup):
            scratch = round_dir.parent / f".warmup-{round_dir.name}-{i}"
            argv, cwd = self._argv(executable)
            try:
                res = self.backend.profile(argv, scratch, timeout=self.timeout_s, cwd=cwd, env=self.env)
            except RocmPerfError:
                continue  # the timed round meets and records the same failure
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            if res.timed_out:
                self.warmed.discard(key)
                tail = last_lines(res.stderr or res.stdout, 5)
                return RoundResult(False, FAIL_TIMEOUT, outputs={"returncode": res.returncode,
                                                                 "stderr_tail": f"in its untimed warm-up run: {tail}".strip()})
        return None

    def __call__(self, executable: Path, round_dir: Path, key: str) -> RoundResult:
        if round_dir.exists():
            shutil.rmtree(round_dir)  # a half-done round of a killed run
        hung = self._warm_up(executable, round_dir)
        if hung is not None:
            return hung
        return self._timed(self.backend, self.timeout_s, executable, round_dir, key)

    def together(self, rounds: list[tuple[Path, Path, str]]) -> list[RoundResult]:
        """The rounds (executable, round_dir, key) of one pair run at the same time, their kernels on
        one CPU (backend.for_pairs_together), each timed in its own threads' CPU time: both meet the
        same speed of that core, which a pair run one after the other does not (tests/bench/
        bench_noise.py). Warm-ups first, one at a time, so that the timed runs start
        together; each run may take len(rounds) times the timeout, as it shares its CPU."""
        backend = self.backend.for_pairs_together()
        for executable, round_dir, _ in rounds:
            if round_dir.exists():
                shutil.rmtree(round_dir)
        hung = {i: self._warm_up(exe, round_dir) for i, (exe, round_dir, _) in enumerate(rounds)}
        timeout = self.timeout_s * len(rounds)
        with ThreadPoolExecutor(max_workers=len(rounds)) as pool:
            running = {i: pool.submit(self._timed, backend, timeout, *r) for i, r in enumerate(rounds) if hung[i] is None}
            return [hung[i] if hung[i] is not None else running[i].result() for i in range(len(rounds))]

    def _timed(self, backend: Backend, timeout_s: float, executable: Path, round_dir: Path, key: str) -> RoundResult:
        """One timed run of `executable`, reduced to its paths (the round proper, after any warm-up)."""
        from rocm_perf.trace.load import load_trace

        round_dir.mkdir(parents=True)
        argv, cwd = self._argv(executable)
        try:
            res = backend.profile(argv, round_dir, timeout=timeout_s, cwd=cwd, env=self.env)
        except RocmPerfError as e:  # rocprofv3 gave up (non-zero exit, no database): the program crashed
            check_space(round_dir, str(e))  # ... unless the disk is full: that is no verdict on the program
            return RoundResult(False, FAIL_CRASH, outputs={"returncode": None, "stderr_tail": str(e)})
        tail = last_lines(res.stderr or res.stdout, 5)
        if res.timed_out:
            return RoundResult(False, FAIL_TIMEOUT, outputs={"returncode": res.returncode, "stderr_tail": tail})
        try:
            traces = [load_trace(db) for db in res.databases]
        except RocmPerfError as e:  # a crashed candidate can leave a torn database behind
            check_space(round_dir, f"{res.stderr}\n{e}")
            return RoundResult(False, FAIL_CRASH if res.returncode else FAIL_NO_TRACE,
                               outputs={"returncode": res.returncode, "stderr_tail": f"{tail}\n{e}".strip()})
        digests = [d for t in traces for d in t.digests]
        outputs = output_fingerprint(res.returncode, digests, res.stdout, self.timing_lines)
        outputs["processes"] = len(res.databases)  # programs that used HIP under this round's command
        if self.outputs is not None:
            try:
                copies = backend.take_kept_copies(round_dir)
                outputs["tolerance"] = self.outputs(key, copies, kept_stdout(res.stdout, self.timing_lines), digests)
            except RocmPerfError as e:  # a torn copies file: the round's outputs cannot be vouched for
                outputs["tolerance"] = {"within": False, "first": str(e), "criterion": self.outputs.tolerance.spec}
        pinned = pinning(traces)
        if pinned:
            outputs["pinning"] = pinned  # where its block workers ran: a pair run together shares one CPU
        if res.returncode != 0 or self.stderr_tail:
            outputs["stderr_tail"] = tail
        if res.returncode != 0:
            check_space(round_dir, res.stderr)
            return RoundResult(False, FAIL_CRASH, outputs=outputs)
        cp, total, medians, shares, median_path = reduce_traces(traces)
        outputs["median_path_ns"] = median_path
        outputs["metrics"], missing = clock_paths(traces)
        if missing:
            outputs["metrics_missing"] = missing
        if not self.keep_profiles(key):
            shutil.rmtree(round_dir)
        if cp <= 0:
            check_space(round_dir)
            return RoundResult(False, FAIL_NO_TRACE, outputs=outputs)
        return RoundResult(True, "", cp, total, medians, shares, outputs)
