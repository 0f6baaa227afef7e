"""The machine's AMD GPU agents, as `rocminfo` (or `amd-smi`) reports them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from rocm_perf import process
from rocm_perf.backends.hipcc import find_rocm_tool


@dataclass
class GpuAgent:
    arch: str  # gfx942, gfx90a, ...
    product: str | None = None  # "AMD Instinct MI300X"
    cu_count: int | None = None
    max_clock_mhz: int | None = None
    source: str = ""  # which tool said so


_AGENT_HEADER = re.compile(r"^\s*Agent\s+\d+\s*$")
_FIELD = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z][\w .()/-]*?):\s*(?P<value>.*?)\s*$")


def parse_rocminfo(text: str) -> list[GpuAgent]:
    """GPU agents from rocminfo's text: blocks headed `Agent N`, fields `Name:`, `Marketing Name:`,
    `Device Type:`, `Compute Unit:`, `Max Clock Freq. (MHz):` (the agent's own, least-indented ones)."""
    agents: list[GpuAgent] = []
    block: dict[str, str] | None = None
    indent: int | None = None

    def close() -> None:
        if block and block.get("Device Type", "").upper() == "GPU" and block.get("Name", "").startswith("gfx"):
            agents.append(
                GpuAgent(
                    arch=block["Name"],
                    product=block.get("Marketing Name") or None,
                    cu_count=_int(block.get("Compute Unit")),
                    max_clock_mhz=_int(block.get("Max Clock Freq. (MHz)")),
                    source="rocminfo",
                )
            )

    for line in text.splitlines():
        if _AGENT_HEADER.match(line):
            close()
            block, indent = {}, None
            continue
        if block is None:
            continue
        m = _FIELD.match(line)
        if not m or not m.group("value"):
            continue
        depth = len(m.group("indent").expandtabs())
        if indent is None:
            indent = depth
        if depth == indent:  # deeper lines belong to the agent's pools and ISAs
            block.setdefault(m.group("key"), m.group("value"))
    close()
    return agents


def parse_amd_smi_static(text: str) -> list[GpuAgent]:
    """GPU agents from `amd-smi static --asic --json`: every object holding ASIC fields
    (`market_name`, `target_graphics_version`, `num_compute_units`), wherever the version nests it."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    agents = []
    for asic in _objects_with(data, "target_graphics_version"):
        arch = str(asic.get("target_graphics_version") or "")
        if not arch.startswith("gfx"):
            continue
        agents.append(
            GpuAgent(
                arch=arch,
                product=asic.get("market_name") or None,
                cu_count=_int(asic.get("num_compute_units")),
                source="amd-smi",
            )
        )
    return agents


def find_gpu_agents(timeout: float = 30) -> tuple[list[GpuAgent], str]:
    """(GPU agents, why there are none): rocminfo first, then amd-smi."""
    reasons = []
    rocminfo = find_rocm_tool("rocminfo")
    if rocminfo:
        done = process.run([rocminfo], timeout=timeout)
        agents = parse_rocminfo(done.stdout)
        if agents:
            return agents, ""
        said = _first_line(done.stdout) or process.last_lines(done.stderr, 1)
        reasons.append(f"rocminfo lists no GPU agent{(' (' + _plain(said) + ')') if said else ''}")
    else:
        reasons.append("rocminfo not found")
    amd_smi = find_rocm_tool("amd-smi")
    if amd_smi:
        done = process.run([amd_smi, "static", "--asic", "--json"], timeout=timeout)
        agents = parse_amd_smi_static(done.stdout)
        if agents:
            return agents, ""
        reasons.append("amd-smi lists no GPU")
    else:
        reasons.append("amd-smi not found")
    return [], "; ".join(reasons)


def _objects_with(data: Any, key: str):
    if isinstance(data, dict):
        if key in data:
            yield data
        for value in data.values():
            yield from _objects_with(value, key)
    elif isinstance(data, list):
        for value in data:
            yield from _objects_with(value, key)


def _int(value: Any) -> int | None:
    m = re.match(r"\s*(\d+)", str(value)) if value is not None else None
    return int(m.group(1)) if m else None


def _first_line(text: str) -> str:
    return next((l for l in text.splitlines() if l.strip()), "")


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text).strip()  # rocminfo colours its errors
