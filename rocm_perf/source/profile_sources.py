"""Which of the user's files a profile's recorded source paths mean, and the loops of its kernels.

Profilers record the path a file had where it was built (`/build/dir/kernel.cpp:552`). We map a
recorded path to, in order: a file of the same name under `--source DIR` (the longest matching
path tail wins); the path itself when it exists here; the copy the profiler saved beside its
output (rocprofv3's `snapshots.json`). System headers (ROCm, the compiler, the C++ library, our
host runtime) are grouped, never mapped; everything else is listed as unmapped.

A user's file that differs from the profiler's saved copy, or that is shorter than the lines the
profile names, does not match the profile: that is an error, because every line (and so every
loop) would be attributed wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.analysis.hotspots import LoopSpan, is_system_path
from rocm_perf.trace.instruction_profile import STALL_REASON_LABELS
from rocm_perf.errors import RocmPerfError

_SOURCE_SUFFIXES = {".cu", ".hip", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cuh", ".inl"}


@dataclass
class SourceResolution:
    mapped: dict[str, str] = field(default_factory=dict)  # recorded path -> user file (absolute)
    how: dict[str, str] = field(default_factory=dict)  # recorded path -> "--source", "as recorded", "profiler's copy"
    system: set[str] = field(default_factory=set)
    unmapped: set[str] = field(default_factory=set)


def _tail_match(recorded: str, candidate: Path) -> int:
    """How many trailing path parts two paths share (1 = the basename only)."""
    a = [p for p in recorded.replace("\\", "/").split("/") if p]
    b = list(candidate.parts)
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _candidates(source: Path) -> dict[str, list[Path]]:
    if source.is_file():
        return {source.name: [source.resolve()]}
    found: dict[str, list[Path]] = {}
    for p in source.rglob("*"):
        if p.is_file() and p.suffix.lower() in _SOURCE_SUFFIXES and ".git" not in p.parts:
            found.setdefault(p.name, []).append(p.resolve())
    return found


def resolve_sources(
    recorded: list[str],
    *,
    source: Path | None = None,
    snapshots: dict[str, str] | None = None,
    max_line: dict[str, int] | None = None,
) -> SourceResolution:
    """Map each recorded path (see the module docstring). `snapshots`: recorded path -> the
    profiler's saved copy; `max_line`: recorded path -> the highest line the profile names there
    (to check a user's file is long enough). Raises RocmPerfError for `--source` that does not
    exist and for a user's file that does not match the profile."""
    snapshots = snapshots or {}
    max_line = max_line or {}
    result = SourceResolution()
    by_name: dict[str, list[Path]] = {}
    if source is not None:
        source = Path(source)
        if not source.exists():
            raise RocmPerfError(f"--source {source}: no such file or directory")
        by_name = _candidates(source)
    for path in sorted(set(recorded)):
        if not path:
            continue
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        options = by_name.get(name, [])
        if options:
            best = max(options, key=lambda c: (_tail_match(path, c), -len(c.parts)))
            _check_matches(best, path, snapshots.get(path), max_line.get(path))
            result.mapped[path], result.how[path] = str(best), "--source"
        elif is_system_path(path):
            result.system.add(path)
        elif Path(path).is_file():
            _check_matches(Path(path), path, snapshots.get(path), max_line.get(path))
            result.mapped[path], result.how[path] = str(Path(path).resolve()), "as recorded"
        elif path in snapshots and Path(snapshots[path]).is_file():
            result.mapped[path], result.how[path] = str(Path(snapshots[path]).resolve()), "profiler's copy"
        else:
            result.unmapped.add(path)
    return result


def _check_matches(user_file: Path, recorded: str, saved_copy: str | None, highest_line: int | None) -> None:
    try:
        text = user_file.read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{user_file}: cannot read ({e.strerror})") from None
    if saved_copy and Path(saved_copy).is_file() and Path(saved_copy).resolve() != user_file.resolve():
        saved = Path(saved_copy).read_bytes()
        if saved != text:
            first = _first_difference(saved, text)
            raise RocmPerfError(f"{user_file}: does not match the source the profile was taken with "
                                f"({saved_copy}, first difference at line {first}); pass --source with the "
                                f"profiled version")
    lines = text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
    if highest_line and highest_line > lines:
        raise RocmPerfError(f"{user_file}: does not match the profile: it has {lines} lines but the profile "
                            f"names line {highest_line} of {recorded}")


def _first_difference(a: bytes, b: bytes) -> int:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), start=1):
        if x != y:
            return n
    return min(len(a.splitlines()), len(b.splitlines())) + 1


def loop_spans(analysis, kernel) -> list[LoopSpan]:
    """The loops of one source kernel (and of the helpers it calls) as line ranges."""
    return [LoopSpan(id=l.id, file=str(Path(analysis.path).resolve()), line=int(l.line),
                     end_line=int(l.end_line or l.line), depth=int(l.depth))
            for l in analysis.loops if l.kernel == kernel.name]


@dataclass
class SourcedHotspots:
    """A profile's hotspots with the user's files and loops joined in."""

    result: object  # analysis.hotspots.Hotspots
    resolution: SourceResolution
    warnings: list[str]
    kernel_sources: dict[str, str]  # profile kernel -> the user file its loops come from


def source_hotspots(profile, *, source: Path | None = None, cflags: str = "", kernel_pattern: str | None = None,
                    rules=None, top_instructions: int = 20) -> SourcedHotspots:
    """Map the profile's paths to the user's files, find each kernel's loops with libclang (ids as
    `rocm-perf loops` prints them), and compute the hotspots. A source that does not parse leaves
    its kernels without loops and says why in `warnings`."""
    from rocm_perf.analysis.hotspots import analyze_hotspots
    from rocm_perf.source.analysis import analyze_source
    from rocm_perf.source.names import match_kernel

    recorded = sorted({str(f) for f in profile.file if f})
    highest: dict[str, int] = {}
    for f, line in zip(profile.file, profile.line):
        if f:
            highest[str(f)] = max(highest.get(str(f), 0), int(line))
    resolution = resolve_sources(recorded, source=source, snapshots=profile.metadata.get("snapshots") or {},
                                 max_line=highest)
    warnings: list[str] = []
    analyses = []
    for user_file in sorted(set(resolution.mapped.values())):
        if Path(user_file).suffix.lower() not in {".cu", ".hip", ".cpp", ".cc", ".cxx"}:
            continue
        try:
            analyses.append(analyze_source(Path(user_file), cflags))
        except RocmPerfError as e:
            warnings.append(f"loops unknown for {user_file}: {e}")
    loops: dict[str, list[LoopSpan]] = {}
    bodies: dict[str, tuple[str, int, int]] = {}
    kernel_sources: dict[str, str] = {}
    for name in profile.kernels():
        found = None
        for analysis in analyses:
            kernel = match_kernel(name, analysis) or match_kernel(profile.metadata.get("mangled", {}).get(name, ""), analysis)
            if kernel is not None:
                found = (analysis, kernel)
                break
        if found is None and analyses:
            found = _kernel_by_lines(profile, name, resolution, analyses)
            if found is not None:
                warnings.append(f"kernel {name}: the profile does not name it; its lines lie in kernel "
                                f"{found[1].name} of {found[0].path}")
        if found is not None:
            analysis, kernel = found
            loops[name] = loop_spans(analysis, kernel)
            bodies[name] = (str(Path(analysis.path).resolve()), int(kernel.line), int(kernel.end_line))
            kernel_sources[name] = str(analysis.path)
    result = analyze_hotspots(profile, mapping=resolution.mapped, system=resolution.system, loops=loops,
                              bodies=bodies, kernel_pattern=kernel_pattern, rules=rules, top_instructions=top_instructions)
    for k in result.kernels:
        if k.kernel not in loops and analyses and k.lines:
            warnings.append(f"kernel {k.kernel}: not found in {', '.join(str(a.path) for a in analyses)}; its loops are unknown")
    return SourcedHotspots(result, resolution, warnings, kernel_sources)


def _kernel_by_lines(profile, name: str, resolution: SourceResolution, analyses):
    """(analysis, kernel) whose definition holds most of the heat of an unnamed profile kernel
    (thread trace names dispatches, not kernels, when it has no kernel label), or None."""
    import numpy as np

    rows = np.flatnonzero(profile.kernel == name)
    best, best_weight = None, 0.0
    for analysis in analyses:
        path = str(Path(analysis.path).resolve())
        for kernel in analysis.kernels:
            weight = 0.0
            for r in rows:
                mapped = resolution.mapped.get(str(profile.file[r]))
                if mapped == path and kernel.line <= int(profile.line[r]) <= kernel.end_line:
                    weight += float(profile.weight[r])
            if weight > best_weight:
                best, best_weight = (analysis, kernel), weight
    return best


def annotated_source(hotspots: dict, context: int = 2, limit: int = 12) -> dict | None:
    """The hottest kernel of a hotspots.json, as the HTML report shows it: its hottest lines with
    a few lines of context, in blocks per file: {"kernel", "unit", "samples", "loops": [...],
    "blocks": [{"file", "rows": [{"line", "text", "share", "loop", "top_stall"} | {"gap": True}]}]}.
    None when there is no kernel with mapped lines."""
    kernels = [k for k in hotspots.get("kernels", []) if k.get("lines")]
    if not kernels:
        return None
    kernel = max(kernels, key=lambda k: k.get("samples", 0))
    hot = {(l["file"], l["line"]): l for l in kernel["lines"][:limit]}
    wanted: dict[str, set[int]] = {}
    for file, line in hot:
        wanted.setdefault(file, set()).update(range(max(1, line - context), line + context + 1))
    blocks = []
    for file, numbers in sorted(wanted.items()):
        try:
            text = Path(file).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        rows, previous = [], None
        for n in sorted(x for x in numbers if x <= len(text)):
            if previous is not None and n != previous + 1:
                rows.append({"gap": True})
            heat = hot.get((file, n))
            rows.append({"line": n, "text": text[n - 1], "share": heat["share"] if heat else 0.0,
                         "loop": heat.get("loop") if heat else None,
                         "top_stall": STALL_REASON_LABELS.get((heat or {}).get("top_stall") or "", "")})
            previous = n
        blocks.append({"file": file, "rows": rows})
    loops = [{"id": l["id"], "share": l["share"]} for l in (kernel.get("loops") or []) if l.get("samples")][:5]
    return {"kernel": kernel["kernel"], "unit": hotspots.get("unit", "samples"), "samples": kernel.get("samples", 0),
            "evidence": hotspots.get("evidence", ""), "loops": loops, "blocks": blocks}
