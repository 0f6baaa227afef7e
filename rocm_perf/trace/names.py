"""Kernel names for people: demangling what a trace left mangled, and shortening long C++ names."""

from __future__ import annotations

import shutil

from rocm_perf.process import run
from rocm_perf.trace.model import Trace

_ELLIPSIS = "…"


def demangle_symbols(trace: Trace) -> None:
    """Replace mangled (`_Z...`) display names with c++filt's demangling, in one batch call.

    Legacy RPD and `rocprofv3 -M` keep some names mangled. Without c++filt the names stay as they are.
    """
    targets = [i for i, s in enumerate(trace.symbols) if s.display_name.startswith("_Z")]
    tool = shutil.which("c++filt")
    if not targets or tool is None:
        return
    for begin in range(0, len(targets), 256):  # bounded argument lists, whatever the symbol count
        chunk = targets[begin : begin + 256]
        names = [trace.symbols[i].display_name.removesuffix(".kd") for i in chunk]
        done = run([tool, *names], timeout=30)
        lines = done.stdout.splitlines()
        if done.returncode != 0 or len(lines) != len(names):
            continue  # keep the mangled names rather than guess a pairing
        for i, demangled in zip(chunk, lines):
            if demangled and not demangled.startswith("_Z"):
                trace.symbols[i].display_name = demangled


def _strip_parameters(name: str) -> str:
    """Drop the trailing parameter list `(...)` (parentheses balanced from the end)."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                head = name[:i]
                # `operator()(...)`: the pair we found is the call operator's own name only when nothing precedes it
                return head if head.strip() else name
    return name


def _top_level_spaces(name: str) -> list[int]:
    """Positions of spaces outside <...> and (...), where a return type ends and the function name starts."""
    spots, angle, paren = [], 0, 0
    for i, c in enumerate(name):
        if c == "(":
            paren += 1
        elif c == ")":
            paren = max(0, paren - 1)
        elif paren == 0 and c == "<":
            angle += 1
        elif paren == 0 and c == ">":
            angle = max(0, angle - 1)
        elif c == " " and angle == 0 and paren == 0:
            spots.append(i)
    return spots


def _collapse_templates(name: str, keep_depth: int) -> str:
    """Replace template arguments nested deeper than `keep_depth` with an ellipsis."""
    out, depth, paren = [], 0, 0
    for c in name:
        if c == "(":
            paren += 1
        elif c == ")":
            paren = max(0, paren - 1)
        if paren == 0 and c == "<":
            depth += 1
            if depth == keep_depth + 1:
                out.append("<" + _ELLIPSIS)
            if depth > keep_depth:
                continue
        elif paren == 0 and c == ">":
            depth = max(0, depth - 1)
            if depth == keep_depth:
                out.append(">")
                continue
            if depth > keep_depth:
                continue
        elif depth > keep_depth:
            continue
        out.append(c)
    return "".join(out)


def short_name(display_name: str, width: int = 72) -> str:
    """A one-line name for tables: no return type or parameter list, deep templates folded, at most `width` chars."""
    name = _strip_parameters(display_name.strip())
    spaces = _top_level_spaces(name)
    if spaces:
        name = name[spaces[-1] + 1 :]  # "void", "std::enable_if<...>::type": return types
    if len(name) > width:
        # Keep the first level of template arguments (they name the variant), fold the rest.
        name = _collapse_templates(name, 1)
    if len(name) > width:
        name = name[: width - 1] + _ELLIPSIS
    return name
