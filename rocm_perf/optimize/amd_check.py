"""The AMD compile check of a source as the ledger records it: each kernel's resources (VGPRs,
SGPRs, AGPRs, scratch, spills, LDS, occupancy), and with a work directory the kept ISA (its
identity, and where it is, for isa_loops.py). Where hipcc is missing there is no check (None)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocm_perf.optimize.isa_loops import isa_identity

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def compile_check(ctx: "RunContext", source: Path, workdir: Path | None = None) -> dict | None:
    """{"resources": per kernel (demangled name), and with a `workdir` the kept ISA: "isa_identity",
    "isa_path"}, {"error": ...}, or None without a check."""
    check = ctx.svc.compile_check
    if check is None:
        return None
    if workdir is None:
        report = check(source, arch=ctx.opt.arch, flags=tuple(ctx.flags_of(source)))
    else:  # -g: the ISA's .loc lines place each instruction in the source (isa_loops.py)
        report = check(source, arch=ctx.opt.arch, flags=(*ctx.flags_of(source), "-g"), keep_isa=True, workdir=workdir)
    if not getattr(report, "available", True):
        return None
    if not report.ok:
        return {"error": report.errors}
    out = {}
    for k in report.kernels:
        out[k.demangled or k.mangled] = {
            "mangled": k.mangled, "vgpr": k.vgpr, "sgpr": k.sgpr, "agpr": k.agpr,
            "scratch_bytes": k.scratch_bytes, "occupancy": k.occupancy,
            "vgpr_spill": k.vgpr_spill, "sgpr_spill": k.sgpr_spill, "lds_bytes": k.lds_bytes,
        }
    checked: dict[str, Any] = {"resources": out}
    isa_path = getattr(report, "isa_path", None)
    if isa_path and Path(isa_path).is_file():
        checked["isa_identity"] = isa_identity(Path(isa_path).read_text(errors="replace"))
        checked["isa_path"] = ctx.rel(Path(isa_path))
    return checked


def resource_regression(base: dict, cand: dict, allow_lower_occupancy: bool) -> str:
    """Why the candidate's AMD resources are worse than the baseline's ('' when they are not):
    new spills or scratch, or (unless allowed) a lower occupancy."""
    problems = []
    for name, b in base.items():
        c = cand.get(name)
        if c is None:
            continue
        for key in ("vgpr_spill", "sgpr_spill", "scratch_bytes"):
            if (c.get(key) or 0) > (b.get(key) or 0):
                problems.append(f"{name}: {key} {b.get(key) or 0} -> {c.get(key)}")
        if not allow_lower_occupancy and b.get("occupancy") and c.get("occupancy") and c["occupancy"] < b["occupancy"]:
            problems.append(f"{name}: occupancy {b['occupancy']} -> {c['occupancy']} waves/SIMD")
    return "; ".join(problems)
