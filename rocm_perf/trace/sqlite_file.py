"""Opening profile databases read-only, and turning SQLite failures into one-line user errors."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.sqlite_db import connect_readonly
from rocm_perf.trace.foreign import sqlite_error, sqlite_int64_rows

SQLITE_MAGIC = b"SQLite format 3\x00"


@contextmanager
def open_readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection; any SQLite failure inside the block becomes a RocmPerfError naming the file."""
    try:
        con = connect_readonly(path)
    except sqlite3.Error as e:
        raise RocmPerfError(f"{path}: cannot open as SQLite ({e})") from e
    try:
        yield con
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        # "database disk image is malformed", "file is not a database", text not UTF-8, missing columns, ...
        raise sqlite_error(path, e) from e
    finally:
        con.close()


def table_names(con: sqlite3.Connection) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def column_names(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def int_columns(con: sqlite3.Connection, sql: str, width: int, params: tuple = (), chunk: int = 65536) -> list[np.ndarray]:
    """Run a query whose every column is an integer (NULLs already COALESCEd) into `width` int64 column arrays.

    Rows are fetched in chunks and flattened with fromiter (several times faster than np.array(rows));
    each chunk is split into its columns at once, and each column is joined and its pieces dropped
    before the next, so peak memory stays near the size of the result itself.
    """
    cursor = con.execute(sql, params)
    pieces: list[list[np.ndarray]] = [[] for _ in range(width)]
    seen = 0
    while rows := cursor.fetchmany(chunk):
        try:
            flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=len(rows) * width)
        except (ValueError, TypeError, OverflowError):  # text, NULL, a blob or a number past 64 bits
            sqlite_int64_rows(con, rows, cursor.description, "an integer column", first_row=seen + 1)
            raise
        seen += len(rows)
        block = flat.reshape(len(rows), width)
        for c in range(width):
            pieces[c].append(block[:, c].copy())
        del rows, flat, block
    columns = []
    for c in range(width):
        parts = pieces[c]
        columns.append(parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, np.int64))
        pieces[c] = []
    return columns


def constant_columns(con: sqlite3.Connection, table: str, columns: list[str],
                     count_missing: str | None = None) -> tuple[dict[str, int | None], int]:
    """The columns of `table` that hold one value in every row (None: NULL in every row), with that
    value; and how many rows have `count_missing` NULL or negative (0 when not asked).

    One aggregate scan in SQLite's C code: a constant column then costs nothing to "read" (a
    million values through Python cost a fifth of a second). Only integer values count as constant.
    """
    parts = [f'MIN("{c}"), MAX("{c}"), COUNT("{c}"), typeof(MIN("{c}"))' for c in columns]
    if count_missing:
        parts.append(f'SUM("{count_missing}" IS NULL OR "{count_missing}" < 0)')
    if not parts:
        return {}, 0
    row = con.execute(f'SELECT COUNT(*), {", ".join(parts)} FROM "{table}"').fetchone()
    total, found = row[0], {}
    for i, c in enumerate(columns):
        low, high, count, kind = row[1 + 4 * i: 5 + 4 * i]
        if count == 0:
            found[c] = None
        elif count == total and low == high and kind == "integer":
            found[c] = int(low)
    return found, int(row[-1] or 0) if count_missing else 0


def rowid_range(con: sqlite3.Connection, table: str) -> tuple[int, int] | None:
    """The smallest and largest rowid of a table (free: the primary key's ends), None when empty."""
    low, high = con.execute(f'SELECT MIN(rowid), MAX(rowid) FROM "{table}"').fetchone()
    return None if low is None else (int(low), int(high))


UNIT_SEPARATOR = "\x1f"  # between the texts of one group_concat: not in any pointer or name a profiler writes


def concatenated_chunks(con: sqlite3.Connection, table: str, select: list[str], where: str = "",
                        params: tuple = (), chunk: int = 1 << 18, select_params: tuple = ()) -> Iterator[tuple]:
    """`SELECT group_concat(e1), group_concat(e2, US), ...` over consecutive rowid ranges of `table`.

    For reading millions of short texts: SQLite joins each range's values in C, and Python gets one
    string per column and range instead of a tuple per row (`select` holds the whole expressions,
    e.g. `group_concat(event_id)`; `select_params` and `params` fill its and `where`'s `?`).
    Yields one tuple of texts (None where no row matched) per range.
    """
    bounds = rowid_range(con, table)
    if bounds is None:
        return
    condition = f" AND ({where})" if where else ""
    sql = f'SELECT {", ".join(select)} FROM "{table}" WHERE rowid BETWEEN ? AND ?{condition}'
    for low in range(bounds[0], bounds[1] + 1, chunk):
        yield con.execute(sql, (*select_params, low, low + chunk - 1, *params)).fetchone()
