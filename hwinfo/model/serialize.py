"""Snapshot <-> plain dicts (the JSON schema), driven by the dataclasses' type hints."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from functools import cache
from typing import Annotated, Any, TypeVar

from hwinfo.inputs import MAX_NODES, member, shown
from hwinfo.model.snapshot import SCHEMA_VERSION, Snapshot
from hwinfo.model.unixtime import UNIX_TIME, UNIX_TIME_RANGE

T = TypeVar("T")

# Integers in a snapshot are counters, sizes and ids that fit in 64 bits; a larger one comes
# from no hwinfo, and would overflow where a renderer turns it into a float.
_INT_RANGE = (-(1 << 63), (1 << 64) - 1)


class SchemaError(ValueError):
    """A document does not match the snapshot schema."""


class _Budget:
    """Values a document may build once every field it leaves out takes its default.

    The parse bounds what a document holds (inputs.MAX_NODES), not what it builds: a 4 MiB
    list of `{"index": 0, "lost": false}` is 150,000 GPUs of some sixty fields each, 8.7
    million values, 1.7 GB and a 270 MB JSON report. The built tree gets the parse's bound
    (a DGX snapshot with a hundred processes builds about 4,500).
    """

    def __init__(self) -> None:
        self.left = MAX_NODES

    def spend(self, values: int, where: str) -> None:
        self.left -= values
        if self.left < 0:
            raise SchemaError(f"{where}: more than {MAX_NODES:,} values with every field "
                              "filled in, more than any machine's snapshot holds")


def to_dict(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def from_dict(cls: type[T], data: Any, where: str = "") -> T:
    """Rebuild a dataclass tree from `data`. Unknown keys are ignored, so newer producers
    still load; a key an older producer did not write yet takes the field's default, or
    None (not available) where the field allows it, so older documents still load too: a
    field that allows neither must be in every document since the first of its
    schema_version (tests/fixtures/old_snapshots)."""
    return _convert(cls, data, where or cls.__name__, _Budget())


def _convert(tp: Any, value: Any, where: str, budget: _Budget) -> Any:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        inner, *marks = typing.get_args(tp)
        number = _convert(inner, value, where, budget)
        if UNIX_TIME in marks and not UNIX_TIME_RANGE[0] <= number < UNIX_TIME_RANGE[1]:
            raise SchemaError(f"{where}: {number:g} is not a Unix time between 1970 and 2242")
        return number
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise SchemaError(f"{where}: null is not allowed")
        (inner,) = [a for a in args if a is not type(None)]
        return _convert(inner, value, where, budget)
    if origin is list:
        if not isinstance(value, list):
            raise SchemaError(f"{where}: expected a list")
        (item,) = typing.get_args(tp)
        budget.spend(len(value), where)
        return [_convert(item, v, f"{where}[{i}]", budget) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an object")
        _, item = typing.get_args(tp)
        budget.spend(len(value), where)
        return {k: _convert(item, v, member(where, k), budget) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an object")
        fields = dataclasses.fields(tp)
        budget.spend(len(fields), where)
        kwargs = {}
        for f in fields:
            if f.name in value:
                kwargs[f.name] = _convert(_hints(tp)[f.name], value[f.name], f"{where}.{f.name}",
                                          budget)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                if not _allows_none(_hints(tp)[f.name]):
                    raise SchemaError(f"{where}: missing field {f.name!r}")
                kwargs[f.name] = None
        return tp(**kwargs)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError(f"{where}: expected a number")
        if isinstance(value, int) and not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            raise SchemaError(f"{where}: an integer of {value.bit_length()} bits is out of range")
        if not math.isfinite(value):
            raise SchemaError(f"{where}: {value} is not a finite number")
        return float(value)
    if tp in (int, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise SchemaError(f"{where}: expected {tp.__name__}")
        if tp is int and not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            raise SchemaError(f"{where}: an integer of {value.bit_length()} bits is out of range")
        return value
    if tp is Any:
        return value
    raise SchemaError(f"{where}: unsupported type {tp!r}")


def _allows_none(tp: Any) -> bool:
    """Whether a field of this type may be null: `X | None`."""
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and \
        type(None) in typing.get_args(tp)


def snapshot_from_document(document: Any, where: str) -> Snapshot:
    """A Snapshot from a parsed `hwinfo report --format json` document; SchemaError otherwise."""
    if not isinstance(document, dict):
        raise SchemaError(f"{where}: not an hwinfo snapshot (a JSON {_json_kind(document)}, "
                          "not an object)")
    if "schema_version" not in document:
        raise SchemaError(f"{where}: not an hwinfo snapshot (it has no schema_version)")
    version = document["schema_version"]
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise SchemaError(f"{where}: snapshot schema {shown(version)}, "
                          f"this hwinfo reads {SCHEMA_VERSION}")
    try:
        return from_dict(Snapshot, document)
    except SchemaError as exc:
        raise SchemaError(f"{where}: {exc}") from None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}.get(
        type(value), type(value).__name__)
