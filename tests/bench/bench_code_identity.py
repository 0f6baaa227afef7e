"""Benchmark: does a rule's new spelling change the code the compilers make? (issue 61: simpler
diffs must leave the search's decisions as they were, or change them for a measured reason).

For every candidate of the kernels/ programs (loop x rule x factor), the rewritten source as this
checkout writes it and as another commit wrote it (--before-ref, git archive into a temporary
directory), each compiled twice: by the host backend's compiler (g++ -O2 -S after the host
pre-pass, the code the host search measures) and for gfx90a at -O3 through the AMD compile check.
Per candidate: whether the kernel's code is the same both ways. Where it is, the search measures
the same programs and can decide only as before; where it is not, the table says so.

Usage: .venv/bin/python tests/bench/bench_code_identity.py --before-ref main [--rules unroll_manual] [--files ...] [--jobs 2]
Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rendered(root: Path, files: list[Path], rule_names: list[str], out_dir: Path) -> dict[str, str]:
    """key -> path of the rewritten source, for the checkout at `root` (run in-process for this one)."""
    sys.path.insert(0, str(root))
    from rocm_perf.source import analyze_source, applicable_rules, load_rules, make_candidate

    rules = load_rules(root / "rewrites")
    out = {}
    for path in files:
        analysis = analyze_source(path)
        for loop in analysis.loops:
            for rule, factors in applicable_rules(loop, rules):
                if rule_names and rule.name not in rule_names:
                    continue
                for factor in factors:
                    key = f"{path.stem}|{loop.kernel}|{loop.id}|{rule.name}|{factor}"
                    target = out_dir / f"{len(out):04d}" / path.name
                    target.parent.mkdir(parents=True)
                    target.write_bytes(make_candidate(path, analysis, loop.id, rule.name, factor, rules=rules).rewritten)
                    out[key] = str(target)
    return out


def host_code(source: Path, kernel: str, work: Path) -> str | None:
    """The host backend's g++ assembly of the kernel's function (its own section of the .s)."""
    from rocm_perf.backends.host import DEFAULT_FLAGS, RUNTIME_DIR
    from rocm_perf.backends.host_sources import prepare_unit

    unit = prepare_unit(source, work, include_dirs=[source.parent], runtime_dir=RUNTIME_DIR)
    asm = work / "unit.s"
    done = subprocess.run(["g++", *DEFAULT_FLAGS, *unit.runtime_defines, "-I", str(RUNTIME_DIR), "-I", str(source.parent),
                           "-S", "-x", "c++", str(unit.compile_path), "-o", str(asm)], capture_output=True)  # fmt: skip
    if done.returncode != 0:
        return None
    text = asm.read_text(errors="replace")
    names = [m for m in re.findall(r"^(_Z\w+):", text, re.M) if kernel in m]
    blocks = []
    for name in names:
        start = text.index(f"\n{name}:")
        end = text.find(".cfi_endproc", start)
        blocks.append(text[start:end])
    return "\n".join(blocks) if blocks else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-ref", default="main")
    parser.add_argument("--rules", default="unroll_manual", help="comma-separated; '' for every rule")
    parser.add_argument("--files", nargs="*", type=Path, default=sorted((ROOT / "kernels").glob("*.cu")))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--host-programs", default="",
                        help="comma-separated program stems whose host code is compared too (default: all; a host "
                             "build of a corpus program takes tens of seconds, so a subset saves hours)")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    rule_names = [r for r in args.rules.split(",") if r]
    files = [f.resolve() for f in args.files]
    if args.out:  # the other checkout's half: render and say where
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "index.json").write_text(json.dumps(rendered(args.root, files, rule_names, args.out)))
        return 0
    from rocm_perf.backends.compile_check import compile_check_many
    from rocm_perf.backends.isa import kernel_instructions

    with tempfile.TemporaryDirectory(prefix="code-identity-") as tmp:
        tmp = Path(tmp)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before_ref], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp / "before-tree", filter="data")
        subprocess.run([sys.executable, __file__, "--root", str(tmp / "before-tree"), "--out", str(tmp / "before"),
                        "--rules", args.rules, "--files", *map(str, files)], check=True)  # fmt: skip
        before = json.loads((tmp / "before" / "index.json").read_text())
        after = rendered(ROOT, files, rule_names, tmp / "after")
        keys = [k for k in after if k in before]
        print(f"{len(keys)} candidates in both; compiling {4 * len(keys)} builds", file=sys.stderr)

        def host_pair(key: str) -> tuple[str, bool | None]:
            kernel = key.split("|")[1]
            codes = []
            for side, paths in (("b", before), ("a", after)):
                work = tmp / "host" / side / Path(paths[key]).parent.name
                work.mkdir(parents=True)
                codes.append(host_code(Path(paths[key]), kernel, work))
            return key, None if None in codes else codes[0] == codes[1]

        host_keys = [k for k in keys if not args.host_programs or k.split("|")[0] in args.host_programs.split(",")]
        with ThreadPoolExecutor(args.jobs) as pool:
            host = dict(pool.map(host_pair, host_keys))
        sources = [Path(before[k]) for k in keys] + [Path(after[k]) for k in keys]
        reports = compile_check_many(sources, jobs=args.jobs, keep_isa=True)
    amd = {}
    for i, key in enumerate(keys):
        kernel = key.split("|")[1]
        pair = []
        for report in (reports[i], reports[len(keys) + i]):
            mangled = next((k.mangled for k in report.kernels if kernel in k.mangled), None) if report.ok else None
            pair.append(kernel_instructions(report.isa or "").get(mangled) if mangled else None)
        amd[key] = None if None in pair else pair[0] == pair[1]
    word = {True: "same", False: "differs", None: "not built", "": "not compared"}
    print(f"| candidate ({args.before_ref} -> this checkout) | host g++ code | gfx90a code |")
    print("|---|---|---|")
    for key in keys:
        program, _, loop_id, rule, factor = key.split("|")
        print(f"| {program} {loop_id} {rule} x{factor} | {word[host.get(key, '')]} | {word[amd[key]]} |")
    print()
    for name, table in (("host g++", host), ("gfx90a", amd)):
        counts = {w: sum(1 for v in table.values() if word[v] == w) for w in word.values() if w != "not compared"}
        print(f"- {name}: " + ", ".join(f"{n} {w}" for w, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
