"""The device code of one kernel, out of its translation unit, through libclang: the kernel, the
device functions, constants, variables and types it uses (transitively), everything else blanked.

Blanked, not cut: every byte of a declaration the kernel does not need becomes nothing but its
newlines, so the extracted file has the original's lines at their line numbers (compiler messages,
loop ids and a change carried back to the original all keep their lines). Preprocessor lines stay
(macros, includes, conditionals), also inside a blanked declaration, so the file means what it did.

What the kernel needs is found twice over: through libclang's references (calls, variables, types,
overloaded operators), and by name (every identifier of a needed declaration, and of the macros it
uses, that names a declaration of the file), which also covers calls inside templates that name
nothing until instantiated. Too much kept is harmless (it compiled before); too little would not build.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from clang.cindex import CursorKind, LinkageKind, TokenKind

from rocm_perf.errors import RocmPerfError
from rocm_perf.source.cursors import from_main_file, walk
from rocm_perf.source.kernels import KernelInfo, find_kernels, has_attr
from rocm_perf.source.names import demangled_base, match_kernel
from rocm_perf.source.parse import PARSE_LOCK, parse_file

_SCOPES = (CursorKind.NAMESPACE, CursorKind.LINKAGE_SPEC, CursorKind.UNEXPOSED_DECL)
# Declarations that may go when the kernel does not use them; every other kind is kept.
_REMOVABLE = {
    CursorKind.FUNCTION_DECL, CursorKind.FUNCTION_TEMPLATE, CursorKind.VAR_DECL, CursorKind.STRUCT_DECL,
    CursorKind.CLASS_DECL, CursorKind.UNION_DECL, CursorKind.ENUM_DECL, CursorKind.TYPEDEF_DECL,
    CursorKind.TYPE_ALIAS_DECL, CursorKind.CLASS_TEMPLATE, CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
    CursorKind.TYPE_ALIAS_TEMPLATE_DECL,
}
_ENDS_WITH_SEMICOLON = _REMOVABLE - {CursorKind.FUNCTION_DECL, CursorKind.FUNCTION_TEMPLATE}
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(define|undef|if|ifdef|ifndef|elif|else|endif)\b")
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class DeviceVariable:
    """A `__device__`/`__constant__`/`__managed__` variable the kernel uses: its value at the
    dispatch is part of the capture when the runtime can find it by its symbol."""

    spelling: str  # as C++ names it in the file: "ns::counter"
    symbol: str  # its linker symbol (what dlsym finds)
    internal: bool  # static or in an anonymous namespace: no exported symbol to find


@dataclass
class Extracted:
    """The kernel file's new bytes, what was kept and dropped, and what the kernel reads besides memory."""

    data: bytes
    kernel: KernelInfo
    kept: list[str]
    dropped: list[str]
    variables: list[DeviceVariable] = field(default_factory=list)
    headers: list[Path] = field(default_factory=list)  # files of the tree the unit includes
    parameters: int = 0  # the kernel's parameters
    layout: list[tuple[int, int]] = field(default_factory=list)  # their (size, align); -n where a template's depends on it


@dataclass
class _Unit:
    cursor: object
    start: int
    end: int
    name: str


def _units(top_level: list) -> list[_Unit]:
    """The declarations at namespace scope written in the main file, in order (from its top-level cursors)."""
    found: list[_Unit] = []

    def visit(children) -> None:
        for child in children:
            if child.kind in _SCOPES:
                visit([c for c in child.get_children() if from_main_file(c)])
            elif child.kind.is_declaration():
                found.append(_Unit(child, child.extent.start.offset, child.extent.end.offset, child.spelling))

    visit(top_level)
    return found


def _with_semicolon(data: bytes, end: int) -> int:
    """The end of a declaration that ends with `;` (libclang's extent stops before it)."""
    i = end
    while i < len(data) and data[i : i + 1] in b" \t\r\n":
        i += 1
    return i + 1 if data[i : i + 1] == b";" else end


def _blank(data: bytes, start: int, end: int) -> bytes:
    """[start, end) with every byte but newlines dropped, its preprocessor lines kept."""
    out = []
    for line in data[start:end].splitlines(keepends=True):
        if _DIRECTIVE.match(line):
            out.append(line)
        else:
            out.append(b"\n" * line.count(b"\n"))
    return b"".join(out)


def _macros(top_level: list, data: bytes) -> dict[bytes, bytes]:
    """Macro names defined in the main file -> the text of their definitions."""
    found: dict[bytes, bytes] = {}
    for child in top_level:
        if child.kind == CursorKind.MACRO_DEFINITION:
            found[child.spelling.encode()] = data[child.extent.start.offset : child.extent.end.offset]
    return found


def template_arguments(demangled: str) -> str:
    """The template arguments of a demangled kernel name (`64` for `void softmax_rows<64>(...)`), "" for none."""
    _, args = demangled_base(demangled)
    return args or ""


def extract_kernel(source: Path, flags: list[str], kernel_name: str, root: Path) -> Extracted:
    """The device code of the kernel `kernel_name` (the mangled or demangled name the capture
    recorded) in `source`, parsed with `flags`; `root` bounds the headers that count as the tree's."""
    source = Path(source).resolve()
    with PARSE_LOCK:
        parsed = parse_file(source, flags)
        data = parsed.data
        kernels = find_kernels(parsed)
        kernel = match_kernel(kernel_name, SimpleNamespace(kernels=kernels))
        if kernel is None:
            names = ", ".join(k.name for k in kernels) or "none"
            raise RocmPerfError(f"{source}: the captured kernel {kernel_name} is not defined in this file (its kernels: {names})")
        units = _units(parsed.top_level())
        starts = [u.start for u in units]
        by_name: dict[str, list[int]] = {}
        for i, u in enumerate(units):
            by_name.setdefault(u.name, []).append(i)
        macros = _macros(parsed.top_level(), data)

        def unit_at(offset: int) -> int | None:
            i = bisect.bisect_right(starts, offset) - 1
            return i if i >= 0 and units[i].start <= offset < max(units[i].end, units[i].start + 1) else None

        needed: set[int] = set()
        pending: list[int] = []

        def need(i: int | None) -> None:
            if i is None or i in needed:
                return
            needed.add(i)
            pending.append(i)
            for j in by_name.get(units[i].name, []):  # its other declarations (a prototype before the definition)
                if units[j].cursor.kind == units[i].cursor.kind:
                    need(j)

        def need_names(text: bytes, seen_macros: set[bytes]) -> None:
            for m in _IDENTIFIER.finditer(text):
                word = m.group(0)
                for j in by_name.get(word.decode(), []):
                    need(j)
                if word in macros and word not in seen_macros:
                    seen_macros.add(word)
                    need_names(macros[word], seen_macros)

        need(unit_at(kernel.start))
        for word in _IDENTIFIER.findall(template_arguments(kernel_name).encode()):  # `kern<Params>`: Params
            for j in by_name.get(word.decode(), []):
                need(j)
        for i, u in enumerate(units):
            if u.cursor.kind not in _REMOVABLE:
                need(i)  # kept whatever: what it names must stay too
        main = str(source)
        while pending:
            i = pending.pop()
            u = units[i]
            for node in walk(u.cursor):
                target = node.referenced
                if target is not None and target.location.file is not None and target.location.file.name == main:
                    need(unit_at(target.location.offset))
            seen: set[bytes] = set()
            for token in parsed.tu.get_tokens(extent=u.cursor.extent):
                if token.kind == TokenKind.IDENTIFIER:
                    need_names(token.spelling.encode(), seen)
        variables = [_variable(units[i].cursor) for i in sorted(needed) if _is_device_variable(units[i].cursor)]
        headers = _tree_headers(parsed.tu, Path(root).resolve())
        kept_spans = [(units[i].start, units[i].end) for i in needed]
        cuts: list[tuple[int, int]] = []
        dropped: list[str] = []
        for i, u in enumerate(units):
            if i in needed:
                continue
            end = _with_semicolon(data, u.end) if u.cursor.kind in _ENDS_WITH_SEMICOLON else u.end
            if any(s < end and u.start < e for s, e in kept_spans):
                continue  # one declaration with a needed one (`int a, b;`)
            cuts.append((u.start, end))
            dropped.append(u.name or u.cursor.kind.name.lower())
        kept = [units[i].name for i in sorted(needed) if units[i].cursor.kind in _REMOVABLE]
        params = [c for c in kernel.cursor.get_children() if c.kind == CursorKind.PARM_DECL]
        layout = [(c.type.get_size(), c.type.get_align()) for c in params]
    out, cursor = [], 0
    for start, end in sorted(cuts):
        if start < cursor:
            start = cursor
        out.append(data[cursor:start])
        out.append(_blank(data, start, end))
        cursor = max(cursor, end)
    out.append(data[cursor:])
    blanked = b"".join(out)
    assert blanked.count(b"\n") == data.count(b"\n")
    kernel.cursor, kernel.helper_cursors = None, []  # the translation unit is re-used by the next parse
    return Extracted(blanked, kernel, kept, dropped, variables, headers, len(params), layout)


def _is_device_variable(cursor) -> bool:
    if cursor.kind != CursorKind.VAR_DECL:
        return False
    if not (has_attr(cursor, CursorKind.CUDADEVICE_ATTR) or has_attr(cursor, CursorKind.CUDACONSTANT_ATTR)):
        return False
    return not cursor.type.is_const_qualified()  # a const one holds its initializer: nothing to restore


def _variable(cursor) -> DeviceVariable:
    names = []
    parent = cursor.semantic_parent
    while parent is not None and parent.kind != CursorKind.TRANSLATION_UNIT:
        if parent.kind == CursorKind.NAMESPACE:
            names.append(parent.spelling)
        parent = parent.semantic_parent
    spelling = "::".join(names[::-1] + [cursor.spelling])
    internal = cursor.linkage in (LinkageKind.INTERNAL, LinkageKind.UNIQUE_EXTERNAL)
    return DeviceVariable(spelling, cursor.mangled_name or cursor.spelling, internal)


def _tree_headers(tu, root: Path) -> list[Path]:
    """The files under `root` that the unit includes, directly or not (system headers are not)."""
    found = []
    for inclusion in tu.get_includes():
        path = Path(inclusion.include.name).resolve()
        if path.is_relative_to(root) and path not in found:
            found.append(path)
    return found
