"""A kernel reproducer (`rocm-perf isolate`): one dispatch of a real program, captured into a folder
that every command takes as a program (profile, optimize, sweep, try).

    DIR/manifest.json          what was captured, from what, how (REPRODUCER_FORMAT, version)
    DIR/kernel/<file>          the kernel's translation unit with everything but its device code
                               blanked (line for line: the kernel sits on its original lines),
                               and the project headers it includes, at their relative paths
    DIR/harness.hip            the generated replay harness (includes the kernel file)
    DIR/replay_support.h       what the harness needs (restoring memory, comparing, passes)
    DIR/snapshots/             the memory before and after the dispatch, the argument bytes (gzip)

This module is the format's one reader, low in the layers so that every command can ask whether a
path is a reproducer (`is_reproducer`) and read it (`read_manifest`). It also carries a change of
the reproducer's kernel file back onto the original source (`carry_change`): the kernel file keeps
every line of the original at its line number, so a change to it is a set of line hunks that apply
to the original wherever the original still holds the lines the change replaced.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.tolerance import parse_tolerance

REPRODUCER_FORMAT = "rocm-perf-reproducer"
REPRODUCER_VERSION = 1
MANIFEST_NAME = "manifest.json"
HARNESS_NAME = "harness.hip"
SUPPORT_NAME = "replay_support.h"
KERNEL_DIR = "kernel"
SNAPSHOT_DIR = "snapshots"
DEFAULT_PASSES = 10


def is_reproducer(path: Path) -> bool:
    """Whether `path` is a reproducer folder (a directory whose manifest.json says it is one)."""
    manifest = Path(path) / MANIFEST_NAME
    if not manifest.is_file():
        return False
    try:
        doc = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("format") == REPRODUCER_FORMAT


@dataclass
class Reproducer:
    """A reproducer folder as its manifest describes it."""

    root: Path
    doc: dict = field(repr=False)

    @property
    def kernel_file(self) -> Path:
        """The kernel's translation unit (what a candidate rewrites)."""
        return self.root / self.doc["source"]["file"]

    @property
    def kernel_rel(self) -> str:
        """The kernel file relative to the reproducer's kernel/ folder (its path in the original tree)."""
        return self.doc["source"]["rel"]

    @property
    def harness(self) -> Path:
        return self.root / HARNESS_NAME

    @property
    def kernel_name(self) -> str:
        return self.doc["kernel"]["demangled"]

    @property
    def backend(self) -> str:
        return self.doc["backend"]

    @property
    def origin(self) -> dict:
        """The whole program it came from: kind (source | project), the original file, its sha256,
        how it is built and run."""
        return self.doc["origin"]

    @property
    def verified(self) -> bool:
        return bool((self.doc.get("verified") or {}).get("ok"))

    def include_flags(self) -> list[str]:
        """-I flags that find the kernel's headers from a copy of the kernel file anywhere."""
        return [f"-I{self.root / KERNEL_DIR / d}" for d in self.doc["source"].get("include_dirs", ["."])]

    def cflags(self) -> list[str]:
        """The flags the original was built with that change what the kernel file means (-D, -std, ...)."""
        return list(self.doc["source"].get("cflags", []))


def read_manifest(path: Path) -> Reproducer:
    """The reproducer at `path`; RocmPerfError (one line) when it is not one or is damaged."""
    root = Path(path)
    manifest = root / MANIFEST_NAME
    try:
        doc = json.loads(manifest.read_text(encoding="utf-8"))
    except OSError as e:
        raise RocmPerfError(f"{root}: not a reproducer (no readable {MANIFEST_NAME}: {e.strerror or e})") from e
    except ValueError as e:
        raise RocmPerfError(f"{manifest}: not valid JSON ({e})") from e
    if not isinstance(doc, dict) or doc.get("format") != REPRODUCER_FORMAT:
        raise RocmPerfError(f"{manifest}: not a rocm-perf reproducer manifest")
    if int(doc.get("version", 0)) > REPRODUCER_VERSION:
        raise RocmPerfError(f"{manifest}: reproducer format {doc.get('version')} is newer than this rocm-perf "
                            f"reads ({REPRODUCER_VERSION}); upgrade rocm-perf")
    for needed in (HARNESS_NAME, SUPPORT_NAME, doc.get("source", {}).get("file", KERNEL_DIR)):
        if not (root / needed).exists():
            raise RocmPerfError(f"{root}: damaged reproducer: {needed} is missing")
    return Reproducer(root.resolve(), doc)


def replay_args(reproducer: Path, passes: int = DEFAULT_PASSES, tolerance: str = "", element: str = "float32") -> list[str]:
    """The arguments a built harness takes: where its snapshots are, how many passes to run, and
    (`tolerance`: `rtol=R,atol=A`, as --tolerance takes it) how close to the captured after-state
    the memory must be, as elements of `element`, where its bits differ."""
    args = ["--dir", str(Path(reproducer).resolve()), "--passes", str(int(passes))]
    if tolerance:
        t = parse_tolerance(tolerance, element)
        args += ["--rtol", repr(t.rtol), "--atol", repr(t.atol), "--element", t.element]
    return args


# ---- a change of the kernel file, carried back onto the original source ----------------------


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def carry_change(extracted: bytes, changed: bytes, original: bytes, what: str = "the original source") -> bytes:
    """`original` with the change from `extracted` (the reproducer's kernel file) to `changed`
    applied line for line; RocmPerfError when a changed line is not the original's (the change
    touched a blanked line, or the original moved on)."""
    before, after, target = _lines(extracted), _lines(changed), _lines(original)
    out: list[bytes] = []
    cursor = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if target[i1:i2] != before[i1:i2]:
            where = f"line {i1 + 1}" if i2 <= i1 + 1 else f"lines {i1 + 1}-{i2}"
            raise RocmPerfError(f"{what}: the change replaces {where}, which the original does not hold as the "
                                "reproducer's kernel file does; apply it by hand (`--patch` prints it)")
        out += target[cursor:i1]
        out += after[j1:j2]
        cursor = i2
    out += target[cursor:]
    return b"".join(out)
