"""Files and documents a user hands us, read as hostile: bounded, and refused in one line.

Every file hwinfo reads because a person named it (a scenario, a thresholds file, a
baseline, a web-config and its certificates, an nvidia-smi dump) goes through here, and so
does every JSON or YAML document that arrives over the network. What can go wrong is
refused as an InputError whose text is one line naming the source and what is wrong:

- special files: a FIFO would block the read forever, /dev/zero never ends, a directory
  or a device is not a document;
- size: a file is read up to its limit and no further;
- encoding: binary or non-UTF-8 text;
- nesting: a parse that recurses too deep, or a document nested deeper than MAX_DEPTH;
- size before parsing: JSON that would build more than MAX_NODES values is refused by a
  count of its separators, before json.loads builds it (a 16 MiB `[{},{},...]` is 5.6
  million dicts, over a GB);
- size after parsing: more than MAX_NODES values (YAML aliases can multiply a small file);
- numbers: NaN and infinities, which JSON and YAML parsers both accept.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

# Inputs are small: a web-config is a few hundred bytes, an 8-GPU `nvidia-smi -q -x` dump is
# about 200 KiB, the largest built-in scenario 12 KiB. The limits leave room for large
# machines while keeping a hostile file from costing more than a few hundred MB.
DEFAULT_LIMIT_BYTES = 16 * 1024 * 1024
# A PEM certificate, key or CA bundle: a distribution's whole bundle is about 220 KiB.
PEM_LIMIT_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 1_000_000
# PyYAML keeps about a KiB per node while it composes (100,000 nodes: 110 MiB, 3 s), and a
# YAML input is a configuration of hundreds of lines: its bound before parsing is lower.
MAX_YAML_NODES = 100_000

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class InputError(ValueError):
    """An input that cannot be used; str() is one line that names it."""


class NotReadable(InputError):
    """The file could not be opened or read at all (missing, no permission, an I/O error),
    as opposed to one that was there and refused: procfs readers take it as "not there"."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: str | os.PathLike[str], what: str, limit: int = DEFAULT_LIMIT_BYTES,
               prefix: bool = False) -> bytes:
    """The content of a regular file, at most `limit` bytes; `what` names it in errors.
    `prefix`: the first `limit` bytes of a longer file, where a larger one is otherwise refused.

    Bounded by the bytes read, not by st_size: procfs and sysfs files say 0 and hold more.
    """
    # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise NotReadable(f"{what}: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise InputError(f"{what}: not a regular file ({_kind(status.st_mode)})")
        chunks: list[bytes] = []
        size = 0
        # os.read allocates what it is asked for: small reads for the small files most are.
        ask = min(max(status.st_size + 1, 64 * 1024), 1 << 20)
        while size <= limit:
            chunk = os.read(fd, min(ask, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            ask = 1 << 20
    except OSError as exc:
        raise NotReadable(f"{what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit and not prefix:
        raise InputError(f"{what}: larger than {_size(limit)}, the most accepted")
    return b"".join(chunks)[:limit]


def decode_text(data: bytes, what: str) -> str:
    """UTF-8 text, or one line saying it is not (binary files land here)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: not UTF-8 text (binary?) at byte {exc.start}") from None
    if "\x00" in text:
        raise InputError(f"{what}: not text (it holds NUL bytes)")
    return text


def read_text(path: str | os.PathLike[str], what: str, limit: int = DEFAULT_LIMIT_BYTES) -> str:
    return decode_text(read_bytes(path, what, limit), what)


def parse_json(text: str | bytes, what: str) -> Any:
    """A JSON document, bounded in depth and size; NaN and Infinity are refused."""
    if _json_values_at_most(text) > MAX_NODES:
        raise InputError(f"{what}: more than {MAX_NODES:,} values")
    # Depth and finiteness are checked while counting and parsing, not by walking the
    # document after: the walk was most of the time a 60,000-series answer took.
    if _nested_deeper(text, MAX_DEPTH):
        raise InputError(f"{what}: nested too deeply: deeper than {MAX_DEPTH} levels")
    try:
        document = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise InputError(f"{what}: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: line {exc.lineno}, column {exc.colno}: invalid JSON: "
                         f"{exc.msg}") from None
    except UnicodeDecodeError:
        raise InputError(f"{what}: not UTF-8 text") from None
    except _ConstantRefused as exc:
        raise InputError(f"{what}: {exc} is not a number JSON allows") from None
    except ValueError as exc:  # an integer of more digits than int() converts
        raise InputError(f"{what}: {_value_error(exc)}") from None
    return document


def parse_yaml(text: str, what: str) -> Any:
    """A YAML document (safe types only), bounded in depth and size, with finite numbers and
    no key given twice in one mapping (PyYAML keeps the last silently: a second user of the
    same name in basic_auth_users would replace the first's password unseen)."""
    # PyYAML (10 ms) is the YAML files' own (a web config, thresholds, ledger.yml, prices):
    # a command given none never imports it.
    import yaml

    if _nested_deeper(text, MAX_DEPTH):
        raise InputError(f"{what}: nested too deeply: deeper than {MAX_DEPTH} levels")
    if _yaml_nodes_at_most(text) > MAX_YAML_NODES:
        raise InputError(f"{what}: more than {MAX_YAML_NODES:,} values")
    try:
        document = yaml.load(text, Loader=_safe_loader(yaml))
    except RecursionError:
        raise InputError(f"{what}: nested too deeply") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{what}: {yaml_error(exc)}") from None
    except (ValueError, OverflowError) as exc:
        # PyYAML's constructors call int(), float() and date() unguarded: "2001-13-45",
        # "!!int abc" or a 5,000-digit number raise these instead of a YAMLError.
        raise InputError(f"{what}: {_value_error(exc)}") from None
    check_document(document, what)
    return document


def _json_values_at_most(text: str | bytes) -> int:
    """An upper bound of the values a JSON text holds, counted at C speed before any is built.

    Every value but the top one follows a `[` (an array's first), a `,` (an array's next) or
    a `:` (an object's member). The same characters inside strings and an object's commas
    count too: a real document is overcounted, never undercounted.
    """
    if isinstance(text, str):
        return 1 + text.count("[") + text.count(",") + text.count(":")
    return 1 + text.count(b"[") + text.count(b",") + text.count(b":")


def _yaml_nodes_at_most(text: str) -> int:
    """An upper bound of the nodes PyYAML would compose from `text`, counted at C speed.

    A node other than the top one begins a line, follows a "- " or a "? ", or a flow
    collection's "[", "{" or ",", and a ":" adds a key or a value to one of them: at most
    two nodes per such character (an implicit null, a single-pair mapping), three counted.
    """
    marks = sum(text.count(c) for c in "\n-?[{,:")
    return 3 * (1 + marks)


# Every byte but brackets and braces, and braces made brackets: bytes.translate keeps the
# brackets alone at C speed, in one allocation.
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_SQUARE = bytes.maketrans(b"{}", b"[]")


def _nested_deeper(text: str | bytes, limit: int) -> bool:
    """Whether brackets nest deeper than `limit`, found before a parser sees the text:
    PyYAML's scanner takes quadratic time over unclosed flow collections (2 s for 50,000
    `[`). Each pass drops the innermost pairs everywhere, at C speed and without a list of
    pieces (re.sub's took 475 MiB for 5 million pairs): after n passes a text nested n deep
    has none left, and each opening bracket never closed adds a level. Brackets inside
    quotes and comments count too: an upper bound."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    left = data.translate(_SQUARE, _NOT_BRACKETS)
    for depth in range(limit + 1):
        shorter = left.replace(b"[]", b"")
        if len(shorter) == len(left):
            return depth + left.count(b"[") > limit
        left = shorter
    return True


_LOADER: Any = None


def _safe_loader(yaml: ModuleType) -> Any:
    """PyYAML's SafeLoader, refusing a key given twice in one mapping; built on first use."""
    global _LOADER
    if _LOADER is None:
        class Loader(yaml.SafeLoader):
            def construct_mapping(self, node: Any, deep: bool = False) -> Any:
                seen: set[Any] = set()
                for key_node, _ in node.value:
                    key = self.construct_object(key_node, deep=True)
                    try:
                        twice = key in seen
                        seen.add(key)
                    except TypeError:  # unhashable: the base class refuses it in one line
                        continue
                    if twice:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"{shown(key)} is given twice", key_node.start_mark)
                return super().construct_mapping(node, deep)

        _LOADER = Loader
    return _LOADER


def yaml_error(exc: Exception) -> str:
    """PyYAML's several-line message as one line: where, then what."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or problem is None:
        return _one_line(exc)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def check_document(document: Any, what: str) -> None:
    """Refuse a parsed document deeper than MAX_DEPTH, larger than MAX_NODES, or with NaN/inf.

    Iterative, and counting every visit: YAML aliases can make a small file a huge tree of
    shared references, which the node budget stops early. Depth first over iterators, so
    that it holds one iterator per level, never a copy of a large list.
    """
    nodes = 1
    _check_value(document, what, ())
    path: list[Any] = []
    stack: list[Iterator[tuple[Any, Any]]] = [_children(document)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            if path:
                path.pop()
            continue
        key, value = child
        nodes += 1
        if nodes > MAX_NODES:
            raise InputError(f"{what}: more than {MAX_NODES:,} values")
        where = (*path, key)
        if len(stack) > MAX_DEPTH:  # the depth of this value: the root's children are at 1
            raise InputError(f"{what}: nested deeper than {MAX_DEPTH} levels at {_where(where)}")
        _check_value(value, what, where)
        if isinstance(value, (dict, list)):
            stack.append(_children(value))
            path.append(key)


def _children(value: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(value, dict):
        return iter(value.items())
    if isinstance(value, list):
        return enumerate(value)
    return iter(())


def _check_value(value: Any, what: str, where: tuple[Any, ...]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{what}: {_where(where) or 'value'}: {value} is not a finite number")


def _where(keys: tuple[Any, ...]) -> str:
    where = ""
    for key in keys:
        where = member(where, key)
    return where


def member(where: str, key: object) -> str:
    """The path of `key` inside `where`, one line whatever the key: a.b, a[0], a['x\\ny']."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{where}[{key}]"
    if isinstance(key, str) and re.fullmatch(r"[\w-]{1,40}", key):
        return f"{where}.{key}" if where else key
    return f"{where}[{shown(key, 40)}]"


def shown(value: Any, limit: int = 60) -> str:
    """repr() of a value from a document, cut short: an error line must not echo a whole file."""
    try:
        text = repr(value)
    except ValueError:  # an integer past sys.get_int_max_str_digits(), alone or inside
        return f"an integer of {value.bit_length()} bits" if isinstance(value, int) else \
            f"a {type(value).__name__} holding a huge integer"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def ssl_reason(exc: Exception) -> str:
    """OpenSSL's error without the "(_ssl.c:4154)" that names a line of Python's C source."""
    return re.sub(r"\s*\(_ssl\.c:\d+\)$", "", _one_line(exc))


_DECIMAL = re.compile(r"[0-9]{1,18}")


def decimal(text: str) -> int | None:
    """A whole number written in ASCII digits, as the kernel and users write them; None for
    anything else (str.isdigit() also takes '²', and int() refuses 4,300 digits and more)."""
    return int(text) if _DECIMAL.fullmatch(text) else None


def finite(value: float, what: str) -> float:
    """`value` when it is a finite number; NaN and infinities are refused."""
    if not math.isfinite(value):
        raise InputError(f"{what}: {value} is not a finite number")
    return value


class _ConstantRefused(Exception):
    pass


def _no_constant(name: str) -> Any:
    raise _ConstantRefused(name)


def _finite_float(text: str) -> float:
    """A JSON number's float; one past float's range (1e400) would be an infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise _ConstantRefused(text[:40])
    return value


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _value_error(exc: ValueError | OverflowError) -> str:
    """A parser's ValueError in the user's terms (int()'s digit limit speaks of sys)."""
    if "integer string conversion" in str(exc):
        return f"a number of more than {sys.get_int_max_str_digits()} digits"
    return _one_line(exc)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n} bytes"
