"""The HIP API calls of one rocpd uuid set: regions of a HIP category, their stream and event
pointer arguments, and (when asked for) every argument as text.

Sized for ten million calls: the regions are read as integer columns with the API categories
chosen in SQL; the pointer arguments, the ones that order work, come through
`concatenated_chunks` (one string per column and range of rows, parsed by numpy) and are parsed
once per distinct value; the full arguments become ApiArgs columns, never a dict per call.
"""

from __future__ import annotations

import itertools
import sqlite3
import warnings
from dataclasses import dataclass

import numpy as np

from rocm_perf.trace.model import UNKNOWN, ApiArgs
from rocm_perf.trace.sqlite_arrow import ArrowReader
from rocm_perf.trace.sqlite_file import UNIT_SEPARATOR, concatenated_chunks, constant_columns, int_columns

# Region categories that are HIP API calls (rocprofv3: HIP_RUNTIME_API, HIP_RUNTIME_API_EXT,
# HIP_COMPILER_API...). Markers and other regions are not API calls that order GPU work.
API_CATEGORY_PREFIX = "HIP"
DIGEST_ARG = "rocm_perf_digest"  # the host backend's digest of a device-to-host copy, an argument of its call
NULL_VALUE = "\x1e"  # stands for an SQL NULL argument value inside a group_concat


def parse_pointer(value: str | None) -> int:
    """A pointer argument as rocprofv3 prints it ('0x55d1c0a3e2b0', '0', 'nullptr') -> int; UNKNOWN if unparsable."""
    if value is None:
        return UNKNOWN
    if isinstance(value, int) and not isinstance(value, bool):  # a value column SQLite kept as an integer
        value = str(value)
    if not isinstance(value, str):
        return UNKNOWN
    text = value.strip().lower()
    if text in ("", "nullptr", "(nil)", "null"):
        return 0
    try:
        number = int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        return UNKNOWN
    # Keep pointer values inside int64 (kernel-space addresses would otherwise overflow); anything
    # beyond 64 bits either way is no pointer (a damaged or hand-edited file): unknown.
    if not -(1 << 63) <= number < (1 << 64):
        return UNKNOWN
    return number - (1 << 64) if number >= (1 << 63) else number


class BadRows(ValueError):
    """A column's concatenated text did not parse as the expected number of integers."""


def parse_ints(text: str | None, count: int | None = None, dtype=np.int64) -> np.ndarray:
    """Comma-separated integers (a group_concat) as an array; BadRows when they do not all parse."""
    if not text:
        values = np.zeros(0, dtype=dtype)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # numpy's "could not be read to its end"
            try:
                values = np.fromstring(text, dtype=dtype, sep=",")
            except (DeprecationWarning, ValueError) as e:
                raise BadRows(str(e)) from e
    if count is not None and len(values) != count:
        raise BadRows(f"{len(values)} values where {count} were expected")
    return values


def code_strings(texts: list, table: dict) -> np.ndarray:
    """Each text's index in `table` (which grows by the texts it has not seen), as int32 codes.

    The distinct texts first (dict.fromkeys, in C), then one C-level lookup per text: a third of
    the cost of a Python expression per text."""
    for text in dict.fromkeys(texts):
        if text not in table:
            table[text] = len(table)
    return np.fromiter(map(table.__getitem__, texts), dtype=np.int32, count=len(texts))


@dataclass
class SetApi:
    """One uuid set's API calls in file (region id) order; `name` holds texts' codes into names."""

    start: np.ndarray
    end: np.ndarray
    tid: np.ndarray  # rocpd_info_thread row ids (or OS tids), UNKNOWN when not read
    corr: np.ndarray
    name_id: np.ndarray  # rocpd_string ids
    event_id: np.ndarray
    stream: np.ndarray
    event: np.ndarray
    args: ApiArgs | None
    has_digests: bool = False  # whether some argument is an output digest (host backend)


def read_set_api(con: sqlite3.Connection, region: str, event: str, strings: str, arg: str | None,
                 *, threads: bool, all_args: bool, fast: ArrowReader | None = None) -> SetApi | None:
    """The API calls of one set (None when it has none); through Arrow (`fast`) where it can."""
    categories = [i for i, text in con.execute(f'SELECT id, string FROM "{strings}" WHERE string LIKE ?',
                                               (API_CATEGORY_PREFIX + "%",))
                  if (text or "").startswith(API_CATEGORY_PREFIX)]
    # Regions of unknown category (no event row, or a NULL category) count as API calls too.
    wanted = ", ".join(str(int(i)) for i in [-1, *categories])
    constant = constant_columns(con, region, ["tid"])[0] if threads else {}
    tid_sql = [] if (not threads or "tid" in constant) else ["COALESCE(R.tid, -1)"]
    sql = f"""SELECT R.start, R."end", R.name_id, COALESCE(R.event_id, -1), COALESCE(E.stack_id, -1) {''.join(', ' + t for t in tid_sql)}
              FROM "{region}" R LEFT JOIN "{event}" E ON E.id = R.event_id
              WHERE COALESCE(E.category_id, -1) IN ({wanted}) ORDER BY R.id"""
    cols = fast.int_columns(sql, 5 + len(tid_sql)) if fast is not None else None
    if cols is None:
        cols = int_columns(con, sql, 5 + len(tid_sql))
    n = len(cols[0])
    if not n:
        return None
    if tid_sql:
        tid = cols[5]
    else:
        value = constant.get("tid")
        tid = np.full(n, UNKNOWN if value is None else value, dtype=np.int64)
    event_ids = cols[3]
    stream, event_ptr, has_digests = pointer_arguments(con, arg, event_ids, DIGEST_ARG, fast) if arg else (None, None, False)
    return SetApi(
        start=cols[0], end=cols[1], tid=tid, corr=cols[4], name_id=cols[2], event_id=event_ids,
        stream=stream if stream is not None else np.full(n, UNKNOWN, np.int64),
        event=event_ptr if event_ptr is not None else np.full(n, UNKNOWN, np.int64),
        args=all_arguments(con, arg, event_ids, fast) if (arg and all_args) else None,
        has_digests=has_digests,
    )


def _row_of_event(event_ids: np.ndarray):
    """A function mapping event ids to rows of `event_ids` (-1 where absent), by one sort."""
    order = np.argsort(event_ids, kind="stable")
    ordered = event_ids[order]

    def rows(ids: np.ndarray) -> np.ndarray:
        if not len(ordered):
            return np.full(len(ids), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(ordered, ids), len(ordered) - 1)
        return np.where(ordered[pos] == ids, order[pos], -1)

    return rows


def pointer_arguments(con: sqlite3.Connection, arg: str, event_ids: np.ndarray,
                      also: str = "", fast: ArrowReader | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """The `stream` and `event` pointer arguments as columns aligned with `event_ids` (UNKNOWN where a
    call has none). A `hipStream_t*` argument is where a stream is created, not one that orders
    work: it does not fill the column. Where a call has two, the later one counts.
    The same scan tells whether any argument is named `also` (the third value)."""
    n = len(event_ids)
    stream = np.full(n, UNKNOWN, dtype=np.int64)
    event = np.full(n, UNKNOWN, dtype=np.int64)
    row_of = _row_of_event(event_ids)
    quoted = "'" + also.replace("'", "''") + "'"
    done = fast.coded_columns(
        f"""SELECT event_id, (name = 'event') + 2 * (name = {quoted}), COALESCE(value, '{NULL_VALUE}') FROM "{arg}"
            WHERE ((name = 'stream' OR name = 'event') AND type NOT LIKE '%*') OR name = {quoted} ORDER BY rowid""",
        2, 1) if fast is not None else None
    if done is not None:
        (ids, kind, codes), (texts,) = done
        pointers = np.array([parse_pointer(None if v == NULL_VALUE else v) for v in texts], dtype=np.int64)
        rows = row_of(ids)
        found = rows >= 0
        for k, column in ((0, stream), (1, event)):
            take = found & (kind == k)
            column[rows[take]] = pointers[codes[take]]
        return stream, event, bool((kind == 2).any())
    distinct: dict[str, int] = {}
    parsed: list[int] = []  # the pointer of each distinct text, in code order
    seen_also = False
    for ids_text, kind_text, values_text in concatenated_chunks(
        con, arg,
        ["group_concat(event_id)", "group_concat((name = 'event') + 2 * (name = ?))",
         f"group_concat(COALESCE(value, '{NULL_VALUE}'), '{UNIT_SEPARATOR}')"],
        "((name = 'stream' OR name = 'event') AND type NOT LIKE '%*') OR name = ?", (also,), select_params=(also,),
    ):
        if ids_text is None:
            continue
        ids = parse_ints(ids_text)
        kind = parse_ints(kind_text, len(ids), np.int8)
        if (kind == 2).any():
            seen_also = True
            keep = kind != 2
            ids, kind = ids[keep], kind[keep]
            values = list(itertools.compress(values_text.split(UNIT_SEPARATOR), keep.tolist()))
        else:
            values = values_text.split(UNIT_SEPARATOR)
        is_event = kind == 1
        if len(values) != len(ids):
            raise BadRows(f"{len(values)} pointer texts for {len(ids)} arguments")
        codes = code_strings(values, distinct)
        parsed += [parse_pointer(None if v == NULL_VALUE else v) for v in itertools.islice(distinct, len(parsed), None)]
        pointers = np.asarray(parsed, dtype=np.int64)
        rows = row_of(ids)
        found = rows >= 0
        # later rows overwrite earlier ones: fancy assignment keeps the last of repeated indices
        stream[rows[found & ~is_event]] = pointers[codes[found & ~is_event]]
        event[rows[found & is_event]] = pointers[codes[found & is_event]]
    return stream, event, seen_also


def all_arguments(con: sqlite3.Connection, arg: str, event_ids: np.ndarray, fast: ArrowReader | None = None) -> ApiArgs:
    """Every argument of the given events, as ApiArgs over their rows in `event_ids` (in file order)."""
    row_of = _row_of_event(event_ids)
    done = fast.coded_columns(
        f"""SELECT event_id, COALESCE(name, ''), COALESCE(value, '{NULL_VALUE}') FROM "{arg}" ORDER BY rowid""", 1, 2
    ) if fast is not None else None
    if done is not None:
        (ids, name_codes, value_codes), (arg_names, arg_values) = done
        r = row_of(ids)
        keep = r >= 0
        return ApiArgs(r[keep], name_codes[keep], value_codes[keep], arg_names,
                       [None if v == NULL_VALUE else v for v in arg_values])
    names: dict[str, int] = {}
    values: dict[str | None, int] = {}
    rows, name_codes, value_codes = [], [], []
    for ids_text, names_text, values_text in concatenated_chunks(
        con, arg,
        ["group_concat(event_id)", f"group_concat(COALESCE(name, ''), '{UNIT_SEPARATOR}')",
         f"group_concat(COALESCE(value, '{NULL_VALUE}'), '{UNIT_SEPARATOR}')"],
    ):
        if ids_text is None:
            continue
        ids = parse_ints(ids_text)
        arg_names = names_text.split(UNIT_SEPARATOR)
        arg_values = values_text.split(UNIT_SEPARATOR)
        if not (len(arg_names) == len(arg_values) == len(ids)):
            raise BadRows(f"argument texts do not line up ({len(ids)} ids, {len(arg_names)} names, "
                          f"{len(arg_values)} values)")
        r = row_of(ids)
        keep = r >= 0
        rows.append(r[keep])
        name_codes.append(code_strings(arg_names, names)[keep])
        value_codes.append(code_strings(arg_values, values)[keep])
    value_list = [None if v == NULL_VALUE else v for v in values]
    cat = (lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype=dtype))
    return ApiArgs(cat(rows, np.int64), cat(name_codes, np.int32), cat(value_codes, np.int32), list(names), value_list)
