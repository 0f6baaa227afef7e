"""Benchmark: the loop's search against exhaustive search of the same candidate space, before and
after a change of the loop (issue 17: compile first, order by evidence, race). Prints one table.

For each kernels/ program (host backend), three parts, each appending one JSON line per program
to --results (so that a benchmark of many hours can be split, resumed and tabled at the end):

- exhaustive: every candidate of the space the loop plans (loops of the top kernels x applicable
  rules x factors, against the original) measured with --rounds interleaved pairs, no early
  stopping: the best single candidate's median speedup, how many were measurably faster (95 %
  interval entirely below 1), its trials (candidates) and program runs, seconds;
- loop: this checkout's `rocm-perf optimize` (defaults, but --metric, --time-budget, --max-trials,
  --compile-check as given): the speedup of its final program over the original (the run's own
  final check, interleaved rounds), candidates measured, program runs spent searching (every
  measured round but the final check's), seconds;
- before: the same for the loop of another commit (--before-ref), unpacked into a temporary
  directory (git archive) and run from there in a subprocess;
- head2head: the results measured side by side: the original program, exhaustive search's best
  candidate, the loop's final program and the `before` loop's when there is one, in interleaved
  rounds (--h2h-rounds, each program in each position in turn), on the same machine in the same
  minutes. Each search's own measure of its gain comes from a different run at a different time
  (the loop's final check has 10 to 30 pairs; on pipeline, at 13 % spread, its gain read +27 % in one
  run and +49 % in another for candidates exhaustive search measures alike); the goal is judged on
  this measurement when the results hold one.

The goal (issue 17): the loop finds at least 95 % of exhaustive search's gain in at most 50 % of
its trials, on every program. Exhaustive search's gain is its proven one: its best candidate
re-measured on fresh pairs (the best of many estimates is biased: the winner's curse), 0 unless
that interval lies entirely below 1; and a gain not shown to reach the loop's --min-gain (the
interval's upper end below 1 - min_gain: the loop's own acceptance test, MEASUREMENT.md) is no
gain to find. With a head2head record both gains are read from it instead (same rounds, same
baseline runs). A loop whose final program is built from exhaustive search's best source found
that gain, whatever the two builds measure head to head (they differ by layout and noise alone).
Trials are counted as program runs (a candidate's cost is its measured rounds; exhaustive search's
is --rounds pairs per candidate), and as candidates.

Usage:
    .venv/bin/python tests/bench/bench_search.py --parts exhaustive,before,loop,head2head --results /tmp/search.jsonl
        [--programs row_reduce,runtime_trip] [--rounds 20] [--metric auto --before-metric median-path] [--time-budget 1h]
        [--max-trials 24] [--before-ref main] [--compile-check off]
    .venv/bin/python tests/bench/bench_search.py --table /tmp/search.jsonl
    # without the hours of exhaustive search: against the committed reference (this machine's kind)
    .venv/bin/python tests/bench/bench_search.py --parts loop,head2head --reference tests/bench/reference/exhaustive.jsonl \
        --metric auto --time-budget 15m --compile-check off --h2h-rounds 60 --results /tmp/pass.jsonl
    # a reference from a pass's exhaustive records, while their directories exist (sources embedded)
    .venv/bin/python tests/bench/bench_search.py --results /tmp/search.jsonl --save-reference tests/bench/reference/exhaustive.jsonl
Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def ledger_stats(run_dir: Path) -> dict:
    """What a finished run spent and found, read from its ledger with plain SQL (any schema version)."""
    con = sqlite3.connect(str(Path(run_dir) / "ledger.db"))
    meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta")}
    statuses = [s for (s,) in con.execute("SELECT status FROM trials")]
    # Program runs, not rows, by phase (reference, aa, screen, confirm, ...; the final check's are not
    # counted): a baseline run shared by the candidates of a race group is filed under each of them
    # (interleaved.shared_pairs), every copy naming it in outputs.baseline_run, and counts once. Kept by
    # phase so that a miss is explained from the record.
    by_phase = dict(con.execute(
        "SELECT phase, COUNT(*) FROM (SELECT phase FROM rounds WHERE phase != 'final' AND "
        "json_extract(outputs, '$.baseline_run') IS NULL UNION ALL SELECT MIN(phase) FROM rounds WHERE phase != 'final' "
        "AND json_extract(outputs, '$.baseline_run') IS NOT NULL GROUP BY json_extract(outputs, '$.baseline_run')) "
        "GROUP BY phase").fetchall())
    runs = sum(by_phase.values())
    (final_runs,) = con.execute("SELECT COUNT(*) FROM rounds WHERE phase = 'final'").fetchone()
    measured = con.execute("SELECT COUNT(DISTINCT trial_id) FROM rounds WHERE trial_id > 0 AND phase = 'screen'").fetchone()[0]
    reasons: dict[str, int] = {}
    for (r,) in con.execute("SELECT reason FROM trials WHERE status = 'rejected'"):
        reasons[r] = reasons.get(r, 0) + 1
    (final_exe,) = con.execute("SELECT executable FROM baselines ORDER BY generation DESC LIMIT 1").fetchone()
    settled = _settled(con, meta.get("settled_close_calls") or [])
    con.close()
    fc = meta.get("final_check")
    summary_path = Path(run_dir) / "summary.json"  # the loop's own, at its finish (a before loop's may predate close calls)
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return {"speedup": (1 / fc["estimate"] - 1) if fc and fc.get("n") else 0.0, "accepted": statuses.count("accepted"),
            "trials": len(statuses), "measured": measured, "runs": runs, "runs_by_phase": by_phase,
            "final_check_runs": final_runs, "reasons": reasons,
            "stop_reason": meta.get("stop_reason"), "run": str(run_dir), "final_executable": str(Path(run_dir) / final_exe),
            # The noise the loop searched in: its A/A pairs' robust spread (about one pair's CV), the
            # metric it decided on, and under --metric auto each alternative's A/A spread.
            "aa_spread": (meta.get("noise_floor") or {}).get("spread"),
            "decided_on": (meta.get("metric") or {}).get("name"), "aa_spreads": (meta.get("metric") or {}).get("aa_spreads"),
            "pairs": (meta.get("metric") or {}).get("pairs", "apart"),  # how its pairs ran (--pairing)
            # Under --metric auto, the choice made again at the race's first rung (stages/screen.py _recheck_metric).
            "race_check": (meta.get("metric") or {}).get("race_check"),
            # The floor taken again from the race's pairs (stages/screen.py _retake_floor): the bar it lowered, from what.
            "retakes": meta.get("noise_floor_retakes") or [],
            # What its report named as unproven but faster than the bar (optimize/close_calls.py).
            "close_calls": [{k: c[k] for k in ("label", "reason", "estimate", "pairs", "spread", "pairs_to_settle")}
                            for c in summary.get("close_calls") or []],
            # The close calls it re-measured itself (--settle-close-calls): each with how that ended.
            "settled": settled}


def _settled(con: sqlite3.Connection, ids: list[int]) -> list[dict]:
    """Each close call the loop re-measured (ledger meta `settled_close_calls`) and how that ended."""
    out = []
    for tid in ids:
        row = con.execute("SELECT rule, factor, loop_id, status, reason, evidence FROM trials WHERE id = ?", (tid,)).fetchone()
        if row is None:
            continue
        rule, factor, loop_id, status, reason, evidence = row
        ev = json.loads(evidence or "{}")
        call, confirm = ev.get("close_call") or {}, ev.get("confirm") or {}
        out.append({"label": f"{rule} x{factor} {loop_id}", "status": status, "reason": reason,
                    "estimate": call.get("estimate"), "pairs": call.get("pairs"), "pairs_to_settle": call.get("pairs_to_settle"),
                    "confirm_rounds": confirm.get("rounds"), "confirm_ratio": (confirm.get("critical_path") or {}).get("estimate")})
    return out


# Runs the loop of a checkout given as argv[1] (imports from there): the `before` part's subprocess.
LOOP_SCRIPT = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rocm_perf.backends.host import HostBackend
from rocm_perf.optimize.command import compile_checker, create_run
from rocm_perf.optimize.loop import OptimizeLoop
try:
    from rocm_perf.optimize.services import Services, SourceTools
except ImportError:  # a checkout from before the loop's stages (issue 53)
    from rocm_perf.optimize.loop import Services, SourceTools
from rocm_perf.optimize.measure import ProfiledRounds
from rocm_perf.optimize.options import OptimizeOptions
src, out, metric, budget, max_trials, check = sys.argv[2:8]
backend = HostBackend()
opt = OptimizeOptions(source=Path(src), out=Path(out), backend="host", compile_check=check, quiet=True, metric=metric,
                      time_budget_s=float(budget), max_trials=int(max_trials))
run_dir, ledger = create_run(opt, backend.name, backend.describe(), ["bench_search"])
runner = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=opt.timeout_s, cwd=Path(src).parent,
                        timing_lines=opt.timing_lines)
t0 = time.time()
OptimizeLoop(run_dir, ledger, opt, Services(backend, runner, SourceTools.default(), compile_checker(check))).run()
print(json.dumps({"run_dir": str(run_dir), "seconds": time.time() - t0}))
"""


def run_loop(checkout: Path, source: Path, out: Path, args, metric: str) -> dict:
    from rocm_perf.optimize.options import parse_duration

    done = subprocess.run([sys.executable, "-c", LOOP_SCRIPT, str(checkout), str(source), str(out), metric,
                           str(parse_duration(args.time_budget)), str(args.max_trials), args.compile_check],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{source.stem}: the loop of {checkout} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**ledger_stats(Path(result["run_dir"])), "seconds": result["seconds"]}


def run_exhaustive(source: Path, out: Path, args) -> dict:
    """Every candidate against the original, --rounds pairs each."""
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.errors import RocmPerfError
    from rocm_perf.optimize import acceptance as acc
    from rocm_perf.optimize import driver
    from rocm_perf.optimize.command import create_run
    from rocm_perf.optimize.interleaved import pair_order
    from rocm_perf.optimize.loop import OptimizeLoop
    from rocm_perf.optimize.services import Services, SourceTools
    from rocm_perf.optimize.measure import ProfiledRounds, metric_value
    from rocm_perf.optimize.options import OptimizeOptions
    from rocm_perf.optimize.plan import RankedKernel, propose

    backend = HostBackend()
    opt = OptimizeOptions(source=source, out=out, backend="host", compile_check="off", quiet=True, aa_rounds=2,
                          metric=args.metric)
    run_dir, ledger = create_run(opt, backend.name, backend.describe(), ["bench_search exhaustive"])
    runner = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=opt.timeout_s, cwd=source.parent,
                            timing_lines=opt.timing_lines)
    svc = Services(backend, runner, SourceTools.default(), None)
    loop = OptimizeLoop(run_dir, ledger, opt, svc)
    # --metric auto resolved for the backend as the loops resolve it before their A/A pairs (the host
    # backend: cpu-path), kept whatever its two A/A pairs would choose: too few to choose on.
    metric = loop.opt.metric
    t0 = time.time()
    for state in ("baseline", "noise-floor", "rank"):
        driver.STAGES[state](loop.ctx)
    runs = 1 + 2 * opt.aa_rounds
    top = [RankedKernel(**r) for r in ledger.get("top_kernels", [])]
    base = ledger.current_baseline()
    src = run_dir / base.source_path
    analysis = loop.ctx.analysis(src)
    groups = propose(ranking=top, analysis=analysis, rules=loop.ctx.rules(), applicable_rules=svc.tools.applicable_rules,
                     original_text=src.read_text(), current_text=src.read_text(), tried_loop_keys=set(), only_rules=[],
                     only_factors=[], resources={})
    baseline_exe = str(run_dir / base.executable)

    def measure_pairs(executable, d: Path, rounds: int):
        """(interval of the median ratio candidate/baseline or None if a round failed, runs spent)."""
        b, c, spent = [], [], 0
        for i in range(rounds):
            vals = {}
            for role, exe in pair_order(i, baseline_exe, str(executable)):
                r = svc.runner(Path(exe), d / f"r{i}{role}", f"{i}-{role}")
                spent += 1
                if not r.ok:
                    return None, spent
                vals[role] = metric_value(r, metric)
            b.append(vals["B"])
            c.append(vals["C"])
        return acc.median_ratio_interval(b, c, tail_alpha=0.025), spent

    best = (1.0, "", None)
    faster = 0
    trials = 0
    results = []
    for p in (p for g in groups for p in g):
        trials += 1
        label = f"{p.rule} x{p.factor} {p.loop_id}"
        cand = svc.tools.make_candidate(src, analysis, p.loop_id, p.rule, p.factor, rules=loop.ctx.rules())
        if any(not v.ok for v in svc.tools.guard_candidate(cand, [])):
            results.append({"candidate": label, "skipped": "guard"})
            continue
        d = run_dir / "exhaustive" / str(trials)
        d.mkdir(parents=True)
        (d / "source.cu").write_bytes(cand.rewritten)
        try:
            prog = backend.build(d / "source.cu", d / "build", [])
        except RocmPerfError as e:  # a candidate that does not build is simply not a result
            results.append({"candidate": label, "skipped": f"build: {str(e)[:100]}"})
            continue
        iv, spent = measure_pairs(prog.executable, d, args.rounds)
        runs += spent
        if iv is None:
            results.append({"candidate": label, "skipped": "failed"})
            continue
        faster += iv.high < 1.0
        results.append({"candidate": label, "ratio": iv.estimate, "low": iv.low, "high": iv.high})
        if iv.estimate < best[0]:
            best = (iv.estimate, label, prog.executable)
        print(f"  {source.stem}: {label}: ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]", file=sys.stderr, flush=True)
    fresh = None
    if best[1]:
        # The best of many estimates is biased low (the winner's curse): its gain is re-measured on
        # fresh pairs, as the loop confirms a screened winner, and that is the gain the loop must find.
        iv, spent = measure_pairs(best[2], run_dir / "exhaustive" / "fresh", args.rounds)
        runs += spent
        if iv is not None:
            fresh = {"candidate": best[1], "ratio": iv.estimate, "low": iv.low, "high": iv.high}
            print(f"  {source.stem}: {best[1]} re-measured: ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]",
                  file=sys.stderr, flush=True)
    rec = {"speedup": 1 / best[0] - 1, "best": best[1], "faster": faster, "trials": trials, "runs": runs,
           "seconds": time.time() - t0, "metric": metric, "candidates": results, "fresh": fresh, "run": str(run_dir),
           "baseline_executable": baseline_exe, "best_executable": str(best[2]) if best[2] else None}
    return {**rec, "sources": embedded_sources(rec)}


def run_head2head(source: Path, out: Path, records: dict, args) -> dict:
    """The original, exhaustive search's best and the loop's final program (and the `before` loop's,
    when the results hold one) measured in interleaved rounds, each role in each position in turn."""
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.optimize import acceptance as acc
    from rocm_perf.optimize.measure import ProfiledRounds, metric_of, metric_value
    from rocm_perf.optimize.options import OptimizeOptions

    ex, lp = records.get("exhaustive"), records.get("loop")
    if not ex or not lp or not ex.get("baseline_executable") or not lp.get("final_executable"):
        raise SystemExit(f"{source.stem}: head2head needs exhaustive and loop results with their executables in --results")
    recorded = {"B": ex["baseline_executable"], "E": ex.get("best_executable") or ex["baseline_executable"],
                "L": lp["final_executable"]}
    if records.get("before", {}).get("final_executable"):
        recorded["P"] = records["before"]["final_executable"]
    work = Path(tempfile.mkdtemp(prefix="h2h-", dir=out if out.is_dir() else None))
    # Every role is rebuilt from its source by this checkout: the records may come from passes with
    # another host runtime (the before checkout's, or an earlier pass's exhaustive records), and
    # builds against two runtimes measure the runtimes (pipeline's unchanged original built by a
    # before checkout measured 0.70 of the same source built here; softmax's original built before
    # the fiber-stack chunks ran 7.7 % faster than after).
    texts = role_sources(source, recorded, ex.get("sources") or {})
    programs: dict[str, str] = {}
    built: dict[bytes, str] = {}  # one build per source (exhaustive's best is often the original)
    for role, text in texts.items():
        if text not in built:
            (work / f"src_{role}").mkdir()
            src = work / f"src_{role}" / "source.cu"
            src.write_bytes(text)
            built[text] = str(HostBackend().build(src, work / f"build_{role}", []).executable)
        programs[role] = built[text]
    metric = ex.get("metric", "cpu-path")
    runner = ProfiledRounds(HostBackend(), program_args=[], run_template=None, timeout_s=600, cwd=source.parent,
                            timing_lines=OptimizeOptions.timing_lines)
    roles = "".join(programs)
    rotations = [roles[k:] + roles[:k] for k in range(len(roles))]
    orders = rotations + [o[::-1] for o in rotations]  # each role in each position equally often, both ways round
    values: dict[str, list[float]] = {role: [] for role in programs}
    probed: dict[str, list[float | None]] = {}
    t0 = time.time()
    for i in range(args.h2h_rounds):
        got = {}
        for role in orders[i % len(orders)]:
            r = runner(Path(programs[role]), work / f"r{i}{role}", f"{i}-{role}")
            if not r.ok:
                raise SystemExit(f"{source.stem}: head2head: a run of {programs[role]} failed: {r.failure}")
            got[role] = metric_value(r, metric)
            probed.setdefault(role, []).append(metric_of(r.cp_ns, r.outputs, "probed-path"))
        for role, v in got.items():
            values[role].append(v)

    def interval(base: str, cand: str, of: dict[str, list[float]] = values) -> dict:
        iv = acc.median_ratio_interval(of[base], of[cand], tail_alpha=0.025)
        return {"ratio": iv.estimate, "low": iv.low, "high": iv.high, "spread": acc.paired_spread(of[base], of[cand])}

    rec = {"exhaustive": interval("B", "E"), "loop": interval("B", "L"), "loop_vs_exhaustive": interval("E", "L"),
           "rounds": args.h2h_rounds, "runs": len(programs) * args.h2h_rounds, "seconds": time.time() - t0,
           "metric": metric, "same_program": recorded["E"] == recorded["L"], "same_source": texts["E"] == texts["L"]}
    if "P" in programs:
        rec["before"] = interval("B", "P")
    # The same rounds on the probed path (the host runtime's speed probe), where every round has it.
    if metric != "probed-path" and probed and all(v for vs in probed.values() for v in vs):
        rec["probed"] = {k: interval(b, c, probed) for k, (b, c) in
                         (("exhaustive", ("B", "E")), ("loop", ("B", "L")), ("loop_vs_exhaustive", ("E", "L")))}
    names = {"exhaustive": "exhaustive's best", "loop": "loop's final", "before": "before's final"}
    for label, of in ((metric, rec), ("probed-path", rec.get("probed"))):
        if of:
            print(f"  {source.stem}: head to head over {args.h2h_rounds} rounds ({label}): " + ", ".join(
                f"{name} {of[k]['ratio']:.3f} [{of[k]['low']:.3f}, {of[k]['high']:.3f}] (spread {of[k]['spread']:.1%})"
                for k, name in names.items() if k in of), file=sys.stderr, flush=True)
    return rec


def records_by_program(results: Path) -> dict[str, dict[str, dict]]:
    """{program: {part: the last record of that part}} of a results file, read once."""
    out: dict[str, dict[str, dict]] = {}
    for line in results.read_text().splitlines() if results.exists() else []:
        rec = json.loads(line) if line.strip() else {}
        if rec.get("program"):
            out.setdefault(rec["program"], {})[rec["part"]] = rec
    return out


def latest_records(results: Path, program: str) -> dict:
    """{part: the last record of that part} for one program in a results file."""
    return records_by_program(results).get(program, {})


def embedded_sources(ex: dict) -> dict[str, str | None]:
    """The original's and exhaustive search's best source texts, read while the search's directories
    exist: a record that carries them can be measured head to head on any machine, from any clone
    (`--reference`), instead of only where its temporary directories still are."""
    def text(exe: str | None) -> str | None:
        src = source_of(exe) if exe else None
        return src.read_bytes().decode() if src and src.is_file() else None

    return {"original": text(ex.get("baseline_executable")), "best": text(ex.get("best_executable"))}


def role_sources(program: Path, recorded: dict[str, str], embedded: dict[str, str | None]) -> dict[str, bytes]:
    """{role: the source text it is built from}: exhaustive search's original and best from the
    record's embedded texts when it has them, else (and the loops' finals always) from beside the
    recorded executables. An original that is not today's kernels/ file measures another program."""
    texts: dict[str, bytes] = {}
    for role, exe in recorded.items():
        text = {"B": embedded.get("original"), "E": embedded.get("best") or embedded.get("original")}.get(role)
        if text is None:
            src = source_of(exe)
            if not src.is_file():
                raise SystemExit(f"{program.stem}: head2head: {src} is gone (the searches' temporary directories were "
                                 "removed, and the record carries no source)")
            texts[role] = src.read_bytes()
        else:
            texts[role] = text.encode()
    if texts["B"] != program.read_bytes():
        raise SystemExit(f"{program.stem}: head2head: exhaustive search measured another version of {program}; "
                         "run --parts exhaustive again")
    return texts


def take_reference(reference: Path, results: Path, programs: list[str]) -> list[str]:
    """Append to --results, for each program that has no exhaustive record there, the reference
    file's (marked with where it came from): the loops are then judged against it, head to head and
    in the table, as against exhaustive records of this pass. Returns the programs taken."""
    have = {p for p, parts in records_by_program(results).items() if parts.get("exhaustive")}
    offered = records_by_program(reference)
    taken = []
    with results.open("a") as f:
        for program in programs:
            rec = offered.get(program, {}).get("exhaustive")
            if program in have or not rec:
                continue
            if not (rec.get("sources") or {}).get("original"):
                raise SystemExit(f"{reference}: {program}'s exhaustive record carries no sources (written before "
                                 "--save-reference)")
            f.write(json.dumps({**rec, "reference": str(reference)}) + "\n")
            taken.append(program)
    return taken


def save_reference(results: Path, out: Path) -> int:
    """Each program's latest exhaustive record of --results, with its sources embedded, into `out`."""
    lines = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    settings = next((rec for rec in lines if rec.get("part") == "settings"), {})
    records = []
    for program, parts in sorted(records_by_program(results).items()):
        ex = parts.get("exhaustive")
        if not ex:
            continue
        sources = ex.get("sources") or embedded_sources(ex)
        if not sources.get("original"):
            raise SystemExit(f"{results}: {program}: the exhaustive search's sources are gone and the record has none")
        records.append({**ex, "sources": sources})
    out.write_text("".join(json.dumps(r) + "\n" for r in [settings, *records]))
    print(f"{out}: {len(records)} exhaustive records ({', '.join(r['program'] for r in records)})", file=sys.stderr)
    return 0


def checkout_of(repo: str, ref: str) -> Path:
    """The tree of `ref` unpacked into a temporary directory (git archive: the repository is not touched)."""
    path = Path(tempfile.mkdtemp(prefix="bench_search-before-"))
    archive = subprocess.run(["git", "-C", repo, "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(path)], input=archive, check=True)
    return path


def print_table(results: Path) -> None:
    from rocm_perf.optimize.options import OptimizeOptions

    min_gain = OptimizeOptions.min_gain  # a smaller gain the loop declines by design: no gain to find
    rows: dict[str, dict] = {}
    header = {}
    for line in results.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("part") == "settings":
            header = rec
            continue
        rows.setdefault(rec["program"], {})[rec["part"]] = rec
    if header:
        print(f"# loop vs exhaustive search, {header.get('backend')}; exhaustive: {header.get('rounds')} pairs per "
              f"candidate; loops: budget {header.get('time_budget')}, max trials {header.get('max_trials')}, metric "
              f"{header.get('metric')}, compile check {header.get('compile_check')}"
              + (f"; before = {header.get('before_ref')} (metric {header.get('before_metric', header.get('metric'))})"
                 if any("before" in r for r in rows.values()) else "") + "\n")
    print("| program | exhaustive: best single speedup (candidate) | faster | proven gain | trials / runs | s "
          "| before: speedup | % of exh. gain | measured / runs (% of exh.) | s "
          "| after: speedup | % of exh. gain | measured / runs (% of exh.) | s "
          "| head to head: exh. best / loop's final (/ before's final) | spread: loop's A/A / head to head | goal met |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    goals: dict[str, str] = {}
    shortfalls: dict[str, str] = {}  # programs judged short of 95 % on estimates: what the direct comparison shows
    for program in sorted(rows):
        r = rows[program]
        ex = r.get("exhaustive")
        cells = [program]
        target = proven_gain(ex) if ex else None
        if ex:
            cells += [f"{ex['speedup']:+.1%} ({ex['best']})", str(ex["faster"]), f"{target:+.1%}",
                      f"{ex['trials']} / {ex['runs']}", f"{ex['seconds']:.0f}"]
        else:
            cells += ["-"] * 5
        goal = "-"
        h2h = r.get("head2head")
        loop_gain = r["loop"]["speedup"] if r.get("loop") else None
        if h2h:  # both gains from the same rounds: the goal is judged on them
            target, loop_gain = head2head_gains(h2h)
        for part in ("before", "loop"):
            lp = r.get(part)
            if not lp:
                cells += ["-"] * 4
                continue
            gain = loop_gain if part == "loop" else lp["speedup"]  # from head2head when there is one
            if part == "before" and h2h and h2h.get("before"):
                gain = 1 / h2h["before"]["ratio"] - 1
            share = (gain / target) if target else None
            cost = (lp["runs"] / ex["runs"]) if ex else None
            cells += [f"{lp['speedup']:+.1%}", "-" if share is None else f"{share:.0%}",
                      f"{lp['measured']} / {lp['runs']}" + ("" if cost is None else f" ({cost:.0%})"), f"{lp['seconds']:.0f}"]
            if part == "loop" and ex:
                # The loop accepts only a gain whose interval lies below 1 - min_gain (MEASUREMENT.md):
                # a gain exhaustive search cannot show to reach that bar is not one the loop may claim.
                below_bar = target < min_gain or not reaches_bar(ex, h2h, min_gain)
                # Older results lack same_source: the sources are compared while they are on disk.
                same = (h2h or {}).get("same_source", same_source(ex.get("best_executable"), lp.get("final_executable")))
                gain_ok = below_bar or loop_gain >= 0.95 * target or bool(same)
                runs_ok = lp["runs"] <= 0.5 * ex["runs"]
                goal = "yes" if gain_ok and runs_ok else "no"
                if not runs_ok:
                    goal += f" (runs: {cost:.0%} of exhaustive's)"
                if 0 < target and below_bar and loop_gain < 0.95 * target:
                    goal += f" (exhaustive's gain not shown to reach --min-gain {min_gain:.0%})"
                elif same and loop_gain < 0.95 * target:
                    goal += " (the loop's final program is exhaustive search's best, from the same source)"
                elif not gain_ok and h2h and h2h.get("loop_vs_exhaustive"):
                    shortfall = direct_shortfall(h2h["loop_vs_exhaustive"], target)
                    shortfalls[program] = shortfall
                    goal += f" ({shortfall})"
        if h2h:
            cells.append(" / ".join(f"{1 / iv['ratio'] - 1:+.1%} [{1 / iv['high'] - 1:+.1%}, {1 / iv['low'] - 1:+.1%}]"
                                    for iv in (h2h["exhaustive"], h2h["loop"], h2h.get("before")) if iv))
        else:
            cells.append("-")
        cells.append(spread_cell(r.get("loop"), h2h))
        cells.append(goal)
        goals[program] = goal
        print("| " + " | ".join(cells) + " |")
    judged = [p for p, g in goals.items() if g != "-"]
    if judged:
        met = [p for p in judged if goals[p].startswith("yes")]
        loop_runs = sum(rows[p]["loop"]["runs"] for p in judged)
        exh_runs = sum(rows[p]["exhaustive"]["runs"] for p in judged)
        print(f"\nGoal met on {len(met)} of {len(judged)} programs"
              + (f" (missed: {', '.join(p for p in judged if p not in met)})" if len(met) < len(judged) else "")
              + f"; the loops spent {loop_runs:,} runs against exhaustive search's {exh_runs:,} ({loop_runs / exh_runs:.0%}).")
        if shortfalls:
            unshown = [p for p, why in shortfalls.items() if not why.startswith(SHOWN_SHORT)]
            shown = len(shortfalls) - len(unshown)
            within = f"; {', '.join(unshown)}: within {'its' if len(unshown) == 1 else 'their'} resolution" if unshown else ""
            print(f"Of the {len(shortfalls)} judged short of 95 % of the gain on estimates, {shown} "
                  f"{'is' if shown == 1 else 'are'} shown short by the direct comparison of the two programs{within}.")
    print("\n(proven gain: the best single candidate re-measured on fresh --rounds pairs (counted in exhaustive "
          "search's runs), 0 unless its 95 % interval lies entirely below 1; in results without the re-measure, "
          "the best speedup among the candidates measured faster. The goal is judged against it: a best single "
          "speedup no interval supports is the largest of many noisy estimates, not a gain to find; nor is "
          f"one not shown to reach the loop's default --min-gain {min_gain:.0%} (its interval's upper end below "
          f"{1 - min_gain:.2f}), which the loop never accepts by design. "
          "head to head: the original, exhaustive search's best and the loop's final program (and the before "
          "loop's) measured in interleaved rounds, speedups over the original with 95 % intervals; where a program has it, the goal "
          "is judged on it: exhaustive's gain counts when its interval lies below 1 - min_gain, the loop's is its estimate. "
          "Where that estimate falls short of 95 %, the same rounds' direct comparison of the loop's final program with "
          "exhaustive's best says whether the shortfall is shown (its 95 % interval lies entirely above the ratio at which "
          "the loop would have 95 % of the gain) or within the measurement's resolution. "
          "spread: the robust spread of paired log ratios (1.4826 x MAD, about the CV of one pair's ratio) of the loop's "
          "A/A pairs (on the metric the loop decided on, named) and of the head to head's original against the loop's "
          "final program: the noise each measured in.)")
    print_phases(rows)
    print_close_calls(rows)


def print_close_calls(rows: dict[str, dict]) -> None:
    """The close calls each loop's report named: what it stopped unproven, and the pairs a decision would need."""
    settled = {p: r["loop"]["settled"] for p, r in sorted(rows.items()) if (r.get("loop") or {}).get("settled")}
    if settled:
        print("\n| program | close call the loop re-measured | ratio, pairs | pairs to settle | re-measure | ended |")
        print("|---|---|---|---:|---|---|")
        for program, calls in settled.items():
            for c in calls:
                again = (f"{c['confirm_ratio']:.3f} after {c['confirm_rounds']} pairs" if c.get("confirm_ratio")
                         else "not measured")
                print(f"| {program} | {c['label']} | {c['estimate']:.3f}, {c['pairs']} | {c['pairs_to_settle']:.0f} | {again} | "
                      f"{c['status']}{': ' + c['reason'] if c['status'] == 'rejected' else ''} |")
    named = {p: r["loop"]["close_calls"] for p, r in sorted(rows.items()) if (r.get("loop") or {}).get("close_calls")}
    if not named:
        return
    print("\n| program | close call the loop's report named | ratio | pairs | stopped | pairs to settle |")
    print("|---|---|---:|---:|---|---:|")
    for program, calls in named.items():
        for c in calls:
            print(f"| {program} | {c['label']} | {c['estimate']:.3f} | {c['pairs']} | {c['reason']} | "
                  f"{c['pairs_to_settle']:,.0f} (spread {c['spread']:.1%}) |")


def print_phases(rows: dict[str, dict]) -> None:
    """Where each loop's counted runs went, by phase, and the final check's runs (not counted)."""
    with_phases = {p: r["loop"] for p, r in sorted(rows.items()) if (r.get("loop") or {}).get("runs_by_phase")}
    if not with_phases:
        return
    order = ["reference", "aa", "screen", "confirm", "combine"]  # the loop's; any other phase after them
    phases = sorted({ph for lp in with_phases.values() for ph in lp["runs_by_phase"]},
                    key=lambda ph: (order.index(ph) if ph in order else len(order), ph))
    print("\n| program | " + " | ".join(phases) + " | counted | final check (not counted) |")
    print("|---|" + "---:|" * (len(phases) + 2))
    for program, lp in with_phases.items():
        print(f"| {program} | " + " | ".join(str(lp["runs_by_phase"].get(ph, 0)) for ph in phases)
              + f" | {lp['runs']} | {lp.get('final_check_runs', '-')} |")


def spread_cell(loop: dict | None, h2h: dict | None) -> str:
    """The loop's A/A spread and the head to head's, '-' where a record predates them."""
    def pct(x) -> str:
        return "-" if x is None else f"{x:.1%}"
    decided = (loop or {}).get("decided_on")
    retaken = "".join(f", race {r['spread']:.1%} at {r['rung']}" for r in (loop or {}).get("retakes") or [])
    check = (loop or {}).get("race_check") or {}
    if check and check.get("from") != decided:
        retaken = f", the A/A chose {check['from']}; over it and the first rung, {check['pairs']} pairs" + retaken
    return (f"{pct((loop or {}).get('aa_spread'))}" + (f" ({decided}{retaken})" if decided else "")
            + f" / {pct(((h2h or {}).get('loop') or {}).get('spread'))}")


def source_of(executable: str) -> Path:
    """The source a bench or loop build was made from: <dir>/source.cu beside <dir>/build/<exe>."""
    return Path(executable).parent.parent / "source.cu"


def same_source(exhaustive_best: str | None, loop_final: str | None) -> bool | None:
    """Whether the loop's final program is exhaustive search's best built from the very same source
    (None: a source is gone). Then the gains are one program's, and a head-to-head difference is
    between two builds of it (scan: +3.8 % against +3.2 %, identical sources)."""
    if not exhaustive_best or not loop_final:
        return None
    a, b = source_of(exhaustive_best), source_of(loop_final)
    if not a.is_file() or not b.is_file():
        return None
    return a.read_bytes() == b.read_bytes()


def head2head_gains(h2h: dict) -> tuple[float, float]:
    """(exhaustive search's proven gain, the loop's gain) from one head-to-head measurement."""
    e, lo = h2h["exhaustive"], h2h["loop"]
    return (1 / e["ratio"] - 1 if e["high"] < 1.0 else 0.0), 1 / lo["ratio"] - 1


SHOWN_SHORT = "shown short"


def direct_shortfall(loop_vs_exhaustive: dict, target: float, share: float = 0.95) -> str:
    """Whether the head to head's direct comparison (the loop's final program against exhaustive
    search's best, paired in the same rounds) shows the loop short of `share` of exhaustive's gain
    `target`. The loop has that share when its time over exhaustive's best is at most
    (1 + target) / (1 + share x target), 1.0028 for a 6 % gain: a difference of 0.3 %, which 30
    rounds at 2-3 % spread cannot resolve (softmax: loop +5.3 %, exhaustive +6.1 %, direct 1.004
    [0.992, 1.018]). The estimates alone call such a pair a miss or a hit by the toss of the noise."""
    bound = (1 + target) / (1 + share * target)
    low, high = loop_vs_exhaustive["low"], loop_vs_exhaustive["high"]
    where = f"direct {loop_vs_exhaustive['ratio']:.3f} [{low:.3f}, {high:.3f}], {share:.0%} of the gain at {bound:.4f}"
    if low > bound:
        return f"{SHOWN_SHORT}: {where}"
    return f"not shown short: {where}"


def reaches_bar(ex: dict, h2h: dict | None, min_gain: float) -> bool:
    """Whether exhaustive search's gain is shown to be at least min_gain: the upper end of its
    interval (head to head when measured, else its fresh re-measure) lies below 1 - min_gain, the
    test the loop's acceptance applies. Results without either: its point estimate."""
    iv = (h2h or {}).get("exhaustive") or ex.get("fresh")
    if iv:
        return iv["high"] < 1.0 - min_gain
    return proven_gain(ex) >= min_gain


def proven_gain(ex: dict) -> float:
    """The gain exhaustive search established: its best candidate's fresh re-measure when it has one
    (0 unless that interval lies below 1), else the best speedup among candidates whose interval lies
    below 1 (results written before the re-measure), 0 when none."""
    fresh = ex.get("fresh")
    if fresh:
        return 1 / fresh["ratio"] - 1 if fresh["high"] < 1.0 else 0.0
    ratios = [c["ratio"] for c in ex.get("candidates", []) if "ratio" in c and c["high"] < 1.0]
    return 1 / min(ratios) - 1 if ratios else 0.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", default="", help="comma list of kernels/ program stems (default: all)")
    ap.add_argument("--parts", default="exhaustive,before,loop", help="which searches to run (default: all three)")
    ap.add_argument("--results", default="", help="JSON lines file the results are appended to (default: a new temporary file)")
    ap.add_argument("--table", default="", help="print the table of a results file and stop")
    ap.add_argument("--rounds", type=int, default=20, help="pairs per candidate in the exhaustive search")
    ap.add_argument("--h2h-rounds", type=int, default=30, help="interleaved rounds of the head2head part")
    ap.add_argument("--time-budget", default="1h", help="each loop's budget per program (default: its own, 1h)")
    ap.add_argument("--max-trials", type=int, default=24)
    ap.add_argument("--metric", default="median-path",
                    help="the loops' and the exhaustive search's decision metric (default median-path: the loop before "
                    "issue 17 knows no auto or cpu-path; auto gives the host backend's cpu-path to this checkout)")
    ap.add_argument("--before-metric", default="",
                    help="the `before` loop's metric (default: --metric; median-path for a loop before issue 17, which "
                    "knows no auto or cpu-path)")
    ap.add_argument("--compile-check", default="off", choices=["auto", "off"], help="the loops' AMD compile check")
    ap.add_argument("--before-ref", default="main", help="the commit whose loop is `before` (default: main)")
    ap.add_argument("--repo", default=str(ROOT), help="the git repository --before-ref names (default: this checkout)")
    ap.add_argument("--reference", default="",
                    help="exhaustive records to judge the loops against where --results has none (written by "
                    "--save-reference; e.g. tests/bench/reference/exhaustive.jsonl): a pass of loop,head2head without "
                    "the hours of --parts exhaustive")
    ap.add_argument("--save-reference", default="", metavar="FILE",
                    help="write each program's latest exhaustive record of --results, with its sources, to FILE and stop")
    args = ap.parse_args()
    if args.table:
        print_table(Path(args.table))
        return 0
    if args.save_reference:
        if not args.results or not Path(args.results).is_file():
            raise SystemExit("--save-reference: name the results file to take the exhaustive records from (--results)")
        return save_reference(Path(args.results), Path(args.save_reference))
    names = [n for n in args.programs.split(",") if n]
    programs = [ROOT / "kernels" / f"{n}.cu" for n in names] or sorted((ROOT / "kernels").glob("*.cu"))
    parts = [p for p in args.parts.split(",") if p]
    work = Path(tempfile.mkdtemp(prefix="bench_search-"))
    results = Path(args.results) if args.results else work / "results.jsonl"
    from rocm_perf.backends.host import HostBackend

    before_ref = subprocess.run(["git", "-C", args.repo, "rev-parse", "--short", args.before_ref], capture_output=True,
                                text=True).stdout.strip()
    # The searches' settings head the table; a head2head pass alone measures with theirs.
    with results.open("a") if set(parts) - {"head2head"} else open(os.devnull, "w") as f:
        f.write(json.dumps({"part": "settings", "backend": HostBackend().describe(), "rounds": args.rounds,
                            "time_budget": args.time_budget, "max_trials": args.max_trials, "metric": args.metric,
                            "before_metric": args.before_metric or args.metric,
                            "compile_check": args.compile_check, "before_ref": before_ref,
                            "after": subprocess.run(["git", "-C", args.repo, "rev-parse", "--short", "HEAD"],
                                                    capture_output=True, text=True).stdout.strip()}) + "\n")
    if args.reference:
        reference = Path(args.reference)
        if not reference.is_file():
            raise SystemExit(f"--reference: {reference}: no such file")
        taken = take_reference(reference, results, [p.stem for p in programs])
        print(f"exhaustive records from {reference}: {', '.join(taken) or 'none (--results has them)'}", file=sys.stderr)
    before = checkout_of(args.repo, args.before_ref) if "before" in parts else None
    print(f"results: {results}", file=sys.stderr)
    for src in programs:
        for part in parts:
            t0 = time.time()
            if part == "exhaustive":
                rec = run_exhaustive(src, work / "exhaustive", args)
            elif part == "before":
                rec = run_loop(before, src, work / "before", args, args.before_metric or args.metric)
            elif part == "loop":
                rec = run_loop(ROOT, src, work / "loop", args, args.metric)
            elif part == "head2head":
                rec = run_head2head(src, work, latest_records(results, src.stem), args)
            else:
                raise SystemExit(f"--parts: unknown part {part!r}")
            with results.open("a") as f:
                f.write(json.dumps({"program": src.stem, "part": part, **rec}) + "\n")
            gain = f"{rec['speedup']:+.1%}, " if "speedup" in rec else ""
            print(f"{src.stem} {part}: {gain}{rec.get('runs')} runs, {time.time() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
