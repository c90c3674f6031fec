"""The idle-holder alert through a daemon restart, on both engines, with the rules every 4 s
(the messy lab's run every second): whatever the interval, an evaluation that finds the GPU
unseen keeps the alert from the hold's idle records of earlier evaluations, and the first
that finds it seen again judges it idle from raw series, so the alert keeps firing and keeps
its start. (It read its own evaluation's records, which vmalert writes back after the rules
that read them: on VictoriaMetrics a restart could start its `for:` over.)"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.deploy.ledger_stack import (
    ENGINES,
    LAB,
    alert_of,
    idle_in_history,
    lab,
    restart_under_alert,
)
from tests.deploy.prometheus_stack import wait_for

EVERY = 4  # seconds between evaluations of the minute rules here
FOR = "8s"  # the alert's `for`, two evaluations


@pytest.mark.parametrize("engine", ENGINES)
def test_the_idle_alert_keeps_firing_and_its_start_through_a_restart(engine: str, tmp_path: Path) -> None:
    with ExitStack() as running:
        stack, daemons = running.enter_context(lab(
            tmp_path, {"idle": LAB["idle"]}, engine=engine, every=EVERY, rollup_seconds=3600,
            **{"for: 1h": f"for: {FOR}"}))
        with stack.logs_on_failure():
            wait_for("erin's idle-holder alert to fire",
                     lambda: alert_of(stack, "erin")[0] == "firing", timeout=120)
            wait_for("erin's idle hold to be found in the engine's history",
                     lambda: idle_in_history(stack, "erin"), timeout=60)
            _, during = restart_under_alert(running, daemons["idle"], tmp_path / "idle.json",
                                            stack, "erin", EVERY)
    assert len(during) >= 3
    assert {state for state, _ in during} == {"firing"}, during
    assert len({active for _, active in during}) == 1, during
