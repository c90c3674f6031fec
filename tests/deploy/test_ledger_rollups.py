"""The hourly roll-ups on both engines: a range read from roll-ups and minute records gives
what the minute records alone give, to the last evaluation (roll-ups every 5 s here)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.deploy.ledger_stack import ENGINES, ROLLUP_SECONDS, answer, lab
from tests.deploy.prometheus_stack import Stack, wait_for

# Three hours of roll-ups and then some: the range below holds at least two whole ones.
RANGE_SECONDS = 3.5 * ROLLUP_SECONDS
ROLLUPS_FIRST = 4
# usage's figures and the minute records they sum.
COMPARED = (("held_gpu_seconds", "hwinfo:ledger_held:share"),
            ("busy_gpu_seconds", "hwinfo:ledger_busy:share"),
            ("idle_held_gpu_seconds", "hwinfo:ledger_idle:share"),
            ("unknown_gpu_seconds", "hwinfo:ledger_unknown:share"),
            ("energy_joules", "hwinfo:ledger_power:watts"))


def wait_for_rollups(stack: Stack, *records: str) -> None:
    """Until every series of each roll-up `record` (`_1h`) has been rolled up ROLLUPS_FIRST
    times, so that the range lies after its minute series began and became searchable: on
    VictoriaMetrics a new series is found a few seconds after it is written, and a roll-up
    every 5 s (of records written just before it) can miss such a start."""
    window = f"{round((ROLLUPS_FIRST + 0.5) * ROLLUP_SECONDS)}s"
    every = " and ".join(f"min(count_over_time({record}[{window}])) >= {ROLLUPS_FIRST}"
                         for record in records)
    wait_for(f"{ROLLUPS_FIRST} roll-ups of every series of {', '.join(records)}",
             lambda: stack.query(every), timeout=(ROLLUPS_FIRST + 3) * ROLLUP_SECONDS + 30)


@pytest.fixture(scope="module", params=ENGINES)
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Stack]:
    with lab(tmp_path_factory.mktemp("rollups"), engine=request.param) as (running, _):
        wait_for_rollups(running, *(f"{record}{suffix}" for _, record in COMPARED
                                    for suffix in ("_by_user_1h", "_by_host_1h")))
        yield running


# usage's --by and the label it groups by.
LABELS = {"user": "user", "host": "instance", "model": "model"}


def minute_sums(stack: Stack, record: str, until: float, by: str = "user",
                over: str = "sum") -> dict[str, float]:
    """Each user's (host's, model's) sum of one minute record over the range (or, with `over`
    "max", its peak): the truth, read without roll-ups."""
    label = LABELS[by]
    if by == "model":  # a GPU's model is its name in hwinfo_gpu_info
        record = (f'{over}_over_time({record}[{round(RANGE_SECONDS * 1000)}ms]) * on(instance, gpu) '
                  f'group_left(model) label_replace(hwinfo_gpu_info, "model", "$1", "name", "(.*)")')
    else:
        record = f"{over}_over_time({record}[{round(RANGE_SECONDS * 1000)}ms])"
    data = stack.api("/api/v1/query", {"query": f"{over} by ({label}) ({record})",
                                       "time": f"{until:.3f}"}, post=True)
    return {series["metric"][label]: float(series["value"][1]) for series in data["result"]}


def usage(stack: Stack, until: float, by: str = "user") -> dict[str, Any]:
    document = answer("usage", "--prometheus", stack.prometheus, "--by", by,
                      "--since", f"{round(RANGE_SECONDS * 1000)}ms", "--until", f"{until:.3f}")
    return {row[by]: row for row in document["rows"]}


def _agrees(stack: Stack, until: float, by: str) -> bool:
    """usage's figures up to `until` are the minute records' sums (AssertionError: not yet)."""
    truth = {record: minute_sums(stack, record, until, by) for _, record in COMPARED}
    rows = usage(stack, until, by)
    for field, record in COMPARED:
        assert truth[record], record
        for key, seconds in truth[record].items():
            assert rows[key][field] == pytest.approx(seconds, rel=1e-9), (key, field, rows[key][field], seconds)
    peaks = minute_sums(stack, "hwinfo_gpu_user_memory_used_bytes", until, by, over="max")
    assert {key: rows[key]["peak_memory_bytes"] for key in peaks} == peaks
    if by == "user":
        assert peaks["erin"] == 9000 * 2**20
    return True


@pytest.mark.parametrize("by", list(LABELS))
def test_roll_ups_and_minutes_give_what_minutes_alone_give(stack: Stack, by: str) -> None:
    until = time.time() - 2
    # Asked again until every record up to `until` has arrived: vmalert stamps a record with
    # its evaluation's instant, the lookback (2 s here) before it writes it, and a loaded
    # machine writes it later still, so the last evaluation's records can arrive between the
    # two queries. A roll-up that missed a record does not heal: it still fails.
    wait_for(f"usage --by {by} to give what the minute records sum to",
             lambda: _agrees(stack, until, by), timeout=60)
    # The range did read roll-ups: at least two of them lie inside it.
    inside = stack.api("/api/v1/query", {
        "query": f"count_over_time(hwinfo:ledger_evaluations:count_1h[{round(RANGE_SECONDS)}s])",
        "time": f"{until:.3f}"}, post=True)["result"]
    assert float(inside[0]["value"][1]) >= 2
