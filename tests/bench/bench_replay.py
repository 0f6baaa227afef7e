"""Benchmark: what a measured pair costs and how noisy it is, the whole program against its
reproducer (`rocm-perf isolate`), on the host backend (prints a table).

For each program a kernel is isolated (dispatch 1) into a temporary reproducer; then the whole
program and the reproducer are each built twice (an A/A pair of builds, as the loop's noise floor
has them) and measured in pairs exactly as `optimize` measures a candidate (the same runners, the
same pairing: together on one CPU where block workers can be pinned, else apart). The whole
program's pairs and the replay's (at each --passes) alternate, so that all meet the same machine.
Per pair: the seconds it took (both runs), and the paired spread of the decision metric (1.4826 x
MAD of the pairs' log ratios, about the CV of one pair's ratio). The replay runs `passes`
dispatches a round, none of the rest of the program. The pairs a decision needs grow with the
square of the spread over the effect: a change of the kernel's time by g moves the whole program's
path by g x share (the kernel's share of that path), the replay's by g. So the noise on the kernel's
own time is spread / share, and "s per decision" (relative to the whole program's) is seconds per
pair x (spread / share)^2 over the same for the whole program.

Usage: .venv/bin/python tests/bench/bench_replay.py [--pairs 20] [--passes 10,40] [--only NAME]
Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.isolate.command import IsolateRequest, run_isolate  # noqa: E402
from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize.interleaved import pair_order  # noqa: E402
from rocm_perf.optimize.measure import METRIC_CPU_PATH, ProfiledRounds, metric_value  # noqa: E402
from rocm_perf.optimize.options import DEFAULT_TIMING_LINES, PAIRING_TOGETHER, resolve_pairing  # noqa: E402
from rocm_perf.optimize.project import build_environment, copy_files, project_files  # noqa: E402
from rocm_perf.optimize.runners.project_tree import ProjectTree  # noqa: E402
from rocm_perf.optimize.runners.replay import ReplayRunner  # noqa: E402
from rocm_perf.optimize.runners.source_file import SourceFile  # noqa: E402
from rocm_perf.reproducer import read_manifest, replay_args  # noqa: E402

MAKE_APP = ROOT / "tests" / "data" / "projects" / "make_app"
# (name, source file or project root, kernel, project build and run or None)
PROGRAMS = [
    ("stencil2d", ROOT / "kernels" / "stencil2d.cu", "stencil_2d", None),
    ("pipeline", ROOT / "kernels" / "pipeline.cu", "smooth_chunk", None),
    ("make_app (project)", MAKE_APP, "row_xor_sum", ("make", "./app")),
]


def rounds(backend, work: Path, **kw) -> ProfiledRounds:
    return ProfiledRounds(backend, run_template=None, timeout_s=600, cwd=work, timing_lines=DEFAULT_TIMING_LINES,
                          keep_profiles=lambda key: False, **kw)


def one_pair(runner, exes: tuple[Path, Path], work: Path, i: int, together: bool, kernel: str) -> tuple[float, float, float, float]:
    """Pair i of the two builds (alternating order): (seconds, baseline value, twin value, the
    kernel's share of the baseline round's critical path)."""
    order = pair_order(i, "B", "C")
    runs = [(exes[0] if role == "B" else exes[1], work / f"p{i}-{role}", f"x-{i}-{role}") for role, _ in order]
    t0 = time.monotonic()
    results = runner.together(runs) if together else [runner.round(*r) for r in runs]
    seconds = time.monotonic() - t0
    values, share = {}, 0.0
    for (role, _), r in zip(order, results):
        if not r.ok:
            raise SystemExit(f"a round failed ({r.failure}): {r.outputs.get('stderr_tail', '')}")
        values[role] = metric_value(r, METRIC_CPU_PATH)
        if role == "B":
            share = sum(v for name, v in r.cp_share.items() if kernel in name)
    return seconds, values["B"], values["C"], share


def summary(pairs: list[tuple[float, float, float, float]]) -> dict:
    seconds = sorted(p[0] for p in pairs)
    b, c = [p[1] for p in pairs], [p[2] for p in pairs]
    shares = sorted(p[3] for p in pairs)
    return {"seconds": seconds[len(seconds) // 2], "spread": acc.paired_spread(b, c), "mean_cp_ms": sum(b) / len(b) / 1e6,
            "share": shares[len(shares) // 2]}


def whole_runner(backend, source: Path, project, work: Path):
    if project is None:
        runner = SourceFile(backend, rounds(backend, work, program_args=[]), flags=[], build_timeout_s=900, program_args=[],
                            run_template=None)
        return runner, source
    build, run = project
    bin_dir = work / "bin"
    runner = ProjectTree(backend, rounds(backend, work, program_args=[], project_run=run, env=build_environment(backend, bin_dir)),
                         {"root": str(source), "build": build, "run": run, "sources": []}, flags=[], build_timeout_s=900,
                         run_dir=work)
    tree = work / "tree"
    copy_files(source, project_files(source), tree)
    return runner, tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--passes", default="10,40", help="replay passes a round, comma separated")
    parser.add_argument("--only", help="only the program whose name starts with this")
    args = parser.parse_args()
    passes = [int(p) for p in args.passes.split(",")]
    backend = HostBackend()
    pairing, how = resolve_pairing("auto", backend)
    together = pairing == PAIRING_TOGETHER
    print(f"host backend, {args.pairs} pairs each, pairs run {pairing} ({how}); metric {METRIC_CPU_PATH}")
    rows = []
    for name, source, kernel, project in PROGRAMS:
        if args.only and not name.startswith(args.only):
            continue
        with tempfile.TemporaryDirectory(prefix="bench_replay-") as tmp:
            work = Path(tmp)
            repro = work / "repro"
            request = IsolateRequest(source=None if project else source, project=source if project else None,
                                     build=project[0] if project else None, run=project[1] if project else None,
                                     kernel=kernel, out=repro)
            t0 = time.monotonic()
            run_isolate(request, backend="host")
            isolate_s = time.monotonic() - t0
            whole, src = whole_runner(backend, source, project, work / "whole")
            measured = {"whole program": (whole, (whole.build(src, work / "whole" / "a"), whole.build(src, work / "whole" / "b")))}
            reproducer = read_manifest(repro)
            for n in passes:
                replay = ReplayRunner(backend, rounds(backend, work, program_args=replay_args(repro, n)), reproducer,
                                      flags=[], build_timeout_s=900, passes=n)
                if n == passes[0]:
                    exes = (replay.build(reproducer.kernel_file, work / "replay" / "a"),
                            replay.build(reproducer.kernel_file, work / "replay" / "b"))
                measured[f"replay, {n} passes"] = (replay, exes)
            pairs: dict[str, list] = {what: [] for what in measured}
            for i in range(args.pairs):  # alternating: every way meets the same machine
                for what, (runner, exes) in measured.items():
                    pairs[what].append(one_pair(runner, exes, work / "rounds" / what.replace(" ", "_").replace(",", ""), i,
                                                together, kernel))
            rows.append((name, kernel, isolate_s, {what: summary(p) for what, p in pairs.items()}))
            print(f"  {name}: done", flush=True)
    print()
    print("| program | kernel | isolate s | measured | s/pair | paired spread | path ms | kernel's share | "
          "spread on the kernel | s per decision |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, kernel, isolate_s, results in rows:
        def per_decision(r: dict) -> float:
            return r["seconds"] * (r["spread"] / max(r["share"], 1e-9)) ** 2
        base = per_decision(results["whole program"])
        for what, r in results.items():
            print(f"| {name} | {kernel} | {isolate_s:.0f} | {what} | {r['seconds']:.2f} | {r['spread'] * 100:.2f} % | "
                  f"{r['mean_cp_ms']:.1f} | {r['share'] * 100:.0f} % | {r['spread'] / max(r['share'], 1e-9) * 100:.2f} % | "
                  f"{per_decision(r) / base:.3f}x |")


if __name__ == "__main__":
    main()
