"""The options of `rocm-perf optimize`, their defaults, and the record of them the ledger keeps."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.reproducer import DEFAULT_PASSES, is_reproducer
from rocm_perf.optimize.close_calls import SETTLE_MAX_PAIRS
from rocm_perf.optimize.measure import (METRIC_ADJUSTED_PATH, METRIC_AUTO, METRIC_CPU_PATH, METRIC_CRITICAL_PATH,
                                        METRIC_NEEDS, METRIC_PROBED_PATH, METRICS, metric_meaning)
from rocm_perf.trace.host_clocks import HOST_CPU_TIME_NS, HOST_PROBE_NS

# How the two builds of a pair run (--pairing; the ledger's metric record keeps the run's as `pairs`).
PAIRING_AUTO = "auto"
PAIRING_TOGETHER = "together"  # at the same time, their kernels on one CPU (backend.pairs_together_refusal)
PAIRING_APART = "apart"  # one after the other, in alternating order (loop.pair_order)
PAIRINGS = (PAIRING_AUTO, PAIRING_TOGETHER, PAIRING_APART)
PAIRING_MEANING = {
    PAIRING_TOGETHER: "the two builds of a pair run at the same time, their kernels sharing one CPU, each timed in its "
                      "own threads' CPU time",
    PAIRING_APART: "the two builds of a pair run one after the other, in alternating order",
}

# Standard-output lines that carry timings, not results: left out of the output comparison.
DEFAULT_TIMING_LINES = r"(?i)(\belapsed\b|\btime\b|\btimes\b|\btook\b|\bms\b|\bus\b|\bsec(onds)?\b|GB/s|GFLOP|\bbandwidth\b)"


@dataclass
class OptimizeOptions:
    """Everything that shapes a run's results (recorded in the ledger) plus how it is shown."""

    source: Path  # the .cu file, or with `project` the project's root directory
    program_args: list[str] = field(default_factory=list)
    project: bool = False  # a source tree with its own build (`--project DIR --build CMD --run CMD`)
    build: str | None = None  # project: the build command, run in a copy of the tree
    sources: list[str] = field(default_factory=list)  # project: the sources to rewrite (default: every kernel source)
    max_files: int = 5000  # project: refuse trees with more files than this
    replay: bool = False  # a reproducer folder (`rocm-perf isolate`): its kernel file, measured on the replay
    replay_passes: int = DEFAULT_PASSES  # replay: passes of the captured dispatch per round
    with_paths: list[str] = field(default_factory=list)  # project: outside paths the build reads (--with), relative to the root
    backend: str = "auto"
    warp_size: int | None = None  # host backend: lanes per emulated wavefront (None: 64)
    run: str | None = None  # a harness command ({exe}: the built program); project: the command that runs it
    kernels: list[str] = field(default_factory=list)  # restrict to these kernels (substring match)
    rules: list[str] = field(default_factory=list)  # restrict to these rules
    rules_dir: Path | None = None
    factors: list[int] = field(default_factory=list)  # restrict to these factors
    max_trials: int = 24
    time_budget_s: float = 3600.0
    min_gain: float = 0.02
    confidence: float = 0.95
    rounds: int = 5  # pairs before the first look
    max_rounds: int = 100  # the race's rungs double from `rounds` (5, 10, 20, 40, 80, 100); a confirmation looks
    # between them too, on to confirmation.CONFIRMATION_REACH times this (acceptance.midpoint_looks: 5, 10, 15, 20, 30, 40, 60, 80, 120, 160, 200)
    round_step: int = 0  # 0: those looks; n: a confirmation looks every n pairs
    aa_rounds: int = 10
    settle_close_calls: int = SETTLE_MAX_PAIRS  # re-measure a loop's close call that needs at most this many pairs (0: never)
    pairing: str = PAIRING_AUTO  # auto | together | apart: how the two builds of a pair run (resolve_pairing)
    metric: str = METRIC_AUTO  # auto | critical-path | median-path | cpu-path | probed-path | instructions | cycles (measure.py)
    warmup: int = 1  # untimed runs of each program before its first timed round
    arch: str = "gfx90a"
    compile_check: str = "auto"  # auto | on | off
    allow_lower_occupancy: bool = False
    counters: str = "auto"  # auto (a counter round of the baseline where the backend has counters) | off
    analysis: Path | None = None  # a profile with counters or an analysis.json of the baseline
    jobs: int = 2
    cflags: list[str] = field(default_factory=list)
    timeout_s: float = 300.0  # per run of the program: longer is a hang
    build_timeout_s: float = 900.0
    timing_lines: str = DEFAULT_TIMING_LINES
    # Where candidates come from (optimize/proposers/): these proposers only ([]: every one that has candidates).
    proposers: list[str] = field(default_factory=list)
    tune: dict[str, list[int]] = field(default_factory=dict)  # --tune NAME=V1,V2: tunable constants and values
    patches: list[str] = field(default_factory=list)  # `try`: its patches and variants, as name@sha256 (texts: the ledger)
    tolerance: str = ""  # --tolerance rtol=R,atol=A (rocm_perf/tolerance.py, Tolerance.spec); "": outputs bit-identical
    tolerance_type: str = "float32"  # the element type of a copy whose destination's type is not known
    allow_host_changes: bool = False  # a patch may change host code (correctness then rests on the outputs alone)
    out: Path = Path("runs")
    resume: str | None = None
    new: bool = False
    quiet: bool = False
    as_json: bool = False

    def recorded(self) -> dict:
        """The options that decide a run's results, as the ledger stores them."""
        d = asdict(self)
        for display_only in ("out", "resume", "new", "quiet", "as_json", "jobs"):
            d.pop(display_only)
        d["source"] = str(Path(self.source).resolve())
        d["rules_dir"] = str(self.rules_dir) if self.rules_dir else None
        d["analysis"] = str(self.analysis) if self.analysis else None
        if not self.project:  # single-file runs keep the fingerprint they had before projects existed
            for name in ("project", "build", "sources", "max_files"):
                d.pop(name)
        if not self.replay:  # and those from before reproducers
            for name in ("replay", "replay_passes"):
                d.pop(name)
        if not self.with_paths:
            d.pop("with_paths")  # runs from before --with keep their fingerprint
        return d

    def fingerprint(self) -> str:
        """Same source path and same result-deciding options -> same fingerprint (to offer a resume)."""
        d = self.recorded()
        d.pop("time_budget_s")  # a longer budget on the same run is still the same run
        if d.get("warp_size") is None:
            d.pop("warp_size")  # runs from before --warp-size existed keep their fingerprint
        if d.get("settle_close_calls") == SETTLE_MAX_PAIRS:
            d.pop("settle_close_calls")  # and those from before --settle-close-calls
        if d.get("pairing") == PAIRING_AUTO:
            d.pop("pairing")  # and those from before --pairing
        for name, default in (("proposers", []), ("tune", {}), ("patches", []), ("tolerance", ""),
                              ("tolerance_type", "float32"), ("allow_host_changes", False)):
            if d.get(name) == default:
                d.pop(name, None)  # and those from before issue 54's candidates
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def parse_fraction(text: str, what: str) -> float:
    """'2%', '2' (percent when > 1) or '0.02' -> 0.02."""
    t = str(text).strip()
    try:
        value = float(t.rstrip("%"))
    except ValueError as e:
        raise RocmPerfError(f"{what} {text!r}: expected a number like 2% or 0.02") from e
    if t.endswith("%") or value >= 1:
        value /= 100.0
    if not 0 < value < 1:
        raise RocmPerfError(f"{what} {text!r}: must lie strictly between 0 and 100 %")
    return value


def parse_duration(text: str) -> float:
    """'90', '90s', '30m', '2h' -> seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", str(text))
    if not m:
        raise RocmPerfError(f"--time-budget {text!r}: expected seconds or a duration like 30m or 2h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def _csv(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def _with_paths(project: str | None, paths: list[str]) -> list[str]:
    """--with arguments as paths relative to the project root (checked: outside it, existing)."""
    if not project or not paths:
        return []
    from rocm_perf.optimize.outside import with_paths_relative

    return with_paths_relative(Path(project), paths)


def add_optimize_arguments(p: argparse.ArgumentParser, *, command: str = "optimize") -> None:
    """The options of `optimize`, and of `try` (command="try"): the same but for the unroll rules' own."""
    rules = command == "optimize"
    p.add_argument("source", nargs="?", help=f"the .cu file to {'optimize' if rules else 'try the changes on'} "
                   "(never written; see `rocm-perf apply`), or a reproducer folder of `rocm-perf isolate` (its "
                   "kernel, measured on the replay of its dispatch)")
    p.add_argument("program_args", nargs="*", help="arguments for the program (after --)")
    p.add_argument("--run", metavar="CMD", help="harness command when the program is not the source's own main ({exe} is "
                   "the built program); with --project, the shell command that runs the built program, in the built tree")
    p.add_argument("--project", metavar="DIR", help="optimize a source tree with its own build instead of one .cu file: "
                   "the tree is copied into the run (.gitignore respected), never written")
    p.add_argument("--build", metavar="CMD", help="with --project: the shell command that builds the tree (make, "
                   "'cmake -B build && cmake --build build', a script), run in a copy of it")
    p.add_argument("--source", dest="sources", action="append", default=[], metavar="REL",
                   help="with --project: a source to rewrite, relative to DIR (repeatable; default: every .cu/.hip "
                   "that defines a kernel)")
    p.add_argument("--max-files", type=int, default=5000, help="with --project: refuse trees with more files than "
                   "this (each candidate is a copy of the tree; default: 5000)")
    p.add_argument("--replay-passes", type=int, default=DEFAULT_PASSES, metavar="N",
                   help=f"a reproducer: passes of the captured dispatch per round, its memory restored between them "
                   f"(default: {DEFAULT_PASSES})")
    p.add_argument("--with", dest="with_paths", action="append", default=[], metavar="PATH",
                   help="with --project: a file or folder outside DIR that the build reads (repeatable); copied "
                   "read-only beside every copy at the same relative path (what a failed baseline build names is "
                   "found by itself)")
    if rules:
        p.add_argument("--kernels", metavar="K1,K2", help="only these kernels (default: the critical path's top kernels)")
        p.add_argument("--rules", metavar="R1,R2", help="only these rewrite rules (default: all that apply)")
        p.add_argument("--rules-dir", metavar="DIR", help="rewrite rules from this directory (default: the shipped rewrites/)")
        p.add_argument("--factors", metavar="F1,F2", help="only these unroll factors (default: each rule's own)")
    p.add_argument("--max-trials", type=int, default=24, help="candidates to try at most (default: 24)")
    p.add_argument("--time-budget", default="1h", help="stop proposing after this long, e.g. 900, 30m, 2h (default: 1h)")
    p.add_argument("--min-gain", default="2%", help="smallest speedup worth keeping (default: 2%%; raised to the A/A noise floor)")
    p.add_argument("--confidence", default="95%", help="confidence of an accept across the whole run (default: 95%%)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved pairs before the first decision (default: 5)")
    p.add_argument("--max-rounds", type=int, default=100,
                   help="pairs before a candidate is called inconclusive (default: 100; the race's rungs at --rounds, twice "
                   "that, four times ..., and this; a confirmation also looks midway between them, and goes on to twice "
                   "this while the time budget lasts: a clear win or a null settles at the early looks, a gain near "
                   "--min-gain gets the pairs it needs)")
    p.add_argument("--settle-close-calls", type=int, default=SETTLE_MAX_PAIRS, metavar="PAIRS",
                   help="after a loop's race in which no candidate passed screening, re-measure its close call (a "
                   "candidate stopped unproven that read faster than --min-gain) on fresh pairs, as a winner is, when "
                   f"a decision would take at most PAIRS pairs if its ratio held (default: {SETTLE_MAX_PAIRS}; 0: never)")
    p.add_argument("--metric", choices=[METRIC_AUTO, *METRICS], default=METRIC_AUTO,
                   help="decision value of a round, a path through the dispatch DAG: critical-path (wall clock), "
                   "median-path (each dispatch at its kernel's median duration), cpu-path (CPU time of the threads that "
                   "ran each dispatch: other processes on the machine do not stretch it), probed-path (that CPU time "
                   "divided by a speed probe's timed before each dispatch: a core whose speed changes for seconds at a "
                   "time, as on some virtual machines, does not move it), adjusted-path (that CPU time times "
                   "(1 ms / the probe) to the power, 0 to 1, that the run's A/A pairs fit: as much of the probe as the "
                   "program's kernels follow), instructions or cycles "
                   "(user space, where perf_event_open is allowed); host backend only for the last five. "
                   "Default auto: cpu-path on the host backend when its pairs run together (--pairing), adjusted-path "
                   "there when they run apart and the probe is recorded; critical-path on the rocm backend")
    p.add_argument("--pairing", choices=PAIRINGS, default=PAIRING_AUTO,
                   help="how the two builds of a measured pair run: together (at the same time, their kernels pinned to "
                   "one CPU, so that both meet the same speed of it; each is timed in its own threads' CPU time) or "
                   "apart (one after the other). Default auto: together on the host backend, where it cuts the paired "
                   "spread of a memory-bound kernel several-fold (tests/bench/bench_noise.py), apart on the "
                   "rocm backend (a GPU shared by two programs times neither alone)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs of each program before its first timed round (default: 1)")
    p.add_argument("--aa-rounds", type=int, default=10, help="pairs of the A/A noise-floor measurement (default: 10)")
    p.add_argument("--arch", default="gfx90a", help="AMD target of the compile check (default: gfx90a)")
    p.add_argument("--compile-check", choices=["auto", "on", "off"], default="auto", help="AMD resource check of every candidate (default: auto = where hipcc is installed)")
    p.add_argument("--allow-lower-occupancy", action="store_true", help="keep candidates whose occupancy is below the baseline's")
    p.add_argument("--counters", choices=["auto", "off"], default="auto", help="auto: a hardware-counter round of the "
                   "baseline where the backend has counters (rocm), so kernels are ranked by critical-path share x "
                   "roofline headroom and kernels at their memory roof get no unroll candidates (default: auto)")
    p.add_argument("--analysis", metavar="PROFILE", help="counters of the baseline you collected: a profile `analyze` "
                   "reads, or its analysis.json (instead of a counter round)")
    p.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1), help="parallel builds (default: cores, at most 4)")
    p.add_argument("--cflags", default="", help="extra compiler flags, e.g. '-I include -DN=1024'")
    p.add_argument("--timeout", type=float, default=300, help="seconds per run of the program before it counts as a hang (default: 300)")
    p.add_argument("--build-timeout", type=float, default=900, help="seconds per build (default: 900)")
    p.add_argument("--timing-lines", default=DEFAULT_TIMING_LINES, metavar="REGEX", help="stdout lines matching this are timings, not results (left out of the output comparison)")
    add_candidate_arguments(p)
    p.add_argument("--out", default="runs", help="runs root (default: runs/)")
    p.add_argument("--resume", metavar="RUN", help="continue an interrupted run (directory or name under --out)")
    p.add_argument("--new", action="store_true", help="start a new run even when an unfinished one for this source and options exists")
    p.add_argument("--quiet", action="store_true", help="no progress display; print only the final line")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the terminal summary")


def add_candidate_arguments(p: argparse.ArgumentParser) -> None:
    """Where candidates come from and how their outputs are judged (shared by optimize and try)."""
    p.add_argument("--tune", action="append", default=[], metavar="NAME=V1,V2",
                   help="a tunable constant and the values to try (repeatable): a #define, a namespace-scope "
                   "constexpr/const integer, or a kernel template parameter at its launch sites (`kernel<NAME>`); "
                   "a source may declare one with `// rocm-perf: tune NAME V1 V2` on the line before it")
    p.add_argument("--proposers", metavar="P1,P2", help="where candidates come from: rules, tunables, patch "
                   "(default: every one that has candidates)")
    p.add_argument("--tolerance", metavar="rtol=R,atol=A", help="compare a candidate's outputs element by element "
                   "within this tolerance instead of bit for bit (device-to-host copies on the host backend, numbers "
                   "in the standard output on every backend): for floating-point rewrites that change the last bits")
    p.add_argument("--tolerance-type", default="float32", metavar="TYPE",
                   help="with --tolerance: the element type of a copy whose destination's type is not known "
                   "(a void* destination); float32, float64, float16, bfloat16 or an integer type (default: float32)")
    p.add_argument("--allow-host-changes", action="store_true",
                   help="let a patch change host code (the harness and its self-check): its verdict then says that "
                   "correctness rests on the outputs alone")


def candidate_options(args: argparse.Namespace) -> dict:
    """The candidate and outputs options of the command line, validated (RocmPerfError on nonsense)."""
    from rocm_perf.tolerance import parse_tolerance
    from rocm_perf.optimize.proposers import check_proposer_names
    from rocm_perf.source.tunables import parse_tune_option

    tolerance = getattr(args, "tolerance", None)
    element = getattr(args, "tolerance_type", "float32") or "float32"
    spec = parse_tolerance(tolerance, element).spec if tolerance else ""
    if not tolerance and element != "float32":
        raise RocmPerfError("--tolerance-type goes with --tolerance rtol=R,atol=A")
    if tolerance is None:
        parse_tolerance("rtol=1", element)  # the type is checked all the same
    return {"tune": parse_tune_option(list(getattr(args, "tune", None) or [])),
            "proposers": check_proposer_names(_csv(getattr(args, "proposers", None))),
            "tolerance": spec, "tolerance_type": element,
            "allow_host_changes": bool(getattr(args, "allow_host_changes", False))}


def options_from_args(args: argparse.Namespace) -> OptimizeOptions:
    """Validate the parsed command line into OptimizeOptions (RocmPerfError on nonsense)."""
    project = getattr(args, "project", None)
    cmd = getattr(args, "command", None) or "optimize"
    if project:
        if args.source:
            raise RocmPerfError(f"{cmd} --project: name the sources to rewrite with --source, not as {args.source!r}")
        if getattr(args, "program_args", None):
            raise RocmPerfError(f"{cmd} --project: put the program's arguments in --run")
        if not args.build or not args.run:
            raise RocmPerfError(f"{cmd} --project needs --build CMD (how the tree builds) and --run CMD (how the "
                                "built program runs, from the top of the tree)")
        if args.max_files < 1:
            raise RocmPerfError(f"--max-files {args.max_files}: must be at least 1")
    elif getattr(args, "build", None) or getattr(args, "sources", None) or getattr(args, "with_paths", None):
        raise RocmPerfError(f"{cmd}: --build, --source and --with go with --project DIR")
    replay = bool(args.source) and not project and is_reproducer(Path(args.source))
    if replay and (getattr(args, "program_args", None) or args.run):
        raise RocmPerfError(f"{args.source}: a reproducer replays its captured dispatch: it takes no program arguments "
                            "or --run")
    if args.source and not project and not replay and Path(args.source).is_dir():
        raise RocmPerfError(f"{args.source}: a directory, but not a reproducer (no manifest.json of `rocm-perf isolate`); "
                            f"{cmd} takes a .cu source, a reproducer, or --project DIR")
    if getattr(args, "replay_passes", DEFAULT_PASSES) < 1:
        raise RocmPerfError(f"--replay-passes {args.replay_passes}: must be at least 1")
    if not args.source and not project and not args.resume:
        raise RocmPerfError(f"{cmd}: name the .cu source, or a --project (or --resume RUN)")
    factors = []
    for f in _csv(getattr(args, "factors", None)):
        if not f.isdigit() or int(f) < 1:
            raise RocmPerfError(f"--factors {args.factors!r}: expected positive integers like 2,4,8")
        factors.append(int(f))
    for name, value, low in (("--max-trials", args.max_trials, 0), ("--rounds", args.rounds, 2), ("--aa-rounds", args.aa_rounds, 2),
                             ("--jobs", args.jobs, 1), ("--warmup", getattr(args, "warmup", 1), 0),
                             ("--settle-close-calls", getattr(args, "settle_close_calls", SETTLE_MAX_PAIRS), 0)):
        if value < low:
            raise RocmPerfError(f"{name} {value}: must be at least {low}")
    if args.max_rounds < args.rounds:
        raise RocmPerfError(f"--max-rounds {args.max_rounds} is below --rounds {args.rounds}")
    if args.timeout <= 0 or args.build_timeout <= 0:
        raise RocmPerfError("--timeout and --build-timeout must be positive")
    try:
        re.compile(args.timing_lines)
    except re.error as e:
        raise RocmPerfError(f"--timing-lines {args.timing_lines!r}: not a regular expression ({e})") from e
    if args.run and not project and "{exe}" not in args.run:
        raise RocmPerfError(f"--run {args.run!r}: put {{exe}} where the built program goes")
    return OptimizeOptions(
        source=Path(project or args.source) if (project or args.source) else Path(),
        program_args=list(getattr(args, "program_args", None) or []),
        project=bool(project),
        build=getattr(args, "build", None),
        sources=list(getattr(args, "sources", None) or []),
        max_files=getattr(args, "max_files", 5000),
        replay=replay,
        replay_passes=getattr(args, "replay_passes", DEFAULT_PASSES),
        with_paths=_with_paths(project, getattr(args, "with_paths", None) or []),
        backend=getattr(args, "backend", "auto"),
        warp_size=getattr(args, "warp_size", None),
        run=args.run,
        kernels=_csv(getattr(args, "kernels", None)),
        rules=_csv(getattr(args, "rules", None)),
        rules_dir=Path(args.rules_dir) if getattr(args, "rules_dir", None) else None,
        factors=factors,
        max_trials=args.max_trials,
        time_budget_s=parse_duration(args.time_budget),
        min_gain=parse_fraction(args.min_gain, "--min-gain"),
        confidence=parse_fraction(args.confidence, "--confidence"),
        rounds=args.rounds,
        max_rounds=args.max_rounds,
        aa_rounds=args.aa_rounds,
        settle_close_calls=getattr(args, "settle_close_calls", SETTLE_MAX_PAIRS),
        pairing=getattr(args, "pairing", PAIRING_AUTO),
        metric=args.metric,
        warmup=getattr(args, "warmup", 1),
        arch=args.arch,
        compile_check=args.compile_check,
        allow_lower_occupancy=args.allow_lower_occupancy,
        counters=getattr(args, "counters", "auto"),
        analysis=Path(args.analysis) if getattr(args, "analysis", None) else None,
        jobs=args.jobs,
        cflags=args.cflags.split() if args.cflags else [],
        timeout_s=args.timeout,
        build_timeout_s=args.build_timeout,
        timing_lines=args.timing_lines,
        **candidate_options(args),
        out=Path(args.out),
        resume=args.resume,
        new=args.new,
        quiet=args.quiet,
        as_json=args.json,
    )


def resolve_metric(requested: str, backend) -> tuple[str, str]:
    """(the decision metric, how it was chosen) for `--metric requested` on `backend`.

    auto: cpu-path where the backend records each dispatch's CPU time (the host backend), else
    critical-path; where it records the speed probe too, the A/A pairs fit adjusted-path's exponent
    and the run decides on that (fits_exponent), as under --metric adjusted-path, which is cpu-path
    until then. A clock metric the backend or this machine cannot give is a RocmPerfError."""
    clocks = backend.dispatch_clocks() if hasattr(backend, "dispatch_clocks") else {}
    name = getattr(backend, "name", "this")
    if requested == METRIC_AUTO:
        if clocks.get(HOST_CPU_TIME_NS) == "":
            return METRIC_CPU_PATH, f"the {name} backend's default (--metric auto)"
        return METRIC_CRITICAL_PATH, f"the {name} backend's default (--metric auto)"
    if requested not in METRICS:
        raise RocmPerfError(f"--metric {requested!r}: choose one of {', '.join((METRIC_AUTO, *METRICS))}")
    for clock in METRIC_NEEDS.get(requested, ()):
        why = clocks.get(clock, f"the {name} backend records no per-dispatch {clock} (the host backend does)")
        if why:
            raise RocmPerfError(f"--metric {requested}: not available with the {name} backend here: {why}")
    if requested == METRIC_ADJUSTED_PATH:
        return METRIC_CPU_PATH, f"--metric {requested}"
    return requested, f"--metric {requested}"


def fits_exponent(requested: str, backend) -> bool:
    """Whether the run's A/A pairs fit adjusted-path's exponent and the run decides on it: under
    --metric adjusted-path, and under auto where the backend records the CPU time and the speed
    probe (probe_exponent.py)."""
    return requested == METRIC_ADJUSTED_PATH or (requested == METRIC_AUTO and _records_probe(backend))


def _records_probe(backend) -> bool:
    """Whether `backend` records each dispatch's CPU time and the speed probe's reading (the host backend)."""
    clocks = backend.dispatch_clocks() if hasattr(backend, "dispatch_clocks") else {}
    return clocks.get(HOST_CPU_TIME_NS) == "" and clocks.get(HOST_PROBE_NS) == ""


def auto_alternatives(requested: str, backend) -> list[str]:
    """The metrics the run may still turn to for `--metric requested`, or [] when the choice is made
    already: under auto on a backend that records both the CPU time and the speed probe, [cpu-path,
    probed-path], the ends of adjusted-path's exponent. The A/A pairs fit the exponent and put its
    metric first; the race's first rung may still take one of these when its pairs and the A/A's
    find it clearly steadier (stages/screen.py _recheck_metric, acceptance.steadier_metric)."""
    if requested == METRIC_AUTO and _records_probe(backend):
        return [METRIC_CPU_PATH, METRIC_PROBED_PATH]
    return []


def resolve_pairing(requested: str, backend) -> tuple[str, str]:
    """(how the builds of a pair run, how that was chosen) for `--pairing requested` on `backend`:
    auto is together where the backend can time two builds run at the same time
    (pairs_together_refusal: the host backend, where block workers may be pinned), else apart.
    together elsewhere is a RocmPerfError."""
    name = getattr(backend, "name", "this")
    refusal = backend.pairs_together_refusal()
    if requested == PAIRING_AUTO:
        if refusal:
            return PAIRING_APART, f"the {name} backend's default (--pairing auto): not together, as {refusal}"
        return PAIRING_TOGETHER, f"the {name} backend's default (--pairing auto)"
    if requested not in PAIRINGS:
        raise RocmPerfError(f"--pairing {requested!r}: choose one of {', '.join(PAIRINGS)}")
    if requested == PAIRING_TOGETHER and refusal:
        raise RocmPerfError(f"--pairing together: the {name} backend cannot time two programs run at the same time "
                            f"here: {refusal}; use --pairing apart")
    return requested, f"--pairing {requested}"


def run_pairing(ledger) -> str:
    """How a run's pairs run: as its metric record says; a run from before --pairing ran them apart."""
    return (ledger.get("metric") or {}).get("pairs", PAIRING_APART)


def settle_metric(ledger, options: OptimizeOptions, backend) -> str:
    """The run's decision metric: the one its ledger recorded (a resumed run keeps deciding as it
    began), else `options.metric` resolved for `backend` and recorded under `metric`, with the
    alternatives the A/A noise floor chooses among (`steadier_of`) where there are any."""
    recorded = ledger.get("metric")
    if recorded:
        return recorded["name"]
    pairing, pairing_how = resolve_pairing(options.pairing, backend)
    metric, how = resolve_metric(options.metric, backend)
    record = {"name": metric, "how": how, "meaning": metric_meaning(metric)}
    # Pairs run together meet one speed of their CPU: what the speed probe corrects between two runs
    # at different times is gone, and the probe, read on a core another program shares, only adds
    # noise (stencil1d's A/A pairs: cpu-path spread 0.7-0.9 %, probed-path 2.0-2.4 %).
    probe_moot = options.metric == METRIC_AUTO and pairing == PAIRING_TOGETHER and metric == METRIC_CPU_PATH
    alternatives = [] if probe_moot else auto_alternatives(options.metric, backend)
    if alternatives:
        record["steadier_of"] = alternatives
    if fits_exponent(options.metric, backend) and not probe_moot:
        record["fit_exponent"] = True
        record["how"] = how + (": adjusted-path at the exponent its A/A pairs fit (cpu-path at 0, probed-path at 1)"
                               + (", or an end of it where the race's first pairs find that clearly steadier" if alternatives else ""))
    if probe_moot:
        record["how"] = how + ": the builds of a pair run together, so no speed probe is needed"
    record["pairs"] = pairing
    record["pairs_how"] = pairing_how
    ledger.set("metric", record)
    return metric
