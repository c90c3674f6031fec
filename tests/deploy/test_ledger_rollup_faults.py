"""Roll-ups that cannot be trusted are not read: one missing or failing, or a group interval
edited apart from the rules' windows (each hour then counted more than once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.ledger_stack import ROLLUP_SECONDS
from tests.deploy.test_ledger_rollup_checks import COUNT_ROLLUP, held


def test_a_missing_roll_up_sends_usage_to_minute_records(tmp_path: Path) -> None:
    # The other roll-ups are there: the hours would have added no held time at all.
    told, truth = held(tmp_path, "hwinfo:ledger_held_renamed:share_by_user_1h",
                       **{"record: hwinfo:ledger_held:share_by_user_1h":
                          "record: hwinfo:ledger_held_renamed:share_by_user_1h"})
    assert told == pytest.approx(truth, rel=1e-9)


def test_roll_ups_more_often_than_their_hours_are_not_read(tmp_path: Path) -> None:
    # Every half "hour" a roll-up of a whole one: each minute record counted twice, evaluations
    # included, which the runs' checks see.
    told, truth = held(tmp_path, **{f"interval: {ROLLUP_SECONDS}s": f"interval: {ROLLUP_SECONDS // 2}s",
                                    COUNT_ROLLUP: COUNT_ROLLUP})
    assert told == pytest.approx(truth, rel=1e-9)
