"""Benchmark: CPU per candidate build on the host backend, with the whole runtime compiled in each
build and with the runtime prebuilt (host_prebuilt.py), over the 12 kernels/ programs and the make
project of tests/data/projects.

Per program: `HostBackend.build` with ROCM_PERF_PREBUILT_RUNTIME=0 (the runtime's headers parsed
and its functions compiled again, as before), then with the prebuilt runtime once its cache entry
exists (the entry's making is timed apart: it happens once per compiler and flags, at the
second build with them). CPU seconds
are the compiler's (children's user + system, the figure that means something on a shared
machine). Both programs are run; their output must be the same. The make project is built with
the backend's hipcc wrapper (three objects and a link; the precompiled header only) both ways.

    .venv/bin/python tests/bench/bench_host_build.py [--only softmax ...]

Issue 59's goal is 3x less CPU per build.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.backends.host_toolchain import host_build_environment  # noqa: E402


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_cpu(argv: list[str], cwd: Path | None = None, env: dict | None = None) -> float:
    before = children_cpu()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:3])}...: {done.stderr[-400:]}")
    return children_cpu() - before


def build_cpu(backend: HostBackend, source: Path, out: Path, prebuilt: bool):
    os.environ["ROCM_PERF_PREBUILT_RUNTIME"] = "1" if prebuilt else "0"
    before = children_cpu()
    program = backend.build(source, out)
    return children_cpu() - before, program


def output_of(program) -> str:
    done = subprocess.run([str(program.executable)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "ROCM_PERF_HOST_THREADS": "1"})
    return f"{done.returncode}\n{done.stdout}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    programs = sorted((ROOT / "kernels").glob("*.cu"))
    if args.only:
        programs = [p for p in programs if p.stem in args.only]
    backend = HostBackend()
    work = Path(tempfile.mkdtemp(prefix="bench-host-build-"))
    os.environ["ROCM_PERF_CACHE_DIR"] = str(work / "cache")  # a cold cache: the entries' making is seen
    print(f"compiler: {backend.compiler}; CPU s = the compiler's user + system")
    print(f"| program | whole runtime (s) | prebuilt (s) | less | same output | entry made in (s) |")
    print("|---|---:|---:|---:|---|---:|")
    totals = [0.0, 0.0]
    entries = 0
    build_cpu(backend, programs[0], work / "mark", prebuilt=True)  # the first build with these flags makes none
    for source in programs:
        whole, program = build_cpu(backend, source, work / source.stem / "whole", prebuilt=False)
        made, _ = build_cpu(backend, source, work / source.stem / "first", prebuilt=True)
        now = len(list((work / "cache" / "host-pch").iterdir()))
        made_in = f"{made:.2f}" if now > entries else ""
        entries = now
        fast, prebuilt = build_cpu(backend, source, work / source.stem / "prebuilt", prebuilt=True)
        same = output_of(program) == output_of(prebuilt)
        totals[0] += whole
        totals[1] += fast
        print(f"| {source.stem} | {whole:.2f} | {fast:.2f} | {whole / fast:.1f}x | {'yes' if same else 'NO'} | {made_in} |",
              flush=True)
    print(f"| total | {totals[0]:.2f} | {totals[1]:.2f} | {totals[0] / max(totals[1], 1e-9):.1f}x | | |")

    # The make project through the backend's hipcc wrapper: three objects and a link.
    for prebuilt in (False, True, True):
        os.environ["ROCM_PERF_PREBUILT_RUNTIME"] = "1" if prebuilt else "0"
        project = work / f"make_app_{prebuilt}"
        shutil.rmtree(project, ignore_errors=True)
        shutil.copytree(ROOT / "tests" / "data" / "projects" / "make_app", project)
        env = {**os.environ, **host_build_environment(work / "bin")}
        cpu = run_cpu(["make", "-s", "app"], cwd=project, env=env)
        print(f"make_app (3 sources, wrapper, {'precompiled header' if prebuilt else 'whole runtime'}): {cpu:.2f} s of CPU")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
