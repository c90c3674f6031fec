"""Inventory read once: what a listing of devices names, read again only when it changes.

A disk's model or a NIC's driver does not change while it is there; reading them every sample
would cost the sampler a few files per device. They are read when a device comes, goes or is
renamed, and every REFRESH_SECONDS besides (a disk swapped for another under the same name).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

REFRESH_SECONDS = 600.0


class Inventory(Generic[T]):
    def __init__(self, read: Callable[[list[str]], T],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._read = read
        self._clock = clock
        self._names: list[str] | None = None
        self._read_at = 0.0
        self._value: T | None = None

    def of(self, names: list[str]) -> T:
        """What read(names) returned, read again if the names changed or it is old."""
        now = self._clock()
        if self._value is None or names != self._names or now - self._read_at >= REFRESH_SECONDS:
            self._value, self._names, self._read_at = self._read(names), names, now
        return self._value
