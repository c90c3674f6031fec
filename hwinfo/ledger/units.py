"""What a person types for the ledger's ranges and sizes: 7d, 2026-11-01, 40GiB.

Each parser returns a number in base units (seconds, Unix time, bytes) or raises ValueError
with a message that says what is accepted.
"""

from __future__ import annotations

import datetime as dt
import math
import re

# Prometheus's duration units, so that what works in a PromQL range works here.
_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400,
                   "y": 365 * 86400}
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w|y)", re.ASCII)
_SIZE_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
               "pib": 2**50, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)", re.IGNORECASE | re.ASCII)
# Ten years: longer than any Prometheus keeps, short enough to stay a sane query range.
MAX_DURATION_SECONDS = 10 * 365 * 86400
MAX_SIZE_BYTES = 2**50


def duration_seconds(text: str) -> float:
    """`7d`, `30s`, `1h30m` (Prometheus's units: ms s m h d w y) in seconds, above zero."""
    spec = text.strip()
    parts = _DURATION.findall(spec)
    sizes = [_DURATION_UNITS[u] for _, u in parts]
    # As in Prometheus, each unit at most once, larger first: `1h1h` and `30m1h` are typos.
    if (not parts or "".join(n + u for n, u in parts) != spec
            or sizes != sorted(set(sizes), reverse=True)):
        raise ValueError(f"{text!r} is not a duration (e.g. 30s, 12h, 7d, 1h30m)")
    # Ten years is 12 digits of any unit: a longer number is out of range, never cut short.
    digits = [n.lstrip("0") for n, _ in parts]
    if any(len(n) > 12 for n in digits):
        raise ValueError(f"{text!r} is not between 1ms and 10 years")
    seconds = sum(int(n or "0") * _DURATION_UNITS[u] for n, (_, u) in zip(digits, parts))
    if not 0 < seconds <= MAX_DURATION_SECONDS:
        raise ValueError(f"{text!r} is not between 1ms and 10 years")
    return seconds


def unix_time(text: str, now: float) -> float:
    """`now`, Unix seconds, or an ISO 8601 date or time (UTC unless it says otherwise)."""
    spec = text.strip()
    if spec == "now":
        return now
    try:
        value = float(spec)
    except ValueError:
        try:
            when = dt.datetime.fromisoformat(spec.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{text!r} is not a time (now, Unix seconds, or e.g. "
                             "2026-11-01 or 2026-11-01T08:00:00Z)") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        value = when.timestamp()
    if not math.isfinite(value) or not 0 < value < 2**33:
        raise ValueError(f"{text!r} is not a time between 1970 and 2242")
    return value


def size_bytes(text: str) -> int:
    """`40GiB`, `512 MiB`, `80GB` (decimal), or bytes."""
    match = _SIZE.fullmatch(text.strip())
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _SIZE_UNITS:
        raise ValueError(f"{text!r} is not a size (e.g. 40GiB, 512MiB, 80GB)")
    number = match.group(1).lstrip("0")
    # 1 PiB is 16 digits in bytes: a longer whole part is out of range, never cut short.
    if len(number.partition(".")[0]) > 20:
        raise ValueError(f"{text!r} is not between 1 byte and 1 PiB")
    value = float(number or "0") * _SIZE_UNITS[unit]
    if not 0 < value <= MAX_SIZE_BYTES:
        raise ValueError(f"{text!r} is not between 1 byte and 1 PiB")
    return math.ceil(value)
