"""The source pre-pass that lets a C++ compiler build HIP's two non-C++ constructs.

- `kernel<<<grid, block, shmem, stream>>>(args)` becomes
  `hipLaunchKernelGGL(kernel, grid, block, shmem, stream, args)`.
- A template kernel launched with deduced template arguments (`kern<<<g, b>>>(x)` or
  `hipLaunchKernelGGL(kern, ...)` where `kern` is a template kernel of this file) becomes
  `ROCM_PERF_LAUNCH_DEDUCED(...)`: the runtime names it as the source spells it, since there is
  no single function whose symbol it could read.
- `extern __shared__ T name[];` (dynamic shared memory) becomes a pointer into the running
  block's dynamic shared memory (inside a function) or an object that reads it (at file scope).

Strings, character literals and comments are blanked before scanning, so a `<<<` in an error
message or a comment is left alone; brackets are matched, so nested calls and templates in the
launch work. Forms that cannot be rewritten faithfully (`(c ? k1 : k2)<<<...>>>`, `table[i]<<<`,
template arguments with parentheses) raise RocmPerfError naming the file and line. Line numbers
are preserved: compiler messages point at the user's lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocm_perf.errors import RocmPerfError

_IDENT = re.compile(r"[A-Za-z_]\w*")
_RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')
_EXTERN_SHARED = re.compile(
    r"\bextern\s+(?P<quals>(?:(?:__shared__|__align__\s*\(\s*\w+\s*\)|alignas\s*\(\s*\w+\s*\)|"
    r"__attribute__\s*\(\(.*?\)\)|HIP_DYNAMIC_SHARED_ATTRIBUTE)\s*)+)"
    r"(?P<type>[A-Za-z_][\w:<>,\s\*]*?)\s*(?P<name>\b[A-Za-z_]\w*)\s*\[\s*\]\s*;"
)


_GLOBAL = re.compile(r"\b__global__\b")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")
_GGL_LAUNCH = re.compile(r"\bhipLaunchKernelGGL\s*\(\s*([A-Za-z_]\w*)\s*,")


@dataclass
class PrepassResult:
    text: str
    launches: int  # <<<>>> launches rewritten
    dynamic_shared: int  # extern __shared__ declarations rewritten


def blank_literals(text: str) -> str:
    """`text` with the contents of comments, string and character literals replaced by spaces
    (newlines kept), so that offsets and line numbers stay those of `text`."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i = end
        elif c == '"' or (c in "uULR" and (m := _RAW_STRING.match(text, i)) and (i == 0 or not _is_word(text[i - 1]))):
            if c == '"':
                end = _end_of_quoted(text, i, '"')
            else:
                close = ")" + m.group(1) + '"'
                end = text.find(close, m.end())
                end = n if end < 0 else end + len(close)
            blank(i + 1, end - 1)
            i = end
        elif c == "'" and not (i > 0 and text[i - 1].isalnum()):  # not a digit separator (1'000)
            end = _end_of_quoted(text, i, "'")
            blank(i + 1, end - 1)
            i = end
        else:
            i += 1
    return "".join(out)


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _end_of_quoted(text: str, start: int, quote: str) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote or text[i] == "\n":
            return i + 1
        i += 1
    return len(text)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _fail(path: str, masked: str, offset: int, what: str) -> RocmPerfError:
    return RocmPerfError(f"{path}:{_line_of(masked, offset)}: {what}")


def _kernel_name_start(masked: str, end: int, path: str) -> int:
    """Where the kernel name that ends at `end` (exclusive) begins: identifiers, `::` and
    balanced template argument lists."""
    i = end
    while i > 0 and masked[i - 1].isspace():
        i -= 1
    name_end = i
    while i > 0:
        c = masked[i - 1]
        if c == ">":
            depth, j = 0, i - 1
            while j >= 0:
                if masked[j] == ">":
                    depth += 1
                elif masked[j] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                elif masked[j] in "();{}":
                    raise _fail(path, masked, end, "unsupported kernel launch: template arguments with parentheses or "
                                "expressions before <<<; name the kernel with a type alias or constant instead")
                j -= 1
            if j < 0:
                raise _fail(path, masked, end, "unbalanced template arguments before <<<")
            i = j
            while i > 0 and masked[i - 1].isspace():
                i -= 1
            continue  # the template's name comes next
        elif _is_word(c):
            while i > 0 and _is_word(masked[i - 1]):
                i -= 1
        else:
            break
        k = i
        while k > 0 and masked[k - 1].isspace():
            k -= 1
        if masked[k - 2 : k] == "::":
            i = k - 2
            while i > 0 and masked[i - 1].isspace():
                i -= 1
            continue
        break
    name = masked[i:name_end].strip()
    before = masked[:i].rstrip()[-1:]
    if not name or not (_IDENT.match(name) or name.startswith("::")) or before == ".":
        shown = masked[max(0, i - 20) : end].strip().splitlines()[-1:] or ["?"]
        raise _fail(path, masked, end, f"unsupported kernel launch form `{shown[0]}<<<...>>>`: the host backend needs "
                    "a named kernel before <<< (write one launch per kernel, e.g. with if/else)")
    return i


def _split_top_level(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of the comma-separated items in masked[start:end], ignoring nested commas."""
    spans, depth, item = [], 0, start
    for k in range(start, end):
        c = masked[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            spans.append((item, k))
            item = k + 1
    spans.append((item, end))
    return spans


def _matching_close(masked: str, open_at: int, path: str) -> int:
    depth = 0
    for k in range(open_at, len(masked)):
        c = masked[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return k
    raise _fail(path, masked, open_at, "unbalanced parentheses in a kernel launch")


def _find_config_end(masked: str, start: int, path: str) -> int:
    depth = 0
    for k in range(start, len(masked)):
        c = masked[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and masked.startswith(">>>", k):
            return k
        elif c == ";" and depth == 0:
            break
    raise _fail(path, masked, start, "a kernel launch <<< without its closing >>>")


def template_kernels(masked: str) -> set[str]:
    """Names of the `__global__` function templates declared in (blanked) source text."""
    names = set()
    for m in _GLOBAL.finditer(masked):
        start = max(masked.rfind(c, 0, m.start()) for c in ";{}") + 1
        if not re.search(r"\btemplate\b", masked[start : m.start()]):
            continue
        head = _LAUNCH_BOUNDS.sub(" ", masked[m.end() : m.end() + 400])
        if name := re.search(r"([A-Za-z_]\w*)\s*\(", head):
            names.add(name.group(1))
    return names


def rewrite_launches(text: str, path: str = "<source>", template_names: set[str] | None = None) -> tuple[str, int]:
    """Every `name<<<cfg>>>(args)` in `text` as a hipLaunchKernelGGL call; returns (text, count)."""
    masked = blank_literals(text)
    deduced = template_kernels(masked) | set(template_names or ())
    pieces: list[str] = []
    cursor = count = 0
    search_from = 0
    while (at := masked.find("<<<", search_from)) >= 0:
        name_start = _kernel_name_start(masked, at, path)
        config_end = _find_config_end(masked, at + 3, path)
        k = config_end + 3
        while k < len(masked) and masked[k].isspace():
            k += 1
        if k >= len(masked) or masked[k] != "(":
            raise _fail(path, masked, at, "a kernel launch <<<...>>> must be followed by its (arguments)")
        args_close = _matching_close(masked, k, path)
        config = [masked[a:b] for a, b in _split_top_level(masked, at + 3, config_end)]
        if not 2 <= len(config) <= 4 or any(not c.strip() for c in config):
            raise _fail(path, masked, at, f"a kernel launch needs 2 to 4 launch parameters in <<<...>>>, got {len(config)}")
        config += ["0"] * (4 - len(config))
        name = " ".join(masked[name_start:at].split())
        deduced_launch = name.split("::")[-1] in deduced
        args = text[k + 1 : args_close]
        braced = any(masked[a:b].strip().startswith("{") for a, b in _split_top_level(masked, k + 1, args_close))
        if braced and not deduced_launch:
            # A braced argument cannot go through a macro: call a launcher typed like the kernel.
            g, b, shmem, stream = (c.strip() for c in config)
            launch = (f'::rocm_perf_host::TypedLaunch<&{name}>{{"{name}", dim3({g}), dim3({b}), '
                      f"static_cast<std::size_t>({shmem}), ({stream})}}({args})")
        else:
            macro = "ROCM_PERF_LAUNCH_DEDUCED" if deduced_launch else "hipLaunchKernelGGL"
            if "<" in name:
                name = f"HIP_KERNEL_NAME({name})"
            launch = f"{macro}({name}, {', '.join(c.strip() for c in config)}"
            launch += (", " + args if args.strip() else args) + ")"
        # Keep every newline of the original span so that later line numbers do not move.
        launch += "\n" * (text[name_start : args_close + 1].count("\n") - launch.count("\n"))
        pieces.append(text[cursor:name_start])
        pieces.append(launch)
        cursor = args_close + 1
        search_from = args_close + 1
        count += 1
    pieces.append(text[cursor:])
    return _rewrite_deduced_ggl("".join(pieces), deduced), count


def _rewrite_deduced_ggl(text: str, deduced: set[str]) -> str:
    """hipLaunchKernelGGL(kern, ...) written by the user for a template `kern` without arguments."""
    if not deduced:
        return text
    masked = blank_literals(text)
    pieces, cursor = [], 0
    for m in _GGL_LAUNCH.finditer(masked):
        if m.group(1) in deduced:
            pieces.append(text[cursor : m.start()])
            pieces.append("ROCM_PERF_LAUNCH_DEDUCED" + text[m.start() + len("hipLaunchKernelGGL") : m.end()])
            cursor = m.end()
    pieces.append(text[cursor:])
    return "".join(pieces)


def _scope_is_block(masked: str, offset: int) -> bool:
    """Whether `offset` lies inside a function body (not at file or namespace scope)."""
    openers: list[int] = []
    for k in range(offset):
        c = masked[k]
        if c == "{":
            openers.append(k)
        elif c == "}" and openers:
            openers.pop()
    for k in openers:
        before = masked[:k].rstrip()
        if re.search(r"\bnamespace(\s+[\w:]+)?\s*$", before) or re.search(r'\bextern\s*"[^"\n]*"\s*$', before):
            continue  # `extern "C" {` (the string is blanked) or a namespace
        return True
    return False


def rewrite_dynamic_shared(text: str, path: str = "<source>") -> tuple[str, int]:
    """`extern __shared__ T name[];` as a pointer to the block's dynamic shared memory."""
    masked = blank_literals(text)
    pieces, cursor, count = [], 0, 0
    for m in _EXTERN_SHARED.finditer(masked):
        if "__shared__" not in m.group("quals"):
            continue
        type_text = " ".join(text[m.start("type") : m.end("type")].split())
        name = m.group("name")
        if _scope_is_block(masked, m.start()):
            replacement = f"{type_text}* const {name} = reinterpret_cast<{type_text}*>(::rocm_perf_host::dynamic_shared());"
        else:
            replacement = f"[[maybe_unused]] static constexpr ::rocm_perf_host::DynamicShared<{type_text}> {name}{{}};"
        replacement += "\n" * text[m.start() : m.end()].count("\n")
        pieces.append(text[cursor : m.start()])
        pieces.append(replacement)
        cursor = m.end()
        count += 1
    pieces.append(text[cursor:])
    return "".join(pieces), count


# Loop pragmas in HIP's (clang's) spellings. g++ ignores them all, which would make every
# unroll-pragma candidate a no-op on the host backend; `#pragma GCC unroll N` is g++'s equivalent
# (0 and 1 block unrolling). Bare `#pragma unroll` (full unroll) is left to g++'s own choice.
_UNROLL_PRAGMA = re.compile(
    r"^(?P<indent>[ \t]*)#[ \t]*pragma[ \t]+(?:"
    r"unroll[ \t]*\(?[ \t]*(?P<n>\d+)[ \t]*\)?"
    r"|clang[ \t]+loop[ \t]+unroll_count[ \t]*\([ \t]*(?P<count>\d+)[ \t]*\)"
    r"|(?P<off>nounroll|clang[ \t]+loop[ \t]+unroll[ \t]*\([ \t]*disable[ \t]*\)))[ \t]*$",
    re.MULTILINE,
)
_UNROLL_OPERATOR = re.compile(r'_Pragma\s*\(\s*"\s*unroll\s+(?P<n>\d+)\s*"\s*\)')


def rewrite_unroll_pragmas(text: str) -> tuple[str, int]:
    """`#pragma unroll N` (and clang's other spellings, and `_Pragma("unroll N")`) as
    `#pragma GCC unroll N`, on the same line, outside comments and strings."""
    masked = blank_literals(text)
    edits: list[tuple[int, int, str]] = []
    for m in _UNROLL_PRAGMA.finditer(masked):
        n = m.group("n") or m.group("count") or ("1" if m.group("off") else None)
        edits.append((m.start(), m.end(), f"{m.group('indent')}#pragma GCC unroll {min(int(n), 65534)}"))
    for m in re.finditer(r"_Pragma\s*\(", masked):
        op = _UNROLL_OPERATOR.match(text, m.start())
        if op:
            edits.append((op.start(), op.end(), f'_Pragma("GCC unroll {min(int(op.group("n")), 65534)}")'))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, len(edits)


# An inline-assembly statement and the first instruction of its template. GCN/CDNA mnemonics
# begin with these prefixes (AMD's ISA manuals: VOP/SOP/DS/MUBUF/FLAT/... encodings); x86
# assembly in host code does not, and stays allowed.
_ASM_STATEMENT = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile\b|__volatile__\b|goto\b|inline\b|\s)*\(\s*\"")
_GCN_MNEMONIC = re.compile(
    r"^\s*(?:v_|s_|ds_|buffer_|global_|flat_|scratch_|image_|tbuffer_|exp\b|lds_|smem_|v_pk_|v_mfma|v_dot)"
)


def refuse_gcn_assembly(text: str, path: str = "<source>") -> None:
    """Raise RocmPerfError naming the line of the first inline GCN assembly statement in `text`."""
    masked = blank_literals(text)
    for m in _ASM_STATEMENT.finditer(masked):
        quote = m.end() - 1
        end = _end_of_quoted(text, quote, '"')
        template = text[quote + 1 : end - 1]
        if _GCN_MNEMONIC.match(template):
            instruction = template.split("\\n")[0].strip()
            raise _fail(path, masked, m.start(), f"inline GCN assembly (`{instruction}`) cannot run on the host "
                        "backend's CPU; profile this program with the rocm backend")


def prepass(text: str, path: str = "<source>", template_names: set[str] | None = None) -> PrepassResult:
    """All rewrites; the result compiles with a C++ compiler against the host runtime.

    `template_names`: template kernels declared elsewhere (the headers the file includes), so
    that launches of them with deduced template arguments are recognized too."""
    refuse_gcn_assembly(text, path)
    text, shared = rewrite_dynamic_shared(text, path)
    text, launches = rewrite_launches(text, path, template_names)
    text, _ = rewrite_unroll_pragmas(text)
    return PrepassResult(text=text, launches=launches, dynamic_shared=shared)
