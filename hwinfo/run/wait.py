"""Getting devices: at once where they fit, else in line with the other waiters of this host.

A waiter holds a ticket (claimdir.py) and looks again every POLL_SECONDS: a claim that ends
is seen within that. The GPU snapshot is read again when the claims changed (a command that
ended has left its GPU) and at least every REFRESH_SECONDS (memory and processes change
outside `hwinfo run` too). Each look is a decision under the directory's lock, so whatever a
waiter takes, nobody else takes.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hwinfo.collect.claims import CLAIM, WAIT, Reading, user_namer
from hwinfo.model.gpu import GpuSystem
from hwinfo.render.text.claims import request_text
from hwinfo.run.choose import Asker, Device, choose, devices, hindrance, never
from hwinfo.run.claimdir import Busy, Directory, Held
from hwinfo.units import duration

POLL_SECONDS = 0.25
# Each pause is this much longer or shorter at random, so that waiters started together do
# not look in step.
JITTER = 0.2
REFRESH_SECONDS = 5.0


class NoFit(Exception):
    """Nothing fits, and the wait is over (or was not asked for); one line for a person."""


class NeverFits(Exception):
    """Nothing on this host can ever fit the request, or its GPUs cannot be read; one line."""


@dataclass(frozen=True)
class Standing:
    """Where a waiter stands: its place in line (1: next) and what keeps it waiting."""

    position: int
    waiting: int  # how many wait in all, itself included
    hindrance: str


def obtain(directory: Directory, read_gpus: Callable[[], GpuSystem], asker: Asker,
           argv: Sequence[str], wait_seconds: float,
           show: Callable[[Standing], None]) -> tuple[Held, list[Device]]:
    """A claim on the devices the request gets, within `wait_seconds`; NoFit, NeverFits."""
    deadline = time.monotonic() + wait_seconds
    system = read_gpus()
    if system.status != "ok":
        raise NeverFits(f"the GPUs cannot be read: {system.message}")
    every = devices(system)
    why = never(every, asker.request)
    if why is not None:
        raise NeverFits(f"nothing here can ever fit {request_text(asker.request)}: {why}")
    read_at = time.monotonic()
    # Why the last reading of the GPUs is not to be used (NVML stopped answering); meanwhile
    # nothing is handed out on what it said before.
    unread: str | None = None
    ticket: Held | None = None
    try:
        while True:
            try:
                with directory.deciding() as reading:
                    claimed = {uuid for entry in reading.claims for uuid in entry.devices}
                    ahead = _ahead(reading, ticket)
                    got = None if unread else choose(every, claimed, ahead, asker)
                    if got is not None:
                        claim = directory.add(CLAIM, asker.request, argv, [d.uuid for d in got],
                                              reading.next_sequence)
                        if ticket is not None:  # out of line before anyone decides again
                            ticket.release()
                            ticket = None
                        return claim, got
                    standing = Standing(len(ahead) + 1, len(reading.waiters) + (ticket is None),
                                        unread or hindrance(every, claimed, asker))
                    if time.monotonic() >= deadline:
                        raise NoFit(_gave_up(asker, wait_seconds, standing))
                    if ticket is None:
                        ticket = directory.add(WAIT, asker.request, argv,
                                               sequence=reading.next_sequence)
                    looked = _state(reading)
            except Busy as exc:
                raise NoFit(str(exc)) from None
            show(standing)
            pause = POLL_SECONDS * random.uniform(1 - JITTER, 1 + JITTER)
            time.sleep(max(0.0, min(pause, deadline - time.monotonic())))
            if _state(directory.read()) != looked or time.monotonic() - read_at >= REFRESH_SECONDS:
                system = read_gpus()
                unread = None if system.status == "ok" else f"the GPUs cannot be read: {system.message}"
                every = devices(system) if unread is None else every
                read_at = time.monotonic()
    finally:
        if ticket is not None:
            ticket.release()


def _ahead(reading: Reading, ticket: Held | None) -> list[Asker]:
    """The waiters before this one, in line order: all of them before it has a ticket."""
    names = user_namer()
    ahead = []
    for entry in reading.waiters:
        if ticket is not None and entry.name == ticket.name:
            break
        ahead.append(Asker(entry.request, names(entry.uid) or str(entry.uid)))
    return ahead


def _state(reading: Reading) -> frozenset[str]:
    """What changes when a claim or ticket comes or goes."""
    return frozenset(e.name for e in (*reading.claims, *reading.waiters))


def _gave_up(asker: Asker, wait_seconds: float, standing: Standing) -> str:
    what = request_text(asker.request)
    if wait_seconds <= 0:
        return f"nothing fits {what} now ({standing.hindrance}); --wait DURATION waits in line"
    return (f"nothing fit {what} within {duration(wait_seconds)} (--wait); "
            f"{_ordinal(standing.position)} of {standing.waiting} in line, {standing.hindrance}")


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
