"""AMD GPU assembly (`.s` from `-save-temps`): instructions per kernel."""

from __future__ import annotations

import re

_LABEL = re.compile(r"^(?P<name>[A-Za-z_.$][\w.$]*):")
_FUNC_END = re.compile(r"^\.Lfunc_end\d+:")
_INSTRUCTION = re.compile(r"^\s+[a-z][a-z0-9_]*(?:\s|$)")


def count_instructions(asm: str) -> dict[str, int]:
    """Mangled kernel name -> number of machine instructions between its label and `.Lfunc_endN`.

    Directives (`.xxx`), comments (`;`) and block labels do not count.
    """
    counts: dict[str, int] = {}
    current: str | None = None
    for line in asm.splitlines():
        m = _LABEL.match(line)
        if m and not m.group("name").startswith("."):  # a function (or data) symbol starts
            current = m.group("name")
            counts[current] = 0
            continue
        if current is None:
            continue
        if _FUNC_END.match(line):
            current = None
            continue
        if _INSTRUCTION.match(line):
            counts[current] += 1
    return counts


_BLOCK_LABEL = re.compile(r"^\.?L\w*:")


def kernel_instructions(asm: str) -> dict[str, list[str]]:
    """Mangled kernel name -> its machine code as lines: instructions with their operands and block
    labels, comments and directives dropped. Two builds compile a kernel to the same code when
    these lists are equal."""
    code: dict[str, list[str]] = {}
    current: str | None = None
    for line in asm.splitlines():
        m = _LABEL.match(line)
        if m and not m.group("name").startswith("."):
            current = m.group("name")
            code[current] = []
            continue
        if current is None:
            continue
        if _FUNC_END.match(line):
            current = None
            continue
        stripped = line.split(";", 1)[0].rstrip()
        if _INSTRUCTION.match(stripped) or _BLOCK_LABEL.match(stripped.strip()):
            code[current].append(" ".join(stripped.split()))
    return code
