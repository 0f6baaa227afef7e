"""Loop heat: which loops of the baseline the measured time is in, for ordering candidates.

When the baseline's profiled rounds carry instruction-level evidence (the host sampler, or
rocprofv3 PC sampling / thread trace), each loop of each top kernel gets its measured share of
its kernel's samples (the innermost loop holding a line, inlined code counted where it was
inlined: analysis/hotspots.py). Loops are keyed like candidates (`plan.loop_key`: kernel and
line in the original source), so the heat measured once on the original baseline still names the
same loops after accepted rewrites.
"""

from __future__ import annotations

import json
from pathlib import Path

from rocm_perf.analysis.hotspots import hotspots_json
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.plan import loop_key

# A loop holding less than this share of its kernel's samples counts as cold: tried last.
COLD_SHARE = 0.01


def measure_loop_heat(profiles: Path, source: Path, flags: list[str], *, write_to: Path | None = None) -> dict | None:
    """{evidence, samples, kernels: {kernel: samples}, loops: {loop_key: share}} from the
    evidence below `profiles`, or None when there is none (or it cannot be read: the run goes on
    without heat, ordered as before). `write_to`: also write hotspots.json there."""
    from rocm_perf.source.profile_sources import source_hotspots
    from rocm_perf.trace.instruction_load import load_instruction_profile

    try:
        profile = load_instruction_profile(profiles)
        sourced = source_hotspots(profile, source=source, cflags=" ".join(flags))
    except RocmPerfError:
        return None
    result = sourced.result
    kernels: dict[str, float] = {}
    loop_samples: dict[str, float] = {}
    for k in result.kernels:
        if not k.loops_known:
            continue
        for loop in k.loops:
            kernel, _, _, line = loop.id.rsplit(":", 3)
            key = loop_key(kernel.split(":")[0], int(line))
            loop_samples[key] = loop_samples.get(key, 0.0) + loop.samples
        name = k.loops[0].id.split(":")[0] if k.loops else None
        if name:
            kernels[name] = kernels.get(name, 0.0) + k.heat.samples
    if not kernels:
        return None
    loops = {}
    for key, samples in loop_samples.items():
        kernel = key.split("@")[0]
        loops[key] = samples / kernels[kernel] if kernels.get(kernel) else 0.0
    heat = {"evidence": result.evidence, "unit": result.unit, "samples": result.total, "kernels": kernels,
            "loops": loops}
    if write_to is not None:
        data = hotspots_json(result)
        data["sources"] = {"mapped": [{"recorded": r, "file": f} for r, f in sorted(sourced.resolution.mapped.items())]}
        write_atomic(Path(write_to), json.dumps(data, indent=2) + "\n")
    return heat
