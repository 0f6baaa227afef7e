"""load_trace: open any supported profile, choosing the reader by what the file holds, not its name."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import zlib
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Trace
from rocm_perf.trace.names import demangle_symbols
from rocm_perf.trace.needs import EVERYTHING, ProfileNeeds
from rocm_perf.trace.sqlite_file import SQLITE_MAGIC, open_readonly, table_names

GZIP_MAGIC = b"\x1f\x8b"


def load_trace(path: Path, needs: ProfileNeeds = EVERYTHING) -> Trace:
    """A Trace from a rocpd v3 database, a legacy RPD (optionally gzip'd), rocprofv3 CSV (file or folder),
    a PyTorch profiler (Kineto) trace (`.json`, `.json.gz`, or a folder of them, one per rank),
    the pmc_N folders of a multi-pass rocprofv3 counter collection, or a rocprof-compute workload folder.

    Raises RocmPerfError with a one-line message naming the file for anything else.
    Display names a trace left mangled (legacy RPD, `rocprofv3 -M`) are demangled.
    `needs` says what the caller uses; a reader may leave the rest unread (trace/needs.py).
    """
    trace = _load(Path(path), needs)
    demangle_symbols(trace)
    return trace


def _load(path: Path, needs: ProfileNeeds = EVERYTHING) -> Trace:
    if not path.exists():
        raise RocmPerfError(f"{path}: no such file or directory")
    if path.is_dir():
        from rocm_perf.trace.counter_passes import check_lone_pass, pass_folders
        from rocm_perf.trace.csv_read import read_csv_folder
        from rocm_perf.trace.rocprof_compute_read import is_rocprof_compute_workload, read_rocprof_compute

        if is_rocprof_compute_workload(path):
            return read_rocprof_compute(path)
        if pass_folders(path):
            return _load_counter_passes(path)
        check_lone_pass(path)
        kineto = _kineto_files(path)
        if kineto:
            from rocm_perf.trace.kineto_read import read_kineto_folder

            return read_kineto_folder(path, kineto)
        if not any(p.suffix.lower() == ".csv" for p in path.iterdir()):
            # a folder holding one multi-pass collection further down (profile --counters: counters/rocprofv3/attempt-N/)
            nested = sorted({q.parent for depth in ("*/", "*/*/", "*/*/*/") for first in ("pmc_1", "pass_1")
                             for q in path.glob(depth + first) if q.is_dir()})
            if len(nested) == 1:
                return _load(nested[0], needs)
            if len(nested) > 1:
                listed = ", ".join(str(q.relative_to(path)) for q in nested[:4])
                raise RocmPerfError(f"{path}: folder holds several counter collections ({listed}); pass one")
            # rocprofv3's default output is <dir>/<hostname>/<pid>_results.db: accept its folder
            dbs = sorted(p for pattern in ("*.db", "*/*.db") for p in path.glob(pattern) if p.is_file())
            if len(dbs) == 1:
                return _load(dbs[0], needs)
            if len(dbs) > 1:
                listed = ", ".join(str(p.relative_to(path)) for p in dbs[:5])
                raise RocmPerfError(f"{path}: folder holds several databases ({listed}{', ...' if len(dbs) > 5 else ''}); pass one")
            # and its CSV output <dir>/<hostname>/<pid>_kernel_trace.csv, <pid>_agent_info.csv, ...
            csv_folders = sorted({p.parent for p in path.glob("*/*.csv") if p.is_file()})
            if len(csv_folders) == 1:
                return read_csv_folder(csv_folders[0])
            if len(csv_folders) > 1:
                listed = ", ".join(str(p.relative_to(path)) for p in csv_folders[:5])
                raise RocmPerfError(f"{path}: folder holds the CSV output of several hosts or runs ({listed}); pass one")
        return read_csv_folder(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read ({e.strerror or e})") from e
    if size == 0:
        raise RocmPerfError(f"{path}: empty file")
    if head.startswith(GZIP_MAGIC):
        return _load_gzip(path, needs)
    if head.startswith(SQLITE_MAGIC):
        return _load_sqlite(path, path, needs)
    from rocm_perf.trace.kineto_read import looks_like_kineto, read_kineto

    if looks_like_kineto(_head(path, 4096)):
        return read_kineto(path)
    if path.suffix.lower() == ".gz":
        raise RocmPerfError(f"{path}: named .gz but not gzip-compressed, and not a profile either")
    if _looks_like_text(head):
        from rocm_perf.trace.csv_read import looks_like_rocprofv3_csv, read_csv_file

        if head.lstrip().startswith((b"{", b"[")):
            raise RocmPerfError(f"{path}: JSON that is not a PyTorch profiler trace (no traceEvents)")
        if looks_like_rocprofv3_csv(path):
            return read_csv_file(path)
        raise RocmPerfError(
            f"{path}: not a profile (expected a rocpd/RPD SQLite database, a rocprofv3 kernel_trace.csv "
            "or a PyTorch profiler trace)"
        )
    raise RocmPerfError(f"{path}: not a profile (neither SQLite, gzip, JSON nor rocprofv3 CSV)")


def _head(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


def _kineto_files(folder: Path) -> list[Path]:
    """The PyTorch profiler traces in a folder (one per rank), by content, in name order."""
    from rocm_perf.trace.kineto_read import looks_like_kineto

    found = []
    for p in sorted(folder.iterdir()):
        if not p.is_file() or not p.name.lower().endswith((".json", ".json.gz")):
            continue
        try:
            head = _head(p, 4096)
            if head.startswith(GZIP_MAGIC):
                with gzip.open(p, "rb") as f:
                    head = f.read(4096)
        except (OSError, EOFError, zlib.error):
            continue
        if looks_like_kineto(head):
            found.append(p)
    return found


def _load_counter_passes(folder: Path) -> Trace:
    """The pmc_N folders of a multi-pass counter collection, joined per dispatch (trace/counter_passes.py)."""
    from rocm_perf.trace.counter_passes import merge_passes, pass_profiles

    traces = [(name, _load(profile)) for name, profile in pass_profiles(folder)]
    trace = merge_passes(traces, shown=folder)
    trace.metadata.update(source_path=str(folder), counter_passes=[name for name, _ in traces])
    return trace


def _looks_like_text(head: bytes) -> bool:
    return b"\x00" not in head


def _load_sqlite(db: Path, shown: Path, needs: ProfileNeeds = EVERYTHING) -> Trace:
    """Dispatch on the tables the database holds; `shown` is the path the user gave (for messages)."""
    from rocm_perf.trace.rocpd_read import find_uuid_sets, read_rocpd

    try:
        with open_readonly(db) as con:
            tables = set(table_names(con))
            rocpd = bool(find_uuid_sets(con))
        if rocpd:
            trace = read_rocpd(db, needs)
        elif "rocpd_op" in tables:
            from rocm_perf.trace.rpd_read import read_rpd

            trace = read_rpd(db)
        elif not tables:
            raise RocmPerfError(f"{db}: SQLite database with no tables (an empty or unfinished profile?)")
        else:
            raise RocmPerfError(f"{db}: SQLite database of another schema (no rocpd_kernel_dispatch or rocpd_op table)")
    except RocmPerfError as e:
        if db != shown:  # a decompressed temp file: name the file the user gave
            raise RocmPerfError(str(e).replace(str(db), str(shown))) from e
        raise
    trace.metadata["source_path"] = str(shown)
    return trace


def _load_gzip(path: Path, needs: ProfileNeeds = EVERYTHING) -> Trace:
    """A gzip'd PyTorch trace is read in memory; a gzip'd database is decompressed to a private temp
    file (SQLite cannot read gzip), loaded, and deleted."""
    try:
        with gzip.open(path, "rb") as f:
            inner = f.read(4096)
    except (OSError, EOFError, zlib.error) as e:
        raise RocmPerfError(f"{path}: damaged gzip file ({e})") from e
    from rocm_perf.trace.kineto_read import looks_like_kineto, read_kineto

    if looks_like_kineto(inner):
        return read_kineto(path)
    fd, tmp_name = tempfile.mkstemp(prefix="rocm-perf-", suffix=".db")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as src:
            shutil.copyfileobj(src, out, length=1 << 20)
        with open(tmp, "rb") as f:
            head = f.read(100)
        if head.startswith(SQLITE_MAGIC):
            return _load_sqlite(tmp, path, needs)
        raise RocmPerfError(f"{path}: gzip file that holds neither a SQLite profile nor a PyTorch profiler trace")
    except (OSError, EOFError, zlib.error) as e:
        raise RocmPerfError(f"{path}: damaged gzip file ({e})") from e
    finally:
        tmp.unlink(missing_ok=True)
