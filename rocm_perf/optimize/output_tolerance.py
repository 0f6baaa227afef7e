"""Outputs that must match within a tolerance (`--tolerance rtol=R,atol=A`), not bit for bit.

A rewrite that reassociates a float sum, evaluates a polynomial by Horner's rule or fuses a
multiply-add changes a result's last bits: digests of the device-to-host copies then differ for a
correct candidate. Under a tolerance each timed round's outputs are compared with the baseline's
reference round element by element instead:

- the device-to-host copies' bytes, where the backend keeps them (the host backend: the first
  256 MiB of each process's copies, rocm_perf_host/kept_copies.h), as their element type where the
  copy's destination type said it, else as `--tolerance-type` (float32). Floating-point elements
  match when |candidate - baseline| <= atol + rtol * |baseline| (NaN matches NaN, an infinity
  itself); integer elements must be equal. Bytes past the limit are not compared, and the record
  says so (a cut copy whose digest still equals the baseline's is bit-identical all the same);
- the standard output without its timing lines: its text must be the same, and each number in it
  within the tolerance (numbers written as integers must be equal);
- the exit status, as always.

The rocm backend keeps no copy contents (rocprofv3 records none): there the exit status and the
standard output are compared, numbers within the tolerance, and the record says the copies were not.

Each round's record (`outputs["tolerance"]`) carries the worst relative and absolute error of its
copies and the first element outside the tolerance, if any; the verdict reports the worst over a
candidate's timed rounds.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.tolerance import ELEMENT_TYPES, FLOAT_TYPES, Tolerance

# The round whose outputs are the reference (interleaved.run_round's key of the baseline's reference run).
REFERENCE_KEY = "0-reference-0-B"
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)(?:inity)?", re.I)


def _values(data: bytes, element: str) -> np.ndarray:
    dtype = ELEMENT_TYPES[element]
    usable = len(data) - len(data) % np.dtype(dtype).itemsize
    raw = np.frombuffer(data[:usable], dtype=dtype)
    if element == "bfloat16":  # the upper half of a float32
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return raw.astype(np.float64) if element in FLOAT_TYPES else raw


def _fmt(v) -> str:
    return f"{v:.9g}" if isinstance(v, float) else str(v)


def compare_copy(index: int, cand: bytes, ref: bytes, element: str, tol: Tolerance) -> tuple[str, float, float]:
    """(first element outside the tolerance in words or '', worst relative error, worst absolute
    error) of one copy's bytes against the baseline's; `index` is 1-based, for the words."""
    if len(cand) != len(ref):
        return f"copy {index}: {len(cand)} bytes, the baseline's {len(ref)}", math.inf, math.inf
    a, b = _values(cand, element), _values(ref, element)
    if element not in FLOAT_TYPES:
        bad = np.flatnonzero(a != b)
        if bad.size:
            k = int(bad[0])
            return f"copy {index} ({element}), element {k}: {a[k]} != {b[k]}", math.inf, math.inf
        return "", 0.0, 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        both_nan = np.isnan(a) & np.isnan(b)
        same_inf = np.isinf(a) & (a == b)
        ok = both_nan | same_inf | (diff <= tol.atol + tol.rtol * np.abs(b))
        finite = np.isfinite(diff)
        worst_abs = float(diff[finite].max()) if finite.any() else 0.0
        scaled = finite & (b != 0)
        worst_rel = float((diff[scaled] / np.abs(b[scaled])).max()) if scaled.any() else 0.0
    bad = np.flatnonzero(~ok)
    if bad.size:
        k = int(bad[0])
        return f"copy {index} ({element}), element {k}: {_fmt(float(a[k]))} != {_fmt(float(b[k]))}", worst_rel, worst_abs
    return "", worst_rel, worst_abs


def compare_stdout(cand: str, ref: str, tol: Tolerance) -> str:
    """'' when the texts match with every number within the tolerance, else the first difference."""
    a_lines, b_lines = cand.splitlines(), ref.splitlines()
    if len(a_lines) != len(b_lines):
        return f"standard output has {len(a_lines)} lines, the baseline's {len(b_lines)}"
    for n, (x, y) in enumerate(zip(a_lines, b_lines), start=1):
        if x == y:
            continue
        xs, ys = _NUMBER.split(x), _NUMBER.split(y)
        xn, yn = _NUMBER.findall(x), _NUMBER.findall(y)
        same = xs == ys and len(xn) == len(yn) and all(_numbers_match(p, q, tol) for p, q in zip(xn, yn))
        if not same:
            return f"standard output line {n}: {x.strip()!r} vs {y.strip()!r} in the baseline"
    return ""


def _numbers_match(p: str, q: str, tol: Tolerance) -> bool:
    if p == q:
        return True
    if re.fullmatch(r"[-+]?\d+", p) and re.fullmatch(r"[-+]?\d+", q):
        return False  # integers are counts and indices: equal or not
    return tol.close(float(p), float(q))


def kept_stdout(stdout: str, timing_lines: str) -> str:
    """Standard output without its timing lines (what is compared), as output_fingerprint keeps it."""
    timing = re.compile(timing_lines)
    return "\n".join(line.rstrip() for line in stdout.splitlines() if not timing.search(line))


class KeptOutputs:
    """The reference round's outputs kept in `run_dir/baseline/outputs/`, and every later round's
    compared with them (measure.ProfiledRounds calls it once per timed round)."""

    def __init__(self, run_dir: Path, tolerance: Tolerance, reference_key: str = REFERENCE_KEY):
        """`reference_key`: the round whose outputs are kept as the reference (the whole-program
        check's own reference round, stages/whole_program.py, keeps its under its folder)."""
        self.dir = Path(run_dir) / "baseline" / "outputs"
        self.tolerance = tolerance
        self.reference_key = reference_key
        self._reference: dict | None = None

    def __call__(self, key: str, copies: list | None, stdout: str, digests: list[str]) -> dict:
        """The tolerance record of the round `key`: its copies (backends' KeptCopy list, None where the
        backend keeps none), its kept standard output and its copies' digests."""
        if key == self.reference_key:
            return self._store(copies, stdout, digests)
        ref = self._load()
        record: dict = {"criterion": self.tolerance.spec, "worst_rel": 0.0, "worst_abs": 0.0, "first": "", "notes": []}
        first = compare_stdout(stdout, ref["stdout"], self.tolerance)
        if copies is None:
            record["notes"].append("device-to-host copies not compared: this backend keeps no copy contents "
                                   "(exit status and standard output were)")
        elif len(copies) != len(ref["copies"]):
            first = first or f"{len(copies)} device-to-host copies, the baseline made {len(ref['copies'])}"
        else:
            record["copies"] = len(copies)
            for i, (c, r) in enumerate(zip(copies, ref["copies"]), start=1):
                element = r["element"] or c.element or self.tolerance.element
                data = ref["data"][r["start"]: r["start"] + r["kept"]]
                kept = min(len(c.data), len(data))
                if c.bytes != r["bytes"]:
                    first = first or f"copy {i}: {c.bytes} bytes, the baseline's {r['bytes']}"
                    continue
                why, rel, abs_ = compare_copy(i, c.data[:kept], data[:kept], element, self.tolerance)
                record["worst_rel"] = max(record["worst_rel"], rel)
                record["worst_abs"] = max(record["worst_abs"], abs_)
                first = first or why
                if kept < c.bytes and not (i - 1 < len(digests) == len(ref["digests"]) and digests[i - 1] == ref["digests"][i - 1]):
                    record["notes"].append(f"copy {i}: its last {c.bytes - kept} bytes (past the bytes kept) were not compared")
        record["first"] = first
        record["within"] = not first
        return record

    def _store(self, copies: list | None, stdout: str, digests: list[str]) -> dict:
        self.dir.mkdir(parents=True, exist_ok=True)
        index, start = [], 0
        with open(self.dir / "copies.bin", "wb") as f:
            for c in copies or []:
                f.write(c.data)
                index.append({"bytes": c.bytes, "kept": len(c.data), "start": start, "element": c.element})
                start += len(c.data)
        meta = {"copies": index, "stdout": stdout, "digests": digests, "kept_by_backend": copies is not None}
        (self.dir / "reference.json").write_text(json.dumps(meta))
        self._reference = None
        cut = sum(c.cut for c in copies or [])
        return {"criterion": self.tolerance.spec, "reference": True, "copies": len(copies or []), "kept_bytes": start,
                "cut_bytes": cut, "within": True, "first": "", "worst_rel": 0.0, "worst_abs": 0.0, "notes": []}

    def _load(self) -> dict:
        if self._reference is None:
            try:
                meta = json.loads((self.dir / "reference.json").read_text())
                meta["data"] = (self.dir / "copies.bin").read_bytes()
            except (OSError, ValueError) as e:
                raise RocmPerfError(f"{self.dir}: the baseline's reference outputs are missing or damaged ({e}); "
                                    "start a new run") from e
            self._reference = meta
        return self._reference


def tolerance_differ(outputs: dict) -> str:
    """'' when a round's outputs are within the tolerance, else what differs (one line)."""
    record = outputs.get("tolerance")
    if not record:
        return "outputs not compared within the tolerance (the round kept none)"
    if not record.get("within"):
        return f"outputs differ: {record.get('first')} (beyond {record.get('criterion')})"
    return ""


def worst_errors(records: list[dict]) -> dict:
    """The worst relative and absolute errors over a candidate's rounds' tolerance records, and their notes."""
    out = {"worst_rel": 0.0, "worst_abs": 0.0, "notes": []}
    for r in records:
        out["worst_rel"] = max(out["worst_rel"], float(r.get("worst_rel") or 0.0))
        out["worst_abs"] = max(out["worst_abs"], float(r.get("worst_abs") or 0.0))
        for note in r.get("notes") or []:
            if note not in out["notes"]:
                out["notes"].append(note)
    return out
