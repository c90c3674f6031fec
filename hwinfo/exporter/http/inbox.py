"""What the other threads (workers, the auth gate, the TLS handshake thread, a reload) hand
the event loop: steps for it to run, and a socket that wakes it from select()."""

from __future__ import annotations

import queue
import socket
from collections.abc import Callable, Iterator
from typing import Any

Step = tuple[Callable[..., None], tuple[Any, ...]]


class Inbox:
    """Steps for the loop, put from any thread; the loop watches `sock` and calls take()."""

    def __init__(self) -> None:
        self.sock, self._writer = socket.socketpair()
        for end in (self.sock, self._writer):
            end.setblocking(False)
        self._steps: queue.SimpleQueue[Step] = queue.SimpleQueue()
        self._woken = False

    def put(self, step: Callable[..., None], *args: Any, wake: bool = True) -> None:
        """Have the loop run step(*args); `wake` it if it waits in select()."""
        self._steps.put((step, args))
        # One wake-up byte until the loop has read it: the loop takes every step after it
        # reads the byte, so a burst of results costs one write, not one each.
        if wake and not self._woken:
            self._woken = True
            self.wake()

    def wake(self) -> None:
        """Make the loop's select() return; safe from a signal handler."""
        try:
            self._writer.send(b"\0")
        except OSError:
            pass  # already awake (buffer full) or already closed

    def woken(self) -> None:
        """The loop saw `sock` readable: read the wake-up bytes, before it takes the steps."""
        try:
            while self.sock.recv(4096):
                pass
        except BlockingIOError:
            pass
        # After the read, so that no byte is left unwritten for a step put from now on, and
        # before the steps are taken, so that a step put before this is taken now.
        self._woken = False

    def pending(self) -> bool:
        return not self._steps.empty()

    def take(self) -> Iterator[Step]:
        """The steps put so far, and those put while they are taken, in order."""
        while True:
            try:
                yield self._steps.get_nowait()
            except queue.Empty:
                return

    def close(self) -> None:
        self.sock.close()
        self._writer.close()
