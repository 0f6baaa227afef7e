"""Benchmark: `critical-path`, `summary` and `export --perfetto` on generated rocpd databases of
1M to 10M dispatches (4 streams, event record/wait every 4 launches, stream, event and device
synchronizes; tests/scale_trace.py), checked against the generator's own answer.

    .venv/bin/python tests/bench/bench_scale.py --sizes 1000000 10000000 [--dir DIR] [--code TREE]
    .venv/bin/python tests/bench/bench_scale.py --sizes 1000000 --phases     # where the time goes

Each command runs in its own process under `/usr/bin/time -v`: the table gives CPU seconds
(user + system: the figure that means something on a shared machine, where wall time depends on
what else runs), wall seconds for reference, and peak RSS. `--code TREE` runs another checkout's
rocm_perf (e.g. `git archive main | tar -x -C /tmp/before`) for the before table.
`--phases` runs the command in-process with timers around its stages (SQLite read, API calls,
launch join, DAG build, longest path; output is the rest) and reports CPU seconds per stage and
the peak RSS reached by the end of each. Databases are made once into --dir (about 630 MB and
40 s per million dispatches) and kept.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

COMMANDS = {
    "critical-path": ["critical-path", "{db}"],
    "critical-path --json": ["critical-path", "{db}", "--json"],
    "summary": ["summary", "{db}"],
    "summary --json": ["summary", "{db}", "--json"],
    "export .json": ["export", "{db}", "--perfetto", "{out}.json"],
    "export .pftrace": ["export", "{db}", "--perfetto", "{out}.pftrace"],
}


def ensure_database(n: int, folder: Path) -> tuple[Path, dict]:
    """The generated database of n dispatches and its answer (made once, then reused)."""
    import numpy as np
    from scale_trace import generate, write_profile

    db = folder / f"scale_{n}.db"
    answer = folder / f"scale_{n}.answer.json"
    if not (db.is_file() and answer.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        profile = generate(n)
        write_profile(profile, db)
        np.save(folder / f"scale_{n}.earliest.npy", profile.earliest)
        np.save(folder / f"scale_{n}.corr.npy", profile.corr)
        answer.write_text(json.dumps(profile.answer()))
        print(f"made {db} in {time.perf_counter() - t0:.0f} s", flush=True)
    return db, json.loads(answer.read_text())


def timed(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[dict, str]:
    """Run under /usr/bin/time -v: cpu, wall, peak RSS, and the command's stdout. `cwd`: the source
    tree whose rocm_perf `python -m` must find first (it puts the working directory before PYTHONPATH)."""
    with tempfile.NamedTemporaryFile("w+", suffix=".time") as report, \
            tempfile.TemporaryFile("w+") as out:
        done = subprocess.run(["/usr/bin/time", "-v", "-o", report.name, *argv], stdout=out,
                              stderr=subprocess.PIPE, text=True, env=env, check=False, cwd=cwd)
        report.seek(0)
        text = report.read()
        out.seek(0)
        stdout = out.read()
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")

    def field(name: str) -> float:
        m = re.search(rf"{re.escape(name)}: ([\d.:]+)", text)
        if not m:
            return float("nan")
        value = m.group(1)
        if ":" in value:  # wall clock h:mm:ss or m:ss
            parts = [float(p) for p in value.split(":")]
            return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
        return float(value)

    return {"user": field("User time (seconds)"), "sys": field("System time (seconds)"),
            "wall": field("Elapsed (wall clock) time (h:mm:ss or m:ss)"),
            "rss_mb": field("Maximum resident set size (kbytes)") / 1024}, stdout


def check(command: str, stdout: str, answer: dict) -> str:
    """'exact' when the command's JSON agrees with the generator's answer, else what differs."""
    if "--json" not in command:
        return "-"
    doc = json.loads(stdout)
    section = doc.get("critical_path", doc)
    wrong = []
    for key in ("critical_path_ns", "sum_dispatch_ns", "span_ns"):
        if section.get(key) != answer[key]:
            wrong.append(f"{key} {section.get(key)} != {answer[key]}")
    if command.startswith("summary"):
        got = {k["name"]: [k["calls"], k["total_ns"]] for k in doc["kernels"]}
    else:
        got = {s["name"]: [s["calls_on_path"] + s["calls_off_path"], s["total_ns"]] for s in doc["symbols"]}
    if got != answer["kernels"]:
        wrong.append("per-kernel calls/totals differ")
    return "exact" if not wrong else "; ".join(wrong)


PHASES_SCRIPT = r"""
import contextlib, io, json, sys, time
from pathlib import Path
import numpy as np
command, db = sys.argv[1], Path(sys.argv[2])
stack, spent, peaks = [], {}, {}
def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
def wrap(owner, attr, phase):
    original = getattr(owner, attr, None)
    if original is None:
        return
    def timed(*a, **k):
        stack.append(0.0)
        t = time.process_time()
        try:
            return original(*a, **k)
        finally:
            total = time.process_time() - t
            inner = stack.pop()
            spent[phase] = spent.get(phase, 0.0) + total - inner
            peaks[phase] = peak_mb()
            if stack:
                stack[-1] += total
    setattr(owner, attr, staticmethod(timed) if isinstance(owner, type) and isinstance(owner.__dict__.get(attr), staticmethod) else timed)
import importlib
for phase, module, path in PHASES:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        continue
    owner = mod
    *parents, attr = path.split(".")
    for p in parents:
        owner = getattr(owner, p, None)
        if owner is None:
            break
    if owner is not None:
        wrap(owner, attr, phase)
t = time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    if command == "critical-path":
        from rocm_perf.report.critical_path_report import run_critical_path
        run_critical_path(db)
    else:
        from rocm_perf.report.summary import run_summary
        run_summary(db)
total = time.process_time() - t
spent["output"] = total - sum(spent.values())
peaks["output"] = peak_mb()
print(json.dumps({"spent": spent, "peaks": peaks, "total": total}))
"""

# (phase, module, attribute path): the stages of the reading and analysis code, before and after
# the rewrite of issue 59 (names that do not exist in a tree are skipped).
PHASES = [
    ("SQLite read", "rocm_perf.trace.rocpd_read", "read_rocpd"),
    ("API calls", "rocm_perf.trace.rocpd_read", "_Reader._read_api"),
    ("API calls", "rocm_perf.trace.rocpd_read", "_Reader._api_calls"),
    ("API calls", "rocm_perf.trace.rocpd_api", "read_api_calls"),
    ("launch join", "rocm_perf.analysis.dag", "_launch_rows"),
    ("launch join", "rocm_perf.analysis.dag", "launch_rows"),
    ("DAG build", "rocm_perf.analysis.dag", "build_dispatch_dag"),
    ("longest path", "rocm_perf.analysis.critical_path", "_schedule"),
]


def phases(command: str, db: Path, env: dict[str, str]) -> dict:
    script = f"PHASES = {PHASES!r}\n" + PHASES_SCRIPT
    done = subprocess.run([sys.executable, "-c", script, command, str(db)], capture_output=True, text=True, env=env,
                          check=False, cwd=env["PYTHONPATH"])
    if done.returncode:
        raise RuntimeError(done.stderr[-800:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "rocm-perf-bench-scale")
    ap.add_argument("--code", type=Path, help="run the rocm_perf of this source tree (default: this checkout)")
    ap.add_argument("--commands", nargs="+", default=["critical-path", "critical-path --json", "summary",
                                                       "summary --json", "export .pftrace"],
                    choices=sorted(COMMANDS))
    ap.add_argument("--phases", action="store_true", help="CPU seconds and peak RSS per stage instead")
    ap.add_argument("--phase-commands", nargs="+", default=["critical-path", "summary"], choices=["critical-path", "summary"])
    args = ap.parse_args()
    code = (args.code or ROOT).resolve()
    env = {**os.environ, "PYTHONPATH": str(code)}
    rocm_perf = [sys.executable, "-m", "rocm_perf.cli"]
    print(f"code: {code}; machine: {os.cpu_count()} cores; CPU s = user + system (wall s varies with load)")
    if args.phases:
        names = ["SQLite read", "API calls", "launch join", "DAG build", "longest path", "output"]
        print(f"{'dispatches':>10} {'command':14} " + " ".join(f"{n:>17}" for n in names) + f" {'total':>7}")
        for n in args.sizes:
            db, _ = ensure_database(n, args.dir)
            for command in args.phase_commands:
                r = phases(command, db, env)
                cells = [f"{r['spent'].get(p, 0):6.1f}s {r['peaks'].get(p, 0):6.0f}MB" if p in r["spent"] else f"{'-':>17}"
                         for p in names]
                print(f"{n:>10,} {command:14} " + " ".join(f"{c:>17}" for c in cells) + f" {r['total']:6.1f}s", flush=True)
        return
    print(f"{'dispatches':>10} {'command':22} {'CPU s':>7} {'(user':>7} {'+ sys)':>7} {'wall s':>7} {'peak MB':>8}  answer")
    with tempfile.TemporaryDirectory(prefix="bench-scale-out-", dir=args.dir if args.dir.exists() else None) as out:
        for n in args.sizes:
            db, answer = ensure_database(n, args.dir)
            for command in args.commands:
                argv = rocm_perf + [a.format(db=db, out=Path(out) / f"export_{n}") for a in COMMANDS[command]]
                r, stdout = timed(argv, env, cwd=code)
                verdict = check(command, stdout, answer)
                extra = ""
                if command.startswith("export"):
                    written = next(Path(out).glob(f"export_{n}.*"), None)
                    if written is not None:
                        extra = f" ({written.stat().st_size / 2**20:,.0f} MB written)"
                        written.unlink()
                print(f"{n:>10,} {command:22} {r['user'] + r['sys']:7.1f} {r['user']:7.1f} {r['sys']:7.1f} "
                      f"{r['wall']:7.1f} {r['rss_mb']:8,.0f}  {verdict}{extra}", flush=True)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
