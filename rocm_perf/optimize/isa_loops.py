"""What a candidate does to the AMD ISA of its loop: pure functions over the `.s` text the compile
check keeps (compile_check keep_isa, built with -g so that `.loc` directives give source lines).

- `isa_identity`: a hash of the machine code alone (instructions and block labels; no comments,
  no `.loc`, no debug data), so that two builds whose code is the same compare equal.
- `loop_mix`: the instruction mix of the machine loop holding a source loop's lines. Machine
  loops are found by their back edges (a branch to a block label at or above it, as LLVM lays
  out loops); the one matching the source loop is, of the innermost machine loops whose
  main-file instructions lie mostly in the loop's line range, the one doing the most work (an
  unrolled loop rather than its remainder), else the smallest holding any of them (a loop the
  compiler unrolled completely lives on in the loop around it). Code inlined from a header
  counts at the last main-file line before it.
- `isa_delta`: candidate against baseline: instructions per unit of work in that machine loop
  (work = VALU, MFMA, VMEM, SMEM and LDS instructions, which an unroll copies but does not add to,
  so the ratio measures overhead per original iteration), and the loop's instruction count.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field

from rocm_perf.analysis.instruction_mix import CLASSES, instruction_class

_FUNC_LABEL = re.compile(r"^(?P<name>[A-Za-z_$][\w.$]*):")
_BLOCK_LABEL = re.compile(r"^(?P<name>\.LBB\d+_\d+):")
_FUNC_END = re.compile(r"^\.Lfunc_end\d+:")
_INSTRUCTION = re.compile(r"^\s+(?P<op>[a-z][a-z0-9_]*)(?:\s+(?P<args>[^;]*))?")
_LOC = re.compile(r"^\s+\.loc\s+(?P<file>\d+)\s+(?P<line>\d+)")
_FILE = re.compile(r'^\s+\.file\s+(?P<index>\d+)\s+"(?P<dir>[^"]*)"(?:\s+"(?P<name>[^"]*)")?')
_BRANCH_TARGET = re.compile(r"(\.LBB\d+_\d+)")
WORK_CLASSES = ("valu", "mfma", "vmem", "smem", "lds")


def isa_identity(asm: str) -> str:
    """sha256 of the machine code: instruction lines (comments dropped) and block labels, in order."""
    h = hashlib.sha256()
    for line in asm.splitlines():
        m = _BLOCK_LABEL.match(line)
        if m:
            h.update(m.group("name").encode() + b":\n")
            continue
        m = _INSTRUCTION.match(line)
        if m:
            h.update(line.split(";", 1)[0].strip().encode() + b"\n")
    return h.hexdigest()


@dataclass
class Instruction:
    op: str
    klass: str
    line: int | None  # source line in the main file (code inlined from a header: its call site's line, roughly)
    target: str | None = None  # a branch's block label


@dataclass
class MachineLoop:
    header: str  # the block label the back edge jumps to
    start: int  # index of its first instruction in the function
    end: int  # index of the back-edge branch (inclusive)

    def size(self) -> int:
        return self.end - self.start + 1


@dataclass
class LoopMix:
    """One machine loop's instructions by class, and the source lines it was matched on."""

    header: str
    instructions: int
    classes: dict[str, int] = field(default_factory=dict)
    matched: str = ""  # "loop" (its lines are mostly the source loop's) | "enclosing" (holds a fully unrolled loop)

    @property
    def work(self) -> int:
        return sum(self.classes.get(c, 0) for c in WORK_CLASSES)

    @property
    def per_work(self) -> float | None:
        return self.instructions / self.work if self.work else None

    def to_json(self) -> dict:
        return {**asdict(self), "work": self.work, "per_work": self.per_work}


def _main_file_index(asm: str, source_name: str) -> set[str]:
    return {m.group("index") for m in (_FILE.match(l) for l in asm.splitlines()[:400]) if m
            and (m.group("name") or m.group("dir")).rsplit("/", 1)[-1] == source_name}


def functions(asm: str, source_name: str) -> dict[str, list[tuple[str, Instruction | str]]]:
    """Per function (mangled name): its items in order, ("label", name) or ("insn", Instruction)."""
    main = _main_file_index(asm, source_name)
    out: dict[str, list] = {}
    current: list | None = None
    line: int | None = None
    for text in asm.splitlines():
        if _FUNC_END.match(text):
            current = None
            continue
        m = _BLOCK_LABEL.match(text)
        if m:
            if current is not None:
                current.append(("label", m.group("name")))
            continue
        m = _FUNC_LABEL.match(text)
        if m:
            current = out.setdefault(m.group("name"), [])
            line = None
            continue
        if current is None:
            continue
        m = _LOC.match(text)
        if m:
            n = int(m.group("line"))
            if m.group("file") in main and n > 0:
                line = n  # else: inlined code from a header, or no line: it stays at the last main-file line
            continue
        m = _INSTRUCTION.match(text)
        if not m:
            continue
        klass = instruction_class(m.group("op"))
        if klass is None:
            continue
        target = None
        if klass == "branch":
            t = _BRANCH_TARGET.search(m.group("args") or "")
            target = t.group(1) if t else None
        current.append(("insn", Instruction(m.group("op"), klass, line, target)))
    return out


def machine_loops(items: list) -> tuple[list[Instruction], list[MachineLoop]]:
    """The function's instructions and its loops (a back edge: a branch to a label at or above it)."""
    insns: list[Instruction] = []
    label_at: dict[str, int] = {}
    for kind, value in items:
        if kind == "label":
            label_at[value] = len(insns)
        else:
            insns.append(value)
    loops = []
    for i, ins in enumerate(insns):
        if ins.target is not None and ins.target in label_at and label_at[ins.target] <= i:
            loops.append(MachineLoop(ins.target, label_at[ins.target], i))
    return insns, loops


def loop_mix(asm: str, kernel: str, source_name: str, first_line: int, last_line: int) -> LoopMix | None:
    """The mix of the machine loop of `kernel` (mangled) holding source lines [first_line,
    last_line], or None when no machine loop holds any of them (the code runs once)."""
    items = functions(asm, source_name).get(kernel)
    if not items:
        return None
    insns, loops = machine_loops(items)
    inside = lambda ins: ins.line is not None and first_line <= ins.line <= last_line  # noqa: E731
    best, how = None, ""
    matching = []
    for lp in loops:
        lined = [ins for ins in insns[lp.start: lp.end + 1] if ins.line is not None]
        hits = sum(inside(ins) for ins in lined)
        if hits and hits * 2 >= len(lined):
            matching.append(lp)
    # The innermost matching loops (an unrolled loop and its remainder loop both match): the one
    # doing the most work runs the most iterations' worth.
    innermost = [lp for lp in matching if not any(o is not lp and lp.start <= o.start and o.end <= lp.end for o in matching)]
    if innermost:
        best = max(innermost, key=lambda l: (_work(insns[l.start: l.end + 1]), -l.size(), -l.start))
        how = "loop"
    if best is None:
        holding = [lp for lp in loops if any(inside(ins) for ins in insns[lp.start: lp.end + 1])]
        if not holding:
            return None
        best, how = min(holding, key=lambda l: (l.size(), l.start)), "enclosing"
    body = insns[best.start: best.end + 1]
    classes = {c: 0 for c in CLASSES}
    for ins in body:
        classes[ins.klass] = classes.get(ins.klass, 0) + 1
    return LoopMix(best.header, len(body), {k: v for k, v in classes.items() if v}, how)


def _work(body: list[Instruction]) -> int:
    return sum(ins.klass in WORK_CLASSES for ins in body)


@dataclass(frozen=True)
class IsaDelta:
    """Candidate against baseline in the machine loop of the rewritten source loop."""

    per_work: float | None  # candidate's instructions per unit of work / the baseline's (< 1: less overhead)
    instructions: tuple[int, int]  # the machine loop's instructions, baseline and candidate
    vgpr: tuple[int | None, int | None]
    spills: tuple[int, int]
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def isa_delta(base: LoopMix | None, cand: LoopMix | None, base_res: dict | None, cand_res: dict | None) -> IsaDelta:
    """The ISA evidence of one candidate (any part may be missing: then it is None or noted)."""
    base_res, cand_res = base_res or {}, cand_res or {}
    spills = tuple(int((r.get("vgpr_spill") or 0) + (r.get("sgpr_spill") or 0)) for r in (base_res, cand_res))
    vgpr = (base_res.get("vgpr"), cand_res.get("vgpr"))
    if base is None or cand is None:
        return IsaDelta(None, (0, 0), vgpr, spills, "no machine loop holds the source loop")
    ratio = cand.per_work / base.per_work if cand.per_work and base.per_work else None
    return IsaDelta(ratio, (base.instructions, cand.instructions), vgpr, spills)
