"""The open connections: the selector that watches their sockets, and the room a new one
needs when Limits.connections are open."""

from __future__ import annotations

import heapq
import selectors
import time
from collections.abc import Iterator

from hwinfo.exporter.http.connection import Connection, Phase
from hwinfo.exporter.throttled_log import ThrottledLog


class Table:
    """Every open connection, and what the loop's selector watches of each (the loop only)."""

    def __init__(self, limit: int, log: ThrottledLog) -> None:
        self.selector = selectors.DefaultSelector()
        self._conns: set[Connection] = set()
        self._limit = limit
        self._log = log

    def __iter__(self) -> Iterator[Connection]:
        return iter(list(self._conns))  # a copy: closing while iterating is common

    def add(self, conn: Connection) -> None:
        self._conns.add(conn)
        self.watch(conn, selectors.EVENT_READ)

    def watch(self, conn: Connection, events: int) -> None:
        if not conn.events:
            self.selector.register(conn.sock, events, conn)
        elif conn.events != events:
            self.selector.modify(conn.sock, events, conn)
        conn.events = events

    def unwatch(self, conn: Connection) -> None:
        if conn.events:
            self.selector.unregister(conn.sock)
            conn.events = 0

    def close(self, conn: Connection) -> None:
        if conn.closed:
            return
        self.unwatch(conn)
        self._conns.discard(conn)
        conn.closed = True
        conn.sock.close()

    def expired(self, now: float) -> list[Connection]:
        """The connections the loop waits for past their deadline."""
        return [c for c in self._conns if c.phase is not Phase.AWAY and c.deadline <= now]

    def room_for(self, peer: str) -> bool:
        """Whether one more connection may open, closing those quiet longest if the table is
        full; False if every connection is busy."""
        if len(self._conns) < self._limit:
            return True
        idle = [c for c in self._conns if c.phase is not Phase.AWAY]
        if not idle:
            self._log.warning(
                "refused", "%d connections open, all of them busy: refusing new ones (%s)",
                self._limit, peer,
            )  # fmt: skip
            return False
        # Connections never served first, 1/64 of the limit at a time, so that a stream of
        # new connections does not pay for a scan each; a served one only if no other can.
        strangers = [c for c in idle if not c.trusted]
        batch = max(1, self._limit // 64) if strangers else 1
        quiet = heapq.nsmallest(batch, strangers or idle, key=lambda c: c.last_active)
        self._log.warning(
            "evicted", "%d connections open: closed the %d quiet longest (from %s, %s, "
            "quiet %.0f s) for %s", self._limit, len(quiet), quiet[0].peer,
            quiet[0].phase.value, time.monotonic() - quiet[0].last_active, peer,
        )  # fmt: skip
        for conn in quiet:
            self.close(conn)
        return True
