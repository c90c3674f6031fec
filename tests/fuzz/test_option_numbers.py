"""Numbers on the command line (--interval, --watch, --nvml-timeout): finite and bounded, or one line."""

from __future__ import annotations

import math

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwinfo.cli.options import DAY_SECONDS, Seconds

SECONDS = Seconds(0.1, DAY_SECONDS)
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats().map(lambda f: f"{f:e}"),
    st.integers().map(str),
    st.sampled_from(["nan", "NaN", "-nan", "inf", "+inf", "-Infinity", "1e309", "0x10", "1_0", " 5 ",
                     "", "∞", "٣"]),
    st.text(max_size=40),
)


@settings(max_examples=400)
@given(NUMBERS)
def test_seconds_are_finite_and_bounded_or_refused_in_one_line(text: str) -> None:
    try:
        value = SECONDS.convert(text, None, None)
    except click.BadParameter as exc:
        message = exc.format_message()
        assert "\n" not in message and message
        return
    assert math.isfinite(value) and 0.1 <= value <= DAY_SECONDS


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e309", "86400.5", "0.09", "-1"])
def test_refused(text: str) -> None:
    with pytest.raises(click.BadParameter):
        SECONDS.convert(text, None, None)


@pytest.mark.parametrize(("text", "value"), [("0.1", 0.1), ("2", 2.0), ("86400", 86400.0), (" 5 ", 5.0)])
def test_accepted(text: str, value: float) -> None:
    assert SECONDS.convert(text, None, None) == value
