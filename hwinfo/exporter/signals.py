"""Serving until a stop signal: what `hwinfo serve` and `hwinfo board` share.

SIGTERM and SIGINT shut the server down (the signal is returned, for the exit status);
SIGHUP loads the web config again, by the same path as a change to its file.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from types import FrameType

from hwinfo.exporter.http import Server


def serve_until_stopped(server: Server, log: logging.Logger,
                        started: Callable[[], None] = lambda: None) -> int | None:
    """Serve on a bound server until SIGTERM or SIGINT (main thread only); the signal that
    stopped it. `started` runs once the handlers are in place and the address is logged."""
    stopped_by: list[int] = []

    def stop(signum: int, _: FrameType | None) -> None:
        log.info("stopping on signal %d", signum)
        stopped_by.append(signum)
        server.shutdown()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, lambda _signum, _frame: server.reload())
    log.info("listening on %s:%d", *server.address)
    started()
    server.serve_forever()
    return stopped_by[0] if stopped_by else None
