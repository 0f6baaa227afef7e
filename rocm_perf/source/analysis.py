"""One source file's analysis: its kernels and their loops, from one libclang parse."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from clang.cindex import CursorKind

from rocm_perf.source.kernels import KernelInfo, find_kernels
from rocm_perf.source.loops import LoopInfo, find_loops
from rocm_perf.source.cursors import walk_all
from rocm_perf.source.parse import PARSE_LOCK, ParsedSource, parse_bytes, parse_file


@dataclass
class SourceAnalysis:
    path: Path
    data: bytes = field(repr=False)  # the bytes analyzed: loop offsets index into them
    flags: tuple[str, ...]
    mode: str  # "real" or "stub" HIP headers
    kernels: list[KernelInfo]
    loops: list[LoopInfo]
    warnings: list[str]
    jumps: int = 0  # goto statements and labels written in the file

    def loop(self, loop_id: str) -> LoopInfo:
        """The loop with this id; `KERNEL:FUNCTION:ORDINAL` (no line) is accepted when unique."""
        for loop in self.loops:
            if loop.id == loop_id:
                return loop
        prefix = [l for l in self.loops if l.id.rsplit(":", 1)[0] == loop_id]
        if len(prefix) == 1:
            return prefix[0]
        known = ", ".join(l.id for l in self.loops) or "none"
        raise RocmPerfError(f"{self.path}: no loop {loop_id!r} (loops: {known})")

    def kernel_loops(self, kernel: str) -> list[LoopInfo]:
        return [l for l in self.loops if l.kernel == kernel]

    def to_json(self) -> dict:
        return {
            "source": str(self.path),
            "mode": self.mode,
            "flags": list(self.flags),
            "warnings": self.warnings,
            "kernels": [k.to_json() for k in self.kernels],
            "loops": [l.to_json() for l in self.loops],
        }


def analyze_parsed(parsed: ParsedSource) -> SourceAnalysis:
    """Plain records only: the translation unit is re-used by the next parse of the file."""
    with PARSE_LOCK:
        kernels = find_kernels(parsed)
        loops = find_loops(parsed, kernels)
        jumps = count_jumps(parsed)
    for kernel in kernels:
        kernel.cursor, kernel.helper_cursors = None, []
    return SourceAnalysis(parsed.path, parsed.data, parsed.flags, parsed.setup.mode, kernels, loops,
                          parsed.warnings, jumps)  # fmt: skip


def count_jumps(parsed: ParsedSource) -> int:
    kinds = (CursorKind.GOTO_STMT, CursorKind.INDIRECT_GOTO_STMT, CursorKind.LABEL_STMT)
    return sum(1 for n in walk_all(parsed.top_level()) if n.kind in kinds)


def analyze_source(path: Path, flags=()) -> SourceAnalysis:
    """Kernels and loops of a source file parsed with the build's -D/-I/-std flags."""
    with PARSE_LOCK:
        return analyze_parsed(parse_file(Path(path), flags))


def analyze_bytes(path: Path, data: bytes, flags=()) -> SourceAnalysis:
    """The same for in-memory contents standing in for `path` (a rewrite candidate)."""
    with PARSE_LOCK:
        return analyze_parsed(parse_bytes(Path(path), data, flags))
