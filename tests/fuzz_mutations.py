"""Mutations of real profile files, drawn by hypothesis: what a crash, a full disk, a hand edit or a
newer tool can do to a file a user hands rocm-perf.

Every function takes `draw` (hypothesis' `data.draw`) and changes a file (or a parsed document) in
place. The hostile values are the ones readers meet in practice: integers past 64 bits, negative
and zero counts, NaN and infinities, text where a number belongs, non-ASCII and invalid UTF-8.
Used by tests/test_fuzz_readers.py (the fast profile) and tests/bench/bench_fuzz.py (the deep one).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import sqlite3
from pathlib import Path
from typing import Any, Callable

from hypothesis import strategies as st

Draw = Callable[[st.SearchStrategy], Any]

HOSTILE_INTS = (0, -1, 1, 7, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 + 5, 10**30, -(10**30))
HOSTILE_FLOATS = (math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, 0.5, -0.0, 1e19)
HOSTILE_TEXT = ("", " ", "abc", "0x1f", "1e400", "-5", "-0", "٣", "ünïcødé", "\u202e", "a\nb", '"', ",", "NaN",
                "Infinity", "-inf", "null", "𝔘𝔫𝔦", "x" * 5000, "1.5", "9" * 30, "-" + "9" * 25, "Agent x",
                "Agent 99999999999999999999", "0x" + "f" * 20, "1,2,3", "\x00", "\ufeff1")
# Bytes that are not UTF-8 (a lone continuation byte, a truncated sequence, an overlong form).
BAD_UTF8 = (b"\xd2", b"\xff\xfe", b"\xc3", b"\xe2\x82", b"\xc0\xaf", b"ab\x80cd")


def hostile_text(draw: Draw) -> str:
    return draw(st.one_of(st.sampled_from(HOSTILE_TEXT), st.sampled_from(HOSTILE_INTS).map(str),
                          st.sampled_from(HOSTILE_FLOATS).map(repr), st.text(max_size=12)))


def hostile_json_value(draw: Draw) -> Any:
    return draw(st.one_of(
        st.sampled_from(HOSTILE_INTS), st.sampled_from(HOSTILE_FLOATS), st.sampled_from(HOSTILE_TEXT),
        st.sampled_from([None, True, False, [], {}, [1, 2], [None, "a", 3], {"a": 1}, [[1], [2]], [10**20, -1, 0]]),
        st.text(max_size=8),
    ))


# ---- bytes ----------------------------------------------------------------------------------------

def mutate_bytes(draw: Draw, data: bytes, *, page: int = 0) -> bytes:
    """One to three byte-level damages: flipped bytes, a truncation, an overwritten span or page,
    inserted garbage. `page` > 0: the file is paged (SQLite), so a whole page may be overwritten."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        if not data:
            break
        kind = draw(st.sampled_from(["flip", "truncate", "span", "insert", "page"] if page else
                                    ["flip", "truncate", "span", "insert"]))
        n = len(data)
        if kind == "flip":
            for _ in range(draw(st.integers(1, 8))):
                at = draw(st.integers(0, n - 1))
                data[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            cut = draw(st.integers(0, n - 1)) if not page or draw(st.booleans()) else \
                page * draw(st.integers(0, max(0, n // page - 1)))
            del data[cut:]
        elif kind == "span":
            at = draw(st.integers(0, n - 1))
            length = draw(st.integers(1, 64))
            fill = draw(st.sampled_from([b"\x00", b"\xff", b"A", b"\xd2"]))
            data[at:at + length] = fill * min(length, n - at)
        elif kind == "insert":
            at = draw(st.integers(0, n))
            data[at:at] = draw(st.sampled_from(BAD_UTF8 + (b"\x00", b"\n", b'"', b",", b"{", b"]")))
        else:  # a whole page overwritten: what a torn write or a bad sector leaves
            pages = max(1, n // page)
            index = draw(st.integers(0, pages - 1))
            fill = draw(st.sampled_from([b"\x00", b"\xff", b"\xd2"]))
            data[index * page:(index + 1) * page] = fill * len(data[index * page:(index + 1) * page])
    return bytes(data)


def damage_file(draw: Draw, path: Path, *, page: int = 0) -> None:
    path.write_bytes(mutate_bytes(draw, path.read_bytes(), page=page))


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=1, mtime=0)


# ---- SQLite ---------------------------------------------------------------------------------------

def _sql_value(draw: Draw) -> Any:
    """A value to store: hostile numbers and text, a NULL, a blob, or text that is not UTF-8."""
    kind = draw(st.sampled_from(["int", "float", "text", "null", "blob", "bad-utf8"]))
    if kind == "int":
        value = draw(st.sampled_from(HOSTILE_INTS))
        return value if -(2**63) <= value < 2**63 else str(value)  # SQLite stores wider ones as text
    if kind == "float":
        return draw(st.sampled_from(HOSTILE_FLOATS))
    if kind == "text":
        return hostile_text(draw)
    if kind == "null":
        return None
    if kind == "blob":
        return draw(st.sampled_from([b"", b"\x00\x01", b"\xff" * 9]))
    return ("bad-utf8", draw(st.sampled_from(BAD_UTF8)))


def _tables(con: sqlite3.Connection, kind: str = "table") -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%' "
                                      "ORDER BY name", (kind,))]


def mutate_sqlite(draw: Draw, path: Path, *, prefer: tuple[str, ...] = ()) -> list[str]:
    """One to four row-level damages (rows nulled, set to hostile values, duplicated, deleted;
    tables or views dropped), each a statement; returns what was done. A statement the schema's
    constraints refuse is skipped: the next damage is tried instead. `prefer`: table-name prefixes
    chosen more often (where the readers look)."""
    done: list[str] = []
    con = sqlite3.connect(str(path), isolation_level=None)
    try:
        for _ in range(draw(st.integers(1, 4))):
            tables = _tables(con)
            if not tables:
                break
            preferred = [t for t in tables if t.startswith(prefer)] if prefer else []
            table = draw(st.sampled_from(preferred if preferred and draw(st.booleans()) else tables))
            columns = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
            rowids = [r[0] for r in con.execute(f'SELECT rowid FROM "{table}" ORDER BY rowid LIMIT 500')]
            op = draw(st.sampled_from(["set", "set", "set", "null-column", "duplicate", "delete", "drop-table",
                                       "drop-view", "set-column"]))
            try:
                if op in ("set", "null-column", "set-column") and columns and (rowids or op != "set"):
                    column = draw(st.sampled_from(columns))
                    value = None if op == "null-column" else _sql_value(draw)
                    where, params = ("WHERE rowid = ?", (draw(st.sampled_from(rowids)),)) if op == "set" else ("", ())
                    if isinstance(value, tuple):  # invalid UTF-8 stored as TEXT
                        con.execute(f'UPDATE "{table}" SET "{column}" = CAST(? AS TEXT) {where}', (value[1], *params))
                    else:
                        con.execute(f'UPDATE "{table}" SET "{column}" = ? {where}', (value, *params))
                    done.append(f"{op} {table}.{column} = {value!r}")
                elif op == "duplicate" and rowids:
                    rowid = draw(st.sampled_from(rowids))
                    keep = [c for c in columns if c != "id"]
                    names = ", ".join(f'"{c}"' for c in keep)
                    con.execute(f'INSERT INTO "{table}" ({names}) SELECT {names} FROM "{table}" WHERE rowid = ?', (rowid,))
                    done.append(f"duplicate a row of {table}")
                elif op == "delete" and rowids:
                    chosen = draw(st.lists(st.sampled_from(rowids), min_size=1, max_size=max(1, len(rowids))))
                    con.execute(f'DELETE FROM "{table}" WHERE rowid IN ({",".join("?" * len(chosen))})', chosen)
                    done.append(f"delete {len(set(chosen))} rows of {table}")
                elif op == "drop-table":
                    con.execute(f'DROP TABLE "{table}"')
                    done.append(f"drop table {table}")
                elif op == "drop-view" and (views := _tables(con, "view")):
                    view = draw(st.sampled_from(views))
                    con.execute(f'DROP VIEW "{view}"')
                    done.append(f"drop view {view}")
            except sqlite3.Error:
                continue  # NOT NULL, UNIQUE, ...: the schema refused this damage
    finally:
        con.close()
    return done


# ---- CSV ------------------------------------------------------------------------------------------

def mutate_csv(draw: Draw, path: Path) -> list[str]:
    """One to four cell/row/column damages of a CSV file, written back as rocprofv3 quotes it."""
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    done: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        if not rows:
            break
        op = draw(st.sampled_from(["cell", "cell", "cell", "cell", "delete-row", "duplicate-row", "delete-column",
                                   "extra-field", "rename-header", "column-all", "swap-rows"]))
        body = range(1, len(rows))
        if op in ("cell", "column-all") and len(rows) > 1 and rows[0]:
            column = draw(st.integers(0, len(rows[0]) - 1))
            value = hostile_text(draw)
            targets = body if op == "column-all" else [draw(st.sampled_from(body))]
            for r in targets:
                if column < len(rows[r]):
                    rows[r][column] = value
            done.append(f"{op} {rows[0][column] if column < len(rows[0]) else column} = {value[:40]!r}")
        elif op == "delete-row" and len(rows) > 1:
            del rows[draw(st.sampled_from(body))]
            done.append("delete a row")
        elif op == "duplicate-row" and len(rows) > 1:
            r = draw(st.sampled_from(body))
            rows.insert(r, list(rows[r]))
            done.append("duplicate a row")
        elif op == "swap-rows" and len(rows) > 2:
            a, b = draw(st.sampled_from(body)), draw(st.sampled_from(body))
            rows[a], rows[b] = rows[b], rows[a]
            done.append("swap two rows")
        elif op == "delete-column" and rows[0]:
            column = draw(st.integers(0, len(rows[0]) - 1))
            done.append(f"delete column {rows[0][column]}")
            for r in rows:
                if column < len(r):
                    del r[column]
        elif op == "extra-field" and len(rows) > 1:
            rows[draw(st.sampled_from(body))].append(hostile_text(draw))
            done.append("a row with an extra field")
        elif op == "rename-header" and rows[0]:
            column = draw(st.integers(0, len(rows[0]) - 1))
            done.append(f"rename header {rows[0][column]}")
            rows[0][column] = hostile_text(draw)
    out = io.StringIO(newline="")
    csv.writer(out, quoting=csv.QUOTE_NONNUMERIC if draw(st.booleans()) else csv.QUOTE_MINIMAL,
               lineterminator="\n").writerows(rows)
    path.write_bytes(out.getvalue().encode("utf-8", errors="surrogateescape"))
    return done


# ---- JSON -----------------------------------------------------------------------------------------

def _paths(doc: Any, limit: int = 4000) -> list[tuple]:
    """Paths (tuples of keys and indices) to every value of a document, breadth first, at most `limit`."""
    out: list[tuple] = []
    queue: list[tuple[tuple, Any]] = [((), doc)]
    while queue and len(out) < limit:
        path, value = queue.pop(0)
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, child in items:
            out.append(path + (key,))
            if isinstance(child, (dict, list)):
                queue.append((path + (key,), child))
    return out


def _at(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def mutate_json_document(draw: Draw, doc: Any, *, focus: tuple = ()) -> list[str]:
    """One to four damages of a parsed JSON document: a value deleted, retyped or replaced by a
    hostile one, a list element duplicated. `focus`: a path (e.g. ("traceEvents",)) whose elements
    are picked more often: where the records of the format are."""
    done: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        base: tuple = ()
        if focus and draw(st.booleans()):
            try:
                records = _at(doc, focus)
            except (KeyError, IndexError, TypeError):
                records = None
            if isinstance(records, list) and records:
                base = focus + (draw(st.integers(0, len(records) - 1)),)
        paths = [p for p in _paths(_at(doc, base) if base else doc, limit=400)]
        if not paths:
            continue
        path = base + draw(st.sampled_from(paths))
        parent, key = _at(doc, path[:-1]), path[-1]
        op = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
        if op == "delete":
            del parent[key]
            done.append(f"delete {'/'.join(map(str, path))}")
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
            done.append(f"duplicate {'/'.join(map(str, path))}")
        else:
            value = hostile_json_value(draw)
            parent[key] = value
            done.append(f"set {'/'.join(map(str, path))} = {str(value)[:40]!r}")
    return done


def mutate_json_file(draw: Draw, path: Path, *, focus: tuple = (), compressed: bool = False) -> list[str]:
    """Parse, damage, write back (NaN and Infinity tokens allowed, as Python writes them)."""
    raw = path.read_bytes()
    try:
        doc = json.loads(gzip.decompress(raw) if compressed else raw)
    except (ValueError, OSError, EOFError):  # damaged by an earlier mutation of the case: damage it more
        path.write_bytes(mutate_bytes(draw, raw))
        return ["bytes damaged (not JSON any more)"]
    done = mutate_json_document(draw, doc, focus=focus)
    data = json.dumps(doc).encode()
    path.write_bytes(gzip_bytes(data) if compressed else data)
    return done
