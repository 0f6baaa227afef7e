"""How many waves per SIMD a kernel's resources allow, and which resource limits it.

CDNA2 and later (FORMATS.md "Counters, roofline and occupancy"): each SIMD has `waves_per_simd`
wave slots; arch VGPRs and AGPRs share one 512-entry-per-lane file allocated in granules of 8, so
a wave using v + a registers leaves room for floor(512 / roundup(v + a, 8)) waves; a CU's LDS holds
floor(LDS per CU / roundup(LDS per workgroup, granule)) workgroups, whose waves spread over its SIMDs.
SGPRs rarely limit on these GPUs and are not modelled. The compiler's own figure
(hipcc's `Occupancy [waves/SIMD]` remark, from the compile check) wins when given; the LDS limit
still applies to it, because dynamic LDS is only known at launch.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from rocm_perf.analysis.gpu_arch import OccupancyLimits


@dataclass(frozen=True)
class Occupancy:
    waves_per_simd: int
    limiter: str  # "wave slots", "VGPRs", "LDS", "compiler"
    limits: dict[str, int] = field(default_factory=dict)  # resource -> waves per SIMD it alone allows
    detail: str = ""  # e.g. "24 VGPRs + 8 AGPRs", "17408 B of LDS per workgroup"

    def to_json(self) -> dict:
        return asdict(self)


def _round_up(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def theoretical_occupancy(
    limits: OccupancyLimits,
    *,
    vgpr: int | None = None,
    agpr: int | None = None,
    lds_bytes: int | None = None,
    workgroup_size: int | None = None,
    compiler_waves_per_simd: int | None = None,
) -> Occupancy:
    """Waves per SIMD the kernel's resources allow (the smallest of each resource's limit)."""
    allowed = {"wave slots": limits.waves_per_simd}
    details = {"wave slots": f"{limits.waves_per_simd} slots per SIMD"}
    registers = (vgpr or 0) + (agpr or 0)
    if registers > 0:
        allowed["VGPRs"] = min(limits.waves_per_simd, limits.vgprs_per_lane // _round_up(registers, limits.vgpr_granule))
        details["VGPRs"] = f"{vgpr or 0} VGPRs + {agpr or 0} AGPRs per lane"
    if lds_bytes and lds_bytes > 0:
        per_workgroup = _round_up(int(lds_bytes), limits.lds_granule)
        workgroups = limits.lds_bytes_per_cu // per_workgroup
        waves_per_workgroup = math.ceil(max(1, workgroup_size or limits.wave_size) / limits.wave_size)
        allowed["LDS"] = min(limits.waves_per_simd, workgroups * waves_per_workgroup // limits.simd_per_cu)
        details["LDS"] = f"{int(lds_bytes)} B of LDS per workgroup of {workgroup_size or '?'} threads"
    if compiler_waves_per_simd:
        allowed["compiler"] = int(compiler_waves_per_simd)
        details["compiler"] = "hipcc's Occupancy [waves/SIMD] remark"
    # The smallest limit wins; on a tie the hardware's slots, then a resource, before the compiler's figure.
    order = {"wave slots": 0, "VGPRs": 1, "LDS": 2, "compiler": 3}
    limiter = min(allowed, key=lambda k: (allowed[k], order[k]))
    return Occupancy(allowed[limiter], limiter, allowed, details[limiter])
