"""Kernels defined in a source file: names, device-side mangled names, signatures, extents, and
the `__device__` helpers each one calls (transitively, defined in the same file)."""

from __future__ import annotations

from dataclasses import dataclass, field

from clang.cindex import Cursor, CursorKind

from rocm_perf.source.cursors import in_file, main_file_children, span, tokens_between, walk, walk_all
from rocm_perf.source.parse import ParsedSource

_FUNCTIONS = (CursorKind.FUNCTION_DECL, CursorKind.FUNCTION_TEMPLATE)
_SCOPES = (CursorKind.NAMESPACE, CursorKind.LINKAGE_SPEC, CursorKind.UNEXPOSED_DECL, CursorKind.TRANSLATION_UNIT)
_TEMPLATE_PARAMS = (
    CursorKind.TEMPLATE_TYPE_PARAMETER,
    CursorKind.TEMPLATE_NON_TYPE_PARAMETER,
    CursorKind.TEMPLATE_TEMPLATE_PARAMETER,
)


@dataclass
class KernelInfo:
    """One `__global__` function (or function template) defined in the file."""

    name: str
    qualified_name: str  # with namespaces: "ns::kernel"
    mangled: str  # device-side (what hipcc and rocpd report); "" for a template
    signature: str  # normalized declaration text + " :: " + type, for the invariance guard
    start: int  # byte extent of the whole definition
    end: int
    line: int
    end_line: int
    is_template: bool
    template_params: list[str]
    mangled_prefix: str  # "_Z6kernelI" for templates: every instantiation starts so
    instantiations: list[str] = field(default_factory=list)  # mangled names seen in this file
    helpers: list[str] = field(default_factory=list)  # __device__ functions it calls, transitively
    cursor: Cursor | None = field(default=None, repr=False, compare=False)
    helper_cursors: list[Cursor] = field(default_factory=list, repr=False, compare=False)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "qualified_name": self.qualified_name,
            "mangled": self.mangled,
            "signature": self.signature,
            "line": self.line,
            "end_line": self.end_line,
            "extent": [self.start, self.end],
            "is_template": self.is_template,
            "template_params": self.template_params,
            "instantiations": self.instantiations,
            "helpers": self.helpers,
        }


def has_attr(cursor: Cursor, kind: CursorKind) -> bool:
    return any(child.kind == kind for child in cursor.get_children())


def body_of(cursor: Cursor) -> Cursor | None:
    for child in cursor.get_children():
        if child.kind == CursorKind.COMPOUND_STMT:
            return child
    return None


def function_definitions(parsed: ParsedSource) -> list[Cursor]:
    """Function (template) definitions written in the main file, at namespace scope."""
    found: list[Cursor] = []
    main = str(parsed.path)

    def visit(children: list[Cursor]) -> None:
        for child in children:
            if child.kind in _SCOPES:
                visit(main_file_children(child))
            elif child.kind in _FUNCTIONS and child.is_definition() and in_file(child, main) and body_of(child):
                found.append(child)

    visit(parsed.top_level())
    return found


def _namespaces(cursor: Cursor) -> list[str]:
    names = []
    parent = cursor.semantic_parent
    while parent is not None and parent.kind != CursorKind.TRANSLATION_UNIT:
        if parent.kind == CursorKind.NAMESPACE:
            names.append(parent.spelling)
        parent = parent.semantic_parent
    return names[::-1]


def signature_of(parsed: ParsedSource, function: Cursor) -> str:
    """Declaration tokens up to the body (comments dropped, whitespace folded) plus the type."""
    body = body_of(function)
    start = function.extent.start.offset
    stop = body.extent.start.offset if body else function.extent.end.offset
    words = [t.spelling for t in tokens_between(parsed.tu, str(parsed.path), start, stop)]
    return " ".join(words) + " :: " + function.type.spelling


def mangled_prefix(name: str, namespaces: list[str]) -> str:
    """What every instantiation's mangled name starts with: `_Z6kernelI`, `_ZN2ns6kernelI`."""
    if namespaces:
        return "_ZN" + "".join(f"{len(p)}{p}" for p in namespaces + [name]) + "I"
    return f"_Z{len(name)}{name}I"


def _is_device_function(cursor: Cursor) -> bool:
    return has_attr(cursor, CursorKind.CUDADEVICE_ATTR) and not has_attr(cursor, CursorKind.CUDAGLOBAL_ATTR)


def device_helpers(kernel: Cursor, main: str) -> list[Cursor]:
    """`__device__` functions defined in the main file that the kernel calls, transitively, in
    first-call order."""
    order: list[Cursor] = []
    seen: set[int] = {kernel.extent.start.offset}
    pending = [kernel]
    while pending:
        function = pending.pop(0)
        for node in walk(function):
            if node.kind != CursorKind.CALL_EXPR or node.referenced is None:
                continue
            target = node.referenced.get_definition()
            if target is None or not in_file(target, main):
                continue
            offset = target.extent.start.offset
            if offset in seen or not _is_device_function(target) or body_of(target) is None:
                continue
            seen.add(offset)
            order.append(target)
            pending.append(target)
    return order


def _instantiations(parsed: ParsedSource, prefix: str) -> list[str]:
    names: list[str] = []
    for node in walk_all(parsed.top_level()):
        if node.kind in (CursorKind.DECL_REF_EXPR, CursorKind.FUNCTION_DECL):
            target = node.referenced if node.kind == CursorKind.DECL_REF_EXPR else node
            if target is None or target.kind != CursorKind.FUNCTION_DECL:
                continue
            mangled = target.mangled_name or ""
            if mangled.startswith(prefix) and mangled not in names:
                names.append(mangled)
    return names


def find_kernels(parsed: ParsedSource) -> list[KernelInfo]:
    """Every `__global__` definition (templates included) in the file, in source order."""
    main = str(parsed.path)
    kernels: list[KernelInfo] = []
    for function in function_definitions(parsed):
        if not has_attr(function, CursorKind.CUDAGLOBAL_ATTR):
            continue
        is_template = function.kind == CursorKind.FUNCTION_TEMPLATE
        namespaces = _namespaces(function)
        prefix = mangled_prefix(function.spelling, namespaces)
        params = [c.spelling for c in function.get_children() if c.kind in _TEMPLATE_PARAMS]
        helpers = device_helpers(function, main)
        start, end = span(function)
        kernels.append(
            KernelInfo(
                name=function.spelling,
                qualified_name="::".join(namespaces + [function.spelling]),
                mangled="" if is_template else (function.mangled_name or ""),
                signature=signature_of(parsed, function),
                start=start,
                end=end,
                line=function.extent.start.line,
                end_line=function.extent.end.line,
                is_template=is_template,
                template_params=params,
                mangled_prefix=prefix if is_template else "",
                instantiations=_instantiations(parsed, prefix) if is_template else [],
                helpers=[h.spelling for h in helpers],
                cursor=function,
                helper_cursors=helpers,
            )
        )
    return kernels
