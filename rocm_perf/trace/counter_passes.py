"""Read the folders a multi-pass rocprofv3 counter collection leaves, and merge them per dispatch.

Counters that do not fit one pass are collected with an input file (`rocprofv3 -i input.txt`), one
`pmc:` line per pass; rocprofv3 replays the program once per line and writes pass n into
`<dir>/pmc_<n>/` (rocprofiler-sdk docs, "Kernel profiling output": "For each pmc row, a directory
pmc_n containing a counter_collection.csv file is generated, where n = 1 for the first row"),
below it `<hostname>/<pid>_counter_collection.csv` with the default `-o`, or `<pid>_results.db`
with the rocpd format. Some tools name the folders `pass_<n>`; both are accepted.

Each pass replays the same program, so dispatch k of one pass is dispatch k of every other (kernels
are serialized while counters are collected). Passes are joined by that position, and every
position must name the same kernel in every pass.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Trace

PASS_FOLDER = re.compile(r"^(?P<kind>pmc|pass)_(?P<n>\d+)$")


def pass_folders(folder: Path) -> list[tuple[int, Path]]:
    """The pass sub-folders of `folder` as (n, path), by n; [] when it has none."""
    found = []
    for child in Path(folder).iterdir():
        m = PASS_FOLDER.match(child.name)
        if m and child.is_dir():
            found.append((int(m.group("n")), child))
    return sorted(found)


def check_lone_pass(folder: Path) -> None:
    """Refuse one pass folder of a multi-pass collection given on its own: its counters are a part."""
    m = PASS_FOLDER.match(folder.name)
    if not m:
        return
    siblings = [n for n, _ in pass_folders(folder.parent) if n != int(m.group("n"))]
    if siblings:
        raise RocmPerfError(
            f"{folder}: one pass of a {len(siblings) + 1}-pass counter collection; give its parent folder "
            f"{folder.parent} to merge every pass"
        )
    if int(m.group("n")) != 1:
        raise RocmPerfError(
            f"{folder}: pass {m.group('n')} of a multi-pass counter collection without the others "
            f"({m.group('kind')}_1 is not beside it): copy every {m.group('kind')}_N folder"
        )


def _profile_in(folder: Path) -> Path:
    """The one counter profile a pass folder holds (counter_collection.csv, else a rocpd .db)."""
    csvs = sorted(p for p in folder.rglob("*counter_collection.csv") if p.is_file())
    dbs = sorted(p for p in folder.rglob("*.db") if p.is_file())
    found = csvs or dbs
    if not found:
        raise RocmPerfError(f"{folder}: pass folder without a counter_collection.csv or rocpd database")
    if len(found) > 1:
        listed = ", ".join(str(p.relative_to(folder)) for p in found[:4])
        raise RocmPerfError(
            f"{folder}: holds the counters of {len(found)} processes ({listed}); passes can only be joined "
            "one process at a time: profile one process, or give one file"
        )
    return found[0]


def pass_profiles(folder: Path) -> list[tuple[str, Path]]:
    """(pass folder name, its counter profile) for every pass below `folder`, in pass order.
    RocmPerfError when passes are missing from the numbering or a pass holds no (or several) profiles."""
    folder = Path(folder)
    passes = pass_folders(folder)
    if not passes:
        raise RocmPerfError(f"{folder}: no pmc_N or pass_N folders")
    numbers = [n for n, _ in passes]
    if numbers != list(range(1, len(passes) + 1)):
        missing = sorted(set(range(1, max(numbers) + 1)) - set(numbers))
        kind = PASS_FOLDER.match(passes[0][1].name).group("kind")
        raise RocmPerfError(
            f"{folder}: counter passes {', '.join(f'{kind}_{n}' for n in missing)} missing "
            f"(found {', '.join(p.name for _, p in passes)}): the collection is incomplete"
        )
    return [(p.name, _profile_in(p)) for _, p in passes]


def merge_passes(traces: list[tuple[str, Trace]], shown: Path | str = "") -> Trace:
    """Join passes (name, Trace) by dispatch position; the first pass gives everything but the counters
    and the durations. Raises RocmPerfError naming the first dispatch where the passes disagree."""
    if len(traces) == 1:
        return traces[0][1]
    first_name, base = traces[0]
    n = len(base)
    durations = [base.duration.astype(np.float64)]
    counters = dict(base.counters)
    for name, other in traces[1:]:
        if len(other) != n:
            raise RocmPerfError(
                f"{shown}: pass {name} has {len(other)} dispatches, {first_name} has {n}: the passes ran "
                "different work and cannot be joined per dispatch"
            )
        mine = [base.symbol_name(i) for i in range(n)]
        theirs = [other.symbol_name(i) for i in range(n)]
        for i, (a, b) in enumerate(zip(mine, theirs)):
            if a != b:
                raise RocmPerfError(
                    f"{shown}: dispatch {i + 1} is {a} in {first_name} but {b} in {name}: the passes ran "
                    "different work and cannot be joined per dispatch"
                )
        durations.append(other.duration.astype(np.float64))
        for counter, column in other.counters.items():
            if counter in counters:
                # Collected twice: keep the first pass's value where it has one.
                counters[counter] = np.where(np.isnan(counters[counter]), column, counters[counter])
            else:
                counters[counter] = column
    median = np.median(np.stack(durations), axis=0)
    base.end = base.start + np.rint(median).astype(np.int64)
    base.counters = counters
    base.metadata["timing"] = f"median dispatch duration over {len(traces)} counter passes"
    return base
