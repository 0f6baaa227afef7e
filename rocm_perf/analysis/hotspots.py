"""Hot lines, hot loops and why they stall: an InstructionProfile summed per instruction, per
source line, per loop and per kernel, with findings by the documented rules in
rules/hotspots.toml.

Pure: the caller decides (looking at the disk and parsing sources) which profile paths map to
which of the user's files, which are system headers, and which loops each kernel has
(`LoopSpan`, with the ids `rocm-perf loops` prints). A line belongs to the innermost loop whose
line range holds it; lines outside every loop are counted as such.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
try:
    import tomllib  # novermin: Python 3.11+; tomli below is the same parser for 3.10
except ModuleNotFoundError:
    import tomli as tomllib

import numpy as np

from rocm_perf.analysis.instruction_mix import CLASSES, instruction_class
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.instruction_profile import InstructionProfile

RULES_FILE = Path(__file__).resolve().parent / "rules" / "hotspots.toml"
# Where system headers live: ROCm and compiler installs, the C++ library, our host runtime.
_SYSTEM_MARKERS = ("/opt/rocm", "/usr/include/", "/usr/lib/", "/usr/local/include/", "/include/hip/",
                   "/include/c++/", "/lib/gcc/", "/lib/llvm", "/backends/host_runtime/", "<built-in>")


@dataclass(frozen=True)
class LoopSpan:
    """A loop as the source analysis sees it: its id and its line range in a user file."""

    id: str
    file: str
    line: int
    end_line: int
    depth: int


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    advice: str
    unrolling: str = "neutral"
    reason: str | None = None
    min_reason_share: float = 1.0
    dominant: bool = False
    klass: str | None = None
    fallback_class: str | None = None
    min_class_share: float = 1.0


@dataclass(frozen=True)
class Rules:
    rules: tuple[Rule, ...]
    min_samples: float = 20
    min_loop_share: float = 0.05


@dataclass
class Finding:
    rule: str
    title: str
    scope: str  # "kernel" | "loop"
    where: str  # the kernel name or the loop id
    share: float  # the share that fired the rule
    evidence: str
    advice: str
    unrolling: str


@dataclass
class Heat:
    """Weights of one group of instructions (a line, a loop, a kernel)."""

    samples: float = 0.0
    share: float = 0.0  # of its kernel
    issued: float = 0.0
    stalled: float = 0.0
    stalls: dict[str, float] = field(default_factory=dict)  # stalled weight per reason (non-zero only)
    mix: dict[str, float] = field(default_factory=dict)  # weight per instruction class
    instructions: int = 0

    @property
    def top_stall(self) -> str | None:
        reasons = {k: v for k, v in self.stalls.items() if k != "none" and v > 0}
        return max(reasons, key=reasons.get) if reasons else None


@dataclass
class LineHeat(Heat):
    file: str = ""  # the user's file when mapped, else the path the profiler recorded
    line: int = 0
    status: str = "mapped"  # mapped | unmapped | system | no-line
    loop: str | None = None
    profile_file: str = ""


@dataclass
class LoopHeat(Heat):
    id: str = ""
    file: str = ""
    line: int = 0
    end_line: int = 0
    depth: int = 0
    inclusive_samples: float = 0.0  # with the loops nested in it
    inclusive_share: float = 0.0
    lines: int = 0
    inlined: float = 0.0  # samples of system-header code inlined into the loop (in `samples` too)


@dataclass
class InstructionHeat(Heat):
    isa: str = ""
    vaddr: int = -1
    file: str = ""
    line: int = 0


@dataclass
class KernelHotspots:
    kernel: str
    heat: Heat
    share_of_profile: float
    lines: list[LineHeat]  # mapped lines, hottest first
    loops: list[LoopHeat]  # hottest first (own samples: innermost loop wins)
    outside_loops: float  # samples on mapped lines in no loop
    unmapped: list[LineHeat]  # lines in files that could not be found
    system: dict[str, float]  # system header -> samples
    no_line: float  # samples with no source location
    instructions: list[InstructionHeat]  # hottest first
    findings: list[Finding]
    loops_known: bool  # whether the kernel's loops were given


@dataclass
class Hotspots:
    origin: str
    evidence: str
    unit: str
    stall_reasons: tuple[str, ...]
    has_issue_split: bool
    total: float
    kernels: list[KernelHotspots]
    notes: list[str]


def load_rules(path: Path | None = None) -> Rules:
    """The findings rules (rules/hotspots.toml, package data, unless `path`)."""
    path = Path(path) if path else RULES_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RocmPerfError(f"{path}: cannot read the hotspot rules ({e})") from None
    rules = []
    for i, r in enumerate(data.get("rule", [])):
        try:
            rules.append(Rule(id=r["id"], title=r.get("title", r["id"]), advice=r.get("advice", ""),
                              unrolling=r.get("unrolling", "neutral"), reason=r.get("reason"),
                              min_reason_share=float(r.get("min_reason_share", 1.0)), dominant=bool(r.get("dominant", False)),
                              klass=r.get("class"), fallback_class=r.get("fallback_class"),
                              min_class_share=float(r.get("min_class_share", 1.0))))
        except (KeyError, TypeError, ValueError) as e:
            raise RocmPerfError(f"{path}: rule {i + 1} is malformed ({e})") from None
    settings = data.get("settings", {})
    return Rules(tuple(rules), float(settings.get("min_samples", 20)), float(settings.get("min_loop_share", 0.05)))


def is_system_path(path: str) -> bool:
    """Whether a recorded source path is a system or runtime header rather than the user's code."""
    return any(marker in path for marker in _SYSTEM_MARKERS)


def innermost_loop(loops: list[LoopSpan], file: str, line: int) -> LoopSpan | None:
    """The deepest loop of `file` whose [line, end_line] holds `line` (the first one on a tie)."""
    best = None
    for loop in loops:
        if loop.file == file and loop.line <= line <= loop.end_line:
            if best is None or loop.depth > best.depth:
                best = loop
    return best


def analyze_hotspots(
    profile: InstructionProfile,
    *,
    mapping: dict[str, str] | None = None,
    system: set[str] | frozenset[str] = frozenset(),
    loops: dict[str, list[LoopSpan]] | None = None,
    bodies: dict[str, tuple[str, int, int]] | None = None,
    kernel_pattern: str | None = None,
    rules: Rules | None = None,
    top_instructions: int = 20,
) -> Hotspots:
    """Per kernel: its lines, loops and instructions by heat, and the findings.

    `mapping`: profile path -> user file (paths not in it and not in `system` are unmapped);
    `loops`: profile kernel name -> its loops (missing: loops unknown for that kernel);
    `bodies`: profile kernel name -> (user file, first line, last line) of its definition;
    `kernel_pattern`: a regular expression a kernel name must contain a match of.
    """
    mapping = mapping or {}
    loops = loops or {}
    rules = rules if rules is not None else load_rules()
    try:
        pattern = re.compile(kernel_pattern) if kernel_pattern else None
    except re.error as e:
        raise RocmPerfError(f"--kernel {kernel_pattern!r}: not a regular expression ({e})") from None
    names = [k for k in profile.kernels() if pattern is None or pattern.search(k)]
    if pattern is not None and not names:
        raise RocmPerfError(f"{profile.origin}: no kernel matches --kernel {kernel_pattern!r} "
                            f"(kernels: {', '.join(profile.kernels())})")
    classes = np.array([instruction_class(str(i)) or "" for i in profile.isa], dtype=object)
    total = float(profile.weight.sum())
    kernels = []
    for name in names:
        rows = np.flatnonzero(profile.kernel == name)
        kernels.append(_kernel(profile, name, rows, classes, mapping, system, loops.get(name),
                               (bodies or {}).get(name), rules, total, top_instructions))
    kernels.sort(key=lambda k: -k.heat.samples)
    return Hotspots(profile.origin, profile.evidence, profile.unit, profile.stall_reasons, profile.has_issue_split,
                    total, kernels, list(profile.notes))


def _heat(profile: InstructionProfile, rows: np.ndarray, classes: np.ndarray, kernel_total: float) -> Heat:
    h = Heat()
    _add(h, profile, rows, classes)
    h.share = h.samples / kernel_total if kernel_total else 0.0
    return h


def _add(h: Heat, profile: InstructionProfile, rows: np.ndarray, classes: np.ndarray) -> None:
    if len(rows) == 0:
        return
    h.samples += float(profile.weight[rows].sum())
    h.issued += float(profile.issued[rows].sum())
    h.stalled += float(profile.stalled[rows].sum())
    per_reason = profile.stalls[rows].sum(axis=0)
    for k, reason in enumerate(profile.stall_reasons):
        if per_reason[k]:
            h.stalls[reason] = h.stalls.get(reason, 0.0) + float(per_reason[k])
    for klass in CLASSES:
        selected = rows[classes[rows] == klass]
        if len(selected):
            h.mix[klass] = h.mix.get(klass, 0.0) + float(profile.weight[selected].sum())
    h.instructions += int(len(rows))


def _kernel(profile, name, rows, classes, mapping, system, spans, body, rules, total, top_instructions) -> KernelHotspots:
    kernel_total = float(profile.weight[rows].sum())
    heat = _heat(profile, rows, classes, kernel_total)
    heat.share = 1.0 if kernel_total else 0.0
    by_line: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        by_line.setdefault((str(profile.file[r]), int(profile.line[r])), []).append(int(r))
    lines, unmapped = [], []
    system_heat: dict[str, float] = {}
    no_line = 0.0
    for (path, line), members in by_line.items():
        idx = np.array(members, dtype=np.int64)
        weight = float(profile.weight[idx].sum())
        if weight <= 0:
            continue  # instructions nobody sampled: not a hot line
        if not path or line <= 0:
            no_line += weight
            continue
        if path in system or (path not in mapping and is_system_path(path)):
            system_heat[path] = system_heat.get(path, 0.0) + weight
            continue
        lh = LineHeat(file=mapping.get(path, path), line=line, profile_file=path,
                      status="mapped" if path in mapping else "unmapped")
        _add(lh, profile, idx, classes)
        lh.share = lh.samples / kernel_total if kernel_total else 0.0
        (lines if path in mapping else unmapped).append(lh)
    # Two recorded paths can map to one user file: merge their lines.
    lines = _merge_lines(lines, kernel_total)
    loop_heat: dict[str, LoopHeat] = {
        span.id: LoopHeat(id=span.id, file=span.file, line=span.line, end_line=span.end_line, depth=span.depth)
        for span in spans or []  # loops nobody sampled are listed too (with 0): the optimizer needs to know
    }
    for lh in lines:
        span = innermost_loop(spans, lh.file, lh.line) if spans else None
        lh.loop = span.id if span else None
    outside = _attribute_rows(profile, rows, classes, mapping, system, spans or [], body, loop_heat)
    for lh in lines:
        if lh.loop:
            loop_heat[lh.loop].lines += 1
    for entry in loop_heat.values():
        entry.share = entry.samples / kernel_total if kernel_total else 0.0
        inner = [other for other in loop_heat.values() if other.file == entry.file
                 and entry.line <= other.line and other.end_line <= entry.end_line]
        entry.inclusive_samples = sum(o.samples for o in inner)
        entry.inclusive_share = entry.inclusive_samples / kernel_total if kernel_total else 0.0
    loops_sorted = sorted(loop_heat.values(), key=lambda l: (-l.samples, l.line, l.id))
    lines.sort(key=lambda l: (-l.samples, l.file, l.line))
    unmapped.sort(key=lambda l: (-l.samples, l.file, l.line))
    instructions = _instructions(profile, rows, classes, kernel_total, top_instructions)
    findings = _findings(rules, profile, heat, name, "kernel", kernel_total)
    for entry in loops_sorted:
        if entry.share >= rules.min_loop_share:
            findings += _findings(rules, profile, entry, entry.id, "loop", kernel_total)
    return KernelHotspots(
        kernel=name, heat=heat, share_of_profile=kernel_total / total if total else 0.0, lines=lines,
        loops=loops_sorted, outside_loops=outside, unmapped=unmapped,
        system=dict(sorted(system_heat.items(), key=lambda kv: -kv[1])), no_line=no_line,
        instructions=instructions, findings=findings, loops_known=spans is not None,
    )


def _attribute_rows(profile, rows, classes, mapping, system, spans: list[LoopSpan], body: tuple[str, int, int] | None,
                    loop_heat: dict[str, LoopHeat]) -> float:
    """Add every row to the innermost loop holding it; returns the mapped samples in no loop.

    A row's loop is the innermost loop holding its own line or, failing that, a line it was
    inlined into (the `context` frames the host sampler records). Where every row has an address
    (PC sampling, thread trace), code the compiler inlined from elsewhere (a system header such as
    __syncthreads(), or a helper function without loops, i.e. mapped lines outside the kernel's
    own definition `body`) counts toward the loop of the nearest kernel line before it in address
    order: that is where it was inlined.
    """
    if not spans:
        return float(sum(profile.weight[r] for r in rows if str(profile.file[r]) in mapping))
    # The host sampler records real inlining chains (`context`); its addresses are CPU code,
    # where the runtime's own code is not inlined into the user's loops.
    by_address = profile.evidence != "host-sampler" and not np.any(profile.vaddr[rows] < 0)
    order = rows[np.argsort(profile.vaddr[rows], kind="stable")] if by_address else rows
    outside = 0.0
    current: LoopHeat | None = None
    for r in order:
        path, line = str(profile.file[r]), int(profile.line[r])
        weight = float(profile.weight[r])
        span = None
        if path in mapping:
            span = innermost_loop(spans, mapping[path], line)
            if span is None and profile.context is not None and profile.context[r]:
                for frame_path, frame_line in profile.context[r]:
                    span = innermost_loop(spans, mapping.get(frame_path, frame_path), int(frame_line))
                    if span is not None:
                        break
        if span is not None:
            entry = loop_heat[span.id]
            _add(entry, profile, np.array([r]), classes)
            current = entry
            continue
        inlined_here = by_address and current is not None and (
            (path in mapping and body is not None and not (mapping[path] == body[0] and body[1] <= line <= body[2]))
            or (path not in mapping and path and (path in system or is_system_path(path))))
        if inlined_here:
            before = current.samples
            _add(current, profile, np.array([r]), classes)
            current.inlined += current.samples - before
            continue
        if path in mapping:
            outside += weight
            if body is None or (mapping[path] == body[0] and body[1] <= line <= body[2]):
                current = None  # kernel code between loops
    return outside


def _merge_heat(into: Heat, other: Heat) -> None:
    into.samples += other.samples
    into.issued += other.issued
    into.stalled += other.stalled
    into.instructions += other.instructions
    for k, v in other.stalls.items():
        into.stalls[k] = into.stalls.get(k, 0.0) + v
    for k, v in other.mix.items():
        into.mix[k] = into.mix.get(k, 0.0) + v


def _merge_lines(lines: list[LineHeat], kernel_total: float) -> list[LineHeat]:
    merged: dict[tuple[str, int], LineHeat] = {}
    for lh in lines:
        key = (lh.file, lh.line)
        if key in merged:
            _merge_heat(merged[key], lh)
            merged[key].share = merged[key].samples / kernel_total if kernel_total else 0.0
        else:
            merged[key] = lh
    return list(merged.values())


def _instructions(profile, rows, classes, kernel_total, top) -> list[InstructionHeat]:
    hot = rows[np.argsort(-profile.weight[rows], kind="stable")][:top]
    out = []
    for r in hot:
        if profile.weight[r] <= 0:
            break
        ih = InstructionHeat(isa=str(profile.isa[r]), vaddr=int(profile.vaddr[r]), file=str(profile.file[r]),
                             line=int(profile.line[r]))
        _add(ih, profile, np.array([r]), classes)
        ih.share = ih.samples / kernel_total if kernel_total else 0.0
        out.append(ih)
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _findings(rules: Rules, profile: InstructionProfile, heat: Heat, where: str, scope: str,
              kernel_total: float) -> list[Finding]:
    if heat.samples < rules.min_samples:
        return []
    unit = profile.unit
    has_reasons = sum(v for k, v in heat.stalls.items() if k != "none") > 0
    found = []
    for rule in rules.rules:
        share, evidence = None, ""
        if rule.reason and has_reasons:
            stalled = sum(heat.stalls.values())
            value = heat.stalls.get(rule.reason, 0.0)
            top = heat.top_stall
            if stalled and value / stalled >= rule.min_reason_share and (not rule.dominant or top == rule.reason):
                share = value / stalled
                evidence = (f"{rule.reason.replace('_', ' ')}: {_pct(share)} of {stalled:.0f} stalled {unit}"
                            f" (stalled {_pct(heat.stalled / heat.samples)} of {heat.samples:.0f})")
        klass = rule.klass or (rule.fallback_class if not has_reasons else None)
        if share is None and klass and heat.mix:
            value = heat.mix.get(klass, 0.0)
            if heat.samples and value / heat.samples >= rule.min_class_share:
                share = value / heat.samples
                evidence = f"{klass} instructions: {_pct(share)} of {heat.samples:.0f} {unit}"
                if rule.klass is None:
                    evidence += " (no stall reasons in this evidence: judged by instruction class)"
        if share is not None:
            if scope == "loop" and kernel_total:
                evidence += f"; the loop holds {_pct(heat.samples / kernel_total)} of the kernel"
            found.append(Finding(rule.id, rule.title, scope, where, share, evidence, rule.advice, rule.unrolling))
    return found


def hotspots_json(result: Hotspots, top: int | None = None) -> dict:
    """hotspots.json: per kernel `lines` (file, line, samples, share, stalls by reason name) and
    `loops` (id, samples, share, top_stall), plus what else the tables show."""
    def heat_fields(h: Heat) -> dict:
        return {"samples": h.samples, "share": h.share, "issued": h.issued, "stalled": h.stalled,
                "stalls": dict(h.stalls), "top_stall": h.top_stall, "mix": dict(h.mix), "instructions": h.instructions}

    kernels = []
    for k in result.kernels:
        lines = k.lines[:top] if top else k.lines
        kernels.append({
            "kernel": k.kernel,
            **heat_fields(k.heat),
            "share_of_profile": k.share_of_profile,
            "lines": [{"file": l.file, "line": l.line, "loop": l.loop, "profile_file": l.profile_file, **heat_fields(l)}
                      for l in lines],
            "loops": [{"id": l.id, "file": l.file, "line": l.line, "end_line": l.end_line, "depth": l.depth,
                       "inclusive_samples": l.inclusive_samples, "inclusive_share": l.inclusive_share,
                       **heat_fields(l)} for l in k.loops] if k.loops_known else None,
            "outside_loops": k.outside_loops,
            "unmapped_lines": [{"file": l.file, "line": l.line, "samples": l.samples, "share": l.share} for l in k.unmapped],
            "system_headers": k.system,
            "no_line": k.no_line,
            "instructions": [{"isa": i.isa, "vaddr": i.vaddr, "file": i.file, "line": i.line, **heat_fields(i)}
                             for i in k.instructions],
            "findings": [asdict(f) for f in k.findings],
        })
    return {"origin": result.origin, "evidence": result.evidence, "unit": result.unit,
            "stall_reasons": list(result.stall_reasons), "has_issue_split": result.has_issue_split,
            "total": result.total, "notes": result.notes, "kernels": kernels}
