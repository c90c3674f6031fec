"""What a person types for the ledger's ranges and sizes (7d, 2026-11-01, 40GiB), and how
the ledger writes times, durations and figures for people.

Each parser returns a number in base units (seconds, Unix time, bytes) or raises ValueError
with a message that says what is accepted. Durations are written as --since takes them.
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


_DURATION_PARTS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1))


def duration_text(seconds: float) -> str:
    """A duration as people write it and --since takes it: 30d, 29d22h, 1h30m5s, 1s500ms
    (to the second from a minute on, else to the millisecond; days the largest unit: a
    month of 30d reads better than 4w2d)."""
    left = round(seconds) * 1000 if seconds >= 60 else round(seconds * 1000)
    parts = []
    for unit, milliseconds in _DURATION_PARTS:
        count, left = divmod(left, milliseconds)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def figure(value: float, decimals: int = 1) -> str:
    """A figure to `decimals` places; one that is not 0 but rounds to 0 as "<0.1" (0.0 beside
    a cost of 0.12 reads as nothing held)."""
    text = f"{value:.{decimals}f}"
    if value > 0 and not float(text):
        return f"<{10.0 ** -decimals:.{decimals}f}"
    return text


def hours(seconds: float) -> str:
    """GPU-seconds as GPU-hours for people (figure)."""
    return figure(seconds / 3600)


def utc(t: float) -> str:
    """A Unix time as the ledger's text shows it: 2026-11-24 22:47:50 UTC."""
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


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
