"""profile_metadata.json: where a profile came from and how far its numbers can be trusted to transfer.

Keys the trace cannot know (model_name, experiment_id, ...) are null unless the user sets them
with `--meta key=value`; keys the trace does know can be overridden the same way.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from rocm_perf.trace.model import Trace

USER_KEYS = (
    "model_name",
    "profile_stage",
    "base_image",
    "resource_class",
    "server_flags",
    "benchmark_config_hash",
    "experiment_id",
    "trial_id",
)

# GPU families whose code and performance characteristics carry over between members:
# CDNA data-center parts share the gfx9 MFMA ISA; RDNA generations are gfx10/gfx11/gfx12.
_FAMILIES = (
    ("CDNA", re.compile(r"^gfx9(08|0a|4[0-2]|50)$")),
    ("RDNA1/2", re.compile(r"^gfx10\w+$")),
    ("RDNA3", re.compile(r"^gfx11\w+$")),
    ("RDNA4", re.compile(r"^gfx12\w+$")),
    ("GCN5", re.compile(r"^gfx90[0-6]$")),
)


def base_arch(name: str | None) -> str | None:
    """'gfx90a:sramecc+:xnack-' -> 'gfx90a'; None for names that are not gfx targets."""
    if not name:
        return None
    head = name.strip().lower().split(":")[0]
    return head if re.fullmatch(r"gfx[0-9a-f]+", head) else None


def family(arch: str | None) -> str | None:
    if not arch:
        return None
    for name, pattern in _FAMILIES:
        if pattern.match(arch):
            return name
    return None


def arch_match(observed: str | None, expected: str | None) -> tuple[str, str]:
    """('exact' | 'compatible' | 'unknown', the reason in one sentence)."""
    if expected is None:
        return "unknown", f"no --expect-arch given; the profile ran on {observed or 'an unrecorded GPU'}"
    want = base_arch(expected)
    if want is None:
        return "unknown", f"--expect-arch {expected!r} is not a gfx target name"
    if observed is None:
        return "unknown", "the trace does not record the GPU architecture"
    if observed == want:
        return "exact", f"profiled on {observed}, as expected"
    fam_o, fam_w = family(observed), family(want)
    if fam_o is not None and fam_o == fam_w:
        return "compatible", (
            f"profiled on {observed}, expected {want}: same {fam_o} family, so the ranking of kernels carries over "
            "but absolute times do not"
        )
    return "unknown", f"profiled on {observed}, expected {want}: a different GPU family; these timings do not transfer"


def _observed_gpus(trace: Trace) -> list:
    used = set(np.unique(trace.agent).tolist())
    gpus = [a for a in trace.gpu_agents() if a.id in used]
    return gpus or trace.gpu_agents()


def _rocm_version(trace: Trace) -> str | None:
    """The database does not store the ROCm version; the profiled process's environment sometimes does."""
    env = trace.metadata.get("environment") or {}
    if isinstance(env, dict):
        if env.get("ROCM_VERSION"):
            return str(env["ROCM_VERSION"])
        for key in ("ROCM_PATH", "HIP_PATH", "ROCM_HOME"):
            m = re.search(r"rocm-(\d+\.\d+(?:\.\d+)?)", str(env.get(key, "")))
            if m:
                return m.group(1)
    return None


def build_metadata(trace: Trace, *, expect_arch: str | None = None, user: dict[str, str] | None = None) -> dict[str, Any]:
    """Every key of profile_metadata.json, null where neither the trace nor the user says."""
    md = trace.metadata
    gpus = _observed_gpus(trace)
    archs = sorted({a for a in (base_arch(g.name) for g in gpus) if a})
    observed = archs[0] if len(archs) == 1 else (",".join(archs) if archs else None)
    match, reason = arch_match(archs[0] if len(archs) == 1 else None, expect_arch)
    if len(archs) > 1:
        match, reason = "unknown", f"the profile spans several architectures ({observed})"
    host = md.get("backend") == "host" or any(a.extra.get("backend") == "host" for a in trace.agents)
    if host:
        match, reason = "unknown", "host backend: the kernels ran on this machine's CPU; times rank kernels, they are not GPU times"
    clocks = {str(g.extra.get("type_index", g.id)): g.extra["max_engine_clk_fcompute"]
              for g in gpus if g.extra.get("max_engine_clk_fcompute")}
    meta: dict[str, Any] = {
        "source_trace_path": md.get("source_path"),
        "format": md.get("format"),
        "observed_arch": observed,
        "expected_arch": expect_arch,
        "arch_match": match,
        "hardware_relevance_reason": reason,
        "timings": "CPU (host backend)" if host else "GPU",
        "gpu_products": sorted({g.product for g in gpus if g.product}) or None,
        "rocm_version": _rocm_version(trace),
        # HIP device ordinals (rocpd type_index) where the trace has them, else the trace's agent ids
        "gpu_device_ids": sorted({int(g.extra.get("type_index", g.id)) for g in gpus}) or None,
        "gpu_pci_device_ids": sorted({int(g.extra["device_id"]) for g in gpus if "device_id" in g.extra}) or None,
        "gpu_clocks_mhz": clocks or None,
        "gpu_cu_counts": sorted({g.cu_count for g in gpus if g.cu_count}) or None,
        "hostname": md.get("hostname"),
        "command": md.get("command"),
        "pid": md.get("pid"),
        "api_trace": bool(md.get("api_trace")),
        "world_size": md.get("world_size"),
        "dispatches": len(trace),
        "runtime_ns": trace.runtime_ns,
    }
    meta.update({key: None for key in USER_KEYS})
    for key, value in (user or {}).items():
        meta[key] = value
    return meta
