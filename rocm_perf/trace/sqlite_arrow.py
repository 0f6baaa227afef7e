"""Columns of a profile database straight into numpy, through ADBC's SQLite driver and Arrow buffers.

Python's sqlite3 makes a Python object of every value it returns: about 0.2 us each, so a
10M-dispatch profile's columns cost a minute. The ADBC SQLite driver (adbc-driver-sqlite, with
adbc-driver-manager and nanoarrow to read its Arrow result) fills Arrow buffers in C, which numpy
then views without a copy: four to five times faster on the same queries (tests/bench/bench_scale.py).

The driver infers each result column's type from the first batch of rows and fails on a later row
of another type (https://arrow.apache.org/adbc/current/python/recipe/sqlite.html); such a query,
a result that is not what was asked for, or a missing package make `ArrowReader` answer None,
and the caller reads the same query through sqlite3 instead: never a different answer, only a
slower one. Low-level API as documented for adbc_driver_manager (AdbcDatabase, AdbcConnection,
AdbcStatement.set_sql_query / execute_query) and adbc_driver_sqlite (`connect(uri)`,
StatementOptions.BATCH_ROWS = "adbc.sqlite.query.batch_rows").
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import numpy as np

BATCH_ROWS = 65536  # rows per Arrow batch: big batches amortize the per-batch cost (default 1024)
FIXED_WIDTH = 32  # texts up to this many bytes are coded by numpy as fixed-width bytes


def _modules():
    try:
        import adbc_driver_manager
        import adbc_driver_sqlite
        import nanoarrow
    except ImportError:
        return None
    return adbc_driver_manager, adbc_driver_sqlite, nanoarrow


class ArrowReader:
    """One read-only ADBC connection to a profile database; `None` answers mean "use sqlite3"."""

    def __init__(self, path: Path):
        self._modules = _modules()
        self._db = self._conn = None
        if self._modules is None:
            return
        manager, sqlite, _ = self._modules
        try:
            self._db = sqlite.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro")
            self._conn = manager.AdbcConnection(self._db)
        except (manager.Error, OSError):
            self.close()

    @property
    def available(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        for handle in (self._conn, self._db):
            if handle is not None:
                handle.close()
        self._conn = self._db = None

    def __enter__(self) -> "ArrowReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _batches(self, sql: str):
        """The query's record batches, as nanoarrow C array views (one child per result column)."""
        manager, _, nanoarrow = self._modules
        statement = manager.AdbcStatement(self._conn)
        try:
            statement.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
            statement.set_sql_query(sql)
            handle, _ = statement.execute_query()
            stream = nanoarrow.c_array_stream(handle)
            for batch in stream:
                yield batch.view()
            del stream, handle
        finally:
            statement.close()

    def _read(self, sql: str, ints: int, texts: int):
        if not self.available:
            return None
        manager = self._modules[0]
        pieces: list[list[np.ndarray]] = [[] for _ in range(ints + texts)]
        distinct: list[dict[str, int]] = [{} for _ in range(texts)]
        try:
            for batch in self._batches(sql):
                if batch.n_children != ints + texts:
                    return None
                for c in range(ints + texts):
                    child = batch.child(c)
                    values = _int64_values(child) if c < ints else _code_texts(child, distinct[c - ints])
                    if values is None:
                        return None
                    pieces[c].append(values)
        except (manager.Error, OSError, UnicodeDecodeError):
            return None
        columns = [np.concatenate(p) if p else np.zeros(0, dtype=np.int64 if c < ints else np.int32)
                   for c, p in enumerate(pieces)]
        return columns, [list(d) for d in distinct]

    def int_columns(self, sql: str, width: int) -> list[np.ndarray] | None:
        """The query's `width` columns as int64 arrays (every value must be a non-NULL integer), or None."""
        done = self._read(sql, width, 0)
        return None if done is None else done[0]

    def coded_columns(self, sql: str, ints: int, texts: int) -> tuple[list[np.ndarray], list[list[str]]] | None:
        """A query of `ints` integer columns, then `texts` text columns: the integer columns and, for
        each text column, each row's code (int32) into that column's distinct texts (the second
        list). Texts up to FIXED_WIDTH bytes are coded by numpy. None when the query cannot be read
        this way; the texts must never be NULL (COALESCE them)."""
        return self._read(sql, ints, texts)


def _no_nulls(view) -> bool:
    validity = view.buffer(0)
    if len(validity) == 0:
        return True
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    return bool(bits[view.offset: view.offset + view.length].all())


def _int64_values(view) -> np.ndarray | None:
    """A copy of an int64 child's values, or None for another type or any NULL."""
    if view.storage_type != "int64" or not _no_nulls(view):
        return None
    values = np.frombuffer(view.buffer(1), dtype=np.int64)
    return values[view.offset: view.offset + view.length].copy()


_HASH_MULTIPLIERS = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x27D4EB2F165667C5],
                             dtype=np.uint64)


def _code_texts(view, distinct: dict[str, int]) -> np.ndarray | None:
    """Codes into `distinct` (which grows) for every string of an Arrow string child, or None.

    Strings up to FIXED_WIDTH bytes are padded into 8-byte words and coded in numpy: a 64-bit mix
    of the words and the length, grouped by np.unique, each group checked byte for byte against its
    first member (a hash collision sends the batch to the slow road). Only the distinct strings, and
    the rare longer ones, become Python str."""
    if view.storage_type != "string" or not _no_nulls(view):
        return None
    n = view.length
    offsets = np.frombuffer(view.buffer(1), dtype=np.int32)[view.offset: view.offset + n + 1].astype(np.int64)
    data = np.frombuffer(view.buffer(2), dtype=np.uint8)
    lengths = np.diff(offsets)
    out = np.empty(n, dtype=np.int32)
    short = lengths <= FIXED_WIDTH
    rows = np.flatnonzero(short)
    if len(rows) and len(data):
        width = -(-max(int(lengths[rows].max()), 1) // 8) * 8
        column = np.arange(width)
        index = offsets[rows][:, None] + column[None, :]
        np.minimum(index, len(data) - 1, out=index)
        matrix = data[index]
        matrix *= column[None, :] < lengths[rows][:, None]
        words = matrix.view(np.uint64)
        with np.errstate(over="ignore"):
            mixed = lengths[rows].astype(np.uint64) * np.uint64(0xFF51AFD7ED558CCD)
            for w in range(words.shape[1]):
                mixed ^= words[:, w] * _HASH_MULTIPLIERS[w % len(_HASH_MULTIPLIERS)]
                mixed = (mixed << np.uint64(31)) | (mixed >> np.uint64(33))
        _, first, inverse = np.unique(mixed, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        same = (words == words[first][inverse]).all(axis=1) & (lengths[rows] == lengths[rows][first][inverse])
        if bool(same.all()):
            local = np.array([distinct.setdefault(bytes(data[offsets[r]: offsets[r + 1]]).decode("utf-8"), len(distinct))
                              for r in rows[first].tolist()], dtype=np.int32)
            out[rows] = local[inverse]
        else:
            short[:] = False
    elif len(rows):
        for r in rows.tolist():  # empty strings only
            out[r] = distinct.setdefault("", len(distinct))
    for row in np.flatnonzero(~short).tolist():
        text = bytes(data[offsets[row]: offsets[row + 1]]).decode("utf-8")
        out[row] = distinct.setdefault(text, len(distinct))
    return out
