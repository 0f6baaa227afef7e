"""`rocm-perf try`: is my change faster, and is it still correct?

The user's own changes go through optimize's whole pipeline as candidates of the `patch` proposer
(and of `tunables` for --tune): guards, build, the AMD compile check where hipcc is present, the
outputs on every timed round, the run's A/A noise floor, the interleaved race and its fresh
confirmation (several patches are alternatives, raced with the family-wise error held), the final
check, the report, `review`, and `apply` of an accepted patch. The run directory is an optimize
run's, with the patches recorded in its ledger.

Bad input is refused before anything is written, one line each: a patch for another file, one that
does not apply (its hunk and line), a binary or empty patch, an unknown tunable, a value that is
not an integer.

Exit codes: 0 when every candidate got a verdict (accepted or not), 1 with --fail-unless-faster
when none was accepted, 2 on errors, 130 when stopped (resume with `--resume RUN`).

`try_patch(...)` is the same as a Python function taking the patch's text (the MCP server's
`try_patch` tool starts it as a background job): it returns the run directory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.artifacts import replay_words
from rocm_perf.optimize.command import (EXIT_STOPPED, check_tunables, drive_run, project_plan, rewritten_file,
                                        start_or_resume)
from rocm_perf.optimize.ledger import Ledger
from rocm_perf.optimize.options import OptimizeOptions, add_optimize_arguments, options_from_args
from rocm_perf.optimize.proposers.patch import CANDIDATES_KEY, patch_record, variant_record
from rocm_perf.source.patch_apply import apply_patch, parse_patch, patch_targets

EXIT_NOT_FASTER = 1


def add_try_arguments(p: argparse.ArgumentParser) -> None:
    """`try`'s command line: optimize's options (not the unroll rules' own) and the changes to try."""
    add_optimize_arguments(p, command="try")
    p.add_argument("--patch", dest="patch_files", action="append", default=[], metavar="FILE.diff",
                   help="a unified diff of the source (git diff, diff -u; paths relative to the source's folder or "
                   "the project, a/ b/ prefixes accepted); repeatable: several patches are alternatives, raced "
                   "against each other")
    p.add_argument("--variant", dest="variant_files", action="append", default=[], metavar="OTHER.cu",
                   help="a whole second version of the source (repeatable)")
    p.add_argument("--fail-unless-faster", action="store_true",
                   help="exit 1 when no candidate was accepted (for CI; errors exit 2)")


@dataclass
class TryResult:
    """What a try came to: its run directory, its summary (None when it was stopped) and its exit code."""

    run_dir: Path
    summary: dict | None
    exit_code: int


def _unique(name: str, taken: set[str]) -> str:
    """A candidate's name, made unique in its run (two patches named fix.diff from two folders)."""
    out, n = name, 1
    while out in taken:
        n += 1
        out = f"{Path(name).stem}-{n}{Path(name).suffix}"
    taken.add(out)
    return out


def load_candidates(opt: OptimizeOptions, patches: list[tuple[str, bytes]], variants: list[tuple[str, bytes]]) -> list[dict]:
    """The changes to try as the ledger records them, each checked to apply to the user's current
    file (RocmPerfError, one line, before anything is written)."""
    source = Path(opt.source) if opt.project else rewritten_file(opt)
    tree, sources = (source, project_plan(opt)[1]) if opt.project else (None, [])
    taken: set[str] = set()
    records = []
    for name, text in patches:
        patch = parse_patch(text, name)
        rel = _patch_target(patch, source, tree, sources, opt)
        current = (tree / rel) if tree is not None else source
        try:
            data = current.read_bytes()
        except OSError as e:
            raise RocmPerfError(f"{current}: cannot read ({e.strerror or e})") from e
        apply_patch(patch, data, rel or source.name)  # does it apply to the file as it is now
        records.append(patch_record(_unique(name, taken), text, rel))
    for name, data in variants:
        if opt.project:
            raise RocmPerfError(f"{name}: --variant goes with one source file; for a project give a --patch")
        if not data.strip():
            raise RocmPerfError(f"{name}: an empty file; a variant is a whole second version of {source.name}")
        if b"\0" in data:
            raise RocmPerfError(f"{name}: a binary file; a variant is a whole second version of {source.name}")
        records.append({**variant_record(_unique(name, taken), data, ""), "_data": data})  # stored once the run exists
    return records


def _patch_target(patch, source: Path, tree: Path | None, sources: list[str], opt: OptimizeOptions) -> str:
    """patch_targets; for a reproducer, a patch may also name the original source it was captured
    from: the kernel file keeps the original's lines, so the patch applies to it as it would there."""
    try:
        return patch_targets(patch, source, tree=tree, candidates=sources)
    except RocmPerfError:
        if not opt.replay:
            raise
        from rocm_perf.reproducer import read_manifest

        original = Path(read_manifest(Path(opt.source)).origin["path"])
        try:
            return patch_targets(patch, original)
        except RocmPerfError:
            raise RocmPerfError(f"{patch.source}: a patch for another file ({patch.path}); the reproducer's kernel "
                                f"file is {source.name}, captured from {original}") from None


def _read(path: str, what: str) -> tuple[str, bytes]:
    try:
        return Path(path).name, Path(path).read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read the {what} ({e.strerror or e})") from e


def try_options(args: argparse.Namespace, patches: list[tuple[str, bytes]], variants: list[tuple[str, bytes]]) -> OptimizeOptions:
    """optimize's options for a try: its proposers (patch, and tunables for --tune, unless
    --proposers says otherwise) and its changes' names and sha256s (what makes two tries the same run)."""
    opt = options_from_args(args)
    if opt.resume:
        return opt
    source = Path(opt.source)
    if not (source.is_dir() if opt.project else source.is_file() or opt.replay):
        raise RocmPerfError(f"{source}: no such {'project directory' if opt.project else 'source file'}")
    declared = _declares_tunables(opt)
    if not patches and not variants and not opt.tune and not declared:
        raise RocmPerfError("try: give the change to measure: --patch FILE.diff, --variant OTHER.cu or --tune NAME=V1,V2 "
                            "(or declare a tunable in the source: `// rocm-perf: tune NAME V1 V2`)")
    proposers = opt.proposers or ((["patch"] if patches or variants else [])
                                  + (["tunables"] if opt.tune or (declared and not patches and not variants) else []))
    names = [f"{name}@{hashlib.sha256(data).hexdigest()[:16]}" for name, data in [*patches, *variants]]
    return replace(opt, proposers=proposers, patches=names)


def _declares_tunables(opt: OptimizeOptions) -> bool:
    """Whether the source (a project: one of its sources) declares a tunable with a comment."""
    from rocm_perf.source.tunables import declared_tunables

    files = [Path(opt.source) / rel for rel in project_plan(opt)[1]] if opt.project else [rewritten_file(opt)]
    return any(f.is_file() and declared_tunables(f.read_bytes(), f) for f in files)


def run_try(args: argparse.Namespace, *, patch_texts: list[tuple[str, bytes]] = (),
            write_report: Callable[[Path], None] | None = None) -> TryResult:
    """`rocm-perf try` (and try_patch): validate the changes, create or resume the run, drive it,
    return what it came to. `patch_texts`: (name, text) of patches handed in as text, beside the
    --patch files."""
    patches = [_read(p, "patch") for p in getattr(args, "patch_files", None) or []] + list(patch_texts)
    variants = [_read(p, "variant") for p in getattr(args, "variant_files", None) or []]
    display = try_options(args, patches, variants)
    records: list[dict] = []
    if not display.resume:
        records = load_candidates(display, patches, variants)
        check_tunables(display)

    def record(run_dir: Path, ledger: Ledger) -> None:
        for k, r in enumerate(records, start=1):
            if r["kind"] == "variant":  # the variant's bytes live in the run, as the source's copy does
                stored = f"candidates/{k}-{r['name']}"
                (run_dir / stored).parent.mkdir(parents=True, exist_ok=True)
                write_atomic(run_dir / stored, r.pop("_data"))
                r["path"] = stored
        with ledger.transaction():
            ledger.set(CANDIDATES_KEY, records)
            ledger.set("command", "try")

    run_dir, ledger, opt, backend, lock = start_or_resume(display, record=record)
    summary = drive_run(run_dir, ledger, opt, backend, lock=lock, write_report=write_report,
                        signals=threading.current_thread() is threading.main_thread())
    if summary is None:
        return TryResult(run_dir, None, EXIT_STOPPED)
    code = EXIT_NOT_FASTER if getattr(args, "fail_unless_faster", False) and not summary["accepted"] else 0
    return TryResult(run_dir, summary, code)


def verdict_lines(summary: dict, run_dir: Path | None = None) -> list[str]:
    """One line per candidate (accepted first, then the rejected in trial order) and the result line."""
    lines = []
    for t in summary["accepted"]:
        conf = t["evidence"].get("confirm", {})
        cp = conf.get("critical_path") or {}
        gain = f"{(1 / cp['estimate'] - 1) * 100:.1f} % faster" if cp.get("estimate") else "faster"
        lines.append(f"{t['label']}: ACCEPTED, {gain} ({conf.get('metric', '')} ratio {acc.interval_text(cp)} "
                     f"after {conf.get('rounds')} fresh pairs){_outputs_words(conf)}")
    for t in sorted(summary["rejected"], key=lambda t: t["id"]):
        detail = (t["detail"] or "").splitlines()[0] if t["detail"] else ""
        notes = "".join(f"; {n}" for n in (t.get("provenance") or {}).get("guard_notes") or [])
        lines.append(f"{t['label']}: rejected: {t['reason']}" + (f" ({detail[:200]})" if detail else "") + notes)
    for t in summary.get("open") or []:
        lines.append(f"{t['label']}: no verdict ({t['status']})")
    n = len(summary["accepted"]) + len(summary["rejected"]) + len(summary.get("carried") or [])
    accepted = summary["accepted"]
    if accepted:
        result = (f"result: {len(accepted)} of {n} candidate{'s' if n != 1 else ''} accepted: "
                  + ", ".join(t["label"] for t in accepted) + f"; write it to your file with `rocm-perf apply {run_dir or summary['run']}`")
    else:
        result = f"result: none of {n} candidate{'s' if n != 1 else ''} was proven faster"
    if summary.get("final_check"):
        fc = summary["final_check"]
        result += f"; original -> final ratio {acc.interval_text(fc)}"
    measured, said = replay_words(summary)
    if measured:  # a reproducer: the ratios are the kernel's; apply writes only what the whole program confirmed
        lines.append(f"measured on the replay: {measured}")
        if accepted:
            lines.append(f"on the whole program: {said}")
    return lines + [result]


def _outputs_words(conf: dict) -> str:
    """How the outputs were judged, for an accepted candidate's line."""
    out = conf.get("outputs") or {}
    criterion = out.get("criterion")
    words = ""
    if criterion and criterion != "bit-identical":
        words = (f"; outputs within {criterion} on {out.get('rounds_checked')} rounds (worst relative error "
                 f"{out.get('worst_rel', 0):.3g}, absolute {out.get('worst_abs', 0):.3g})")
    for note in out.get("guard_notes") or []:
        words += f"; {note}"
    return words


def run_try_command(args: argparse.Namespace, *, write_report: Callable[[Path], None] | None = None) -> int:
    """The CLI's `try`: run it, then print its verdicts (or summary.json with --json)."""
    result = run_try(args, write_report=write_report)
    if result.summary is None:
        return result.exit_code
    if getattr(args, "json", False):
        print(json.dumps(result.summary, indent=2, default=str))
    else:
        for line in verdict_lines(result.summary, result.run_dir):
            print(line)
        if not getattr(args, "quiet", False):
            print(f"\nevidence: {result.run_dir / 'report.md'}\nreview:   rocm-perf review {result.run_dir}")
    return result.exit_code


def try_patch(source: str | Path | None, patch: str | bytes, *, name: str = "patch.diff", project: str | Path | None = None,
              build: str | None = None, run: str | None = None, backend: str = "auto", tolerance: str | None = None,
              time_budget: str = "1h", out: str | Path = "runs", program_args: list[str] = (), extra: list[str] = (),
              write_report: Callable[[Path], None] | None = None) -> Path:
    """Try one patch given as text on a source (or a project with its build and run commands) and
    return the run directory once its verdict is in (summary.json there; RocmPerfError on bad
    input, nothing written then). `extra`: more `try` options as on its command line
    (`["--min-gain", "3%"]`). The program's own output goes nowhere: the run is quiet."""
    parser = argparse.ArgumentParser(prog="rocm-perf try")
    add_try_arguments(parser)
    parser.add_argument("--backend", default=backend)
    parser.add_argument("--warp-size", type=int, default=None)
    argv = [str(source)] if source is not None and project is None else []
    if project is not None:
        argv += ["--project", str(project), "--build", str(build or ""), "--run", str(run or "")]
    argv += ["--time-budget", str(time_budget), "--out", str(out), "--quiet", *extra]
    if tolerance:
        argv += ["--tolerance", tolerance]
    args = parser.parse_args(argv)
    args.program_args = list(program_args)
    args.command = "try"
    text = patch.encode("utf-8", "surrogateescape") if isinstance(patch, str) else bytes(patch)
    return run_try(args, patch_texts=[(name, text)], write_report=write_report).run_dir
