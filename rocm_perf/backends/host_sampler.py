"""The host runtime's sampler output (rocm_perf_host/sampler.h) turned into source lines.

The runtime writes, at exit, JSON lines: `meta` (rate, samples, dropped), `kernel` (the tracer's
kernels by index), `object` (each loaded object's load address and executable segments, from
dl_iterate_phdr) and `pc` (kernel index, program counter, count, and `via_call` when the PC is
the return address of a library function the program called). Here each PC is found in its
object's segments, made a file address (PC minus the load address: executables are PIE),
symbolized with its inlining chain (backends/symbolizer.py), and written as
`host_samples_<pid>.json` (trace/host_samples_read.py reads it).

A row's line is the innermost frame of the chain that lies in the user's code; the frames
outside it (the kernel line a helper was inlined into) go to `context` so that a helper's line
still counts for the kernel loop around the call. A chain entirely in system code (the runtime,
the C++ library, libm) keeps its innermost frame and is marked `system`. PCs in other shared
objects are not symbolized: they name their object. A `via_call` sample is symbolized at its
call instruction (return address - 1) and marked `library_call`: time in `fmaf` counts for the
line (and loop) that called it.
"""

from __future__ import annotations

import json
from pathlib import Path

from rocm_perf.analysis.hotspots import is_system_path
from rocm_perf.atomic_file import write_atomic
from rocm_perf.backends.symbolizer import Frame, symbolize
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.host_samples_read import FORMAT, VERSION


def read_raw_samples(path: Path) -> dict:
    """The raw sample log as {meta, kernels, objects, pcs}."""
    meta: dict = {}
    kernels: dict[int, tuple[str, str]] = {}
    objects: list[dict] = []
    pcs: list[tuple[int, int, int, bool]] = []
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read the host samples ({e.strerror})") from None
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            kind = r["type"]
            if kind == "meta":
                meta = r
            elif kind == "kernel":
                kernels[int(r["id"])] = (str(r["mangled"]), str(r["demangled"]))
            elif kind == "object":
                objects.append({"path": str(r["path"]), "base": int(r["base"]),
                                "segments": [(int(a), int(b)) for a, b in r["segments"]]})
            elif kind == "pc":
                pcs.append((int(r["kernel"]), int(r["pc"]), int(r["count"]), bool(r.get("via_call", False))))
        except (ValueError, KeyError, TypeError) as e:
            raise RocmPerfError(f"{path}: line {n} is not a sample record ({e})") from None
    return {"meta": meta, "kernels": kernels, "objects": objects, "pcs": pcs}


def _object_of(objects: list[dict], pc: int) -> dict | None:
    for obj in objects:
        if any(a <= pc < b for a, b in obj["segments"]):
            return obj
    return None


def _user_frame_index(chain: list[Frame], runtime_dir: str) -> int | None:
    for i, frame in enumerate(chain):
        if frame.file and frame.line > 0 and not is_system_path(frame.file) and not frame.file.startswith(runtime_dir):
            return i
    return None


def symbolize_samples(raw_path: Path, out_path: Path, *, executable: Path, aliases: dict[str, str] | None = None,
                      runtime_dir: Path | None = None, timeout: float = 120) -> Path:
    """Write the symbolized sample file for one process's raw log; returns its path.

    `aliases` maps a file name the debug information may carry (the pre-passed
    `<name>.host.cpp`, which some addr2line versions report instead of the `#line` name) to the
    user's source."""
    raw = read_raw_samples(raw_path)
    aliases = {str(k): str(v) for k, v in (aliases or {}).items()}
    runtime = str(runtime_dir or Path(__file__).resolve().parent / "host_runtime")
    exe = Path(executable).resolve()
    main_object = next((o for o in raw["objects"] if Path(o["path"]).resolve() == exe), None)
    offsets: dict[tuple[int, bool], int] = {}
    for _, pc, _, via_call in raw["pcs"]:
        obj = _object_of(raw["objects"], pc)
        if obj is main_object and obj is not None:
            # A return address points after its call: the call's own line is one byte before.
            offsets[(pc, via_call)] = pc - obj["base"] - (1 if via_call else 0)
    tool, chains = symbolize(exe, list(offsets.values()), timeout=timeout) if offsets else ("", {})
    merged: dict[tuple, dict] = {}
    for kernel_index, pc, count, via_call in raw["pcs"]:
        mangled, demangled = raw["kernels"].get(kernel_index, ("", "(unnamed kernel)"))
        obj = _object_of(raw["objects"], pc)
        row = {"kernel": demangled or mangled, "mangled": mangled, "object": obj["path"] if obj else "?",
               "offset": pc - obj["base"] if obj else pc, "function": "", "file": "", "line": 0, "context": [],
               "system": True, "samples": count, "library_call": via_call}
        if (pc, via_call) in offsets:
            chain = [Frame(f.function, aliases.get(f.file, f.file), f.line) for f in chains.get(offsets[(pc, via_call)], [])]
            user = _user_frame_index(chain, runtime)
            if user is not None:
                frame = chain[user]
                row.update(function=frame.function, file=frame.file, line=frame.line, system=False,
                           context=[[f.file, f.line] for f in chain[user + 1:]
                                    if f.file and f.line and _user_frame_index([f], runtime) is not None])
            elif chain:
                row.update(function=chain[0].function, file=chain[0].file, line=chain[0].line)
        elif obj is not None:
            row.update(file=obj["path"])
        key = (row["kernel"], row["object"], row["file"], row["line"], row["function"], via_call,
               tuple(map(tuple, row["context"])))
        if key in merged:
            merged[key]["samples"] += count
        else:
            merged[key] = row
    meta = raw["meta"]
    rows = sorted(merged.values(), key=lambda r: -r["samples"])
    document = {
        "format": FORMAT, "version": VERSION, "pid": meta.get("pid"), "hz": meta.get("hz"), "clock": meta.get("clock"),
        "samples": meta.get("samples", sum(r["samples"] for r in rows)), "dropped": meta.get("dropped", 0),
        "symbolizer": tool, "executable": str(exe), "rows": rows,
    }
    write_atomic(Path(out_path), json.dumps(document, indent=1) + "\n")
    return Path(out_path)

