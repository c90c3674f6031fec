"""Ctrl-C and SIGTERM end a command at once, whatever it waits on.

The handlers raise Interrupted in the main thread. Every wait of a command's main thread
(NVML behind its deadline, the CPU sampling window, an HTTP fetch, a --watch pause) is one
that a raising handler cuts short, so the command ends within moments of the signal. The
one place a signal must wait is the writing of a document (`held()`): a reader never gets
half of one, unless it stops reading for longer than the grace period.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """A stop signal came; a BaseException so that no `except Exception` swallows it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {self.signal_name}")

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """As a shell reports a command a signal ended: 128 + the signal number."""
        return 128 + self.signum


class _Held:
    """Signals that arrived while a write was under way, and when the first came."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.since = 0.0

    def waited(self) -> float:
        """Seconds the first held signal has been waiting; 0 when none came."""
        return 0.0 if self.signum is None else time.monotonic() - self.since


_held: _Held | None = None


def _handler(signum: int, _: FrameType | None) -> None:
    if _held is not None:
        if _held.signum is None:
            _held.signum, _held.since = signum, time.monotonic()
        return
    raise Interrupted(signum)


@contextmanager
def raising() -> Iterator[None]:
    """Inside, SIGINT and SIGTERM raise Interrupted in the main thread; the old handlers after."""
    previous = {signum: signal.signal(signum, _handler) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def held() -> Iterator[_Held]:
    """Inside, a stop signal is noted, not raised; it is raised on leaving.

    The body polls `waited()` to give up a write that a stalled reader holds too long, by
    raising Interrupted itself.
    """
    global _held
    state = _Held()
    _held = state
    try:
        yield state
    finally:
        _held = None
    if state.signum is not None:
        raise Interrupted(state.signum)

