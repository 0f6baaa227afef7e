"""Program counters to source lines through the debug information of a `-g` build.

Two tools, whichever is present (`rocm-perf doctor` says which): `llvm-symbolizer` (preferred:
JSON output with the whole inlining chain) and binutils' `addr2line -f -i` (installed wherever
g++ is, since binutils is a dependency of every g++ package). Both read addresses on stdin in one
batch. Addresses are file addresses of the object (the caller subtracts a PIE's load address).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from rocm_perf import process
from rocm_perf.errors import RocmPerfError


@dataclass(frozen=True)
class Frame:
    """One level of an inlining chain: the innermost first."""

    function: str
    file: str  # '' when the debug information has none
    line: int  # 0 when unknown


def versioned_programs(name: str) -> list[str]:
    """`name-NN` on PATH and /usr/lib/llvm-*/bin/name, newest version first."""
    found = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        found += glob.glob(os.path.join(directory, f"{name}-[0-9]*"))
    found += glob.glob(f"/usr/lib/llvm-*/bin/{name}")
    return sorted(found, key=lambda p: [int(x) for x in re.findall(r"\d+", p)] or [0], reverse=True)


def find_symbolizer() -> tuple[str, str] | None:
    """(kind, path) of the tool to use: $ROCM_PERF_SYMBOLIZER (a path to either tool) wins, then
    llvm-symbolizer (also versioned names), then addr2line; None when neither is installed."""
    forced = os.environ.get("ROCM_PERF_SYMBOLIZER")
    if forced:
        path = shutil.which(forced) or (forced if Path(forced).is_file() else None)
        if path is None:
            raise RocmPerfError(f"ROCM_PERF_SYMBOLIZER={forced}: no such program")
        return ("addr2line" if "addr2line" in Path(path).name else "llvm-symbolizer"), path
    llvm = shutil.which("llvm-symbolizer") or next(iter(versioned_programs("llvm-symbolizer")), None)
    if llvm:
        return "llvm-symbolizer", llvm
    addr2line = shutil.which("addr2line")
    if addr2line:
        return "addr2line", addr2line
    return None


def symbolize(executable: Path, addresses: list[int], *, timeout: float = 120) -> tuple[str, dict[int, list[Frame]]]:
    """The inlining chain of each address (innermost frame first) and the tool's name. Raises
    RocmPerfError when no tool is installed or the tool fails."""
    tool = find_symbolizer()
    if tool is None:
        raise RocmPerfError("cannot map samples to source lines: neither llvm-symbolizer nor addr2line is installed "
                            "(apt-get install -y binutils, or llvm)")
    kind, path = tool
    unique = sorted(set(addresses))
    if not unique:
        return kind, {}
    text = "".join(f"0x{a:x}\n" for a in unique)
    if kind == "llvm-symbolizer":
        done = process.run([path, f"--obj={executable}", "--inlining", "--output-style=JSON", "--demangle"],
                           timeout=timeout, input_text=text)
        if done.returncode == 0 and done.stdout.strip():
            return kind, _parse_llvm(done.stdout)
        addr2line = shutil.which("addr2line")  # an llvm-symbolizer without JSON output (LLVM < 13)
        if addr2line is None:
            raise RocmPerfError(f"{path} failed on {executable}: {process.last_lines(done.stderr, 3)}")
        kind, path = "addr2line", addr2line
    done = process.run([path, "-e", str(executable), "-f", "-i", "-a", "-C"], timeout=timeout, input_text=text)
    if done.returncode != 0:
        raise RocmPerfError(f"addr2line failed on {executable}: {process.last_lines(done.stderr, 3)}")
    return kind, _parse_addr2line(done.stdout)


def _parse_llvm(output: str) -> dict[int, list[Frame]]:
    frames: dict[int, list[Frame]] = {}
    for line in output.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
            address = int(entry["Address"], 16)
        except (ValueError, KeyError, TypeError):
            continue
        chain = []
        for s in entry.get("Symbol") or []:
            name = s.get("FunctionName") or "??"
            file = s.get("FileName") or ""
            chain.append(Frame(name, "" if file in ("??", "<invalid>") else file, int(s.get("Line") or 0)))
        frames[address] = chain
    return frames


_LOCATION = re.compile(r"^(?P<file>.*?):(?P<line>\d+|\?)(?: \(discriminator \d+\))?$")


def _parse_addr2line(output: str) -> dict[int, list[Frame]]:
    """`-a -f -i` output: an address line, then (function, file:line) pairs, innermost first."""
    frames: dict[int, list[Frame]] = {}
    lines = output.splitlines()
    i, current = 0, None
    while i < len(lines):
        line = lines[i].strip()
        if re.fullmatch(r"0x[0-9a-fA-F]+", line):
            current = int(line, 16)
            frames[current] = []
            i += 1
            continue
        if current is None or i + 1 >= len(lines):
            i += 1
            continue
        function, location = line, lines[i + 1].strip()
        m = _LOCATION.match(location)
        file = m["file"] if m and m["file"] != "??" else ""
        number = int(m["line"]) if m and m["line"].isdigit() else 0
        frames[current].append(Frame(function, file, number))
        i += 2
    return frames
