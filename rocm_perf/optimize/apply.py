"""`rocm-perf apply`: write a run's accepted result to the user's file (a project run: to each
changed file of the project; a reproducer's run: to the original program's source, once the whole
program confirmed it), only if it is still the one the run started from (same sha256), atomically,
with a backup; or print a patch."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.atomic_file import write_atomic
from rocm_perf.optimize.artifacts import changed_files, project_diff, unified_diff
from rocm_perf.optimize.command import find_run
from rocm_perf.optimize.ledger import open_ledger


def _chosen_baseline(run_dir: Path, ledger, trial: str | None):
    """The baseline to apply (all accepted changes, or those up to `trial`) and what it is."""
    bases = ledger.baselines()
    if not bases:
        raise RocmPerfError(f"{run_dir}: the run has no baseline yet; nothing to apply")
    if trial is None:
        chosen = bases[-1]
    else:
        matches = [b for b in bases if b.trial_id is not None and str(b.trial_id) == str(trial)]
        if not matches:
            accepted = [str(b.trial_id) for b in bases if b.trial_id is not None]
            raise RocmPerfError(f"{run_dir}: trial {trial} was not accepted (accepted: {', '.join(accepted) or 'none'})")
        chosen = matches[0]
    what = "the original (nothing accepted)" if chosen.trial_id is None else f"accepted changes up to trial {chosen.trial_id}"
    return chosen, what


def _target_source(run_dir: Path, ledger, trial: str | None) -> tuple[bytes, str]:
    """The source to apply (all accepted changes, or those up to `trial`) and what it is."""
    chosen, what = _chosen_baseline(run_dir, ledger, trial)
    return (run_dir / chosen.source_path).read_bytes(), what


def _apply_project(run_dir: Path, ledger, trial: str | None, patch: bool) -> int:
    """A project run: every changed file, each only if it still has the sha256 the run started
    from; all or none (a failed write restores the files already written)."""
    project = ledger.get("project")
    root = Path(project["root"])
    recorded = ledger.get("source_files") or {}
    chosen, what = _chosen_baseline(run_dir, ledger, trial)
    changes = changed_files(run_dir / ledger.baselines()[0].source_path, run_dir / chosen.source_path, project["sources"])
    if patch:
        sys.stdout.write(project_diff(changes))
        print(f"rocm-perf: a patch of {len(changes)} file(s) relative to {root}: apply it there with `git apply` "
              "(or `patch -p1`)", file=sys.stderr)
        return 0
    if not changes:
        print(f"{root}: {what}: no file to change")
        return 0
    current: dict[str, bytes] = {}
    for rel, _, after in changes:
        path = root / rel
        try:
            current[rel] = path.read_bytes()
        except OSError as e:
            raise RocmPerfError(f"{path}: cannot read ({e.strerror or e}); nothing was written") from e
    if all(current[rel] == after for rel, _, after in changes):
        print(f"{root}: already holds {what}")
        return 0
    # A file that already holds its result was written by an apply killed before it wrote them all:
    # it is neither moved nor backed up again (its .orig holds the original already).
    pending = [(rel, after) for rel, _, after in changes if current[rel] != after]
    moved = [rel for rel, _ in pending if hashlib.sha256(current[rel]).hexdigest() != recorded.get(rel)]
    if moved:
        raise RocmPerfError(
            f"{root}: {', '.join(moved)} changed since the run started; refusing to overwrite (nothing was written). "
            f"Use `rocm-perf apply {run_dir} --patch` for a diff to merge")
    written: list[str] = []
    try:
        for rel, _ in pending:
            path = root / rel
            write_atomic(path.with_name(f"{path.name}.{run_dir.name}.orig"), current[rel])
        for rel, after in pending:
            path = root / rel
            write_atomic(path, after, mode=path.stat().st_mode & 0o7777)
            written.append(rel)
    except OSError as e:
        for rel in written:  # all or none
            write_atomic(root / rel, current[rel])
        raise RocmPerfError(f"{root}: cannot write ({e.strerror or e}); the project's files are as they were") from e
    for rel, _, _ in changes:
        print(f"{root / rel}: wrote {what}; the original is in {root / rel}.{run_dir.name}.orig")
    return 0


def _holds_change(part_before: bytes, part_after: bytes, current: bytes) -> bool:
    """Whether `current` holds the change from `part_before` to `part_after` already (the change back carries onto it)."""
    from rocm_perf.reproducer import carry_change

    try:
        carry_change(part_after, part_before, current)
    except RocmPerfError:
        return False
    return True


def _apply_replay(run_dir: Path, ledger, trial: str | None, patch: bool) -> int:
    """A reproducer's run: its result carried from the reproducer's kernel file into the original
    source (line for line, reproducer.carry_change), written only once the whole program confirmed
    it (stages/whole_program.py) and only if the original is still what the kernel was captured from."""
    from rocm_perf.reproducer import carry_change

    replay = ledger.get("replay")
    origin = replay["origin"]
    user_file = Path(origin["path"])
    bases = ledger.baselines()
    if not bases:
        raise RocmPerfError(f"{run_dir}: the run has no baseline yet; nothing to apply")
    if trial is not None and not patch:
        raise RocmPerfError(f"{run_dir}: --trial: only the run's whole result is confirmed on the whole program; "
                            "use --patch for a diff of part of it")
    chosen, what = _chosen_baseline(run_dir, ledger, trial)
    try:
        current = user_file.read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{user_file}: cannot read ({e.strerror or e})") from e
    part_before, part_after = (run_dir / bases[0].source_path).read_bytes(), (run_dir / chosen.source_path).read_bytes()
    try:
        target = carry_change(part_before, part_after, current, what=str(user_file))
    except RocmPerfError:
        if not _holds_change(part_before, part_after, current):
            raise
        target = current
    if patch:
        sys.stdout.write(unified_diff(current.decode(errors="replace"), target.decode(errors="replace"), origin["rel"]))
        return 0
    if current == target:
        print(f"{user_file}: already holds {what}")
        return 0
    whole = ledger.get("whole_program") or {}
    if whole.get("verdict") != "confirmed":
        why = f"{whole.get('verdict', 'not checked')}" + (f": {whole['detail']}" if whole.get("detail") else "")
        raise RocmPerfError(f"{run_dir}: the replay's result was not confirmed on the whole program ({why}); nothing was "
                            f"written. `rocm-perf apply {run_dir} --patch` prints it")
    if hashlib.sha256(current).hexdigest() != origin["sha256"]:
        raise RocmPerfError(f"{user_file}: changed since the kernel was captured from it; refusing to overwrite. Use "
                            f"`rocm-perf apply {run_dir} --patch` for a diff to merge")
    backup = user_file.with_name(f"{user_file.name}.{run_dir.name}.orig")
    try:
        write_atomic(backup, current)
        mode = user_file.stat().st_mode & 0o7777
        write_atomic(user_file, target, mode=mode)
    except OSError as e:
        raise RocmPerfError(f"{user_file}: cannot write ({e.strerror or e}); the file is unchanged") from e
    print(f"{user_file}: wrote {what} (confirmed on the whole program); the original is in {backup}")
    return 0


def _source_patch(user_file: Path, original: bytes, target: bytes) -> str:
    try:
        shown = user_file.relative_to(Path.cwd())
    except ValueError:
        shown = user_file
    return unified_diff(original.decode(errors="replace"), target.decode(errors="replace"), str(shown))


def accepted_patch(run_dir: Path, trial: str | None = None) -> str:
    """The unified diff `apply --patch` prints for the run (a project run: relative to its root),
    without writing anything; empty when nothing was accepted."""
    ledger = open_ledger(run_dir)
    try:
        if not ledger.baselines():
            return ""
        if ledger.get("project"):
            chosen, _ = _chosen_baseline(run_dir, ledger, trial)
            sources = ledger.get("project")["sources"]
            return project_diff(changed_files(run_dir / ledger.baselines()[0].source_path, run_dir / chosen.source_path,
                                              sources))
        original = (run_dir / ledger.baselines()[0].source_path).read_bytes()
        target, _ = _target_source(run_dir, ledger, trial)
        return "" if target == original else _source_patch(Path(ledger.get("source_path")), original, target)
    finally:
        ledger.close()


def run_apply(run: Path, trial: str | None = None, patch: bool = False, out_root: Path = Path("runs")) -> int:
    run_dir = find_run(out_root, str(run))
    ledger = open_ledger(run_dir)
    if ledger.get("replay"):
        try:
            return _apply_replay(run_dir, ledger, trial, patch)
        finally:
            ledger.close()
    if ledger.get("project"):
        try:
            return _apply_project(run_dir, ledger, trial, patch)
        finally:
            ledger.close()
    try:
        user_file = Path(ledger.get("source_path"))
        baseline_sha = ledger.get("source_sha256")
        original = (run_dir / ledger.baselines()[0].source_path).read_bytes() if ledger.baselines() else b""
        target, what = _target_source(run_dir, ledger, trial)
    finally:
        ledger.close()
    if patch:
        sys.stdout.write(_source_patch(user_file, original, target))
        return 0
    try:
        current = user_file.read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{user_file}: cannot read ({e.strerror or e})") from e
    current_sha = hashlib.sha256(current).hexdigest()
    if current == target:
        print(f"{user_file}: already holds {what}")
        return 0
    if current_sha != baseline_sha:
        raise RocmPerfError(
            f"{user_file}: changed since the run started (sha256 {current_sha[:12]}, the run's baseline is "
            f"{baseline_sha[:12]}); refusing to overwrite. Use `rocm-perf apply {run_dir} --patch` for a diff to merge"
        )
    backup = user_file.with_name(f"{user_file.name}.{run_dir.name}.orig")
    try:
        mode = user_file.stat().st_mode & 0o7777
        write_atomic(backup, current, mode=mode)
        write_atomic(user_file, target, mode=mode)  # a kill leaves the original or the result, with its mode
    except OSError as e:
        raise RocmPerfError(f"{user_file}: cannot write ({e.strerror or e}); the file is unchanged") from e
    print(f"{user_file}: wrote {what}; the original is in {backup}")
    return 0
