"""Benchmark: CPU per candidate build on the host backend, and what a precompiled header of the host
runtime would save, over the 12 kernels/ programs and the make project of tests/data/projects.

Per program: the backend's build as it is (HostBackend.build: pre-pass, then one compiler run),
its compiler's CPU seconds (children's user + system, the figure that means something on a
shared machine); then the same compiler command with a precompiled `hip/hip_runtime.h` made once
for those flags (`-include` + GCC's `.gch`, `-Winvalid-pch` to be told if it is not used) and
whether the program's code is the same (optimize/build_cache.code_identity). Then the cost split
of one build: `-fsyntax-only` (the parse) against the full compile. The make project is built
with the backend's hipcc wrapper (three objects and a link) for its total.

    .venv/bin/python tests/bench/bench_host_build.py [--only softmax ...]

Issue 59's goal is 3x less CPU per build; this measures the lever it names first (a PCH) and
where the rest of the time goes (the runtime's own functions, compiled again in every build).
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host import RUNTIME_DIR, HostBackend  # noqa: E402
from rocm_perf.backends.host_toolchain import host_build_environment  # noqa: E402
from rocm_perf.optimize.build_cache import code_identity  # noqa: E402


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_cpu(argv: list[str], cwd: Path | None = None, env: dict | None = None) -> float:
    before = children_cpu()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:3])}...: {done.stderr[-400:]}")
    return children_cpu() - before


def compile_argv(build_log: Path) -> list[str]:
    first = build_log.read_text().splitlines()[0]
    assert first.startswith("$ "), first
    return shlex.split(first[2:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    programs = sorted((ROOT / "kernels").glob("*.cu"))
    if args.only:
        programs = [p for p in programs if p.stem in args.only]
    backend = HostBackend()
    work = Path(tempfile.mkdtemp(prefix="bench-host-build-"))
    pch_dir = work / "pch"
    pch_dir.mkdir()
    made: dict[tuple, Path] = {}
    print(f"compiler: {backend.compiler}; CPU s = the compiler's user + system")
    print(f"{'program':18} {'build CPU s':>11} {'with PCH':>9} {'ratio':>6} {'same code':>9} {'PCH made in':>11}")
    totals = [0.0, 0.0]
    for source in programs:
        before = children_cpu()
        program = backend.build(source, work / source.stem)
        plain = children_cpu() - before
        argv = compile_argv(program.build_log)
        i = argv.index("-x")
        flags = tuple(a for a in argv[1:i] if not a.startswith("-I") and a != str(RUNTIME_DIR)
                      and a != str(source.parent))
        made_in = ""
        if flags not in made:
            header = pch_dir / f"set{len(made)}" / "rocm_perf_pch.h"
            header.parent.mkdir()
            header.write_text("#include <hip/hip_runtime.h>\n")
            made_in = f"{run_cpu([argv[0], *flags, '-I', str(RUNTIME_DIR), '-x', 'c++-header', str(header), '-o', str(header) + '.gch']):.2f}"
            made[flags] = header
        exe = Path(str(program.executable) + ".pch")
        out = argv.index("-o")
        pch_argv = [*argv[:i], "-include", str(made[flags]), "-Winvalid-pch", *argv[i:]]
        pch_argv[pch_argv.index("-o") + 1] = str(exe)
        del out
        with_pch = run_cpu(pch_argv)
        same = code_identity(exe) == code_identity(program.executable)
        totals[0] += plain
        totals[1] += with_pch
        print(f"{source.stem:18} {plain:11.2f} {with_pch:9.2f} {plain / with_pch:6.2f} {'yes' if same else 'NO':>9} "
              f"{made_in:>11}", flush=True)
    print(f"{'total':18} {totals[0]:11.2f} {totals[1]:9.2f} {totals[0] / max(totals[1], 1e-9):6.2f}")

    # Where one build's time goes: the parse alone, against the whole compile.
    source = programs[0]
    argv = compile_argv(work / source.stem / "build.log")
    i = argv.index("-x")
    syntax = [*argv[:i], "-fsyntax-only", "-x", "c++", argv[i + 2]]
    print(f"\n{source.stem}: parse only (-fsyntax-only) {run_cpu(syntax):.2f} s of a {run_cpu(argv):.2f} s build")

    # The make project through the backend's hipcc wrapper: three objects and a link.
    project = work / "make_app"
    shutil.copytree(ROOT / "tests" / "data" / "projects" / "make_app", project)
    env = {**os.environ, **host_build_environment(work / "bin")}
    print(f"make_app (3 sources, wrapper): {run_cpu(['make', '-s', 'app'], cwd=project, env=env):.2f} s of CPU")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
