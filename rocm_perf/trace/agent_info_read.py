"""rocprofv3's `<pid>_agent_info.csv`: which GPU each `Agent_Id` of the CSV output is.

rocprofv3 writes it beside every CSV output (`<out>/<hostname>/<pid>_agent_info.csv`), one row
per agent. Its columns (rocprofiler-sdk `source/lib/output/generateCSV.cpp`, `generate_csv` of
`agent_info`; the documentation's `238_agent_info.csv` sample) include `Node_Id`,
`Logical_Node_Id`, `Agent_Type` (CPU/GPU), `Cu_Count`, `Simd_Per_Cu`, `Wave_Front_Size`,
`Max_Engine_Clk_Fcompute` (MHz), `Lds_Size_In_Kb`, `Name` (gfx90a, ...), `Product_Name`.

The other CSV files name an agent by its index as `ROCPROF_AGENT_INDEX` chose (rocprofiler-sdk
tool config: `relative`, the default, is "Agent <Logical_Node_Id>"; `absolute` is
"Agent <Node_Id>"; `type-relative` is "GPU <n>", the n-th GPU).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Agent

AGENT_INFO_SUFFIX = "agent_info.csv"
_NEEDED = ("Node_Id", "Agent_Type", "Name")
# Columns kept in Agent.extra under the rocpd extdata's lower-case names, which the analyses read.
_EXTRA_COLUMNS = ("Simd_Per_Cu", "Simd_Count", "Wave_Front_Size", "Max_Waves_Per_Simd", "Max_Waves_Per_Cu",
                  "Max_Engine_Clk_Fcompute", "Max_Engine_Clk_Ccompute", "Lds_Size_In_Kb", "Num_Xcc",
                  "Gfx_Target_Version", "Gpu_Id", "Vendor_Name", "Model_Name")


@dataclass(frozen=True)
class AgentInfoRow:
    """One row of agent_info.csv."""

    node_id: int
    logical_node_id: int | None
    type: str  # "CPU" or "GPU"
    name: str
    product: str
    cu_count: int | None
    extra: dict[str, Any] = field(default_factory=dict)


def agent_info_beside(csv_file: Path) -> Path | None:
    """The agent_info.csv written in the same run as `csv_file` (`<prefix>_kernel_trace.csv` ->
    `<prefix>_agent_info.csv`), or the folder's only one; None when there is none."""
    folder = csv_file.parent
    stem = csv_file.name
    for suffix in ("kernel_trace.csv", "counter_collection.csv", "hip_api_trace.csv", "marker_api_trace.csv"):
        if stem.endswith(suffix):
            candidate = folder / (stem[: -len(suffix)] + AGENT_INFO_SUFFIX)
            if candidate.is_file():
                return candidate
    found = sorted(folder.glob(f"*{AGENT_INFO_SUFFIX}"))
    return found[0] if len(found) == 1 else None


def _number(text: str) -> int | float | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


def read_agent_info(path: Path) -> list[AgentInfoRow]:
    """The rows of an agent_info.csv; RocmPerfError naming the file when it is not one."""
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read ({e.strerror or e})") from e
    except csv.Error as e:
        raise RocmPerfError(f"{path}: not a readable CSV ({e})") from e
    if rows and any(c not in rows[0] for c in _NEEDED):
        missing = ", ".join(c for c in _NEEDED if c not in rows[0])
        raise RocmPerfError(f"{path}: not a rocprofv3 agent_info.csv (no {missing} column)")
    out = []
    for line, row in enumerate(rows, start=2):
        node = _number(row.get("Node_Id", ""))
        if not isinstance(node, int):
            raise RocmPerfError(f"{path}: line {line}: Node_Id is not an integer ({row.get('Node_Id')!r})")
        logical = _number(row.get("Logical_Node_Id", ""))
        cu = _number(row.get("Cu_Count", ""))
        extra = {}
        for column in _EXTRA_COLUMNS:
            if column in row:
                value = _number(row[column])
                extra[column.lower()] = value if value is not None else row[column]
        out.append(AgentInfoRow(
            node_id=node, logical_node_id=logical if isinstance(logical, int) else None,
            type=(row.get("Agent_Type") or "").strip().upper(), name=(row.get("Name") or "").strip(),
            product=(row.get("Product_Name") or "").strip(), cu_count=int(cu) if cu else None, extra=extra,
        ))
    return out


def agents_for(ids: list[int], type_relative: bool, rows: list[AgentInfoRow], shown: Path) -> list[Agent]:
    """The Agents the CSV's agent ids name, described by agent_info's rows. `type_relative`: the ids
    were "GPU n" (the n-th GPU by Node_Id); else "Agent n" is the logical node id (rocprofv3's
    default), or the node id where no logical one matches."""
    gpus = sorted((r for r in rows if r.type == "GPU"), key=lambda r: r.node_id)
    agents = []
    for agent_id in ids:
        if type_relative:
            row = gpus[agent_id] if 0 <= agent_id < len(gpus) else None
        else:
            row = (next((r for r in rows if r.logical_node_id == agent_id), None)
                   or next((r for r in rows if r.node_id == agent_id), None))
        if row is None:
            raise RocmPerfError(f"{shown}: no agent {agent_id} among its {len(rows)} rows (a file of another run?)")
        extra = dict(row.extra, node_id=row.node_id, logical_node_id=row.logical_node_id, agent_info=shown.name)
        if row in gpus:
            extra["type_index"] = gpus.index(row)  # the HIP device ordinal, as rocpd's type_index
        agents.append(Agent(id=agent_id, type=row.type or "GPU", name=row.name, product=row.product,
                            cu_count=row.cu_count, extra=extra))
    return agents
