"""The board's facts from each engine the ledger is tested on: ledger_stack's lab, whose truth
is known (alice on 8 busy GPUs; erin holding one idle GPU beside a free one; carol on a
3g.40gb), asked as the board asks it (the page itself: tests/browser/test_board_page.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hwinfo.ledger import config
from hwinfo.ledger.board import Board, board
from hwinfo.ledger.prometheus import Prometheus
from tests.deploy.ledger_stack import ENGINES, LAB, lab
from tests.deploy.prometheus_stack import wait_for


@pytest.mark.parametrize("engine", ENGINES)
def test_the_idle_hold_and_since_when_on_each_engine(tmp_path: Path, engine: str) -> None:
    with lab(tmp_path, LAB, engine=engine) as (stack, daemons):
        prometheus = Prometheus(config.resolve(stack.prometheus, None), timeout=10)
        started = time.time()

        def judged() -> Board | None:
            now = board(prometheus, time.time())
            return now if now.idle and now.idle[0].since is not None else None

        # vmalert writes its records and alert state a little behind: up to a minute here.
        lab_now = wait_for("the idle hold and its alert", judged, timeout=120)
        assert lab_now.idle_known
        (hold,) = lab_now.idle
        idle = daemons["idle"].removeprefix("http://")
        assert (hold.instance, hold.gpu, hold.gpu_instance_id, hold.user) == (idle, "0", "", "erin")
        assert started - 60 <= hold.since <= time.time()  # type: ignore[operator]
        states = {h.instance: [(g.index, g.free, sorted(g.holders)) for g in h.gpus]
                  for h in lab_now.fleet.hosts}
        assert states[idle] == [("0", False, ["erin"]), ("1", True, [])]
        assert states[daemons["busy"].removeprefix("http://")] == [
            (str(i), False, ["alice"]) for i in range(8)]
        assert all(h.state == "up" for h in lab_now.fleet.hosts)
