"""The type of a Unix time in a snapshot, which loading checks (model/serialize.py)."""

from __future__ import annotations

from typing import Annotated

# What the platform's time functions can turn into a date, and what any machine's clock can
# say (2^33 s is the year 2242): a document saying 1e18 is wrong.
UNIX_TIME = "unix time"
UNIX_TIME_RANGE = (0.0, float(1 << 33))
UnixTime = Annotated[float, UNIX_TIME]
