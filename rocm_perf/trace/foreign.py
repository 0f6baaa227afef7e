"""Foreign data into numbers and text: the one place where what a profile file says becomes the
values of the model, and where a value that cannot become one is refused.

Every reader turns cells, JSON values and SQLite values into numbers through these functions, so
that a file cut short by a crash, edited by hand or written by a newer tool meets the same rules:

- an integer is a whole number within int64 (what the model's columns hold): an int, a float
  without a fraction (counters print `16384.000000`), or decimal text (`0x` hex where the caller
  allows it); a bool, a fraction, NaN, an infinity or text that is no number is refused;
- a float is finite unless the caller keeps NaN as "not measured";
- text is UTF-8: bytes that are not are refused with where they are, never replaced silently;
- a SQLite failure says whether the file is damaged (a malformed page, a truncation), holds text
  that is not UTF-8, or lacks what a profile of its kind has.

Each refusal is a RocmPerfError whose message starts with the `where` the caller gives (the file,
and the line, row or column in it): one line a user can act on.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rocm_perf.errors import RocmPerfError

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# A place in a file for a message: a string, or a function of the row's index (built only on failure).
Where = str | Callable[[int], str]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _place(where: Where, index: int) -> str:
    return where(index) if callable(where) else where


def integer(value: Any, where: str, *, low: int = INT64_MIN, high: int = INT64_MAX, hex_text: bool = False) -> int:
    """`value` as an int in [low, high]; RocmPerfError `<where> is <value>, not ...` otherwise."""
    if isinstance(value, bool) or value is None:
        raise RocmPerfError(f"{where} is {_shown(value)}, not an integer")
    if isinstance(value, (int, np.integer)):
        number = int(value)
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise RocmPerfError(f"{where} is {_shown(value)}, not a finite integer")
        if abs(value) >= 2.0**63:
            raise RocmPerfError(f"{where} is {_shown(value)}, beyond the 64-bit range")
        if value != int(value):
            raise RocmPerfError(f"{where} is {_shown(value)}, not a whole number")
        number = int(value)
    elif isinstance(value, (str, bytes)):
        number = _integer_text(value.decode("ascii", "replace") if isinstance(value, bytes) else value, where, hex_text)
    else:
        raise RocmPerfError(f"{where} is {_shown(value)}, not an integer")
    if not low <= number <= high:
        bounds = "the 64-bit range" if (low, high) == (INT64_MIN, INT64_MAX) else f"[{low}, {high}]"
        raise RocmPerfError(f"{where} is {_shown(value)}, beyond {bounds}")
    return number


def _integer_text(text: str, where: str, hex_text: bool) -> int:
    stripped = text.strip()
    try:
        if hex_text and stripped.lower().startswith(("0x", "-0x")):
            return int(stripped, 16)
        return int(stripped)
    except ValueError:
        pass
    try:
        number = float(stripped)  # counters print "16384.000000"
    except ValueError:
        raise RocmPerfError(f"{where} is {_shown(text)}, not an integer") from None
    return integer(number, where)


def finite(value: Any, where: str, *, nan_ok: bool = False) -> float:
    """`value` (a number or numeric text) as a finite float (NaN too when `nan_ok`)."""
    if isinstance(value, bool) or value is None:
        raise RocmPerfError(f"{where} is {_shown(value)}, not a number")
    if isinstance(value, (int, float, np.integer, np.floating)):
        try:
            number = float(value)
        except OverflowError:
            raise RocmPerfError(f"{where} is {_shown(value)}, beyond the range of a float") from None
    elif isinstance(value, (str, bytes)):
        try:
            number = float(value.strip())
        except ValueError:
            raise RocmPerfError(f"{where} is {_shown(value)}, not a number") from None
    else:
        raise RocmPerfError(f"{where} is {_shown(value)}, not a number")
    if math.isnan(number) and nan_ok:
        return number
    if not math.isfinite(number):
        raise RocmPerfError(f"{where} is {_shown(value)}, not a finite number")
    return number


def int64_array(values: Sequence[Any], where: Where, **kw) -> np.ndarray:
    """A sequence as an int64 column. The usual file converts at numpy's speed; on the first value
    numpy refuses or would take wrongly (a fraction, a float past 2**63, text), every value is
    checked by `integer` and the first bad one is named (`where(index)` for a function)."""
    try:
        column = np.asarray(values, dtype=np.int64) if not kw else None
    except (ValueError, TypeError, OverflowError):
        column = None
    if column is not None and column.ndim == 1 and _exact(values, column):
        return column
    out = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        out[i] = integer(value, _place(where, i), **kw)
    return out


def _exact(values: Sequence[Any], column: np.ndarray) -> bool:
    """Whether numpy's conversion kept every value (it truncates 1.5, takes '12' and True quietly)."""
    if isinstance(values, np.ndarray):
        return values.dtype.kind in "iu" and (values.dtype.kind == "i" or not len(values) or values.max() <= INT64_MAX)
    return all(type(v) is int for v in values)


def float_array(values: Sequence[Any], where: Where, *, nan_ok: bool = False) -> np.ndarray:
    """A sequence as a float64 column of finite values (NaN kept where `nan_ok`), the first bad
    value named."""
    try:
        column = np.asarray(values, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        column = None
    if column is not None and column.ndim == 1 and all(type(v) in (int, float) for v in values):
        bad = ~np.isfinite(column) & (~np.isnan(column) if nan_ok else True)
        if not bad.any():
            return column
    out = np.empty(len(values), dtype=np.float64)
    for i, value in enumerate(values):
        out[i] = finite(value, _place(where, i), nan_ok=nan_ok)
    return out


def whole_floats(column: np.ndarray, where: Where, *, missing: int | None = None) -> np.ndarray:
    """A float column that holds whole numbers (read as floats: CSV cells, NaN for empty) as int64;
    NaN becomes `missing` where one is given, else it is refused like an infinity or a value past
    2**63."""
    column = np.asarray(column, dtype=np.float64)
    nan = np.isnan(column)
    bad = (~np.isfinite(column) & ~(nan if missing is not None else False)) | (np.abs(np.nan_to_num(column)) >= 2.0**63)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        integer(float(column[i]), _place(where, i))  # raises, naming the value
    out = np.where(nan, 0.0, column).astype(np.int64)
    if missing is not None:
        out[nan] = missing
    return out


def optional_integer(value: Any, where: str, **kw) -> int | None:
    """`integer`, with None (SQL NULL, a JSON null, an absent key) kept as None."""
    return None if value is None else integer(value, where, **kw)


def text(value: Any, where: str) -> str | None:
    """A value a file gives as text (a name, a path, a message): str as is, bytes decoded as UTF-8
    (`utf8`), numbers as written; None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return utf8(bytes(value), where)
    return str(value)


def utf8(data: bytes, where: str) -> str:
    """Bytes as UTF-8 text; RocmPerfError naming the offset of the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RocmPerfError(f"{where}: not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r}; "
                            "a damaged or binary file?)") from None


# ---- SQLite ----------------------------------------------------------------------------------------

def sqlite_file(con: sqlite3.Connection) -> str:
    """The file a connection reads, for messages."""
    try:
        row = con.execute("PRAGMA database_list").fetchone()
    except sqlite3.Error:
        return "<database>"
    return row[2] if row and row[2] else "<database>"


def sqlite_error(path: Any, e: BaseException) -> RocmPerfError:
    """A SQLite failure while reading a profile as one line saying what it means."""
    text = str(e)
    if "Could not decode to UTF-8" in text or isinstance(e, UnicodeDecodeError):
        column = text.split("column '", 1)[1].split("'", 1)[0] if "column '" in text else "a column"
        return RocmPerfError(f"{path}: damaged database: text that is not UTF-8 in {column[:80]} "
                             "(a corrupted page?)")
    if isinstance(e, sqlite3.OperationalError) and ("no such column" in text or "no such table" in text):
        return RocmPerfError(f"{path}: database lacks what its profile format has ({text})")
    if isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.OperationalError) or "malformed" in text:
        return RocmPerfError(f"{path}: damaged or truncated database ({text})")
    return RocmPerfError(f"{path}: cannot read the database ({text})")


def sqlite_int64_rows(con: sqlite3.Connection, rows: list[tuple], description, what: str, *, first_row: int = 1) -> None:
    """Raise for the first value of fetched integer rows that is not an int64 (the slow path of a
    fast bulk read that failed), naming the file, the row and the column."""
    names = [d[0] for d in description or ()]
    path = sqlite_file(con)
    for n, row in enumerate(rows):
        for k, value in enumerate(row):
            if type(value) is not int:
                column = names[k] if k < len(names) else f"column {k + 1}"
                integer(value, f"{path}: {what}, row {first_row + n}, {column}")
    raise RocmPerfError(f"{path}: {what}: values that are not 64-bit integers")
