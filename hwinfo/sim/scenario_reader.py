"""Typed reading of a scenario's JSON values; each refusal names the file and the field."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import NoReturn, TypeVar

from hwinfo import inputs
from hwinfo.sim.scenario_bounds import MAX_COUNT, MAX_TEXT_BYTES, MAX_USER_BYTES
from hwinfo.sim.scenario_model import GpmSpec, ScenarioError, Window

T = TypeVar("T")


class Reader:
    """Typed access to JSON values that reports errors as `scenario FILE: PATH: problem`."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, problem: str) -> NoReturn:
        raise ScenarioError(f"scenario {self.source}: {path}: {problem}")

    def obj(
        self, path: str, value: object, allowed: Iterable[str], required: Iterable[str] = ()
    ) -> dict[str, object]:
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {kind(value)}")
        allowed = set(allowed)
        for key in value:
            if key not in allowed:
                self.fail(inputs.member(path, key), f"unknown key (known: {', '.join(sorted(allowed))})")
        for key in required:
            if key not in value:
                self.fail(inputs.member(path, key), "required")
        return value

    def list(self, path: str, value: object) -> list[object]:
        if not isinstance(value, list):
            self.fail(path, f"expected a list, got {kind(value)}")
        return value

    def int(self, path: str, value: object, low: int = 0, high: int = MAX_COUNT) -> int:
        """An integer from `low` to `high`; every integer in a scenario has both bounds."""
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(path, f"expected an integer, got {kind(value)}")
        if value < low:
            self.fail(path, f"must be at least {low}, got {inputs.shown(value)}")
        if value > high:
            self.fail(path, f"must be at most {high}, got {inputs.shown(value)}")
        return value

    def number(self, path: str, value: object, high: float) -> float:
        """A finite number from 0 to `high`."""
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.fail(path, f"expected a number, got {kind(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(path, f"{value} is not a finite number")
        if value < 0:
            self.fail(path, f"must not be negative, got {inputs.shown(value)}")
        if value > high:
            self.fail(path, f"must be at most {high:g}, got {inputs.shown(value)}")
        return float(value)

    def bool(self, path: str, value: object) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {kind(value)}")
        return value

    def str(self, path: str, value: object, limit: int = MAX_TEXT_BYTES) -> str:
        """A string of at most `limit` bytes as UTF-8: names reach every line and label."""
        if not isinstance(value, str):
            self.fail(path, f"expected a string, got {kind(value)}")
        if len(value) > limit or len(value.encode("utf-8", "surrogatepass")) > limit:
            self.fail(path, f"longer than {limit:,} bytes")
        return value

    def user(self, path: str, value: object) -> str:
        """A user name as passwd holds one: attribution splits its lines on ':'. Other odd
        characters stay, as a directory service may hand them out, to test every output."""
        name = self.str(path, value, MAX_USER_BYTES)
        if not name or any(c in name for c in ":\x00"):
            self.fail(path, f"{inputs.shown(name)} is not a user name (empty, or with ':' or NUL)")
        return name

    def choice(self, path: str, value: object, choices: Iterable[str]) -> str:
        text = self.str(path, value)
        choices = list(choices)
        if text not in choices:
            self.fail(path, f"unknown value {inputs.shown(text)} (known: {', '.join(choices)})")
        return text

    def hex_int(self, path: str, value: object) -> int:
        """An int, or a hex string such as "0x20B210DE"."""
        if isinstance(value, str):
            if not re.fullmatch(r"(?:0[xX])?[0-9A-Fa-f]{1,8}", value):
                self.fail(path, f"expected an integer or a hex string of 32 bits, got "
                                f"{inputs.shown(value)}")
            return int(value, 16)
        return self.int(path, value, 0, 0xFFFFFFFF)

    def window(self, path: str, data: Mapping[str, object]) -> Window:
        """`after_samples` / `for_samples` of a fault or a lost GPU."""
        after = data.get("after_samples")
        count = data.get("for_samples")
        return Window(
            None if after is None else self.int(inputs.member(path, "after_samples"), after),
            None if count is None else self.int(inputs.member(path, "for_samples"), count, 1),
        )


def kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def optional(read: Callable[[str, object], T]) -> Callable[[str, object], T | None]:
    """A field reader that lets null through (null: NotSupported)."""
    return lambda path, value: None if value is None else read(path, value)


def read_gpm(r: Reader, path: str, value: object) -> GpmSpec:
    """A `gpm` object: each key a percentage, absent keys 0."""
    keys = tuple(f.name for f in dataclasses.fields(GpmSpec))
    data = r.obj(path, value, keys)
    return GpmSpec(**{key: r.number(inputs.member(path, key), data[key], 100) for key in data})


def opt_int(
    r: Reader, path: str, data: Mapping[str, object], key: str, high: int
) -> int | None:
    value = data.get(key)
    return None if value is None else r.int(inputs.member(path, key), value, 0, high)


def opt_str(r: Reader, path: str, data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    return None if value is None else r.str(inputs.member(path, key), value)
