"""Writing a reproducer folder from a capture: the kernel file and its headers, the compressed
snapshots, manifest.json, harness.hip and replay_support.h (the layout is rocm_perf/reproducer.py's).
Everything is written into a staging folder that the command renames into place when complete."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from rocm_perf import __version__
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.isolate.extract import Extracted, template_arguments
from rocm_perf.isolate.harness import AS_PARAMETERS, AS_TYPES, harness_source
from rocm_perf.isolate.snapshots import store
from rocm_perf.reproducer import (HARNESS_NAME, KERNEL_DIR, MANIFEST_NAME, REPRODUCER_FORMAT, REPRODUCER_VERSION,
                                  SUPPORT_NAME)

SUPPORT_HEADER = Path(__file__).resolve().parent / "harness" / SUPPORT_NAME


@dataclass
class Origin:
    """The whole program a capture came from, as the manifest records it."""

    kind: str  # "source" | "project"
    root: Path  # the source's folder, or the project's root
    rel: str  # the kernel's file, relative to root
    display: str  # how reports name the program
    record: dict  # how it is built and run (source: cflags, args, cwd; project: build, run, sources)


def _spellable(type_name: str) -> bool:
    """Whether the harness can write a type as the runtime spelled it."""
    return "(anonymous namespace)" not in type_name and "{lambda" not in type_name and "<lambda" not in type_name


def arguments_as(cap: dict, extracted: Extracted) -> str:
    """How the harness rebuilds the arguments: as the kernel's parameter types where the runtime
    named the kernel as one function and the launch passed one argument per parameter, else as
    the types the launch passed."""
    if cap["kernel"]["naming"] in ("symbol", "signature") and len(cap["arguments"]) == extracted.parameters:
        return AS_PARAMETERS
    return AS_TYPES


def kernel_call(cap: dict, extracted: Extracted, how: str) -> str:
    """How the harness names the kernel: with its template arguments where it names one instance."""
    name = extracted.kernel.qualified_name
    args = template_arguments(cap["kernel"]["demangled"])
    if extracted.kernel.is_template and how == AS_PARAMETERS and args:
        return f"{name}<{args}>"
    return name


def write_folder(staging: Path, *, cap: dict, capture_dir: Path, extracted: Extracted, origin: Origin, backend: str,
                 flags: list[str], include_dirs: list[str], command: list[str], program: dict) -> dict:
    """The reproducer in `staging` (a fresh folder); returns its manifest."""
    staging.mkdir(parents=True)
    kernel_dir = staging / KERNEL_DIR
    for header in extracted.headers:
        target = kernel_dir / header.relative_to(origin.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(header, target)
    kernel_file = kernel_dir / origin.rel
    kernel_file.parent.mkdir(parents=True, exist_ok=True)
    kernel_file.write_bytes(extracted.data)
    shutil.copy2(SUPPORT_HEADER, staging / SUPPORT_NAME)

    allocations = []
    for i, a in enumerate(cap["allocations"]):
        entry = {"index": i + 1, "address": a["address"], "size": a["size"], "kind": a["kind"], "changed": a["changed"],
                 "before": store(capture_dir / "memory" / f"{i}.before", staging, f"allocation_{i + 1}.before")}
        entry["after"] = store(capture_dir / "memory" / f"{i}.after", staging, f"allocation_{i + 1}.after") if a["changed"] else None
        allocations.append(entry)
    variables, not_captured = [], []
    found = {s["name"]: (i, s) for i, s in enumerate(cap.get("symbols", []))}
    for v in extracted.variables:
        entry = {"spelling": v.spelling, "symbol": v.symbol, "size": 0, "before": None, "after": None}
        index, s = found.get(v.symbol, (None, None))
        if s is None or not s["found"]:
            why = ("it has internal linkage" if v.internal else "the rocm capture does not record variables"
                   if (cap.get("region") or {}).get("kind") == "gpu" else "its symbol is not exported")
            not_captured.append(f"variable {v.spelling}: {why}, so its value at the dispatch was not captured; the "
                                "replay starts from its initializer")
        else:
            entry["size"] = s["size"]
            entry["changed"] = s["changed"]
            entry["before"] = store(capture_dir / "symbols" / f"{index}.before", staging, f"variable_{index + 1}.before")
            if s["changed"]:
                entry["after"] = store(capture_dir / "symbols" / f"{index}.after", staging, f"variable_{index + 1}.after")
        variables.append(entry)
    how = arguments_as(cap, extracted)
    if how == AS_TYPES:
        for i, a in enumerate(cap["arguments"], 1):
            if not _spellable(a["type"]):
                raise RocmPerfError(f"argument {i} of {cap['kernel']['demangled']} has a type the harness cannot name "
                                    f"({a['type']}); give the kernel's template arguments at the launch")
    warnings = []
    if not any(a["changed"] for a in allocations) and not any(v.get("changed") for v in variables):
        warnings.append("the dispatch changed no memory (it wrote what was already there): its replay cannot tell a "
                        "kernel that writes nothing from a right one; an earlier dispatch (--dispatch) may have fresh outputs")
    snapshot_bytes = sum(e[k]["size"] for e in allocations + variables for k in ("before", "after") if e.get(k))
    compressed = sum(e[k]["compressed"] for e in allocations + variables for k in ("before", "after") if e.get(k))
    doc = {
        "format": REPRODUCER_FORMAT,
        "version": REPRODUCER_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "tool_version": __version__,
        "backend": backend,
        "command": list(command),
        "origin": {"kind": origin.kind, "root": str(origin.root), "rel": origin.rel, "path": str(origin.root / origin.rel),
                   "sha256": _sha256(origin.root / origin.rel), "display": origin.display, **origin.record},
        "program": program,
        "kernel": {"name": extracted.kernel.name, "qualified_name": extracted.kernel.qualified_name,
                   "mangled": cap["kernel"]["mangled"], "demangled": cap["kernel"]["demangled"],
                   "naming": cap["kernel"]["naming"], "call": kernel_call(cap, extracted, how), "arguments_as": how},
        "dispatch": cap["dispatch"],
        "launch": {k: cap[k] for k in ("grid", "block", "shmem", "stream", "cooperative")},
        "capture_kernel_ns": cap.get("kernel_ns"),
        "region": cap["region"],
        "arguments": [{**a, "index": i + 1} for i, a in enumerate(cap["arguments"])],
        "arguments_file": store(capture_dir / "arguments.bin", staging, "arguments.bin"),
        "allocations": allocations,
        "variables": variables,
        "not_captured": not_captured,
        "warnings": warnings,
        "snapshot_bytes": snapshot_bytes,
        "compressed_bytes": compressed,
        "source": {"file": f"{KERNEL_DIR}/{origin.rel}", "rel": origin.rel, "cflags": flags, "include_dirs": include_dirs,
                   "headers": [str(h.relative_to(origin.root)) for h in extracted.headers],
                   "kept": extracted.kept, "dropped": extracted.dropped},
        "harness": HARNESS_NAME,
    }
    (staging / HARNESS_NAME).write_text(harness_source(doc), encoding="utf-8")
    write_manifest(staging, doc)
    return doc


def write_manifest(folder: Path, doc: dict) -> None:
    write_atomic(Path(folder) / MANIFEST_NAME, json.dumps(doc, indent=2) + "\n")


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
