"""The guards of a hand-written change (a patch, a second version of the file): what it may touch.

A rewrite rule changes one loop's bytes; a patch may change anything, so its guards say instead
what must stay as it was:

- parses: the changed file parses with libclang (the first error's line and message otherwise,
  as `does not build: line 33: expected ';'`);
- signatures_unchanged: every `__global__` function keeps its launch ABI: the same parameters in
  the same order with the same types (`__restrict__` and `const` included) and the same template
  parameters; a parameter may be renamed, `__launch_bounds__` may be added. A rejection names the
  kernel, the parameter and its line (`signature: bin_index gained a parameter (line 27: int extra)`);
- device_code_only: outside the device code (the definitions of `__global__` and `__device__`
  functions, `__shared__`, `__constant__` and `__device__` variables, and device helpers the patch
  adds) the file has the same tokens in the same order: the program's harness and its self-check
  are the same program (comments and layout may differ; `__host__ __device__` functions are host
  code, since the harness may call them). `allow_host_changes` lets it pass, saying where the
  host code changed and that correctness then rests on the outputs alone.

A comment-only or whitespace-only patch passes these and compiles to the baseline's machine code:
the build stage's duplicate check rejects it as `no change in machine code` (build_cache.code_identity).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from clang.cindex import CursorKind

from rocm_perf.source.cursors import main_file_children, skip_space_and_comments, tokens_between
from rocm_perf.source.guards import GuardVerdict
from rocm_perf.source.parse import PARSE_LOCK, ParseError, parse_bytes

PATCH_GUARD_NAMES = ("applies", "parses", "signatures_unchanged", "device_code_only")

_DEFINE = re.compile(rb"[ \t]*#[ \t]*define[ \t]+(\w+)")
_FUNCTIONS = (CursorKind.FUNCTION_DECL, CursorKind.FUNCTION_TEMPLATE)
_SCOPES = (CursorKind.NAMESPACE, CursorKind.LINKAGE_SPEC, CursorKind.UNEXPOSED_DECL)
_DEVICE_VARIABLE_ATTRS = (CursorKind.CUDASHARED_ATTR, CursorKind.CUDACONSTANT_ATTR, CursorKind.CUDADEVICE_ATTR)
_TEMPLATE_PARAMS = (CursorKind.TEMPLATE_TYPE_PARAMETER, CursorKind.TEMPLATE_NON_TYPE_PARAMETER,
                    CursorKind.TEMPLATE_TEMPLATE_PARAMETER)


@dataclass
class KernelSignature:
    """A `__global__` function's launch ABI: its parameters (name, type, line) and template parameters."""

    name: str
    line: int
    params: list[tuple[str, str, int]]
    template: list[str]
    text: bytes = field(default=b"", repr=False, compare=False)  # its whole definition, comments and all


@dataclass
class SourceFacts:
    """What the scope guards compare, as plain data (the parse's cursors die with its next re-parse)."""

    data: bytes = field(repr=False)
    kernels: dict[str, list[KernelSignature]]
    device: list[tuple[int, int]]  # byte ranges of device code and declarations
    host_tokens: list[tuple[str, int, int]]  # (spelling, offset, line) of every token outside them
    declarations: list[tuple[int, int, str]]  # named top-level declarations' byte ranges, to name a host change
    errors: list[tuple[int, int, str]] = field(default_factory=list)  # (line, column, message) of parse errors


def _attrs(cursor) -> set:
    return {child.kind for child in cursor.get_children()}


def _with_semicolon(data: bytes, end: int) -> int:
    """A declaration's extent ends before its `;`: take that too."""
    pos = skip_space_and_comments(data, end)
    return pos + 1 if data[pos: pos + 1] == b";" else end


def _qualified(cursor, scopes: list[str]) -> str:
    return "::".join([*scopes, cursor.spelling])


def _signature(cursor, name: str, text: bytes) -> KernelSignature:
    params = [(c.spelling, c.type.spelling, c.extent.start.line) for c in cursor.get_children()
              if c.kind == CursorKind.PARM_DECL]
    template = [("typename" if c.kind == CursorKind.TEMPLATE_TYPE_PARAMETER else c.type.spelling)
                for c in cursor.get_children() if c.kind in _TEMPLATE_PARAMS]
    return KernelSignature(name, cursor.extent.start.line, params, template, text)


# Facts by (path, content, flags, tolerate): a run's baseline is compared with every patch of it, and a
# parse of real HIP headers takes seconds on a busy machine. Plain data only, so keeping them is safe.
_FACTS: OrderedDict[tuple, SourceFacts] = OrderedDict()
_FACTS_KEPT = 16


def source_facts(path: Path, data: bytes, flags=(), *, tolerate_errors: bool = False) -> SourceFacts:
    """The kernels' signatures, the device ranges and the host tokens of `data` parsed as `path`;
    ParseError when it does not parse, unless `tolerate_errors` (then `errors` lists them: libclang
    still builds what it can)."""
    key = (str(Path(path).resolve()), hashlib.sha256(data).hexdigest(), tuple(flags), tolerate_errors)
    with PARSE_LOCK:
        if key in _FACTS:
            _FACTS.move_to_end(key)
            return _FACTS[key]
        facts = _parse_facts(path, data, flags, tolerate_errors)
        _FACTS[key] = facts
        while len(_FACTS) > _FACTS_KEPT:
            _FACTS.popitem(last=False)
        return facts


def _parse_facts(path: Path, data: bytes, flags, tolerate_errors: bool) -> SourceFacts:
    with PARSE_LOCK:
        parsed = parse_bytes(Path(path), data, flags, tolerate_errors=tolerate_errors)
        kernels: dict[str, list[KernelSignature]] = {}
        device: list[tuple[int, int]] = []
        declarations: list[tuple[int, int, str]] = []

        def visit(cursors, scopes: list[str]) -> None:
            for c in cursors:
                if c.kind in _SCOPES:
                    visit(main_file_children(c), [*scopes, c.spelling] if c.kind == CursorKind.NAMESPACE else scopes)
                    continue
                start, end = c.extent.start.offset, c.extent.end.offset
                if c.kind == CursorKind.MACRO_DEFINITION:
                    start = data.rfind(b"\n", 0, start) + 1  # from its `#define`
                elif c.kind in (CursorKind.VAR_DECL, *_FUNCTIONS):
                    end = _with_semicolon(data, end)
                if c.spelling:
                    declarations.append((start, end, _qualified(c, scopes)))
                attrs = _attrs(c)
                if c.kind in _FUNCTIONS:
                    if CursorKind.CUDAGLOBAL_ATTR in attrs:
                        device.append((start, end))
                        if c.is_definition():
                            name = _qualified(c, scopes)
                            kernels.setdefault(name, []).append(_signature(c, name, data[start:end]))
                    elif CursorKind.CUDADEVICE_ATTR in attrs and CursorKind.CUDAHOST_ATTR not in attrs:
                        device.append((start, end))
                elif c.kind == CursorKind.VAR_DECL and attrs & set(_DEVICE_VARIABLE_ATTRS):
                    device.append((start, end))

        visit(parsed.top_level(), [])
        device.sort()
        tokens = [(t.spelling, t.extent.start.offset, t.extent.start.line)
                  for t in tokens_between(parsed.tu, str(parsed.path), 0, len(data))]
    host = [t for t in tokens if not _inside(device, t[1])]
    return SourceFacts(data, kernels, device, host, declarations, list(parsed.errors))


def _inside(ranges: list[tuple[int, int]], offset: int) -> bool:
    return any(start <= offset < end for start, end in ranges)


def check_parses(facts: SourceFacts) -> GuardVerdict:
    """The `parses` guard's verdict on the changed file's facts (parsed with tolerate_errors)."""
    if facts.errors:
        line, _col, message = facts.errors[0]
        return GuardVerdict("parses", False, f"does not build: line {line}: {message}")
    return GuardVerdict("parses", True, "parses with no errors")


def check_kernel_signatures(before: SourceFacts, after: SourceFacts) -> GuardVerdict:
    """Every kernel of `before` is in `after` with the same launch ABI (first difference named)."""
    for name, old_list in before.kernels.items():
        new_list = after.kernels.get(name, [])
        if len(new_list) < len(old_list):
            where = old_list[len(new_list)].line
            return GuardVerdict("signatures_unchanged", False,
                                f"signature: kernel {name} is gone (it was at line {where})")
        for old, new in zip(old_list, new_list):
            why = _signature_difference(old, new)
            if why:
                return GuardVerdict("signatures_unchanged", False, f"signature: {why}")
    count = sum(len(v) for v in before.kernels.values())
    return GuardVerdict("signatures_unchanged", True, f"{count} kernel signature(s) unchanged")


def _signature_difference(old: KernelSignature, new: KernelSignature) -> str:
    short = old.name.rsplit("::", 1)[-1]
    if old.template != new.template:
        return (f"{short}'s template parameters <{', '.join(old.template)}> became <{', '.join(new.template)}> "
                f"(line {new.line})")
    for k, (o, n) in enumerate(zip(old.params, new.params), start=1):
        if o[1] != n[1]:
            return f"{short} parameter {k} ({n[0] or o[0]}): {o[1]} became {n[1]} (line {n[2]})"
    if len(new.params) > len(old.params):
        extra = new.params[len(old.params)]
        return f"{short} gained a parameter (line {extra[2]}: {extra[1]} {extra[0]})".replace(" )", ")")
    if len(new.params) < len(old.params):
        lost = old.params[len(new.params)]
        return f"{short} lost a parameter (line {new.line}: {lost[1]} {lost[0]})".replace(" )", ")")
    return ""


def first_host_change(before: SourceFacts, after: SourceFacts) -> tuple[int, str] | None:
    """(line in the changed file, the declaration or token there) of the first host token that
    differs, or None when the host code has the same tokens."""
    a = [t[0] for t in before.host_tokens]
    b = [t[0] for t in after.host_tokens]
    if a == b:
        return None
    for tag, i1, _i2, j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if j1 < len(after.host_tokens):
            spelling, offset, line = after.host_tokens[j1]
            return line, _declaration_at(after, offset) or spelling
        spelling, offset, _line = before.host_tokens[min(i1, len(before.host_tokens) - 1)]
        line = after.host_tokens[-1][2] if after.host_tokens else 1
        return line, _declaration_at(before, offset) or spelling
    return None


def _declaration_at(facts: SourceFacts, offset: int) -> str:
    """The innermost named top-level declaration holding `offset` ('' outside every one). A
    `#define` is read from its line: a re-parse's precompiled preamble reports no macro definitions."""
    begin = facts.data.rfind(b"\n", 0, offset) + 1
    directive = _DEFINE.match(facts.data, begin)
    if directive:
        return directive.group(1).decode(errors="replace")
    holding = [(end - start, name) for start, end, name in facts.declarations if start <= offset < end]
    return min(holding)[1] if holding else ""


def check_device_scope(before: SourceFacts, after: SourceFacts, *, allow_host_changes: bool = False) -> GuardVerdict:
    """Only device code changed; with `allow_host_changes`, a host change passes and says where."""
    change = first_host_change(before, after)
    if change is None:
        return GuardVerdict("device_code_only", True, "host code unchanged (the same tokens outside the device code)")
    line, what = change
    if allow_host_changes:
        return GuardVerdict("device_code_only", True, f"host code changed (line {line}: {what}), allowed by "
                            "--allow-host-changes: correctness rests on the outputs alone")
    return GuardVerdict("device_code_only", False, f"host code changed (line {line}: {what})")


def guard_patch(path: Path, before: bytes, after: bytes, flags=(), *, allow_host_changes: bool = False) -> list[GuardVerdict]:
    """The source guards of a hand-written change of the file at `path` from `before` to `after`
    (the `applies` guard is the patch's own: source/patch_apply.py). Every verdict, so a report
    shows the whole picture), the most specific first."""
    # The changed file is read even when it does not parse (libclang builds what it can): a kernel
    # that gained a parameter is named as such, not only as the launch it no longer matches.
    after_facts = source_facts(path, after, flags, tolerate_errors=True)
    before_facts = source_facts(path, before, flags)
    return [check_kernel_signatures(before_facts, after_facts),
            check_device_scope(before_facts, after_facts, allow_host_changes=allow_host_changes),
            check_parses(after_facts)]


def changed_kernels(before: bytes, after: bytes, path: Path, flags=()) -> list[str]:
    """The kernels (short names) whose definitions differ between `before` and `after`, in the
    changed file's order (every kernel when only code outside them changed, such as a device
    helper they call); [] when the original does not parse."""
    try:
        a, b = source_facts(path, before, flags), source_facts(path, after, flags, tolerate_errors=True)
    except ParseError:
        return []
    texts = lambda facts, name: [k.text for k in facts.kernels.get(name, [])]  # noqa: E731
    changed = [name for name in b.kernels if texts(a, name) != texts(b, name)]
    return [name.rsplit("::", 1)[-1] for name in (changed or list(b.kernels))]
