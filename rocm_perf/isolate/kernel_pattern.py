"""`isolate --kernel`: the user's regular expression (Python's syntax, which the trace readers match
with) rewritten into the subset both capture runtimes match alike.

The host runtime (capture.h) matches with POSIX extended expressions (glibc's `regcomp`): std::regex
cost every host build about 4 s of compile time (its templates are instantiated and optimized in
each program). The rocm backend's interposer matches with std::regex (ECMAScript), built once.
The rewritten pattern means the same to Python, to glibc's ERE and to ECMAScript: `\\d \\w \\s` become
bracket classes, `(?:` a plain group, a lazy quantifier its greedy form (a search finds a match
either way), a `{` that starts no repeat count an escaped one. What one of them cannot read
(look-around, back-references, inline flags, escapes inside brackets other than `\\d \\w \\s`) is
refused with the reason.
"""

from __future__ import annotations

import re

from rocm_perf.errors import RocmPerfError

# Escapes outside brackets, and their bracket forms inside brackets.
_CLASSES = {"d": "[0-9]", "D": "[^0-9]", "w": "[[:alnum:]_]", "W": "[^[:alnum:]_]", "s": "[[:space:]]", "S": "[^[:space:]]"}
_IN_BRACKETS = {"d": "0-9", "w": "[:alnum:]_", "s": "[:space:]"}
_SPECIAL = set(".[](){}*+?|^$\\")  # kept escaped: special to ERE and ECMAScript alike
_REPEAT = re.compile(r"\{\d+(,\d*)?\}")


def runtime_pattern(kernel: str) -> str:
    """The pattern the capture runtimes get for `kernel` (a Python regular expression); a
    RocmPerfError naming what they cannot read."""
    try:
        re.compile(kernel)
    except re.error as e:
        raise RocmPerfError(f"--kernel {kernel!r}: not a regular expression ({e})") from e
    out: list[str] = []
    i, n = 0, len(kernel)
    while i < n:
        c = kernel[i]
        if c == "\\":
            e = kernel[i + 1]
            if e in _CLASSES:
                out.append(_CLASSES[e])
            elif e in "bB":
                out.append("\\" + e)
            elif e.isdigit() or e.isalpha():
                raise _refused(kernel, f"the escape \\{e}")
            else:
                out.append("\\" + e if e in _SPECIAL else e)
            i += 2
        elif c == "[":
            i = _bracket(kernel, i, out)
        elif c == "(":
            if kernel.startswith("(?:", i):
                out.append("(")
                i += 3
            elif kernel.startswith("(?", i):
                raise _refused(kernel, "a group starting (? other than (?:")
            else:
                out.append("(")
                i += 1
        elif c == "{":
            repeat = _REPEAT.match(kernel, i)
            if repeat:
                out.append(repeat.group())
                i = repeat.end()
                i = _after_quantifier(kernel, i)
            else:
                out.append("\\{")
                i += 1
        elif c in "*+?":
            out.append(c)
            i = _after_quantifier(kernel, i + 1)
        elif c == "}":
            out.append("\\}")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _after_quantifier(kernel: str, i: int) -> int:
    """Past a lazy quantifier's `?` (a search matches either way); possessive ones are refused."""
    if i < len(kernel) and kernel[i] == "?":
        return i + 1
    if i < len(kernel) and kernel[i] == "+":
        raise _refused(kernel, "a possessive quantifier")
    return i


def _bracket(kernel: str, i: int, out: list[str]) -> int:
    """Copy the bracket expression starting at kernel[i] == '['; the index past its ']'."""
    j = i + 1
    if j < len(kernel) and kernel[j] == "^":
        j += 1
    if j < len(kernel) and kernel[j] == "]":
        raise _refused(kernel, "a ']' first in brackets")
    body = [kernel[i:j]]
    while kernel[j] != "]":
        c = kernel[j]
        if c == "\\":
            e = kernel[j + 1]
            if e in _IN_BRACKETS:
                body.append(_IN_BRACKETS[e])
            elif e.isalnum() or e in "]\\[^-":
                raise _refused(kernel, f"the escape \\{e} inside brackets")
            else:
                body.append(e)
            j += 2
        elif c == "[":
            raise _refused(kernel, "a '[' inside brackets")
        else:
            body.append(c)
            j += 1
    out.append("".join(body) + "]")
    return j + 1


def _refused(kernel: str, what: str) -> RocmPerfError:
    return RocmPerfError(f"--kernel {kernel!r}: {what} cannot be matched by the capture runtimes (POSIX extended "
                         "and ECMAScript expressions); name the kernel with plain text, . [] ^ $ | () * + ? {m,n} "
                         "and \\d \\w \\s \\b")
