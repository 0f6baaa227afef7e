"""Decoding a PyTorch profiler (Kineto) trace's JSON into the few fields rocm-perf reads.

msgspec decodes straight into the Structs below and skips every other key in C (a cpu_op's input
shapes, call stacks, ...): a million events in about a second and a fraction of the memory of
dicts. Floats are kept as their text (msgspec's `float_hook`, called for values whose type is
Any; https://jcristharif.com/msgspec/api.html#msgspec.json.Decoder), as kineto_read needs for
exact nanoseconds. A file whose events do not fit the Structs (an `args` that is not an object,
...) is decoded again by the standard library, and its event dicts are copied into the same
Structs, so the reader sees one shape either way.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec


class Args(msgspec.Struct):
    stream: Any = None
    device: Any = None
    correlation: Any = None
    grid: Any = None
    block: Any = None
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    bytes: Any = None
    external_id: Any = msgspec.field(default=None, name="External id")


NULL = msgspec.Raw(b"null")


class Event(msgspec.Struct):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    id: Any = None
    # kept as the JSON text: decoded (args_of) only for the events that become rows, not for the
    # cpu_op events that are half of a trace and carry their input shapes and call stacks here
    args: msgspec.Raw = NULL


class Document(msgspec.Struct):
    traceEvents: list[Event]
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    schemaVersion: Any = None
    traceName: Any = None
    otherData: Any = None


NO_ARGS = Args()
_DECODER = msgspec.json.Decoder(Document, float_hook=str)
_ARGS = msgspec.json.Decoder(Args | None, float_hook=str)


def args_of(event: Event) -> Args:
    """An event's args (NO_ARGS when it has none, or when they are not an object)."""
    try:
        return _ARGS.decode(event.args) or NO_ARGS
    except (msgspec.ValidationError, msgspec.DecodeError):
        return NO_ARGS
_META = ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "schemaVersion", "traceName", "otherData")
_ARG_KEYS = {"stream": "stream", "device": "device", "correlation": "correlation", "grid": "grid", "block": "block",
             "shared memory": "shared_memory", "bytes": "bytes", "External id": "external_id"}


def decode(raw: bytes) -> dict[str, Any]:
    """{"traceEvents": [Event, ...], and the document's other top-level keys}.

    Raises json.JSONDecodeError / UnicodeDecodeError (from the standard library, with its line and
    column) for text that is not JSON, ValueError for JSON without a traceEvents list."""
    try:
        doc = _DECODER.decode(raw)
    except msgspec.ValidationError:
        return _decode_slowly(raw)
    except msgspec.DecodeError:
        return _decode_slowly(raw)  # NaN literals, ...; or the standard library says where the JSON breaks
    out = {key: getattr(doc, key) for key in _META}
    out["traceEvents"] = doc.traceEvents
    return out


def _decode_slowly(raw: bytes) -> dict[str, Any]:
    doc = json.loads(raw, parse_float=str)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError("no traceEvents list")
    out = {key: doc.get(key) for key in _META}
    out["traceEvents"] = [_event(e) for e in doc["traceEvents"] if type(e) is dict]
    return out


def _event(e: dict) -> Event:
    args = e.get("args")
    keep = {key: args[key] for key in _ARG_KEYS if key in args} if type(args) is dict else None
    return Event(ph=e.get("ph"), cat=e.get("cat"), name=e.get("name"), pid=e.get("pid"), tid=e.get("tid"),
                 ts=e.get("ts"), dur=e.get("dur"), id=e.get("id"),
                 args=msgspec.Raw(msgspec.json.encode(keep)) if keep is not None else NULL)
