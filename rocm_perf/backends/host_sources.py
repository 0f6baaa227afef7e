"""The sources of one host compile: a translation unit and the project headers it includes.

HIP's `<<<...>>>` launches, `extern __shared__` arrays, unroll pragmas and inline GCN assembly
appear in headers as often as in `.cu` files, so the launch pre-pass (launch_prepass.py) runs
over every project header the unit reaches, not the unit alone. A header the pre-pass changes
gets a copy in a shadow directory, and so does every header that includes one of those; their
`#include` lines point at the copies, by absolute path. `#line` keeps compiler messages on the
user's files and lines, and nothing is ever written next to the user's sources.

Which headers are "project headers": those found, as the compiler would find them, in the
including file's directory (for `"..."`), then the `-iquote` and `-I` directories. System
directories and the host runtime's own headers are never read. An `#include` spelled through a
macro is left to the compiler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.backends.host_libraries import compile_flags as library_compile_flags
from rocm_perf.backends.host_libraries import link_flags as library_link_flags
from rocm_perf.backends.host_libraries import used_libraries
from rocm_perf.backends.launch_prepass import blank_literals, prepass, template_kernels
from rocm_perf.errors import RocmPerfError

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(["<])', re.MULTILINE)


@dataclass
class _Include:
    start: int  # offsets of the spelled name, between the delimiters
    end: int
    target: Path | None  # the project file it resolves to, or None (system, runtime, unresolved)


@dataclass
class _File:
    path: Path
    text: str
    masked: str
    includes: list[_Include] = field(default_factory=list)
    converted: str = ""
    changed: bool = False


@dataclass
class PreparedUnit:
    """What to compile: `compile_path`, and the project headers that got a shadow copy."""

    compile_path: Path
    shadowed: dict[Path, Path]
    headers: list[Path]  # every project header reached
    launches: int
    dynamic_shared: int
    warp_ops: bool = True  # whether any file of the unit names a warp-level operation (see WARP_OPS)
    libraries: set[str] = field(default_factory=set)  # the HIP libraries it includes (host_libraries.py)
    library_flags: list[str] = field(default_factory=list)  # what compiling against them needs
    link_libraries: list[str] = field(default_factory=list)  # what a program of this unit links, after its objects

    @property
    def runtime_defines(self) -> list[str]:
        """Compiler flags the unit's runtime build needs: a unit with no warp-level operation runs
        its barrier-free blocks without the per-thread check for one (runtime.h); a unit that uses
        a HIP library, that library's (host_libraries.py)."""
        return ([] if self.warp_ops else ["-DROCM_PERF_HOST_NO_WARP_OPS=1"]) + self.library_flags


# Names through which a kernel reaches a warp-level operation of the runtime (rocm_perf_host/
# warp.h, cooperative_groups.h). Matching more than needed only keeps the per-thread check.
WARP_OPS = re.compile(r"__shfl|__ballot|__any|__all|__activemask|__syncwarp|__match_|__reduce_|__lanemask|"
                      r"__builtin_amdgcn|__syncthreads_(?:count|and|or)|cooperative_groups|tiled_partition|"
                      r"coalesced_threads|thread_block_tile|\bcg::|warpSize")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read the source ({e.strerror})") from e


def _resolve(name: str, quoted: bool, including_dir: Path, quote_dirs: list[Path], include_dirs: list[Path],
             runtime_dir: Path) -> Path | None:
    """The project file `#include` finds for `name`, or None for the runtime's and others."""
    search = ([including_dir] + quote_dirs if quoted else []) + [runtime_dir] + include_dirs
    for directory in search:
        candidate = directory / name
        if candidate.is_file():
            resolved = candidate.resolve()
            if resolved.is_relative_to(runtime_dir):
                return None
            return resolved
    return None


def prepare_unit(source: Path, out_dir: Path, *, include_dirs: list[Path], quote_dirs: list[Path] | None = None,
                 runtime_dir: Path, template_names: set[str] | None = None) -> PreparedUnit:
    """Pre-pass `source` and the project headers it reaches into `out_dir`.

    Raises RocmPerfError for a form the pre-pass refuses, naming the file and line."""
    source = Path(source).resolve()
    out_dir = Path(out_dir)
    runtime_dir = Path(runtime_dir).resolve()
    include_dirs = [Path(d).resolve() for d in include_dirs]
    quote_dirs = [Path(d).resolve() for d in (quote_dirs or [])]

    files: dict[Path, _File] = {}
    pending = [source]
    while pending:
        path = pending.pop()
        if path in files:
            continue
        text = _read(path)
        f = _File(path=path, text=text, masked=blank_literals(text))
        for m in _INCLUDE.finditer(f.masked):
            opener = m.group(1)
            closer = '"' if opener == '"' else ">"
            start = m.end()
            end = text.find(closer, start)
            newline = text.find("\n", start)
            if end < 0 or (0 <= newline < end):
                continue
            target = _resolve(text[start:end], opener == '"', path.parent, quote_dirs, include_dirs, runtime_dir)
            f.includes.append(_Include(start, end, target))
            if target is not None:
                pending.append(target)
        files[path] = f

    # Template kernels declared anywhere in the unit: launches with deduced arguments need them.
    templates = set(template_names or ())
    for f in files.values():
        templates |= template_kernels(f.masked)
    launches = shared = 0
    for f in files.values():
        result = prepass(f.text, str(f.path), templates)
        f.converted, f.changed = result.text, result.text != f.text
        launches += result.launches
        shared += result.dynamic_shared

    # A header is shadowed when the pre-pass changed it or it includes a shadowed one.
    shadowed = {p for p, f in files.items() if f.changed and p != source}
    grew = True
    while grew:
        grew = False
        for p, f in files.items():
            if p != source and p not in shadowed and any(i.target in shadowed for i in f.includes):
                shadowed.add(p)
                grew = True
    shadow_root = out_dir / "shadow"
    shadow_of = {p: shadow_root / p.relative_to(p.anchor) for p in shadowed}

    def written(f: _File) -> str:
        """The converted text with its project includes pointed at absolute paths."""
        text = f.converted
        # Include offsets are the original file's; the pre-pass keeps lines but may move
        # columns, so re-find the directives in the text that is written.
        masked = blank_literals(text)
        pieces, cursor = [], 0
        targets = iter(f.includes)
        for m in _INCLUDE.finditer(masked):
            opener = m.group(1)
            closer = '"' if opener == '"' else ">"
            start = m.end()
            end = text.find(closer, start)
            newline = text.find("\n", start)
            if end < 0 or (0 <= newline < end):
                continue
            include = next(targets, None)
            if include is None or include.target is None:
                continue
            absolute = shadow_of.get(include.target, include.target)
            pieces.append(text[cursor : m.start(1)])
            pieces.append(f'"{absolute}"')
            cursor = end + 1
        pieces.append(text[cursor:])
        return f'#line 1 "{f.path}"\n' + "".join(pieces)

    for p in shadowed:
        shadow_of[p].parent.mkdir(parents=True, exist_ok=True)
        shadow_of[p].write_text(written(files[p]), encoding="utf-8")
    out_dir.mkdir(parents=True, exist_ok=True)
    compile_path = out_dir / f"{source.stem}.host.cpp"
    compile_path.write_text(written(files[source]), encoding="utf-8")
    libraries = used_libraries(f.text for f in files.values())
    return PreparedUnit(
        compile_path=compile_path,
        shadowed={p: shadow_of[p] for p in sorted(shadowed)},
        headers=sorted(p for p in files if p != source),
        launches=launches,
        dynamic_shared=shared,
        warp_ops=any(WARP_OPS.search(f.masked) for f in files.values()),
        libraries=libraries,
        library_flags=library_compile_flags(libraries),
        link_libraries=library_link_flags(libraries),
    )


def include_dirs_from_flags(flags: list[str], cwd: Path) -> tuple[list[Path], list[Path]]:
    """(-I directories, -iquote directories) named in compiler flags, relative to `cwd`."""
    include, quote = [], []
    i = 0
    while i < len(flags):
        flag = flags[i]
        for prefix, bucket in (("-iquote", quote), ("-I", include)):
            if flag == prefix and i + 1 < len(flags):
                bucket.append(cwd / flags[i + 1])
                i += 1
                break
            if flag.startswith(prefix) and len(flag) > len(prefix):
                bucket.append(cwd / flag[len(prefix) :])
                break
        i += 1
    return include, quote
