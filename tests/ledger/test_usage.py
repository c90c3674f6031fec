"""How usage turns the rules' sums into rows, totals, costs and advice (no Prometheus here:
the end-to-end test asks a real one)."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from hwinfo.ledger import queries, rollup
from hwinfo.ledger.prices import Prices
from hwinfo.ledger.prometheus import LedgerError, RuleGroup, Sample
from hwinfo.ledger.queries import GPUS_ROLLUP
from hwinfo.ledger.units import duration_seconds
from hwinfo.ledger.usage import (
    MAX_SERIES,
    QUERIES_AT_ONCE,
    WindowError,
    _models,
    _rolled_gpus,
    _rows,
    _total,
    ledger_group,
    merged,
    usage,
)

A100 = "NVIDIA A100-SXM4-80GB"
GPU = {"job": "j", "instance": "h", "gpu": "0", "uuid": "G"}


def sample(measure: str, value: float, **labels: str) -> Sample:
    return Sample({"measure": measure, **labels}, value)


def test_the_ledger_group_is_found_by_its_held_record() -> None:
    groups = [RuleGroup("other", 15, frozenset({"x:y"})),
              RuleGroup("mine", 60, frozenset({"hwinfo:ledger_held:share"}))]
    assert ledger_group(groups, "u").interval_seconds == 60
    with pytest.raises(LedgerError, match="add prometheus/hwinfo-ledger.yml"):
        ledger_group(groups[:1], "u")


def test_rows_add_up_and_accounted_time_is_held_but_neither_busy_nor_idle() -> None:
    samples = [
        sample("held", 10, user="ann", model=A100), sample("busy", 6, user="ann", model=A100),
        sample("idle", 4, user="ann", model=A100), sample("utilization", 3, user="ann", model=A100),
        sample("accounted", 30, user="ann", model=A100),
        sample("accounted_utilization", 15, user="ann", model=A100),
        sample("energy", 100, user="ann", model=A100),
        sample("peak_memory", 2**30, user="ann", model=A100),
        sample("held", 1, user="bo", model="Tesla T4"), sample("unknown", 1, user="bo", model="Tesla T4"),
    ]
    rows = _rows(samples, "user", 60.0, Prices({A100: 1.0}, 0.5, "EUR"), {})
    ann, bo = rows
    assert ann.key == "ann" and ann.held_gpu_seconds == 10 * 60 + 30
    assert ann.busy_gpu_seconds + ann.idle_held_gpu_seconds + ann.unknown_gpu_seconds \
        + ann.accounted_gpu_seconds == ann.held_gpu_seconds
    assert ann.mean_utilization_ratio == pytest.approx((3 * 60 + 15) / (10 * 60 + 30))
    assert ann.cost == pytest.approx(630 / 3600 * 1.0 + 6000 / 3.6e6 * 0.5)
    assert bo.mean_utilization_ratio is None  # all of it without an activity signal
    assert bo.cost == pytest.approx(0) and bo.unpriced_models == {"Tesla T4"}
    total = _total(rows, Prices({A100: 1.0}, 0.5, "EUR"))
    assert total.held_gpu_seconds == ann.held_gpu_seconds + bo.held_gpu_seconds
    assert total.unpriced_models == {"Tesla T4"} and total.peak_memory_bytes == 2**30


def test_a_user_with_every_figure_zero_is_no_row() -> None:
    rows = _rows([sample("accounted", 0, user="(unknown)", gpu="0", uuid="G", instance="h", job="j"),
                  sample("held", 1, user="ann", model=A100)], "user", 60.0, None, {})
    assert [row.key for row in rows] == ["ann"]
    assert rows[0].unseen_gpu_seconds is None  # a user's row has no unseen time of its own


def test_figures_per_gpu_take_their_gpus_model() -> None:
    # Accounting counters come per GPU and user, without a model: the GPUs seen give it, and
    # the price follows it.
    gpu = {"job": "j", "instance": "h", "gpu": "0", "uuid": "G"}
    rows = _rows([sample("accounted", 7200, user="ann", **gpu),
                  sample("accounted", 3600, user="bo", **{**gpu, "gpu": "1", "uuid": "H"})],
                 "user", 60.0, Prices({A100: 2.0}, None, "EUR"), {("j", "h", "0", "G"): A100})
    assert [(row.key, row.cost, row.unpriced_models) for row in rows] == [
        ("ann", 4.0, set()), ("bo", 0.0, {""})]


class _Recorded:
    """Stands in for Prometheus's answers (the end-to-end tests ask a real one): the ledger's
    group at a 60 s interval (no roll-ups: the range is read in minutes), and these samples
    for every query of usage, with one GPU seen unless told otherwise."""

    url = "http://prometheus.test"

    def __init__(self, samples: list[Sample], gpus: tuple[dict[str, str], ...] = (GPU,),
                 interval: float = 60) -> None:
        self.samples = samples + [sample("gpus", 1, **{"model": A100, **gpu}) for gpu in gpus]
        self.interval = interval

    def rule_groups(self) -> list[RuleGroup]:
        return [RuleGroup("hwinfo-ledger", self.interval, frozenset({"hwinfo:ledger_held:share"}))]

    def query(self, expr: str, at: float) -> list[Sample]:
        """The samples for the range's one part; none for the accounting counters' query."""
        return [] if "increase(" in expr else self.samples




@pytest.mark.parametrize(("span", "samples", "expected"), [
    (30, [sample("evaluations", 1)], "shorter than the ledger rules' interval"),
    (600, [], "no evaluation of the ledger's rules falls in the range"),
])
def test_ranges_the_rules_cannot_answer_are_refused(
        span: float, samples: list[Sample], expected: str) -> None:
    with pytest.raises(WindowError, match=expected):
        usage(_Recorded(samples), 10_000 - span, 10_000, "user")  # type: ignore[arg-type]


def test_time_the_rules_did_not_cover_is_noted() -> None:
    # 3 evaluations of a minute in 10 minutes: 7 minutes are in no figure.
    ledger = usage(_Recorded([sample("evaluations", 3),  # type: ignore[arg-type]
                              sample("held", 3, user="ann", model=A100)]), 9400, 10_000, "user")
    assert ledger.covered_seconds == 180
    assert any(n.startswith("the rules evaluated 3m of the range's 10m") for n in ledger.notes)
    # Shares recorded by rules older than the count: said, not refused.
    older = usage(_Recorded([sample("held", 3, user="ann", model=A100)]),  # type: ignore[arg-type]
                  9400, 10_000, "user")
    assert older.covered_seconds is None and any("did not count" in n for n in older.notes)


def test_a_short_range_s_whole_evaluations_are_noted() -> None:
    """A 5 s range at rules every 4 s holds two evaluations (at 0.5 s and 4.5 s into it),
    each counted for its whole 4 s: ann, alone on the GPU, is charged 8 GPU-s in 5 s. Said;
    a 10 s range at 1 s rules with one evaluation more (11 s) is not worth a note."""
    ledger = usage(_Recorded([sample("evaluations", 2), sample("held", 2, user="ann", model=A100)],
                             interval=4), 9995, 10_000, "user")  # type: ignore[arg-type]
    assert (ledger.covered_seconds, ledger.rows[0].held_gpu_seconds) == (8, 8)
    assert ("the figures stand for the rules' 8s of evaluations in the range (each counts its "
            "whole 4s), not the range's 5s") in ledger.notes
    longer = usage(_Recorded([sample("evaluations", 11), sample("held", 11, user="ann", model=A100)],
                             interval=1), 9990, 10_000, "user")  # type: ignore[arg-type]
    assert not any(n.startswith("the figures stand for") for n in longer.notes)


def test_a_range_that_ends_in_the_future_says_so_and_no_missed_evaluations() -> None:
    # 3 evaluations of a minute: all of the 3 minutes up to now; the 10 to come are unseen
    # because they have not happened, which is not the rules' fault.
    now = time.time()
    ledger = usage(_Recorded([sample("evaluations", 3),  # type: ignore[arg-type]
                              sample("held", 3, user="ann", model=A100)]),
                   now - 180, now + 600, "user")
    [ahead] = [n for n in ledger.notes if n.startswith("the range ends")]
    seconds = duration_seconds(ahead.removeprefix("the range ends ").removesuffix(
        " from now: what is still to come is in no figure"))
    assert 590 <= seconds <= 600
    assert not any(n.startswith("the rules evaluated") for n in ledger.notes)


@pytest.mark.parametrize(("ahead", "expected"), [(None, "starts before 1970"),
                                                 (3600.0, "starts after now")])
def test_a_range_with_nothing_recorded_in_it_is_refused(ahead: float | None, expected: str) -> None:
    since = -100.0 if ahead is None else time.time() + ahead
    with pytest.raises(WindowError, match=expected):
        usage(_Recorded([]), since, since + 3600, "user")  # type: ignore[arg-type]


@pytest.mark.parametrize("samples", [
    # 1e9 GPU-seconds held in an hour of one GPU.
    [sample("evaluations", 60), sample("held", 1e9 / 60, user="ann", model=A100)],
    # Busy five times held.
    [sample("evaluations", 60), sample("held", 30, user="ann", model=A100),
     sample("busy", 150, user="ann", model=A100)],
])
def test_figures_the_gpus_seen_cannot_hold_are_refused(samples: list[Sample]) -> None:
    with pytest.raises(LedgerError, match="no figure can be trusted"):
        usage(_Recorded(samples), 10_000 - 3600, 10_000, "user")  # type: ignore[arg-type]


def test_each_gpu_seen_counts_once_under_either_name() -> None:
    # One GPU under two names (a driver upgrade) and another: two GPUs, so 2 GPU-hours fit
    # in an hour and 2.5 do not (three GPUs would hold them).
    seen = ({**GPU, "model": A100}, {**GPU, "model": A100.removeprefix("NVIDIA ")},
            {**GPU, "gpu": "1", "uuid": "H", "model": A100})

    def held(gpu_hours: float) -> _Recorded:
        return _Recorded([sample("evaluations", 60),
                          sample("held", gpu_hours * 60, user="ann", model=A100)], seen)

    ledger = usage(held(2), 10_000 - 3600, 10_000, "user")  # type: ignore[arg-type]
    assert ledger.total.held_gpu_seconds == 7200
    with pytest.raises(LedgerError, match="2.5 GPU-hours held in 1h of 2 GPUs cannot be"):
        usage(held(2.5), 10_000 - 3600, 10_000, "user")  # type: ignore[arg-type]
    assert _models(seen) == {("j", "h", "0", "G"): A100, ("j", "h", "1", "H"): A100}


class _Index:
    """Answers series() with these label sets, and keeps what it was asked."""

    def __init__(self, found: list[dict[str, str]]) -> None:
        self.found, self.asked = found, []

    def series(self, selectors: list[str], start: float, end: float) -> list[dict[str, str]]:
        self.asked.append((selectors, start, end))
        return self.found


def test_the_gpus_of_the_hours_come_from_the_index_over_the_roll_ups_read() -> None:
    # Roll-ups evaluated hourly from 7,200 to 14,400 s, read for (3,500, 16,000]: the index
    # is asked for the roll-up's GPUs between the first and the last evaluation read.
    plan = rollup.plan([3600.0 * n for n in range(1, 6)], 3500, 16_000, 3600, 60)
    index = _Index([{"__name__": GPUS_ROLLUP, **GPU, "model": A100}])
    assert _rolled_gpus(index, plan) == index.found  # type: ignore[arg-type]
    assert index.asked == [([GPUS_ROLLUP], 7200.0, 14_400.0)]
    # A range read in minutes only asks nothing of the index.
    assert _rolled_gpus(index, rollup.minutes_only(3500, 16_000)) == []  # type: ignore[arg-type]
    assert len(index.asked) == 1


def test_no_gpu_seen_in_the_range_is_said() -> None:
    with pytest.raises(LedgerError, match="has no hwinfo series between 1970-01-01 01:46:40 UTC and "
                       "1970-01-01 02:46:40 UTC"):
        usage(_Recorded([sample("evaluations", 60)], ()), 6400, 10_000, "user")  # type: ignore[arg-type]


def test_the_parts_of_a_range_add_up() -> None:
    gpu = {"model": A100, **GPU}
    parts = [[sample("held", 3, user="ann", model=A100), sample("peak_memory", 5, user="ann", model=A100),
              sample("gpus", 1, **gpu), sample("evaluations", 10)],
             [sample("held", 4, user="ann", model=A100), sample("peak_memory", 9, user="ann", model=A100),
              sample("gpus", 1, **gpu), sample("evaluations", 50), sample("held", 1, user="bo", model=A100)]]
    assert sorted((s.labels["measure"], s.labels.get("user"), s.value) for s in merged(parts)) == [
        ("evaluations", None, 60), ("gpus", None, 1), ("held", "ann", 7), ("held", "bo", 1),
        ("peak_memory", "ann", 9)]


def _waiting_for_a_slot() -> int:
    """How many of `together`'s threads wait for a slot (in threading's Semaphore.acquire)."""
    frames = sys._current_frames()
    waiting = 0
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1) if thread.name == "hwinfo-query" else None
        while frame is not None and not (frame.f_code.co_name == "acquire"
                                         and frame.f_code.co_filename == threading.__file__):
            frame = frame.f_back
        waiting += frame is not None
    return waiting


class _Parts(_Recorded):
    """Answers each query of usage alone, with `answer(expr)`; hourly roll-ups evaluated on
    the hour, so that a week is read in parts. Told how many queries will come, each holds
    its answer until all the others not answered yet are asked or wait for a slot: as many
    are asked at once as usage lets be, however slowly its threads start."""

    def __init__(self, answer: object, queries: int = 0) -> None:
        super().__init__([])
        self.answer = answer
        self.queries = queries
        self.at_once = self.most = self.asked = self.answered = 0
        self.lock = threading.Lock()

    def _hold(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with self.lock:
                others = self.queries - self.answered - self.at_once
            if _waiting_for_a_slot() >= others:
                return
            time.sleep(0.001)

    def rule_groups(self) -> list[RuleGroup]:
        records = frozenset(queries.rollups("user") | {queries.HELD_RECORD})
        return [RuleGroup("hwinfo-ledger", 60, frozenset({queries.HELD_RECORD})),
                RuleGroup("hwinfo-ledger-hourly", 3600, records)]

    def sample_times(self, expr: str, at: float) -> list[float]:
        return [3600.0 * n for n in range(1, int(at // 3600) + 1)]

    def series(self, selectors: list[str], start: float, end: float) -> list[dict[str, str]]:
        return [{**GPU, "model": A100}]

    def query(self, expr: str, at: float) -> list[Sample]:
        with self.lock:
            self.at_once += 1
            self.asked += 1
            self.most = max(self.most, self.at_once)
        try:
            if self.queries:
                self._hold()
            return self.answer(expr)  # type: ignore[operator]
        finally:
            with self.lock:
                self.at_once -= 1
                self.answered += 1


WEEK_UNTIL = 1_700_000_000.0


def test_a_range_s_parts_are_asked_a_few_at_a_time_and_their_series_are_bounded() -> None:
    # Every other hour missed: 8 runs of roll-ups and the minutes around them, 18 queries,
    # each answering a minute of ann's.
    def every(expr: str) -> list[Sample]:
        return [sample("evaluations", 1), sample("held", 1, user="ann", model=A100)]

    parts = _Parts(every, queries=18)
    parts.sample_times = lambda expr, at: [  # type: ignore[method-assign]
        3600.0 * n for n in range(int(at // 3600) - 16, int(at // 3600) + 1, 2)]
    ledger = usage(parts, WEEK_UNTIL - 16 * 3600, WEEK_UNTIL, "user")  # type: ignore[arg-type]
    assert parts.asked == 18 and ledger.total.held_gpu_seconds == 18 * 60
    assert parts.most == QUERIES_AT_ONCE

    def flood(expr: str) -> list[Sample]:
        return [sample("held", 0, user=f"u{n}", model=A100) for n in range(MAX_SERIES // 3)]

    with pytest.raises(LedgerError, match=f"more than {MAX_SERIES:,} series"):
        usage(_Parts(flood), WEEK_UNTIL - 7 * 86400, WEEK_UNTIL, "user")  # type: ignore[arg-type]


def test_a_check_that_names_no_run_is_ignored() -> None:
    answer = _Recorded([sample("evaluations", 60), sample("checkfoo", 5), sample("check", 5),
                        sample("check\u0663", 5), sample("held", 60, user="ann", model=A100)])
    ledger = usage(answer, 10_000 - 3600, 10_000, "user")  # type: ignore[arg-type]
    assert [row.key for row in ledger.rows] == ["ann"]
