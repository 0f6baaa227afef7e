"""The folders an MCP client may name: every path a tool is handed is resolved (symbolic links
followed, `..` collapsed) and must lie under one of the server's `--root` folders, else the call is
refused with one line naming the roots. Relative paths are taken from the first root.

Run directories are also found under the runs root (a bare run name, as `rocm-perf review NAME`
takes it), which may lie outside the roots: it is rocm-perf's own output, chosen when the server
was started, not by the client.
"""

from __future__ import annotations

from pathlib import Path

from rocm_perf.errors import RocmPerfError


class Roots:
    """The allowed folders, resolved once at start."""

    def __init__(self, folders: list[Path], runs_root: Path):
        resolved = []
        for folder in folders or [Path.cwd()]:
            path = Path(folder).expanduser().resolve()
            if not path.is_dir():
                raise RocmPerfError(f"--root {folder}: no such folder")
            resolved.append(path)
        self.folders = list(dict.fromkeys(resolved))
        self.runs_root = (runs_root if Path(runs_root).is_absolute() else self.folders[0] / runs_root).resolve()

    def describe(self) -> str:
        return ", ".join(str(f) for f in self.folders)

    def resolve(self, value: str, *, what: str = "path") -> Path:
        """`value` resolved against the first root; RocmPerfError unless it lies under a root."""
        if not isinstance(value, str) or not value.strip():
            raise RocmPerfError(f"{what}: expected a path, got {value!r}")
        if "\0" in value:
            raise RocmPerfError(f"{what}: a path cannot hold a NUL character")
        path = Path(value.strip()).expanduser()
        full = (path if path.is_absolute() else self.folders[0] / path).resolve()
        if not any(full == f or full.is_relative_to(f) for f in self.folders):
            raise RocmPerfError(f"{what} {value}: outside the allowed roots ({self.describe()}); "
                                "the server's --root names the folders a client may use")
        return full

    def existing(self, value: str, *, what: str = "path", kind: str | None = None) -> Path:
        """An existing file (`kind="file"`), folder (`"dir"`) or either under a root."""
        path = self.resolve(value, what=what)
        if not path.exists():
            raise RocmPerfError(f"{what} {value}: no such file or folder")
        if kind == "file" and not path.is_file():
            raise RocmPerfError(f"{what} {value}: a folder, expected a file")
        if kind == "dir" and not path.is_dir():
            raise RocmPerfError(f"{what} {value}: a file, expected a folder")
        return path

    def run(self, value: str, *, what: str = "run") -> Path:
        """A run directory: a bare name (or `latest`) under the runs root, or a path under a root
        or the runs root."""
        if not isinstance(value, str) or not value.strip():
            raise RocmPerfError(f"{what}: expected a run name or directory, got {value!r}")
        value = value.strip()
        if "/" not in value and value not in (".", ".."):
            from rocm_perf.optimize.command import find_run

            return find_run(self.runs_root, value).resolve()
        path = Path(value).expanduser()
        full = (path if path.is_absolute() else self.folders[0] / path).resolve()
        if not (full.is_relative_to(self.runs_root) or any(full.is_relative_to(f) for f in self.folders)):
            raise RocmPerfError(f"{what} {value}: outside the allowed roots ({self.describe()}) and the runs root "
                                f"({self.runs_root})")
        from rocm_perf.optimize.command import find_run

        return find_run(self.runs_root, str(full)).resolve()
