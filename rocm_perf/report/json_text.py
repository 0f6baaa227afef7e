"""A command's JSON document as indented text, fast enough for a million dispatches.

`json.dumps(doc, indent=2)` runs the standard library's pure-Python encoder (its C encoder serves
only `indent=None`): 40 of the 48 s CPU `critical-path --json` spent on a 1M-dispatch profile.
msgspec encodes in C and `msgspec.json.format` indents the result
(https://jcristharif.com/msgspec/api.html#msgspec.json.format): the same text as
`json.dumps(doc, indent=2, default=...)`, with two differences made good or named here:
- non-ASCII characters are escaped afterwards as `\\uXXXX` (json's ensure_ascii), so the text is
  the same bytes on a terminal of any encoding;
- floats are written in their shortest form either way, with one spelling apart (`1e300`, json's
  `1e+300`): the same number read back.
Documents msgspec would write otherwise go to the standard library whole: a NaN or infinity
(json writes the tokens `NaN`, `Infinity`, as compare's open confidence intervals do, and the MCP
tools repeat them; msgspec would write null), a float subclass such as numpy's float64 (json writes
the number, msgspec would hand it to `default`), an integer beyond 64 bits, a dict key that is not
a string or a number. One walk over the document finds the floats; the answer never depends on
which encoder wrote it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

import msgspec

_NOT_ASCII = re.compile(r"[^\x00-\x7f]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # beyond the BMP: a UTF-16 surrogate pair, as json writes it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(doc: Any, *, default: Callable[[Any], Any] | None = str) -> str:
    """`doc` as JSON indented by two spaces, ASCII only (no trailing newline). `default` turns a
    value neither encoder knows (a Path, a numpy integer) into one it does, as json's `default`."""
    def hook(value: Any) -> Any:
        # msgspec asks the hook about None, bool and tuple dict keys, which json writes as "null",
        # "true" or refuses: leave those documents to json
        if default is None or value is None or isinstance(value, (bool, tuple)):
            raise TypeError(f"{type(value).__name__} left to json")
        return default(value)

    if _floats_json_writes_its_own_way(doc):
        return json.dumps(doc, indent=2, default=default)
    try:
        raw = msgspec.json.encode(doc, enc_hook=hook)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return json.dumps(doc, indent=2, default=default)
    text = msgspec.json.format(raw, indent=2).decode("utf-8")
    return text if text.isascii() else _NOT_ASCII.sub(_escape, text)


def _floats_json_writes_its_own_way(doc: Any) -> bool:
    """Whether `doc` holds a NaN, an infinity or a float of a subclass (numpy's float64)."""
    stack = [doc]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            stack.extend(value.values())
        elif kind is list or kind is tuple:
            stack.extend(value)
        elif kind is float:
            if value - value != 0.0:  # NaN or an infinity (inf - inf is NaN)
                return True
        elif isinstance(value, float):
            return True
    return False
