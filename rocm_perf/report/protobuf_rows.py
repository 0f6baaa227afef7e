"""Protocol-buffer messages for millions of rows at once, in numpy.

A `Rows` is n byte strings held as one flat uint8 array and their lengths. Fields are built as
Rows (a varint per row, a tag, a length-delimited payload) and joined row by row, so that a
million TrackEvent packets are a few dozen numpy operations instead of a million Python calls.
Only the wire format is used (https://protobuf.dev/programming-guides/encoding/: varints of 7-bit
groups, least significant first; a key is `field << 3 | wire type`; wire type 0 varint, 1 fixed64,
2 length-delimited). Fields a row does not have are left out (length 0), as protobuf does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VARINT, FIXED64, LENGTH_DELIMITED = 0, 1, 2


@dataclass
class Rows:
    """n byte strings: row i is data[start[i]:start[i] + length[i]], rows stored one after another."""

    data: np.ndarray  # uint8
    length: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.length)

    @property
    def start(self) -> np.ndarray:
        return np.cumsum(self.length) - self.length

    @classmethod
    def empty(cls, n: int) -> "Rows":
        return cls(np.zeros(0, dtype=np.uint8), np.zeros(n, dtype=np.int64))

    @classmethod
    def constant(cls, n: int, value: bytes, present: np.ndarray | None = None) -> "Rows":
        """The same bytes in every row (where `present`)."""
        if present is None:
            return cls(np.tile(np.frombuffer(value, dtype=np.uint8), n), np.full(n, len(value), dtype=np.int64))
        k = int(np.count_nonzero(present))
        return cls(np.tile(np.frombuffer(value, dtype=np.uint8), k),
                   np.where(present, len(value), 0).astype(np.int64))

    @classmethod
    def from_matrix(cls, matrix: np.ndarray, length: np.ndarray) -> "Rows":
        """Rows from the first length[i] bytes of each row of an (n, width) uint8 matrix."""
        mask = np.arange(matrix.shape[1])[None, :] < length[:, None]
        return cls(matrix[mask], length.astype(np.int64))

    @classmethod
    def from_strings(cls, texts: list[bytes]) -> "Rows":
        return cls(np.frombuffer(b"".join(texts), dtype=np.uint8).copy(),
                   np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))

    def take(self, index: np.ndarray) -> "Rows":
        """Rows index[0], index[1], ... of these (a lookup table of byte strings, e.g. interned names)."""
        index = np.asarray(index, dtype=np.int64)
        length = self.length[index]
        total = int(length.sum())
        if not total:
            return Rows(np.zeros(0, dtype=np.uint8), length)
        source = np.repeat(self.start[index] - (np.cumsum(length) - length), length) + np.arange(total)
        return Rows(self.data[source], length)

    def tobytes(self) -> bytes:
        return self.data.tobytes()


def join(*parts: Rows) -> Rows:
    """Row i of the result is row i of every part, one after another."""
    n = len(parts[0])
    length = np.zeros(n, dtype=np.int64)
    for p in parts:
        length += p.length
    out = np.empty(int(length.sum()), dtype=np.uint8)
    position = np.cumsum(length) - length
    for p in parts:
        if len(p.data):
            out[np.repeat(position - p.start, p.length) + np.arange(len(p.data))] = p.data
        position += p.length
    return Rows(out, length)


def varints(values: np.ndarray, present: np.ndarray | None = None) -> Rows:
    """The varint encoding of each value (int64 as its two's complement, as protobuf's int64)."""
    matrix, length = _varint_matrix(values, present)
    return Rows.from_matrix(matrix, length)


def _varint_matrix(values: np.ndarray, present: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(n, width) varint bytes of each value, and each one's length (0 where not present)."""
    v = np.asarray(values).astype(np.int64).view(np.uint64).copy()
    n = len(v)
    columns = []
    length = np.ones(n, dtype=np.int64)
    for _ in range(10):
        low = (v & np.uint64(0x7F)).astype(np.uint8)
        v >>= np.uint64(7)
        more = v != 0
        columns.append(low | (more.astype(np.uint8) << 7))
        length += more
        if not more.any():
            break
    if present is not None:
        length = np.where(present, length, 0)
    return (np.stack(columns, axis=1) if columns else np.zeros((n, 1), np.uint8)), length


def key(field: int, wire: int) -> bytes:
    """A field's key as bytes."""
    value, out = (field << 3) | wire, bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def varint_field(field: int, values: np.ndarray, present: np.ndarray | None = None) -> Rows:
    n = len(values)
    return join(Rows.constant(n, key(field, VARINT), present), varints(values, present))


def message_field(field: int, payload: Rows, present: np.ndarray | None = None) -> Rows:
    """A length-delimited field (a submessage or bytes); rows not `present` get nothing."""
    n = len(payload)
    if present is None:
        present = np.ones(n, dtype=bool)
    length = np.where(present, payload.length, 0)
    body = Rows(payload.data, payload.length) if present.all() else select(payload, present)
    return join(Rows.constant(n, key(field, LENGTH_DELIMITED), present), varints(length, present), body)


def select(rows: Rows, keep: np.ndarray) -> Rows:
    """The same rows, with those not kept emptied."""
    index = np.flatnonzero(keep)
    taken = rows.take(index)
    length = np.zeros(len(rows), dtype=np.int64)
    length[index] = taken.length
    return Rows(taken.data, length)


def string_table(texts: list[str]) -> Rows:
    return Rows.from_strings([t.encode("utf-8") for t in texts])


# ---- fields of fixed structure, for millions of rows --------------------------------------------
# A Padded part is an (n, width) uint8 matrix whose row i holds length[i] valid bytes. A message is a
# list of parts; `compress` lays all of them side by side and keeps the valid bytes with one boolean
# mask, so every byte is touched a few times in all instead of a few times per field as `join` does.


@dataclass
class Padded:
    matrix: np.ndarray  # (n, width) uint8
    length: np.ndarray  # int64, at most width


def _constant(n: int, value: bytes, present: np.ndarray | None) -> Padded:
    matrix = np.broadcast_to(np.frombuffer(value, dtype=np.uint8), (n, len(value)))
    length = np.full(n, len(value), dtype=np.int64)
    return Padded(matrix, length if present is None else np.where(present, length, 0))


def _varint_padded(values: np.ndarray, present: np.ndarray | None) -> Padded:
    return Padded(*_varint_matrix(values, present))


def varint_part(field: int, values: np.ndarray, present: np.ndarray | None = None) -> list[Padded]:
    values = np.asarray(values)
    return [_constant(len(values), key(field, VARINT), present), _varint_padded(values, present)]


def fixed64_part(field: int, values: np.ndarray, present: np.ndarray | None = None) -> list[Padded]:
    values = np.asarray(values)
    n = len(values)
    raw = np.ascontiguousarray(values.astype("<i8")).view(np.uint8).reshape(n, 8)
    length = np.full(n, 8, dtype=np.int64) if present is None else np.where(present, 8, 0).astype(np.int64)
    return [_constant(n, key(field, FIXED64), present), Padded(raw, length)]


def message_part(field: int, children: list[Padded], present: np.ndarray | None = None) -> list[Padded]:
    """A submessage made of `children` (rows not `present` get nothing, their children included)."""
    n = len(children[0].length)
    if present is not None:
        children = [Padded(c.matrix, np.where(present, c.length, 0)) for c in children]
    total = np.zeros(n, dtype=np.int64)
    for c in children:
        total += c.length
    return [_constant(n, key(field, LENGTH_DELIMITED), present), _varint_padded(total, present), *children]


def compress(parts: list[Padded]) -> Rows:
    """The parts of each row, one after another, as Rows."""
    matrix = np.concatenate([np.asarray(p.matrix) for p in parts], axis=1)
    mask = np.concatenate([np.arange(p.matrix.shape[1])[None, :] < p.length[:, None] for p in parts], axis=1)
    length = np.zeros(len(parts[0].length), dtype=np.int64)
    for p in parts:
        length += p.length
    return Rows(matrix[mask], length)
