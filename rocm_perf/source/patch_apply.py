"""Unified diffs as `git diff` and `diff -u` write them: read one, find the file it is for, apply it.

Bytes in, bytes out: a hunk's lines are matched against the file's lines with their line endings
folded (a diff written on another system still applies), and the lines it adds take the file's own
line ending. A hunk is looked for where its header says, then at the nearest offset above or below
(as `patch` does when lines were added or removed before it); its context is never fuzzed, so
a hunk whose context changed does not apply, and the error names the hunk and the first line
that differs. One patch changes one file: a patch for several files, a binary patch, a patch that
creates or deletes a file, or text that is not a diff is refused with one line naming it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rocm_perf.errors import RocmPerfError

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# How far from its header's line a hunk is looked for (patch's own limit is the whole file).
MAX_OFFSET = 10_000


@dataclass
class Hunk:
    """One `@@ -a,b +c,d @@` block: the old lines (context and removed) and the new ones."""

    number: int  # 1-based, in the patch
    header: str
    old_start: int  # 1-based line of the file
    old: list[bytes] = field(default_factory=list)  # lines without their endings
    new: list[bytes] = field(default_factory=list)
    # "\ No newline at end of file" after the hunk's last old / new line
    old_no_newline: bool = False
    new_no_newline: bool = False


@dataclass
class FilePatch:
    """A patch of one file: the path it names (a/ b/ prefixes dropped) and its hunks."""

    source: str  # where the patch came from, for messages (its file name)
    path: str  # the +++ name
    hunks: list[Hunk]
    text: bytes = field(repr=False, default=b"")
    old_path: str = ""  # the --- name (`diff -u prog.cu prog_fast.cu` names the source there)

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys(n for n in (self.path, self.old_path) if n))


def _strip_prefix(name: str) -> str:
    """`a/x.cu` -> `x.cu`, tab-separated timestamps (diff -u) dropped."""
    name = name.split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return name


def parse_patch(data: bytes, source: str) -> FilePatch:
    """The one file patch in `data` (a unified diff); RocmPerfError naming `source` and the problem."""
    if not data.strip():
        raise RocmPerfError(f"{source}: empty patch (no hunks)")
    if b"\0" in data or b"GIT binary patch" in data or re.search(rb"^Binary files .* differ", data, re.M):
        raise RocmPerfError(f"{source}: a binary patch; give a text diff of the source (git diff, diff -u)")
    lines = data.splitlines(keepends=True)
    files: list[tuple[str, str]] = []
    hunks: list[Hunk] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(b"--- ") and i + 1 < len(lines) and lines[i + 1].startswith(b"+++ "):
            old = _strip_prefix(line[4:].decode("utf-8", "surrogateescape").rstrip("\r\n"))
            new = _strip_prefix(lines[i + 1][4:].decode("utf-8", "surrogateescape").rstrip("\r\n"))
            files.append((old, new))
            i += 2
            continue
        m = _HUNK.match(line)
        if m:
            if not files:
                raise RocmPerfError(f"{source}: hunk at line {i + 1} comes before any --- / +++ file header")
            hunk, i = _read_hunk(lines, i, m, len(hunks) + 1, source)
            hunks.append(hunk)
            continue
        i += 1
    if not files:
        raise RocmPerfError(f"{source}: not a unified diff (no --- / +++ file header); write it with git diff or diff -u")
    if any(old == "/dev/null" for old, _ in files):
        raise RocmPerfError(f"{source}: creates a file ({files[0][1]}); a patch must change the existing source")
    if any(new == "/dev/null" for _, new in files):
        raise RocmPerfError(f"{source}: deletes a file ({files[0][0]}); a patch must change the existing source")
    if len(files) > 1:
        names = ", ".join(dict.fromkeys(new for _, new in files))
        raise RocmPerfError(f"{source}: changes {len(files)} files ({names}); one patch changes one source: give one "
                            "--patch per file")
    if not hunks:
        raise RocmPerfError(f"{source}: empty patch (no hunks)")
    return FilePatch(source, files[0][1], hunks, data, old_path=files[0][0])


def _read_hunk(lines: list[bytes], i: int, m: re.Match, number: int, source: str) -> tuple[Hunk, int]:
    old_count = int(m.group(2)) if m.group(2) is not None else 1
    new_count = int(m.group(4)) if m.group(4) is not None else 1
    header = lines[i].decode("utf-8", "surrogateescape").rstrip("\r\n")
    hunk = Hunk(number, header, int(m.group(1)))
    i += 1
    last = ""
    while i < len(lines) and (len(hunk.old) < old_count or len(hunk.new) < new_count or lines[i].startswith(b"\\")):
        line = lines[i]
        body = line[1:].rstrip(b"\r\n")
        tag = line[:1]
        if tag == b" " or line in (b"\n", b"\r\n"):  # some tools drop the space of an empty context line
            hunk.old.append(body)
            hunk.new.append(body)
            last = " "
        elif tag == b"-":
            hunk.old.append(body)
            last = "-"
        elif tag == b"+":
            hunk.new.append(body)
            last = "+"
        elif tag == b"\\":
            if last in (" ", "-"):
                hunk.old_no_newline = True
            if last in (" ", "+"):
                hunk.new_no_newline = True
        else:
            break
        i += 1
    if len(hunk.old) != old_count or len(hunk.new) != new_count:
        raise RocmPerfError(f"{source}: hunk {number} ({header}) is cut short: its header counts {old_count} old and "
                            f"{new_count} new lines, the patch holds {len(hunk.old)} and {len(hunk.new)}")
    return hunk, i


def read_patch(path: Path) -> FilePatch:
    """The patch in the file at `path` (RocmPerfError when it cannot be read or is not one)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read the patch ({e.strerror or e})") from e
    return parse_patch(data, Path(path).name)


def patch_targets(patch: FilePatch, source: Path, *, tree: Path | None = None, candidates: list[str] = ()) -> str:
    """Which file the patch is for: '' for the lone `source` (the patch's path is its name, or a path
    whose last parts are the source's own: `kernels/prog.cu` from a repository's root), or, in a
    project `tree`, the relative path among `candidates` (the project's sources) it names.
    RocmPerfError when it is for another file."""
    if tree is None:
        parts = Path(source).resolve().parts
        for name in patch.names:
            named = PurePosixPath(name).parts
            if named and tuple(named) == tuple(parts[len(parts) - len(named):]):
                return ""
        raise RocmPerfError(f"{patch.source}: a patch for another file ({patch.path}); the source is {Path(source).name}")
    for name in patch.names:
        named = PurePosixPath(name).parts
        if name in candidates:
            return name
        ending = [c for c in candidates if PurePosixPath(c).parts[-len(named):] == named]
        if len(ending) == 1:
            return ending[0]
    rel = patch.path
    if (Path(tree) / rel).is_file():
        raise RocmPerfError(f"{patch.source}: patches {rel}, which is not one of the project's sources "
                            f"({', '.join(candidates)}); name it with --source {rel}")
    raise RocmPerfError(f"{patch.source}: a patch for another file ({patch.path}); no such source in {tree}")


def _split(data: bytes) -> tuple[list[bytes], bytes, bool]:
    """The file's lines without endings, its line ending, and whether its last line ends in one."""
    newline = b"\r\n" if b"\r\n" in data[: data.find(b"\n") + 1 or len(data)] else b"\n"
    parts = data.split(b"\n")
    ends = data.endswith(b"\n")
    if ends:
        parts = parts[:-1]
    return [p[:-1] if p.endswith(b"\r") else p for p in parts], newline, ends


def _matches(lines: list[bytes], at: int, old: list[bytes]) -> bool:
    return at >= 0 and at + len(old) <= len(lines) and lines[at: at + len(old)] == old


def _first_difference(lines: list[bytes], at: int, old: list[bytes]) -> str:
    """Where the hunk's lines first differ from the file's at line `at` (0-based), in words."""
    for k, expected in enumerate(old):
        if at + k >= len(lines):
            return f"the file ends at line {len(lines)}, the hunk expects `{_show(expected)}` at line {at + k + 1}"
        if lines[at + k] != expected:
            return f"line {at + k + 1} is `{_show(lines[at + k])}`, the hunk expects `{_show(expected)}`"
    return "its lines were not found"


def _show(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return text if len(text) <= 70 else text[:67] + "..."


def apply_patch(patch: FilePatch, data: bytes, name: str) -> bytes:
    """`data` (the file `name`) with the patch applied; RocmPerfError naming the hunk and the line
    when a hunk does not apply."""
    lines, newline, ends = _split(data)
    out: list[bytes] = []
    pos = 0  # next line of `lines` not yet copied
    offset = 0
    for hunk in patch.hunks:
        expected = max(0, hunk.old_start - 1 + offset) if hunk.old else hunk.old_start + offset
        at = _locate(lines, hunk, expected, pos)
        if at is None:
            why = _first_difference(lines, expected, hunk.old)
            raise RocmPerfError(f"{patch.source}: hunk {hunk.number} ({hunk.header}) does not apply to {name} at "
                                f"line {expected + 1}: {why}")
        out.extend(lines[pos:at])
        out.extend(hunk.new)
        pos = at + len(hunk.old)
        offset = at - (hunk.old_start - 1) if hunk.old else at - hunk.old_start
    out.extend(lines[pos:])
    if pos == len(lines):  # the last hunk reaches the end: it says whether the last line ends
        ends = not patch.hunks[-1].new_no_newline
    body = newline.join(out)
    return body + (newline if ends and out else b"")


def _locate(lines: list[bytes], hunk: Hunk, expected: int, floor: int) -> int | None:
    """The 0-based line where the hunk's old lines are, nearest to `expected` and not before `floor`
    (hunks apply in order); None when they are nowhere."""
    if not hunk.old:  # a pure insertion: after line old_start (0 = at the top)
        return expected if floor <= expected <= len(lines) else None
    for step in range(MAX_OFFSET):
        for at in ((expected,) if step == 0 else (expected - step, expected + step)):
            if at >= floor and _matches(lines, at, hunk.old):
                return at
        if expected - step < floor and expected + step > len(lines):
            break
    return None


def diff_sha_and_text(patch: FilePatch) -> tuple[str, str]:
    """The patch's sha256 and its text, as the ledger's provenance keeps them."""
    return hashlib.sha256(patch.text).hexdigest(), patch.text.decode("utf-8", "replace")
