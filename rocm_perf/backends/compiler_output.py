"""Reading compiler diagnostics: the first errors, with their source lines, for error messages."""

from __future__ import annotations

import re

# `file:line:col: error: ...`, `clang: error: ...`, `fatal error: ...`
_DIAGNOSTIC = re.compile(r"^(?:.*?:\d+:\d+: |[\w.+-]+: )?(?P<kind>fatal error|error|warning|note|remark):")
_ERROR = ("error", "fatal error")


def first_errors(output: str, max_errors: int = 5) -> str:
    """The first `max_errors` error diagnostics with their context lines (code, caret, notes).

    Warnings and remarks are left out. Empty when the output holds no error diagnostic.
    """
    picked: list[str] = []
    errors = 0
    inside = False
    for line in output.splitlines():
        m = _DIAGNOSTIC.match(line)
        if m:
            kind = m.group("kind")
            if kind in _ERROR:
                if errors == max_errors:
                    break
                errors += 1
                inside = True
                picked.append(line)
            elif kind == "note" and inside:
                picked.append(line)
            else:
                inside = False
            continue
        if inside and line.strip() and not re.match(r"^\d+ errors? generated", line):
            picked.append(line)  # the source line and the caret under it
        elif re.match(r"^\d+ errors? generated", line):
            inside = False
    return "\n".join(picked)
