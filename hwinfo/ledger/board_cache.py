"""How many questions the board's page may put to the engine: bounded, whoever is looking.

- Each answer (the lab, or where a size fits) is kept for `ttl` seconds and reused by every
  request in that time: a wall screen and a hundred phones cost what one viewer costs.
- One round of queries at a time: a request that finds one under way waits for it (at most
  `wait` seconds) and reads its answer if it was the one it needed.
- Each round that asks where a size fits takes a token from a bucket of SIZES_BURST,
  refilled one every SIZE_SECONDS: a client that walks through sizes is told to wait, and
  the engine never sees it; a size asked before is shown as last answered, with its age.
- At most MAX_SIZES sizes are kept; the one asked least recently goes first.

An engine that fails leaves the last good answer in place, with the error and its age, so
the page still shows what was last known and says why it is not newer.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from hwinfo.ledger.prometheus import LedgerError

T = TypeVar("T")

SIZES_BURST = 5
SIZE_SECONDS = 2.0
MAX_SIZES = 32


@dataclass(frozen=True)
class Answer(Generic[T]):
    """What the page can show: the last good value (None: none yet) and when it was asked,
    and the error of the last round if it failed."""

    value: T | None
    value_at: float | None
    error: str | None = None


class Busy(Exception):
    """The engine is not asked now (a round under way too long, or too many sizes asked),
    and there is no earlier answer to show; str() says which."""


class _Bucket:
    """A token bucket: `burst` tokens, one more every `every` seconds."""

    def __init__(self, burst: int, every: float, now: float) -> None:
        self.burst, self.every = burst, every
        self.tokens, self.at = float(burst), now

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.at) / self.every)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass
class _Entry:
    asked_at: float
    answer: Answer  # type: ignore[type-arg]  # of the entry's own kind


class EngineAnswers:
    """The engine's answers for the page, cached and rationed as the module says."""

    def __init__(self, ttl: float, wait: float, clock: Callable[[], float] = time.time) -> None:
        self.ttl, self.wait, self.clock = ttl, wait, clock
        self._lock = threading.Lock()  # guards the entries and the bucket
        self._engine = threading.Lock()  # held for a round of queries
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._sizes = _Bucket(SIZES_BURST, SIZE_SECONDS, clock())
        self.rounds = 0  # rounds of queries sent, for the tests and the log

    def _fresh(self, key: Hashable, now: float) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is not None and 0 <= now - entry.asked_at < self.ttl:
            self._entries.move_to_end(key)
            return entry
        return None

    def get(self, key: Hashable, ask: Callable[[float], T], rationed: bool = False) -> Answer[T]:
        """The answer for `key`, asking `ask(now)` if none is fresh. Where the engine may not
        be asked now, the last answer with the reason as its error, or Busy if there is none.
        `rationed`: each round for this key takes a token of the bucket."""
        with self._lock:
            if (entry := self._fresh(key, self.clock())) is not None:
                return entry.answer
        if not self._engine.acquire(timeout=self.wait):
            return self._refused(key, "the engine is still answering an earlier question")
        try:
            now = self.clock()
            with self._lock:
                if (entry := self._fresh(key, now)) is not None:
                    return entry.answer  # asked while this request waited
                known = self._entries.get(key)
                allowed = not rationed or self._sizes.take(now)
            if not allowed:
                return self._refused(key, "too many sizes asked in the last seconds: "
                                          "the engine is not asked again yet")
            self.rounds += 1
            try:
                answer: Answer[T] = Answer(ask(now), now)
            except LedgerError as exc:
                previous = known.answer if known is not None else Answer(None, None)
                answer = Answer(previous.value, previous.value_at, str(exc))
            with self._lock:
                self._entries[key] = _Entry(now, answer)
                self._entries.move_to_end(key)
                while len(self._entries) > MAX_SIZES + 1:  # the sizes, and the lab
                    self._entries.popitem(last=False)
            return answer
        finally:
            self._engine.release()

    def _refused(self, key: Hashable, why: str) -> Answer:  # type: ignore[type-arg]
        with self._lock:
            known = self._entries.get(key)
        if known is None or known.answer.value is None:
            raise Busy(why)
        return Answer(known.answer.value, known.answer.value_at, why)
