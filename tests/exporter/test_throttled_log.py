import logging

import pytest

from hwinfo.exporter.throttled_log import ThrottledLog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_line_per_kind_per_interval_then_the_count_held_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    throttled = ThrottledLog(logging.getLogger("test.throttled"), interval=60, clock=clock)
    with caplog.at_level(logging.INFO, logger="test.throttled"):
        assert throttled.warning("a", "first %s", "a")
        assert throttled.warning("b", "first %s", "b")  # another kind has its own interval
        assert not any(throttled.warning("a", "again") for _ in range(5))
        clock.now += 59.9
        assert not throttled.warning("a", "again")
        clock.now += 0.1
        assert throttled.warning("a", "later %d", 7)
    assert caplog.messages == [
        "first a", "first b", "later 7 (and 6 more since the last such line)",
    ]


def test_a_traceback_only_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    throttled = ThrottledLog(logging.getLogger("test.throttled.tb"), interval=0)
    for level in (logging.INFO, logging.DEBUG):
        with caplog.at_level(level, logger="test.throttled.tb"):
            try:
                raise ValueError("boom")
            except ValueError:
                throttled.warning("x", "failed", exc_info=True)
    info, debug = caplog.records
    assert not info.exc_info and debug.exc_info is not None
