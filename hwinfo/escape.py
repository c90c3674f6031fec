"""Strings from the machine or a server, escaped as the output they go to needs.

Names reach us as the bytes someone chose. A process, user or file named in Latin-1 or
EUC-KR is not UTF-8: psutil and os keep each byte they could not decode as a lone surrogate
(U+DC80 to U+DCFF, Python's "surrogateescape"), which no UTF-8 output can encode. A
scenario's JSON can spell any lone surrogate. And any string, a server's included, may hold
control characters that break a line or drive a terminal (set its title, move its cursor).
One function per kind of output, used by every renderer of that kind:

- `printable`: the terminal and one-line messages: control characters, bidirectional
  formatting characters, line separators, invisible characters and undecodable bytes as
  escapes (`\\n`, `\\x1b`, `\\u202e`, `\\u200b`, `\\xe9`), nothing else changed; `printable_copy` applies
  it to every string of what a text renderer is handed;
- `unicode`: formats that are UTF-8 but have no escape of their own for a byte (the
  Prometheus exposition): undecodable bytes as the text `\\xe9`;
- `to_json`: JSON, whose grammar escapes any code unit: lone surrogates as `\\udce9`, so
  hwinfo reading the document back gets the very string; NaN and infinities are null;
- `html_text`: HTML, in an element or a quoted attribute: `printable`'s escapes, then the
  characters HTML gives meaning (`& < > " '`) as entities, so a name is only ever text.
"""

from __future__ import annotations

import copy
import dataclasses
import html
import json
import math
import re
from typing import Any, TypeVar

T = TypeVar("T")

_SURROGATE = re.compile("[\ud800-\udfff]")
# Controls, lone surrogates, the bidirectional formatting characters, which reorder what a
# terminal shows after them (a user named with U+202E reads backwards, and the columns after),
# the line and paragraph separators, and the invisible ones that make two names look alike
# ("ali\u200bce" beside "alice": zero-width space, word joiner, byte-order mark).
_UNSAFE = ("\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff"
           "\ud800-\udfff")
_CONTROL = re.compile(f"[{_UNSAFE}]")
# The same, sparing the SGR colour sequences our own Style writes.
_CONTROL_BUT_COLOUR = re.compile(f"\x1b\\[[0-9;]*m|[{_UNSAFE}]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _code_unit(char: str) -> str:
    """An undecodable byte as `\\xNN`, any other lone surrogate or control as an escape."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFF:
        return f"\\u{code:04x}"
    return _ESCAPES.get(char, f"\\x{code:02x}")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return char if len(char) > 1 else _code_unit(char)  # longer: a colour sequence


def printable(text: str, keep_colour: bool = False) -> str:
    """Text a terminal shows as it is: control characters and bytes that were not UTF-8 as
    escapes, so a command line, a GPU name or a server's answer cannot break a table or a
    one-line message or drive the terminal. keep_colour spares the colour sequences of text
    we styled ourselves; text from elsewhere gets none."""
    return (_CONTROL_BUT_COLOUR if keep_colour else _CONTROL).sub(_escape, text)


def html_text(text: str) -> str:
    """`text` as HTML shows it, within an element or a quoted attribute value: never markup,
    never a control character or an undecodable byte (which a UTF-8 page cannot carry)."""
    return html.escape(printable(text), quote=True)


def printable_copy(value: T) -> T:
    """A copy of a tree of dataclasses, lists and dicts with every string printable(): what
    a text renderer is given, so that no name it shows (a GPU's, a MIG profile's, a label
    from a server) can carry an escape sequence into the styling it adds itself."""
    if isinstance(value, str):
        return printable(value)  # type: ignore[return-value]
    if isinstance(value, list):
        return [printable_copy(item) for item in value]  # type: ignore[return-value]
    if isinstance(value, dict):
        return {printable_copy(k): printable_copy(v)  # type: ignore[return-value]
                for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return type(value)(printable_copy(item) for item in value)  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        copied = copy.copy(value)
        for f in dataclasses.fields(value):
            # object.__setattr__: frozen dataclasses too.
            object.__setattr__(copied, f.name, printable_copy(getattr(value, f.name)))
        return copied
    return value


def unicode(text: str) -> str:
    """Text that UTF-8 can encode: each byte that was not UTF-8 as the text `\\xNN`."""
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda m: _code_unit(m.group()), text)


def to_json(document: Any, indent: int | None = 2) -> str:
    """A JSON document that UTF-8 can encode, lone surrogates written as `\\uXXXX` escapes;
    NaN or an infinity, which JSON cannot spell, is null: a figure not known."""
    try:
        text = json.dumps(document, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(document), indent=indent, ensure_ascii=False)
    if text.isascii():
        return text
    # A raw surrogate can only stand inside a string, where its escape means the same.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
