"""`hwinfo usage` reads the hourly roll-ups, and only those that hold what the minute records
of their hours hold: each lab's rules are altered so that using a roll-up shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.ledger_stack import LAB, ROLLUP_SECONDS, lab, recorded_until
from tests.deploy.test_ledger_rollups import minute_sums, usage, wait_for_rollups

HELD_ROLLUP = f"sum_over_time(hwinfo:ledger_held:share[{ROLLUP_SECONDS}s] offset 500ms)"
COUNT_ROLLUP = f"sum_over_time(hwinfo:ledger_evaluations:count[{ROLLUP_SECONDS}s] offset 500ms)"


def held(tmp_path: Path, rollup: str = "hwinfo:ledger_held:share_by_user_1h", by: str = "user",
         **rules: str) -> tuple[float, float]:
    """The held GPU-seconds of erin (by host: of her host, the lab's only one) over a range as
    `usage` tells them, and as the minute records do, once `rollup` has been recorded a few
    times."""
    with lab(tmp_path, {"idle": LAB["idle"]}, **rules) as (stack, _):
        wait_for_rollups(stack, rollup)
        until = recorded_until(stack)
        [told] = usage(stack, until, by).values()
        [truth] = minute_sums(stack, "hwinfo:ledger_held:share", until, by).values()
        return told["held_gpu_seconds"], truth


@pytest.mark.parametrize(("by", "rollup"), [("user", "hwinfo:ledger_held:share_by_user_1h"),
                                            ("host", "hwinfo:ledger_held:share_by_host_1h")])
def test_usage_reads_whole_hours_from_the_roll_ups(tmp_path: Path, by: str, rollup: str) -> None:
    told, truth = held(tmp_path, rollup, by, **{HELD_ROLLUP: f"2 * {HELD_ROLLUP}"})
    # Two or three of the range's 3.5 "hours" counted twice: erin holds one GPU, so each
    # whole hour read from the doubled roll-ups adds its ROLLUP_SECONDS evaluations again.
    assert told - truth in (pytest.approx(2 * ROLLUP_SECONDS), pytest.approx(3 * ROLLUP_SECONDS))


def test_a_roll_up_that_misses_minute_records_is_not_used(tmp_path: Path) -> None:
    # Each hour's count is one evaluation less than its minute records hold (as when some
    # arrive after the roll-up was made): its held figure is not trusted either.
    told, truth = held(tmp_path, **{HELD_ROLLUP: f"2 * {HELD_ROLLUP}",
                                    COUNT_ROLLUP: f"{COUNT_ROLLUP} - 1"})
    assert told == pytest.approx(truth, rel=1e-9)
