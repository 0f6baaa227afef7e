"""What a sweep optimizes: targets from .cu files, directories of them, and TOML manifests.

A manifest lists sources with their run command, arguments, kernels, rules and per-target
options; paths in it are relative to the manifest's folder:

    [defaults]
    max_trials = 8

    [[target]]
    source = "saxpy.cu"
    args = ["--n", "1048576"]
    kernels = ["saxpy"]
    budget = "30m"

    [[target]]                      # a reproducer of `rocm-perf isolate`: its kernel, on the replay
    source = "repro/stencil_2d"
    replay_passes = 10

    [[target]]                      # a project: a tree with its own build (optimize --project)
    project = "apps/stencil"
    build = "cmake -S . -B build && cmake --build build"
    run = "./build/stencil --size 4096"
    sources = ["src/stencil.cu"]    # optional: default every .cu/.hip that defines a kernel
    with = ["../common"]            # optional: outside paths its build reads (optimize --with)
"""

from __future__ import annotations

import hashlib
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
try:
    import tomllib  # novermin: Python 3.11+; tomli below is the same parser for 3.10
except ModuleNotFoundError:
    import tomli as tomllib

from rocm_perf.errors import RocmPerfError
from rocm_perf.reproducer import is_reproducer, read_manifest

SOURCE_SUFFIXES = (".cu", ".hip")
MANIFEST_SUFFIX = ".toml"

# Manifest keys -> how to read them. Everything else in a target table is an error (typos would
# otherwise be silently ignored for a whole night).
_LIST_KEYS = ("kernels", "rules", "sources", "with")
_STR_KEYS = ("run", "budget", "min_gain", "confidence", "arch", "compile_check", "timing_lines", "rules_dir", "name", "source",
             "counters", "metric", "project", "build")
_INT_KEYS = ("max_trials", "rounds", "max_rounds", "aa_rounds", "settle_close_calls", "max_files", "warp_size", "replay_passes")
_FLOAT_KEYS = ("timeout",)
MANIFEST_KEYS = frozenset(_LIST_KEYS + _STR_KEYS + _INT_KEYS + _FLOAT_KEYS + ("args", "cflags", "factors", "allow_lower_occupancy",
                                                                              "reproducer"))


@dataclass
class SweepTarget:
    """One source (or project) to optimize, with the options it needs (already validated)."""

    name: str  # unique within the sweep; names its run folder
    source: Path  # absolute: the source, or a project's root (options["project"] is then true)
    options: dict[str, Any] = field(default_factory=dict)  # manifest options (see MANIFEST_KEYS)
    origin: str = ""  # the argument or manifest it came from

    def identity(self) -> str:
        """Same source with the same options is the same target, whatever it is named."""
        return f"{self.source}|{sorted(self.options.items())!r}"

    def spec(self) -> dict[str, Any]:
        """What the sweep ledger stores: enough to rebuild the target on resume."""
        return {"name": self.name, "source": str(self.source), "options": self.options, "origin": self.origin}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> "SweepTarget":
        return cls(spec["name"], Path(spec["source"]), dict(spec.get("options", {})), spec.get("origin", ""))


def source_hash(path: Path, sources: list[str] | None = None) -> str:
    """sha256 of the source's bytes, or for a project directory the digest of its sources (`sources`,
    default every kernel source) as its run records it: what the daemon compares to notice a change."""
    path = Path(path)
    if is_reproducer(path):  # its run's source is the reproducer's kernel file
        path = read_manifest(path).kernel_file
    elif path.is_dir():
        from rocm_perf.optimize.project import file_digests, kernel_sources, project_files, tree_digest

        files = project_files(path)
        return tree_digest(file_digests(path, list(sources) if sources else kernel_sources(path, files)))
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read the target source ({e.strerror or e})") from e


def _as_list(value: Any, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        return shlex.split(value) if key in ("args", "cflags") else [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    raise RocmPerfError(f"{where}: `{key}` must be a string or a list of strings")


def _target_options(table: dict[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(table) - MANIFEST_KEYS)
    if unknown:
        raise RocmPerfError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(MANIFEST_KEYS))})")
    options: dict[str, Any] = {}
    for key, value in table.items():
        if key in ("source", "name"):
            continue
        if key in ("args", "cflags") + _LIST_KEYS:
            options[key] = _as_list(value, key, where)
        elif key == "factors":
            items = value if isinstance(value, list) else str(value).split(",")
            try:
                options[key] = [int(v) for v in items]
            except (TypeError, ValueError) as e:
                raise RocmPerfError(f"{where}: `factors` must be integers like [2, 4, 8]") from e
        elif key in _INT_KEYS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise RocmPerfError(f"{where}: `{key}` must be an integer")
            if key == "warp_size" and value not in (32, 64):
                raise RocmPerfError(f"{where}: `warp_size` must be 32 or 64")
            options[key] = value
        elif key == "project":
            options["project"] = True  # the path itself is the target's source
        elif key in _FLOAT_KEYS:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise RocmPerfError(f"{where}: `{key}` must be a number of seconds")
            options[key] = float(value)
        elif key == "reproducer":
            options["reproducer"] = True  # set by the loader for a source that is a reproducer folder
        elif key == "allow_lower_occupancy":
            if not isinstance(value, bool):
                raise RocmPerfError(f"{where}: `{key}` must be true or false")
            options[key] = value
        elif key == "counters" and value not in ("auto", "off"):
            raise RocmPerfError(f"{where}: `counters` must be \"auto\" or \"off\"")
        elif key == "metric" and value not in ("critical-path", "median-path"):
            raise RocmPerfError(f"{where}: `metric` must be \"critical-path\" or \"median-path\"")
        else:
            options[key] = str(value)
    return options


def load_manifest(path: Path) -> list[SweepTarget]:
    """The targets of a TOML manifest; errors name the manifest and the offending entry."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read the manifest ({e.strerror or e})") from e
    except tomllib.TOMLDecodeError as e:
        raise RocmPerfError(f"{path}: not valid TOML ({e})") from e
    extra = sorted(set(doc) - {"defaults", "target", "executor"})  # [executor]: executor_settings.py reads it
    if extra:
        raise RocmPerfError(f"{path}: unknown table(s) {', '.join(extra)}: expected [defaults], [[target]] and [executor]")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise RocmPerfError(f"{path}: [defaults] must be a table")
    default_options = _target_options(defaults, f"{path} [defaults]")
    entries = doc.get("target", [])
    if not isinstance(entries, list) or not entries:
        raise RocmPerfError(f"{path}: no [[target]] entries")
    targets = []
    for i, entry in enumerate(entries, 1):
        where = f"{path} target {i}"
        if not isinstance(entry, dict) or ("source" in entry) == ("project" in entry):
            raise RocmPerfError(f"{where}: every [[target]] needs `source` (a .cu file) or `project` (a directory), not both")
        if "project" in entry:
            source = (path.parent / str(entry["project"])).resolve()
            if not source.is_dir():
                raise RocmPerfError(f"{where}: project {entry['project']} not found (looked for {source})")
            if not entry.get("build") or not entry.get("run"):
                raise RocmPerfError(f"{where}: a project target needs `build` and `run` commands")
        else:
            source = (path.parent / str(entry["source"])).resolve()
            if is_reproducer(source):
                entry = {**entry, "reproducer": True}
            elif not source.is_file():
                raise RocmPerfError(f"{where}: source {entry['source']} not found (looked for {source})")
            for key in ("build", "sources", "max_files", "with"):
                if key in entry:
                    raise RocmPerfError(f"{where}: `{key}` goes with `project`, not with `source`")
        options = {**default_options, **_target_options(entry, where)}
        if options.get("with"):  # relative to the manifest's folder, as every path in it
            options["with"] = [os.path.normpath(path.parent.absolute() / w) for w in options["with"]]
        name = str(entry.get("name") or (source.name if "project" in entry else source.stem))
        targets.append(SweepTarget(name, source, options, origin=str(path)))
    return targets


def discover_targets(paths: list[Path]) -> list[SweepTarget]:
    """Targets from command-line arguments, in argument order, each source once, names unique."""
    found: list[SweepTarget] = []
    for p in paths:
        if is_reproducer(p):
            found.append(_reproducer_target(p, str(p)))
        elif p.is_dir():
            sources = sorted(q for q in p.iterdir() if q.suffix in SOURCE_SUFFIXES and q.is_file())
            found += [SweepTarget(q.stem, q.resolve(), {}, origin=str(p)) for q in sources]
            found += [_reproducer_target(q, str(p)) for q in sorted(p.iterdir()) if q.is_dir() and is_reproducer(q)]
            manifests = sorted(q for q in p.iterdir() if q.suffix == MANIFEST_SUFFIX and q.is_file())
            for m in manifests:
                found += load_manifest(m)
        elif p.suffix == MANIFEST_SUFFIX:
            found += load_manifest(p)
        elif p.suffix in SOURCE_SUFFIXES and p.is_file():
            found.append(SweepTarget(p.stem, p.resolve(), {}, origin=str(p)))
        elif not p.exists():
            raise RocmPerfError(f"{p}: no such file or directory")
        else:
            raise RocmPerfError(f"{p}: not a .cu/.hip source, a reproducer, a directory of them, or a .toml manifest")
    return _unique(found)


def _reproducer_target(path: Path, origin: str) -> SweepTarget:
    """A reproducer folder (`rocm-perf isolate`) as a target: its kernel, measured on the replay."""
    return SweepTarget(path.name, path.resolve(), {"reproducer": True}, origin=origin)


def _unique(targets: list[SweepTarget]) -> list[SweepTarget]:
    """Drop a source listed twice with the same options; give clashing names a numeric suffix."""
    seen: set[str] = set()
    names: set[str] = set()
    out = []
    for t in targets:
        identity = t.identity()
        if identity in seen:
            continue
        seen.add(identity)
        name, k = t.name, 2
        while name in names:
            name, k = f"{t.name}-{k}", k + 1
        names.add(name)
        t.name = name
        out.append(t)
    return out
