"""Writing the same per-dispatch counters as rocprofv3 writes them: counter_collection.csv (long format)
and rocpd pmc rows in a copy of a fixture database. Shared by the counter reader and analyze tests.

The dispatches are the 9 of the real rocprofv3 docs kernel trace (tests/data/rocprofv3-csv/
kernel_trace.csv), which the fixture database tests/data/rocpd_v3_docs_kernel_trace.db holds too.
"""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

from conftest import DATA

KERNEL_TRACE = DATA / "rocprofv3-csv" / "kernel_trace.csv"
DOCS_DB = DATA / "rocpd_v3_docs_kernel_trace.db"
MI300X_PMC = DATA / "rocprof-compute" / "MI300X_vcopy" / "pmc_perf.csv"
# The real counter_collection.csv's header (tests/data/rocprofv3-csv/counter_collection.csv).
with open(DATA / "rocprofv3-csv" / "counter_collection.csv", newline="") as _f:
    COUNTER_HEADER = next(csv.reader(_f))


def docs_dispatches() -> list[dict[str, str]]:
    """The 9 dispatches of the docs kernel trace, by Dispatch_Id."""
    with open(KERNEL_TRACE, newline="") as f:
        return sorted(csv.DictReader(f), key=lambda r: int(r["Dispatch_Id"]))


def measured_counters(names: list[str], dispatch_ids: list[int]) -> dict[int, dict[str, float]]:
    """Per dispatch, real MI300X vcopy values (row (id - 1) mod 3 of its pmc_perf.csv), scaled by the
    dispatch id so that dispatches differ: {dispatch id: {counter: value}}."""
    with open(MI300X_PMC, newline="") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for d in dispatch_ids:
        row = rows[(d - 1) % len(rows)]
        out[d] = {n: float(row[n]) * (1 + d / 10) for n in names if row.get(n, "") != ""}
    return out


def write_counter_collection(path: Path, values: dict[int, dict[str, float]], dispatches: list[dict] | None = None) -> Path:
    """counter_collection.csv in the real column layout: one row per dispatch x counter."""
    dispatches = dispatches or docs_dispatches()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC)
        writer.writerow(COUNTER_HEADER)
        for d in dispatches:
            did = int(d["Dispatch_Id"])
            grid = int(d["Grid_Size_X"]) * int(d["Grid_Size_Y"]) * int(d["Grid_Size_Z"])
            workgroup = int(d["Workgroup_Size_X"]) * int(d["Workgroup_Size_Y"]) * int(d["Workgroup_Size_Z"])
            for name, value in values.get(did, {}).items():
                writer.writerow([int(d["Correlation_Id"]), did, d["Agent_Id"], int(d["Queue_Id"]), 834304,
                                 int(d["Thread_Id"]), grid, int(d["Kernel_Id"]), d["Kernel_Name"], workgroup,
                                 int(d["LDS_Block_Size"]), int(d["Scratch_Size"]), int(d["VGPR_Count"]),
                                 int(d["Accum_VGPR_Count"]), int(d["SGPR_Count"]), name, value,
                                 int(d["Start_Timestamp"]), int(d["End_Timestamp"])])
    return path


def rocpd_with_counters(path: Path, values: dict[int, dict[str, float]], split: str | None = None) -> Path:
    """A copy of the docs fixture database whose (empty) pmc tables hold `values`, one
    rocpd_info_pmc row per counter and one rocpd_pmc_event row per dispatch x counter, joined to
    the dispatch through its event_id. `split`: write that counter as two instance rows per
    dispatch (halves), as rocprofv3 does for counters with several instances."""
    shutil.copyfile(DOCS_DB, path)
    con = sqlite3.connect(path)
    info = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_info_pmc_%'"))
    event = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_pmc_event_%'"))
    dispatch = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_kernel_dispatch_%'"))
    event_of = dict(con.execute(f'SELECT dispatch_id, event_id FROM "{dispatch}"'))
    agent, pid = con.execute(f'SELECT agent_id, pid FROM "{dispatch}" LIMIT 1').fetchone()
    names = sorted({n for per in values.values() for n in per})
    pmc_id = {}
    for name in names:
        cur = con.execute(
            f'INSERT INTO "{info}" (nid, pid, agent_id, target_arch, name, symbol, description, component, '
            f"value_type, block, is_constant, is_derived) VALUES (1, ?, ?, 'GPU', ?, ?, '', 'rocprofiler-sdk', "
            f"'ABS', ?, 0, ?)",
            (pid, agent, name, name, name.split("_")[0], int(name.endswith("_sum"))),
        )
        pmc_id[name] = cur.lastrowid
    for did, per in values.items():
        for name, value in per.items():
            parts = [value / 2, value / 2] if name == split else [value]
            for part in parts:
                con.execute(f'INSERT INTO "{event}" (event_id, pmc_id, value) VALUES (?, ?, ?)',
                            (event_of[did], pmc_id[name], part))
    con.commit()
    con.close()
    return path
