"""Every program of ROCm/rocm-examples' HIP-Basic and Applications folders on the host backend:
built unmodified through its own build files, run, and its self-check read. With `--set
libraries`, the library examples instead (Libraries/rocThrust, hipCUB, hipBLAS, hipRAND and
rocRAND, the folders that exist), and with `--via project` each program goes through
`rocm-perf profile --project <its folder> --build make --run ./<program>`, as a user would run
it: only the folder is copied, and what its Makefile reads outside it (../../../Common) must be
found by the tool (docs/real-programs.md).

    .venv/bin/python tests/bench/bench_rocm_examples.py --examples /tmp/rocm-examples [--only saxpy ...]
    .venv/bin/python tests/bench/bench_rocm_examples.py --examples /tmp/rocm-examples --set libraries --via project

`--examples` is a checkout of https://github.com/ROCm/rocm-examples (MIT; not part of this
repository), e.g. `git archive HEAD HIP-Basic Applications Common | tar -x -C /tmp/rocm-examples`
of a clone. The folders are copied to a scratch directory first (`--work`), so the checkout is
never written. Each program builds with its own CMakeLists.txt (the rocm-perf host toolchain:
CMAKE_TOOLCHAIN_FILE and the hipcc-compatible wrapper, as `optimize --project --backend host`
sets them) and with its Makefile where it has no CMakeLists.txt or its CMake configure step fails;
then its program runs from the build directory with no arguments.

Columns: `builds` and `runs` (exit 0 within --timeout), `self-check`: `pass` when the program
validates its results against its own CPU computation and says so ("Validation passed",
"PASSED"), `FAIL` when it says it failed (or stays silent though its source validates), `skip` when
it leaves its work out because the device lacks something (a second GPU) and says so, `none`
when the program checks nothing (hello_world, device_query, bandwidth, ...). `why` is the first line of the
build's or run's complaint (for the refused features: the feature and the line, from the
compiler wrapper). Nothing is asserted here: this is evidence, printed as a table.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host_toolchain import host_build_environment  # noqa: E402

FOLDERS = ("HIP-Basic", "Applications")
LIBRARY_FOLDERS = ("rocThrust", "hipCUB", "hipBLAS", "hipRAND", "rocRAND")  # under Libraries/
# What the program prints when its own validation passes or fails (rocm-examples' wording).
PASSED = re.compile(r"validation passed|\bPASSED\b", re.IGNORECASE)
FAILED = re.compile(r"validation failed|\bFAILED\b|\bfailed\b", re.IGNORECASE)
# A source that checks its results: it prints one of the above (directly or through Common's
# report_validation_result). An exit code alone is not a check: the examples also exit non-zero
# on a bad argument or a failed HIP call.
CHECKS = re.compile(r"Validation passed|PASSED|report_validation_result|root-mean-square error")
# convolution prints the RMS difference to its CPU reference instead of a verdict: 0 is a pass.
RMS = re.compile(r"root-mean-square error of the difference .* is ([-+0-9.eE]+|nan|inf)")
# A program that leaves out what this device lacks says so (texture support, a second GPU).
SKIPS = re.compile(r"^.*(not supported|requires at least).*$", re.MULTILINE)


@dataclass
class Outcome:
    program: str
    how: str = ""  # cmake | make | (nothing: no build file)
    builds: bool = False
    runs: bool = False
    check: str = "-"  # pass | FAIL | none | -
    why: str = ""
    build_s: float = 0.0
    run_s: float = 0.0


def first_complaint(text: str) -> str:
    """The line that says what went wrong: the wrapper's refusal, a compiler or CMake error."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for pattern in (r"host backend.*(cannot|not supported)|rocm-perf hipcc: (?!note)", r"\berror\b", r"CMake Error", r"Can't|No such file|not found",
                    r"\*\*\*", r"[Ff]ail"):
        for i, line in enumerate(lines):
            if re.search(pattern, line):
                if line.startswith("CMake Error") and i + 1 < len(lines):
                    line = f"{line} {lines[i + 1]}"
                return re.sub(r"\s+", " ", line)[:160]
    return (lines[-1] if lines else "")[:160]


def run(cmd: list[str] | str, cwd: Path, env: dict, timeout: float) -> tuple[int, str, float]:
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, shell=isinstance(cmd, str), capture_output=True, text=True,
                           errors="replace", timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return -9, out + f"\ntimed out after {timeout:.0f} s", time.monotonic() - start


def example_name(folder: Path) -> str:
    """The program a build file makes: CMake's `set(example_name ...)` or make's `EXAMPLE :=`."""
    for name, pattern in (("CMakeLists.txt", r"set\(example_name\s+([\w.-]+)\)"), ("Makefile", r"^EXAMPLE\s*:?=\s*(\S+)")):
        path = folder / name
        if path.is_file():
            m = re.search(pattern, path.read_text(errors="replace"), re.MULTILINE)
            if m:
                return m.group(1)
    return folder.name


def find_program(build: Path, name: str) -> Path | None:
    for path in sorted(build.rglob(name)):
        if path.is_file() and os.access(path, os.X_OK) and "CMakeFiles" not in path.parts:
            return path
    return None


def build_one(folder: Path, build: Path, env: dict, timeout: float, out: Outcome, reuse: bool = False,
              prefer: str = "cmake") -> Path | None:
    """Build with CMake, or make when there is no CMakeLists.txt or CMake cannot configure it
    (`prefer="make"`: the Makefile wherever there is one)."""
    name = example_name(folder)
    build.parent.mkdir(parents=True, exist_ok=True)  # the logs' place, whichever build file is used
    if reuse:  # a --work directory of an earlier run: its programs as they were built
        for where, how in ((build, "cmake"), (folder, "make")):
            program = find_program(where, name) if where.is_dir() else None
            if program is not None:
                out.how = f"{how} (reused)"
                return program
    tried = []
    if (folder / "CMakeLists.txt").is_file() and not (prefer == "make" and (folder / "Makefile").is_file()):
        code, log, s1 = run(["cmake", "-S", str(folder), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"], folder, env, timeout)
        out.build_s += s1
        if code == 0:
            out.how = "cmake"
            code, log, s2 = run(["cmake", "--build", str(build)], folder, env, timeout)
            out.build_s += s2
            (build.parent / f"{folder.name}.build.log").write_text(log)
            if code != 0:
                out.why = first_complaint(log)
                return None
            return find_program(build, name)
        tried.append(f"cmake: {first_complaint(log)}")
    if (folder / "Makefile").is_file():
        out.how = "make"
        code, log, s = run(["make", "-C", str(folder)], folder, env, timeout)
        out.build_s += s
        (build.parent / f"{folder.name}.build.log").write_text(log)
        if code != 0:
            out.why = "; ".join(tried + [first_complaint(log)])
            return None
        return find_program(folder, name)
    out.why = "; ".join(tried) or "no CMakeLists.txt or Makefile"
    return None


def check_one(folder: Path, work: Path, env: dict, build_timeout: float, run_timeout: float, reuse: bool = False,
              prefer: str = "cmake") -> Outcome:
    out = Outcome(f"{folder.parent.name}/{folder.name}")
    program = build_one(folder, work / "build" / folder.parent.name / folder.name, env, build_timeout, out, reuse, prefer)
    if program is None:
        out.why = out.why or "the build made no program"
        return out
    out.builds = True
    code, log, out.run_s = run([str(program)], program.parent, env, run_timeout)
    (work / "build" / folder.parent.name / f"{folder.name}.run.log").write_text(log)
    out.runs = code == 0
    checks = any(CHECKS.search(p.read_text(errors="replace")) for p in folder.glob("*.[hc]*") if p.is_file())
    if not out.runs:
        out.why = f"exit {code}: {first_complaint(log)}"
        out.check = "FAIL" if checks else "-"
    elif PASSED.search(log) and not re.search(r"validation failed|\bFAILED\b", log, re.IGNORECASE):
        out.check = "pass"
    elif FAILED.search(log):
        out.check, out.why = "FAIL", first_complaint(log)
    elif RMS.search(log):
        rms = float(RMS.search(log).group(1))
        out.check, out.why = ("pass", "RMS difference 0") if rms == 0 else ("FAIL", f"RMS difference {rms:g}")
    elif SKIPS.search(log):
        out.check, out.why = "skip", f"the program says: {SKIPS.search(log).group(0).strip()}"
    elif checks:
        out.check, out.why = "FAIL", "exit 0 without the validation's message"
    else:
        out.check = "none"
    return out


def check_log(out: Outcome, folder: Path, code: int, log: str) -> Outcome:
    """The self-check column from a run's exit status and output (as check_one reads it)."""
    out.runs = code == 0
    checks = any(CHECKS.search(p.read_text(errors="replace")) for p in folder.glob("*.[hc]*") if p.is_file())
    if not out.runs:
        out.why = out.why or f"exit {code}: {first_complaint(log)}"
        out.check = "FAIL" if checks else "-"
    elif PASSED.search(log) and not re.search(r"validation failed|\bFAILED\b", log, re.IGNORECASE):
        out.check = "pass"
    elif FAILED.search(log):
        out.check, out.why = "FAIL", first_complaint(log)
    elif checks:
        out.check, out.why = "FAIL", "exit 0 without the validation's message"
    else:
        out.check = "none"
    return out


def check_project(folder: Path, work: Path, build_timeout: float, run_timeout: float) -> Outcome:
    """One program through `rocm-perf profile --project FOLDER --build make --run ./PROGRAM`."""
    out = Outcome(f"{folder.parent.name}/{folder.name}", how="profile --project")
    if not (folder / "Makefile").is_file():
        out.why = "no Makefile"
        return out
    runs = work / "runs" / folder.name
    argv = [sys.executable, "-c", "import sys; from rocm_perf.cli import main; sys.exit(main())", "profile", "--project",
            str(folder), "--build", "make", "--run", f"./{example_name(folder)}", "--backend", "host", "--out", str(runs),
            "--timeout", str(max(build_timeout, run_timeout))]
    code, log, seconds = run(argv, work, {**os.environ, "PYTHONPATH": str(ROOT)}, build_timeout + run_timeout + 60)
    (work / f"{folder.name}.profile.log").write_text(log)
    run_dir = next((p for p in sorted(runs.glob("*")) if p.is_dir()), None) if runs.is_dir() else None
    build_log = run_dir / "baseline" / "build.log" if run_dir else None
    out.builds = bool(run_dir and (run_dir / "baseline" / "round_1").is_dir())
    out.build_s = seconds
    outside = re.search(r"the build reads (\d+) file\(s\) outside the project", log)
    note = f"{outside.group(1)} outside files found; " if outside else ""
    if not out.builds:
        line = next((l for l in log.splitlines() if l.startswith("rocm-perf: error:")), "") or first_complaint(log)
        out.why = note + (first_complaint(build_log.read_text(errors="replace")) if build_log and build_log.is_file()
                          and "build command" in line else line)[:200]
        return out
    program_output = "\n".join(p.read_text(errors="replace") for p in (run_dir / "baseline" / "round_1").rglob("*.log"))
    out = check_log(out, folder, 0 if code == 0 else code, program_output + "\n" + log)
    out.why = (note + out.why).rstrip("; ")
    return out


def table(rows: list[Outcome]) -> str:
    yes = {True: "yes", False: "no"}
    lines = ["| program | build | builds | runs | self-check | build s | run s | why not |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.program} | {r.how or '-'} | {yes[r.builds]} | {yes[r.runs] if r.builds else '-'} | {r.check} | "
                     f"{r.build_s:.0f} | {r.run_s:.1f} | {r.why.replace('|', '/')} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=Path, required=True, help="a checkout of ROCm/rocm-examples")
    ap.add_argument("--work", type=Path, help="scratch directory (default: a new temporary one, removed afterwards)")
    ap.add_argument("--only", nargs="*", default=[], help="program folder names to run (default: all)")
    ap.add_argument("--prefer", choices=("cmake", "make"), default="cmake",
                    help="the build file to use where a program has both (default: its CMakeLists.txt)")
    ap.add_argument("--reuse", action="store_true", help="with --work: run the programs an earlier run built there")
    ap.add_argument("--warp-size", type=int, default=64)
    ap.add_argument("--build-timeout", type=float, default=900)
    ap.add_argument("--timeout", type=float, default=300, help="seconds a program may run")
    ap.add_argument("--set", choices=("basic", "libraries"), default="basic",
                    help="basic: HIP-Basic and Applications (default); libraries: Libraries/rocThrust, hipCUB, hipBLAS, "
                    "hipRAND, rocRAND")
    ap.add_argument("--via", choices=("build-files", "project"), default="build-files",
                    help="build-files: the program's own CMake or make build in a copy of the checkout (default); "
                    "project: rocm-perf profile --project on the program's folder alone")
    args = ap.parse_args()
    tops = FOLDERS if args.set == "basic" else ("Libraries",)
    missing = [f for f in (*tops, "Common") if not (args.examples / f).is_dir()]
    if missing:
        ap.error(f"{args.examples}: not a rocm-examples checkout (no {', '.join(missing)})")

    scratch = args.work or Path(tempfile.mkdtemp(prefix="rocm-examples-"))
    scratch.mkdir(parents=True, exist_ok=True)
    tree = scratch / "tree"  # the programs include ../../Common: the folders keep their places
    if not tree.exists():
        for f in (*tops, "Common"):
            shutil.copytree(args.examples / f, tree / f)
    env = {**os.environ, **host_build_environment(scratch / "bin", args.warp_size)}
    if args.set == "basic":
        groups = [tree / f for f in FOLDERS]
    else:
        absent = [f for f in LIBRARY_FOLDERS if not (tree / "Libraries" / f).is_dir()]
        if absent:
            print(f"note: no Libraries/{', Libraries/'.join(absent)} in this checkout", file=sys.stderr)
        groups = [tree / "Libraries" / f for f in LIBRARY_FOLDERS if (tree / "Libraries" / f).is_dir()]
    folders = [d for g in groups for d in sorted(g.iterdir()) if d.is_dir() and (not args.only or d.name in args.only)]
    rows = []
    for i, folder in enumerate(folders, 1):
        print(f"[{i}/{len(folders)}] {folder.parent.name}/{folder.name} ...", file=sys.stderr, flush=True)
        if args.via == "project":
            rows.append(check_project(folder, scratch, args.build_timeout, args.timeout))
        else:
            rows.append(check_one(folder, scratch, env, args.build_timeout, args.timeout, args.reuse, args.prefer))
        r = rows[-1]
        print(f"    builds={r.builds} runs={r.runs} self-check={r.check} {r.why}", file=sys.stderr, flush=True)
    print(table(rows))
    passed = sum(r.check == "pass" for r in rows)
    print(f"\n{len(rows)} programs: {sum(r.builds for r in rows)} build, {sum(r.runs for r in rows)} run, "
          f"{passed} pass their self-check, {sum(r.check == 'none' for r in rows)} run without one, "
          f"{sum(r.check == 'skip' for r in rows)} skip their work, {sum(r.check == 'FAIL' for r in rows)} fail it")
    if args.work is None:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
