"""How a range is read: whole hours from the hourly roll-ups, the rest from minute records.

The roll-up evaluated at t (prometheus/hwinfo-ledger.yml, group hwinfo-ledger-hourly) holds
what the minute rules recorded in (t - P - I/2, t - I/2], P its group's interval and I the
minute group's. A range (since, until] is cut into runs of consecutive roll-ups whose hours lie
inside it, and the gaps around and between them, read minute by minute. Each part is one
range selector ending `offset` before `until`, so that one instant query at `until` reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# More runs than this (an engine that missed many hourly evaluations) and the whole range is
# read minute by minute: each part is one more query to the engine.
MAX_RUNS = 8
# The hourly roll-ups' suffixes: of the attributed shares (by job, pod and container), and of
# the others by user and by host (each with its model).
ROLLUP_SUFFIX = "_1h"
USER_ROLLUP_SUFFIX = "_by_user_1h"
HOST_ROLLUP_SUFFIX = "_by_host_1h"


@dataclass(frozen=True)
class Part:
    """(start, end] in Unix seconds; `rolled`: read from roll-ups (of samples at start+P ..
    end+I/2), else from minute records."""

    start: float
    end: float
    rolled: bool
    first: float = 0.0  # with `rolled`: the first and last roll-up's evaluation times
    last: float = 0.0
    hours: int = 0  # with `rolled`: how many roll-ups


@dataclass(frozen=True)
class Plan:
    until: float
    parts: tuple[Part, ...]

    def ranges(self) -> list[tuple[str, Part]]:
        """Each part's range selector suffix (`[...ms] offset ...ms`), in order."""
        return [(_range(part, self.until), part) for part in self.parts]

    @property
    def whole(self) -> str:
        """The range selector suffix of all of (since, until]."""
        return _range(Part(self.parts[0].start, self.until, False), self.until)

    def in_minutes(self, runs: set[int]) -> Plan:
        """This plan with the runs numbered `runs` (as checks() numbers them) read from
        minute records, joined to the minute parts beside them."""
        rolled = [part for part in self.parts if part.rolled]
        dropped = {id(rolled[n]) for n in runs if n < len(rolled)}
        parts: list[Part] = []
        for part in self.parts:
            if id(part) in dropped:
                part = Part(part.start, part.end, False)
            if parts and not part.rolled and not parts[-1].rolled:
                parts[-1] = Part(parts[-1].start, part.end, False)
            else:
                parts.append(part)
        return Plan(self.until, tuple(parts))

    def checks(self) -> list[tuple[str, str]]:
        """For each run of roll-ups: its range over the roll-ups and over the minutes it
        covers, whose evaluation counts must agree."""
        return [(_range(part, self.until), _range(part, self.until, minutes=True))
                for part in self.parts if part.rolled]


def _ms(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def _range(part: Part, until: float, minutes: bool = False) -> str:
    # A run's window takes its roll-ups' evaluation times (first .. last) and nothing before.
    start, end = ((part.first - 0.001, part.last) if part.rolled and not minutes
                  else (part.start, part.end))
    offset = round((until - end) * 1000)
    return f"[{_ms(end - start)}]" + (f" offset {offset}ms" if offset > 0 else "")


def minutes_only(since: float, until: float) -> Plan:
    return Plan(until, (Part(since, until, False),))


def plan(rollups: Sequence[float], since: float, until: float, period: float,
         interval: float) -> Plan:
    """The parts of (since, until], given the evaluation times of the hourly roll-ups."""
    half = interval / 2
    inside = sorted(t for t in set(rollups) if t - period - half >= since and t - half <= until)
    runs: list[list[float]] = []
    end, broken = since, True
    for t in inside:
        if t - period - half < end:  # overlaps the run before (another phase): minutes
            broken = True  # and no run may span it: its window would take this one in
            continue
        if not broken and abs(t - period - runs[-1][-1]) < 0.001:
            runs[-1].append(t)
        else:
            runs.append([t])
        end, broken = t - half, False
    if not runs or len(runs) > MAX_RUNS:
        return minutes_only(since, until)
    parts, cursor = [], since
    for run in runs:
        start = run[0] - period - half
        if start > cursor:
            parts.append(Part(cursor, start, False))
        cursor = run[-1] - half
        parts.append(Part(start, cursor, True, run[0], run[-1], len(run)))
    if until > cursor:
        parts.append(Part(cursor, until, False))
    return Plan(until, tuple(parts))
