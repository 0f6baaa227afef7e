"""Tunable constants: where a named integer constant's value is written, and the file with another value.

A tunable is named by the user (`--tune NAME=V1,V2`) or declared in the source by a comment on the
line before it, `// rocm-perf: tune NAME V1 V2 V3`. NAME is one of:

- a `#define NAME <integer>` (a lone integer literal, parentheses and a u/l suffix allowed);
- a `constexpr` or `const` integer at namespace scope, initialized with an integer literal;
- a template parameter of a `__global__` function template, whose argument is an integer literal at
  every launch site written `kernel<...>` (the tunable is then that argument at each of them).

A candidate changes those value tokens and nothing else (`check_only_values`: the tokens of the two
files differ at the tunable's sites only); whatever the program computes from the constant (a grid
size, a loop bound, a static_assert) is the program's business, and its build and outputs decide.
Bad input (an unknown name, a value that is not an integer, a declaration that is not a literal)
is a RocmPerfError naming the file, the line and the name.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from clang.cindex import CursorKind, TypeKind

from rocm_perf.errors import RocmPerfError
from rocm_perf.source.cursors import main_file_children, tokens_between
from rocm_perf.source.guards import GuardVerdict
from rocm_perf.source.parse import PARSE_LOCK, parse_bytes

TUNABLE_GUARD_NAMES = ("only_the_values", "parses")

_COMMENT = re.compile(rb"//[ \t]*rocm-perf:[ \t]*tune[ \t]+(?P<name>\w+)(?P<values>[^\r\n]*)")
_INTEGER = re.compile(r"[+-]?\d+")
_LITERAL = re.compile(r"(\d+)[uUlL]*")
_INTEGRAL = {TypeKind.INT, TypeKind.UINT, TypeKind.LONG, TypeKind.ULONG, TypeKind.LONGLONG, TypeKind.ULONGLONG,
             TypeKind.SHORT, TypeKind.USHORT, TypeKind.CHAR_S, TypeKind.UCHAR, TypeKind.SCHAR, TypeKind.CHAR_U}
_SCOPES = (CursorKind.NAMESPACE, CursorKind.LINKAGE_SPEC, CursorKind.UNEXPOSED_DECL)


@dataclass(frozen=True)
class Tunable:
    """A constant found in a file: its kind (define, constant, template), its value there, the byte
    ranges of the value's digits (one per site), and the values to try (the current one left out)."""

    name: str
    kind: str
    current: int
    sites: tuple[tuple[int, int], ...]
    line: int
    values: tuple[int, ...] = ()
    kernels: tuple[str, ...] = field(default=(), compare=False)  # kernels that use it, as far as the tokens show


def parse_values(text: str, where: str) -> list[int]:
    """Comma- or space-separated integers; RocmPerfError naming `where` and the first bad one."""
    items = [v for v in re.split(r"[,\s]+", text.strip()) if v]
    if not items:
        raise RocmPerfError(f"{where}: no values to try")
    out = []
    for item in items:
        if not _INTEGER.fullmatch(item):
            raise RocmPerfError(f"{where}: {item!r} is not an integer")
        out.append(int(item))
    return list(dict.fromkeys(out))


def parse_tune_option(items: list[str]) -> dict[str, list[int]]:
    """`--tune NAME=V1,V2,...` (repeatable) as {name: values}; RocmPerfError on a malformed one."""
    out: dict[str, list[int]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise RocmPerfError(f"--tune {item!r}: expected NAME=V1,V2,... (a C identifier and integers)")
        out[name] = parse_values(values, f"--tune {name}")
    return out


def declared_tunables(data: bytes, path: Path) -> dict[str, tuple[list[int], int]]:
    """The `// rocm-perf: tune NAME V1 V2` comments of a file: {name: (values, line of the comment)}.
    The comment goes on the line before the constant's declaration (or the launch that writes the
    template argument) by convention; NAME is found wherever it is declared (find_tunables)."""
    found: dict[str, tuple[list[int], int]] = {}
    for m in _COMMENT.finditer(data):
        line = data.count(b"\n", 0, m.start()) + 1
        name = m.group("name").decode()
        values = m.group("values").decode(errors="replace").split("*/")[0]
        found[name] = (parse_values(values, f"{Path(path).name}:{line}: rocm-perf: tune {name}"), line)
    return found


def find_tunables(path: Path, data: bytes, wanted: dict[str, list[int]], flags=()) -> list[Tunable]:
    """The tunables `wanted` ({name: values}) in `data` (the file at `path`), each with the values to
    try (its current value left out), in the order given; RocmPerfError for a name the file has no
    tunable constant of."""
    if not wanted:
        return []
    with PARSE_LOCK:
        parsed = parse_bytes(Path(path), data, flags)
        tokens = [(t.spelling, t.extent.start.offset, t.extent.start.line)
                  for t in tokens_between(parsed.tu, str(parsed.path), 0, len(data))]
        constants = _namespace_constants(parsed, data)
        kernels, templates = _kernels(parsed)
    found = []
    for name, values in wanted.items():
        tunable = (_as_define(name, data, path) or constants.get(name)
                   or _as_template_argument(name, templates.get(name), tokens, path))
        if tunable is None:
            raise RocmPerfError(f"{Path(path).name}: no tunable {name}: no #define, namespace-scope constexpr/const "
                                f"integer or kernel template parameter is named {name}")
        kept = tuple(v for v in values if v != tunable.current)
        found.append(Tunable(tunable.name, tunable.kind, tunable.current, tunable.sites, tunable.line, kept,
                             tuple(_kernels_using(name, tokens, kernels))))
    return found


def _as_define(name: str, data: bytes, path: Path) -> Tunable | None:
    lines = [m for m in re.finditer(rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(name.encode()) + rb"\b(?P<rest>[^\r\n]*)",
                                    data, re.M)]
    if not lines:
        return None
    if len(lines) > 1:
        where = ", ".join(str(data.count(b"\n", 0, m.start()) + 1) for m in lines)
        raise RocmPerfError(f"{Path(path).name}: {name} is #defined {len(lines)} times (lines {where}); tune a "
                            "constant defined once")
    m = lines[0]
    line = data.count(b"\n", 0, m.start()) + 1
    rest = m.group("rest")
    value = re.match(rb"[ \t]+\(?[ \t]*(\d+)[uUlL]*[ \t]*\)?[ \t]*(//.*|/\*.*)?$", rest)
    if value is None:
        raise RocmPerfError(f"{Path(path).name}:{line}: {name} is #defined as `{rest.decode(errors='replace').strip()}`, "
                            "not an integer literal")
    start = m.start("rest") + value.start(1)
    return Tunable(name, "define", int(value.group(1)), ((start, start + len(value.group(1))),), line)


def _namespace_constants(parsed, data: bytes) -> dict[str, Tunable]:
    """constexpr/const integer variables at namespace scope initialized with a literal."""
    out: dict[str, Tunable] = {}

    def visit(cursors) -> None:
        for c in cursors:
            if c.kind in _SCOPES:
                visit(main_file_children(c))
            elif c.kind == CursorKind.VAR_DECL and c.type.is_const_qualified() and \
                    c.type.get_canonical().kind in _INTEGRAL:
                words = [(t.spelling, t.extent.start.offset) for t in tokens_between(
                    parsed.tu, str(parsed.path), c.extent.start.offset, c.extent.end.offset)]
                spellings = [w for w, _ in words]
                for opener in ("=", "{"):
                    if opener in spellings:
                        after = words[spellings.index(opener) + 1:]
                        after = [w for w in after if w[0] not in ("}",)]
                        if len(after) == 1 and _LITERAL.fullmatch(after[0][0]):
                            digits = _LITERAL.fullmatch(after[0][0]).group(1)
                            out[c.spelling] = Tunable(c.spelling, "constant", int(digits),
                                                      ((after[0][1], after[0][1] + len(digits)),), c.extent.start.line)
                        break

    visit(parsed.top_level())
    return out


def _kernels(parsed) -> tuple[dict[str, tuple[int, int]], dict[str, list[tuple[str, int]]]]:
    """The file's kernels ({name: byte extent}) and, for its kernel templates, template parameter
    name -> [(kernel name, position)]."""
    extents: dict[str, tuple[int, int]] = {}
    params_of: dict[str, list[tuple[str, int]]] = {}

    def visit(cursors) -> None:
        for c in cursors:
            if c.kind in _SCOPES:
                visit(main_file_children(c))
            elif c.kind in (CursorKind.FUNCTION_DECL, CursorKind.FUNCTION_TEMPLATE) and c.is_definition() and \
                    any(ch.kind == CursorKind.CUDAGLOBAL_ATTR for ch in c.get_children()):
                extents[c.spelling] = (c.extent.start.offset, c.extent.end.offset)
                params = [ch for ch in c.get_children() if ch.kind in (CursorKind.TEMPLATE_TYPE_PARAMETER,
                          CursorKind.TEMPLATE_NON_TYPE_PARAMETER, CursorKind.TEMPLATE_TEMPLATE_PARAMETER)]
                for k, p in enumerate(params):
                    if p.kind == CursorKind.TEMPLATE_NON_TYPE_PARAMETER:
                        params_of.setdefault(p.spelling, []).append((c.spelling, k))

    visit(parsed.top_level())
    return extents, params_of


def _template_arguments(tokens: list[tuple[str, int, int]], at: int) -> list[list[tuple[str, int, int]]] | None:
    """The template arguments after the `<` at tokens[at] up to its matching `>`, split at top-level
    commas; None when it does not close (a comparison, not a template)."""
    args: list[list[tuple[str, int, int]]] = [[]]
    depth = 0
    for tok in tokens[at + 1:]:
        s = tok[0]
        if s in ("(", "[", "{"):
            depth += 1
        elif s in (")", "]", "}"):
            if depth == 0:
                return None
            depth -= 1
        elif s in (">", ">>") and depth == 0:
            return args
        elif s == "," and depth == 0:
            args.append([])
            continue
        elif s == ";":
            return None
        args[-1].append(tok)
    return None


def _as_template_argument(name: str, owners: list[tuple[str, int]] | None, tokens, path: Path) -> Tunable | None:
    if not owners:
        return None
    sites, current, line = [], None, 0
    for kernel, position in owners:
        for k, tok in enumerate(tokens):
            if tok[0] != kernel or k + 1 >= len(tokens) or tokens[k + 1][0] != "<":
                continue
            if k > 0 and tokens[k - 1][0] in ("void", "class", "struct"):
                continue  # its own declaration
            args = _template_arguments(tokens, k + 1)
            if args is None or position >= len(args):
                continue
            arg = args[position]
            if len(arg) != 1 or not _LITERAL.fullmatch(arg[0][0]):
                written = " ".join(t[0] for t in arg)
                raise RocmPerfError(f"{Path(path).name}:{tok[2]}: the launch of {kernel} passes {name} as `{written}`, not "
                                    f"an integer literal" + (f"; tune {written} instead" if len(arg) == 1 else ""))
            digits = _LITERAL.fullmatch(arg[0][0]).group(1)
            if current is not None and int(digits) != current:
                raise RocmPerfError(f"{Path(path).name}:{tok[2]}: {kernel} is launched with {name} = {digits} here and "
                                    f"{current} at line {line}; tune one value for all its launches")
            current, line = int(digits), line or tok[2]
            sites.append((arg[0][1], arg[0][1] + len(digits)))
    if not sites:
        raise RocmPerfError(f"{Path(path).name}: {name} is a template parameter of "
                            f"{', '.join(k for k, _ in owners)}, but no launch writes `{owners[0][0]}<...>` with a literal")
    return Tunable(name, "template", int(current), tuple(sites), line)


def _kernels_using(name: str, tokens, kernels: dict[str, tuple[int, int]]) -> list[str]:
    """The kernels whose definitions mention `name` (every kernel when none does: it sizes a launch)."""
    using = [k for k, (start, end) in kernels.items() if any(t[0] == name and start <= t[1] < end for t in tokens)]
    return using or list(kernels)


def render_values(data: bytes, tunables: list[Tunable], values: dict[str, int]) -> bytes:
    """`data` with each tunable named in `values` set to its value at every site."""
    edits = sorted(((start, end, str(values[t.name]).encode()) for t in tunables if t.name in values
                    for start, end in t.sites), reverse=True)
    out = data
    for start, end, text in edits:
        out = out[:start] + text + out[end:]
    return out


def combinations(tunables: list[Tunable]) -> list[dict[str, int]]:
    """Every combination of the tunables' values and their current ones (the all-current one, the
    baseline, left out), those moving fewer of them first, then nearer (in log steps) to the current values."""
    axes = [[t.current, *t.values] for t in tunables]
    out = []
    for combo in itertools.product(*axes):
        moved = {t.name: v for t, v in zip(tunables, combo) if v != t.current}
        if moved:
            out.append(moved)

    def distance(moved: dict[str, int]) -> tuple[int, float]:
        by_name = {t.name: t for t in tunables}
        far = sum(abs(math.log(max(abs(v), 1) / max(abs(by_name[n].current), 1))) for n, v in moved.items())
        return len(moved), far

    return sorted(out, key=lambda m: (distance(m), sorted(m.items())))


def check_only_values(path: Path, before: bytes, after: bytes, tunables: list[Tunable], values: dict[str, int],
                      flags=()) -> list[GuardVerdict]:
    """The tunable candidate's guards: its tokens differ from the baseline's only at the tunables'
    sites, and it parses (a static_assert it breaks names its line)."""
    sites = {start for t in tunables if t.name in values for start, _ in t.sites}
    with PARSE_LOCK:
        old = [(t.spelling, t.extent.start.offset) for t in tokens_between(
            parse_bytes(Path(path), before, flags).tu, str(Path(path).resolve()), 0, len(before))]
        parsed = parse_bytes(Path(path), after, flags, tolerate_errors=True)
        new = [t.spelling for t in tokens_between(parsed.tu, str(parsed.path), 0, len(after))]
        errors = list(parsed.errors)
    changed = [off for (a, off), b in zip(old, new) if a != b]
    if len(old) != len(new) or any(off not in sites for off in changed):
        where = next((off for off in changed if off not in sites), changed[0] if changed else 0)
        line = before.count(b"\n", 0, where) + 1
        only = GuardVerdict("only_the_values", False, f"tokens other than {', '.join(values)} changed (line {line})")
    else:
        only = GuardVerdict("only_the_values", True, f"only {', '.join(f'{n}={v}' for n, v in values.items())} changed")
    if errors:
        line, _col, message = errors[0]
        return [only, GuardVerdict("parses", False, f"does not build: line {line}: {message}")]
    return [only, GuardVerdict("parses", True, "parses with no errors")]
