"""The decoded instruction view of rocprofv3 PC sampling and thread trace (ATT): a folder with
`code.json`, `filenames.json` and (PC sampling) `snapshots.json`, as rocprof-compute-viewer
opens it (FORMATS.md "PC sampling ... decoded", "Thread trace (ATT) decoded output").

- `code.json`: `{"version", "header", "code"}`; `header` names the columns of each `code` row:
  `ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle, PC_Issued, PC_Stalled,
  Stall_Reasons` in format 3.0.0. Columns are found by name, never by position; only an ATT file
  without a `header` is read in the documented ATT order (ISA .. Idle).
- `filenames.json`: `pc_sampling` / `thread_trace` flags, `gfxip`, ...
- `snapshots.json`: a tree of the original source paths whose leaves name the copies the
  profiler saved beside `code.json` (`source_N_name`).

A row whose ISA is `; <symbol>` starts a kernel (its `Source` holds the demangled name).
"""

from __future__ import annotations

import json
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.foreign import integer
from rocm_perf.trace.instruction_profile import (
    STALL_REASONS,
    InstructionProfile,
    parse_count,
    profile_from_rows,
    split_source,
)

KNOWN_VERSIONS = ("3.0.0",)
# The documented ATT row when a file carries no header (FORMATS.md).
ATT_POSITIONAL = ("ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency", "Stall", "Idle")
REQUIRED = ("ISA", "Source")


def _load_json(path: Path, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise RocmPerfError(f"{path}: missing; a decoded profile folder holds code.json and filenames.json "
                            f"({what})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RocmPerfError(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    except json.JSONDecodeError as e:
        raise RocmPerfError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None


def flatten_snapshots(tree, prefix: str = "") -> dict[str, str]:
    """snapshots.json's tree -> {original path: saved file name}. The root key is `/`; path parts
    are kept as written (`..` included), so they equal the `Source` column's spelling."""
    out: dict[str, str] = {}
    if not isinstance(tree, dict):
        return out
    for key, value in tree.items():
        if prefix == "" and key == "/":
            path = "/"
        elif prefix.endswith("/"):
            path = prefix + key
        else:
            path = f"{prefix}/{key}" if prefix else key
        if isinstance(value, dict):
            out.update(flatten_snapshots(value, path))
        elif isinstance(value, str):
            out[path] = value
    return out


def _kernel_marker(isa: str, source: str) -> str | None:
    """The kernel a `; <symbol>` row starts, or None for any other row."""
    text = isa.strip()
    if not text.startswith(";"):
        return None
    symbol = text[1:].strip()
    if not symbol or " " in symbol:
        return None  # an ordinary comment
    if source and not split_source(source)[0]:
        return source  # the demangled name the decoder put in `Source`
    return symbol


def read_viewer_code(path: Path, *, kernel_hint: str | None = None) -> InstructionProfile:
    """An InstructionProfile from a decoded folder (or its code.json).

    Raises RocmPerfError naming the file for an empty `code` list, a header without `Source` (or
    `ISA`), counts that are not numbers, rows of the wrong length, or a missing filenames.json.
    """
    path = Path(path)
    code_path = path / "code.json" if path.is_dir() else path
    folder = code_path.parent
    data = _load_json(code_path, "code.json is the instruction table")
    if not isinstance(data, dict) or "code" not in data:
        raise RocmPerfError(f"{code_path}: no `code` list; not a decoded PC-sampling or thread-trace code.json")
    filenames = _load_json(folder / "filenames.json", "filenames.json says which profiler wrote it")
    if not isinstance(filenames, dict):
        raise RocmPerfError(f"{folder / 'filenames.json'}: expected a JSON object")
    rows = data["code"]
    if not isinstance(rows, list):
        raise RocmPerfError(f"{code_path}: `code` is not a list")
    if not rows:
        raise RocmPerfError(f"{code_path}: the `code` list is empty (no instructions were decoded)")

    notes: list[str] = []
    version = str(data.get("version")) if data.get("version") is not None else None
    if version not in KNOWN_VERSIONS:
        notes.append(f"format version {version or '(none)'} is not one this reader was written against "
                     f"({', '.join(KNOWN_VERSIONS)}); columns were found by name")
    header = data.get("header")
    if header is None:
        if isinstance(rows[0], list) and len(rows[0]) == len(ATT_POSITIONAL):
            header = list(ATT_POSITIONAL)
            notes.append("code.json has no header: columns taken in the documented thread-trace order")
        else:
            raise RocmPerfError(f"{code_path}: no `header` naming the columns of `code`")
    if not isinstance(header, list) or not all(isinstance(h, str) for h in header):
        raise RocmPerfError(f"{code_path}: `header` is not a list of column names")
    col = {name: i for i, name in enumerate(header)}
    for name in REQUIRED:
        if name not in col:
            raise RocmPerfError(f"{code_path}: the header has no `{name}` column (columns: {', '.join(header)})")

    evidence = _evidence(filenames, col, rows, code_path)
    has_pc = "PC_Issued" in col and "PC_Stalled" in col
    reasons = STALL_REASONS
    if "Stall_Reasons" in col:
        lengths = {len(r[col["Stall_Reasons"]]) for r in rows
                   if isinstance(r, list) and len(r) > col["Stall_Reasons"] and isinstance(r[col["Stall_Reasons"]], list)}
        longest = max(lengths, default=len(STALL_REASONS))
        if longest > len(STALL_REASONS):
            extra = tuple(f"reason_{k}" for k in range(len(STALL_REASONS), longest))
            reasons = STALL_REASONS + extra
            notes.append(f"Stall_Reasons lists {longest} reasons, {len(STALL_REASONS)} are known: "
                         f"the others are shown as {', '.join(extra)}")

    snapshots = flatten_snapshots(_optional_json(folder / "snapshots.json"))
    saved = {orig: str(folder / name) for orig, name in snapshots.items() if (folder / name).is_file()}

    out: list[dict] = []
    kernel = kernel_hint or "(unnamed kernel)"
    hits_only = evidence == "pc-sampling" and has_pc and not any(
        _safe_sum(r, col, ("PC_Issued", "PC_Stalled")) for r in rows if isinstance(r, list))
    if hits_only and "Hit" in col:
        notes.append("PC_Issued and PC_Stalled are all 0: samples taken from the `Hit` column (host-trap sampling)")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) < len(header):
            raise RocmPerfError(f"{code_path}: code row {i}: expected a list of {len(header)} values "
                                f"({', '.join(header)}), got {_short(row)}")
        isa = "" if row[col["ISA"]] is None else str(row[col["ISA"]])
        source = "" if row[col["Source"]] is None else str(row[col["Source"]])
        marker = _kernel_marker(isa, source)
        if marker is not None:
            kernel = marker
            continue

        def num(name: str) -> float:
            return parse_count(row[col[name]], f"{code_path}: code row {i}: `{name}`") if name in col else 0.0

        file, line = split_source(source)
        def whole(name: str) -> int:
            return integer(num(name), f"{code_path}: code row {i}: `{name}`") if name in col else -1

        record = {"kernel": kernel, "code_object": whole("Codeobj"), "vaddr": whole("Vaddr"), "isa": isa,
                  "file": file, "line": line,
                  "hits": num("Hit"), "idle": num("Idle")}
        if evidence == "pc-sampling":
            issued, stalled = num("PC_Issued"), num("PC_Stalled")
            record.update(weight=num("Hit") if hits_only else issued + stalled, issued=issued, stalled=stalled)
            if "Stall_Reasons" in col:
                record["stalls"] = _reason_counts(row[col["Stall_Reasons"]], code_path, i, len(reasons))
        else:
            latency, stall = num("Latency"), num("Stall")
            record.update(weight=latency, issued=max(latency - stall, 0.0), stalled=stall)
        out.append(record)
    if not out:
        raise RocmPerfError(f"{code_path}: the `code` list holds no instructions (only kernel labels)")
    return profile_from_rows(
        out, origin=str(code_path), evidence=evidence, stall_reasons=reasons, version=version, notes=notes,
        metadata={"filenames": filenames, "snapshots": saved, "format": "viewer-code"}, with_att_columns=True,
    )


def _optional_json(path: Path):
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RocmPerfError(f"{path}: cannot read ({e})") from None


def _safe_sum(row: list, col: dict[str, int], names: tuple[str, ...]) -> float:
    total = 0.0
    for name in names:
        value = row[col[name]] if len(row) > col[name] else 0
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += value
    return total


def _reason_counts(value, path: Path, row: int, width: int) -> list[float]:
    if value is None:
        return [0.0] * width
    if not isinstance(value, list):
        raise RocmPerfError(f"{path}: code row {row}: `Stall_Reasons` is {_short(value)}, not a list of counts")
    counts = [parse_count(v, f"{path}: code row {row}: `Stall_Reasons[{k}]`") for k, v in enumerate(value)]
    return counts + [0.0] * (width - len(counts))


def _evidence(filenames: dict, col: dict[str, int], rows: list, path: Path) -> str:
    """pc-sampling or att: what filenames.json says, else what the columns hold."""
    if filenames.get("pc_sampling") is True:
        return "pc-sampling"
    if filenames.get("thread_trace") is True:
        return "att"
    if "PC_Issued" in col and any(_safe_sum(r, col, ("PC_Issued", "PC_Stalled")) for r in rows if isinstance(r, list)):
        return "pc-sampling"
    if "Latency" in col:
        return "att"
    raise RocmPerfError(f"{path}: neither PC-sampling columns (PC_Issued, PC_Stalled) nor thread-trace columns "
                        f"(Latency) hold data, and filenames.json does not say which profiler wrote it")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
