"""Benchmark: how big the rules' diffs are, this checkout against another commit (issue 61: diffs a
reviewer approves). Prints one table per rule over the kernels/ programs, and the candidates
whose size changed most.

For every candidate (loop x rule x factor) of every kernels/ program: the lines its diff adds and
removes. `--before-ref REF` runs this script of that commit's tree (git archive into a temporary
directory) for the same numbers there; without it only this checkout's are shown.

Usage: .venv/bin/python tests/bench/bench_diff_sizes.py [--before-ref main] [--json out.json]
Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sizes(root: Path) -> dict[str, dict]:
    """(program, loop, rule, factor) as one key -> {"added", "removed"} for the checkout at `root`."""
    sys.path.insert(0, str(root))
    from rocm_perf.source import analyze_source, applicable_rules, load_rules, make_candidate

    rules = load_rules(root / "rewrites")
    out = {}
    for path in sorted((ROOT / "kernels").glob("*.cu")):
        analysis = analyze_source(path)
        for loop in analysis.loops:
            for rule, factors in applicable_rules(loop, rules):
                for factor in factors:
                    diff = make_candidate(path, analysis, loop.id, rule.name, factor, rules=rules).diff.splitlines()
                    out[f"{path.stem}|{loop.id}|{rule.name}|{factor}"] = {
                        "added": sum(1 for l in diff if l.startswith("+") and not l.startswith("+++")),
                        "removed": sum(1 for l in diff if l.startswith("-") and not l.startswith("---"))}  # fmt: skip
    return out


def _before(ref: str) -> dict[str, dict]:
    with tempfile.TemporaryDirectory(prefix="diff-sizes-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        out = Path(tmp) / "sizes.json"
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--root", tmp, "--json", str(out)], check=True)
        return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-ref")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    after = sizes(args.root)
    if args.json:
        args.json.write_text(json.dumps(after))
        if args.root != ROOT:
            return 0
    before = _before(args.before_ref) if args.before_ref else {}
    for rule in sorted({k.split("|")[2] for k in after}):
        keys = [k for k in after if k.split("|")[2] == rule]
        print(f"\n## {rule}: lines added per candidate diff" + (f" ({args.before_ref} -> this checkout)" if before else ""))
        print("\n| program | candidates | added: total | mean | max | removed: total |")
        print("|---|---:|---:|---:|---:|---:|")
        for program in sorted({k.split("|")[0] for k in keys}):
            ks = [k for k in keys if k.startswith(program + "|")]

            def cell(field: str, fn) -> str:
                now = fn([after[k][field] for k in ks])
                if not before or any(k not in before for k in ks):
                    return f"{now:g}"
                return f"{fn([before[k][field] for k in ks]):g} -> {now:g}"

            mean = lambda v: round(statistics.mean(v), 1)  # noqa: E731
            print(f"| {program} | {len(ks)} | {cell('added', sum)} | {cell('added', mean)} | {cell('added', max)} | "
                  f"{cell('removed', sum)} |")  # fmt: skip
        ks = keys
        if before and all(k in before for k in ks):
            total_b, total_a = sum(before[k]["added"] for k in ks), sum(after[k]["added"] for k in ks)
            print(f"| all | {len(ks)} | {total_b} -> {total_a} | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
