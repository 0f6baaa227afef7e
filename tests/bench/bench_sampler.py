"""Host sampler benchmark: what sampling costs the kernels it measures (prints a table).

For each program, one `-g` build is run interleaved (U S U S ...) unsampled and sampled at each
rate, through the host backend as the optimizer runs it (1 block thread, traced). The metric is
the round's kernel time (SUM of dispatch durations from the trace, what the optimizer compares);
the overhead is the median of the paired ratios sampled/unsampled - 1, with a bootstrap 95 %
interval over the pairs. Sampling becomes the host backend's default only if the overhead is
under 3 % (backends/host.py SAMPLE_BY_DEFAULT).

    .venv/bin/python tests/bench/bench_sampler.py [--pairs 12] [--hz 1000,2000,4000] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.trace.host_samples_read import host_sample_files, read_host_samples  # noqa: E402
from rocm_perf.trace.load import load_trace  # noqa: E402

PROGRAMS = ["kernels/matmul_tiled.cu", "kernels/row_reduce.cu", "kernels/stencil2d.cu", "kernels/runtime_trip.cu",
            "tests/data/host/sampler_two_loops.cu"]


def kernel_ms(backend: HostBackend, exe: Path, out: Path) -> tuple[float, int]:
    result = backend.profile([str(exe)], out)
    if result.returncode != 0 or not result.databases:
        raise SystemExit(f"{exe} failed: {result.stderr[-500:]}")
    samples = sum(int(read_host_samples(p).metadata.get("samples") or 0) for p in host_sample_files(out))
    return load_trace(result.databases[0]).runtime_ns / 1e6, samples


def bootstrap(ratios: np.ndarray, rng: np.random.Generator, n: int = 4000) -> tuple[float, float]:
    medians = np.median(rng.choice(ratios, size=(n, len(ratios)), replace=True), axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--hz", default="1000,2000,4000")
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    rates = [int(x) for x in args.hz.split(",")]
    rng = np.random.default_rng(15)
    programs = [p for p in PROGRAMS if not args.only or Path(p).stem in args.only]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for program in programs:
            source = ROOT / program
            build = HostBackend(threads=1, sample=True).build(source, Path(tmp) / source.stem)
            plain = HostBackend(threads=1, sample=False)
            for hz in rates:
                sampled = HostBackend(threads=1, sample=True, sample_hz=hz)
                ratios, base, samp, counts = [], [], [], []
                for i in range(args.pairs):
                    order = [(plain, "u"), (sampled, "s")] if i % 2 == 0 else [(sampled, "s"), (plain, "u")]
                    values = {}
                    for backend, tag in order:
                        ms, n = kernel_ms(backend, build.executable, Path(tmp) / f"{source.stem}-{hz}-{i}-{tag}")
                        values[tag] = (ms, n)
                    base.append(values["u"][0])
                    samp.append(values["s"][0])
                    counts.append(values["s"][1] / (values["s"][0] / 1e3) if values["s"][0] else 0.0)
                    ratios.append(values["s"][0] / values["u"][0])
                r = np.array(ratios)
                lo, hi = bootstrap(r, rng)
                rows.append((source.stem, hz, statistics.median(base), statistics.median(samp),
                             100 * (float(np.median(r)) - 1), 100 * (lo - 1), 100 * (hi - 1), statistics.median(counts)))
                print(f"  {source.stem} @ {hz}/s done", file=sys.stderr, flush=True)
    print(f"\nHost sampler overhead ({args.pairs} interleaved pairs per row, kernel time from the trace, 1 block thread)\n")
    print("| program | rate /s | unsampled ms | sampled ms | overhead (median ratio) | 95 % interval | samples per kernel-second |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for name, hz, u, s, over, lo, hi, per_s in rows:
        print(f"| {name} | {hz} | {u:.1f} | {s:.1f} | {over:+.2f} % | [{lo:+.2f} %, {hi:+.2f} %] | {per_s:.0f} |")
    for hz in rates:
        overheads = [r[4] for r in rows if r[1] == hz]
        print(f"\n{hz}/s: median overhead over programs {statistics.median(overheads):+.2f} %, worst {max(overheads):+.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
