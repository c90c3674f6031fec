"""The ledger's parsers of what a person types (durations, times and sizes) and its writers
of durations and figures for people."""

from __future__ import annotations

import pytest

from hwinfo.ledger.units import duration_seconds, duration_text, figure, size_bytes, unix_time


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30), ("12h", 43200), ("7d", 604800), ("1h30m", 5400), ("2w", 1209600),
    ("1y", 31536000), ("500ms", 0.5), (" 7d ", 604800),
    ("0000000000001h30m", 5400),  # leading zeros are no reason to cut a number short
])
def test_durations(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "d", "7 d", "-7d", "7.5d", "1e3s", "7D", "٣d", "0s",
                                  "11y", "9" * 40 + "d", "7d\n1h", "1h1h", "30m1h",
                                  "1s1ms1s",
                                  "1000000000000ms", "3000000000000ms"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        duration_seconds(text)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(("text", "expected"), [
    ("now", 1000.0), ("1700000000", 1700000000.0), ("2026-11-01", 1793491200.0),
    ("2026-11-01T08:00:00Z", 1793520000.0), ("2026-11-01T09:00:00+01:00", 1793520000.0),
])
def test_times(text: str, expected: float) -> None:
    assert unix_time(text, now=1000.0) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "nan", "inf", "-1", "0", "1e300", "2026-13-01"])
def test_bad_times(text: str) -> None:
    with pytest.raises(ValueError):
        unix_time(text, now=1000.0)


@pytest.mark.parametrize(("text", "expected"), [
    ("40GiB", 40 * 2**30), ("40 GiB", 40 * 2**30), ("512MiB", 512 * 2**20), ("80GB", 80 * 10**9),
    ("1.5GiB", 3 * 2**29), ("1024", 1024), ("40gib", 40 * 2**30),
    ("000000000000000000040GiB", 40 * 2**30), ("1PiB", 2**50), ("0.5GiB", 2**29),
])
def test_sizes(text: str, expected: int) -> None:
    assert size_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "GiB", "40XB", "-1GiB", "0", "2PiB", "1e3GiB", "nan", "٣GiB",
                                  "1" + "0" * 20 + "b"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError):
        size_bytes(text)


@pytest.mark.parametrize(("seconds", "text"), [
    (30 * 86400, "30d"), (30 * 86400 - 7200, "29d22h"), (5400, "1h30m"), (3605.4, "1h5s"),
    (60, "1m"), (59.9996, "1m"), (1.5, "1s500ms"), (0.001, "1ms"), (0, "0s"),
    (2_591_999.9999999, "30d"),  # until - since of two float times
])
def test_durations_are_written_as_since_takes_them(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text
    assert text == "0s" or duration_seconds(text) == pytest.approx(seconds, abs=0.5)


@pytest.mark.parametrize(("value", "decimals", "text"), [
    (0.0, 1, "0.0"), (0.047, 1, "<0.1"), (0.05, 1, "0.1"), (12.34, 1, "12.3"),
    (0.001, 2, "<0.01"), (0.118, 2, "0.12"), (1e-300, 1, "<0.1"),
])
def test_a_figure_that_is_not_zero_is_never_written_as_zero(value: float, decimals: int,
                                                             text: str) -> None:
    assert figure(value, decimals) == text
