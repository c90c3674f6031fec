"""How a range is cut into hourly roll-ups and minute records: truths worked out by hand."""

from __future__ import annotations

import itertools

from hwinfo.ledger.rollup import MAX_RUNS, Part, minutes_only, plan

HOUR, MINUTE = 3600.0, 60.0


def test_whole_hours_in_the_middle_minutes_at_the_edges() -> None:
    # Roll-ups evaluated on the hour hold (t - 1h - 30 s, t - 30 s]: those at 2h and 3h lie
    # inside (1000, 11000]; the one at 1h begins before it, the one at 4h ends after it.
    cut = plan([HOUR, 2 * HOUR, 3 * HOUR, 4 * HOUR], 1000, 11000, HOUR, MINUTE)
    assert cut.parts == (Part(1000, HOUR - 30, False),
                         Part(HOUR - 30, 3 * HOUR - 30, True, 2 * HOUR, 3 * HOUR, 2),
                         Part(3 * HOUR - 30, 11000, False))
    # At until: the run's window takes the roll-ups at 2h and 3h only; each edge its minutes.
    assert [text for text, _ in cut.ranges()] == [
        "[2570000ms] offset 7430000ms", "[3600001ms] offset 200000ms", "[230000ms]"]
    # The run's check: its roll-ups, and the minutes of its two hours.
    assert cut.checks() == [("[3600001ms] offset 200000ms", "[7200000ms] offset 230000ms")]
    assert cut.whole == "[10000000ms]"


def test_a_missed_hour_is_read_in_minutes_between_two_runs() -> None:
    cut = plan([2 * HOUR, 4 * HOUR, 5 * HOUR], 0, 6 * HOUR, HOUR, MINUTE)
    assert [(p.start, p.end, p.rolled) for p in cut.parts] == [
        (0, HOUR - 30, False), (HOUR - 30, 2 * HOUR - 30, True),
        (2 * HOUR - 30, 3 * HOUR - 30, False), (3 * HOUR - 30, 5 * HOUR - 30, True),
        (5 * HOUR - 30, 6 * HOUR, False)]


def test_roll_ups_of_another_phase_are_never_counted_twice() -> None:
    # Backfilled roll-ups on the hour, live ones at 20 minutes past: the live one at 2h20
    # overlaps the backfilled hour ending at 2h, so it is skipped, and the run after it starts
    # anew, its window beginning after the skipped one.
    times = [HOUR, 2 * HOUR, 2 * HOUR + 1200, 3 * HOUR + 1200, 4 * HOUR + 1200]
    cut = plan(times, -100, 5 * HOUR, HOUR, MINUTE)
    rolled = [(p.first, p.last) for p in cut.parts if p.rolled]
    assert rolled == [(HOUR, 2 * HOUR), (3 * HOUR + 1200, 4 * HOUR + 1200)]
    spans = [(p.start, p.end) for p in cut.parts]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))  # a partition of the range
    assert spans[0][0] == -100 and spans[-1][1] == 5 * HOUR


def test_no_roll_ups_or_too_many_runs_read_minutes() -> None:
    assert plan([], 0, 10 * HOUR, HOUR, MINUTE) == minutes_only(0, 10 * HOUR)
    assert plan([HOUR], 0, HOUR - 1, HOUR, MINUTE) == minutes_only(0, HOUR - 1)
    # Every other hour missed: more runs than MAX_RUNS.
    sparse = [2 * n * HOUR for n in range(1, MAX_RUNS + 3)]
    assert plan(sparse, 0, sparse[-1] + HOUR, HOUR, MINUTE) == minutes_only(0, sparse[-1] + HOUR)


def test_each_part_has_its_own_range_selector() -> None:
    cut = plan([2 * HOUR], 0, 3 * HOUR, HOUR, MINUTE)
    # Minutes to 1h - 30 s, the roll-up evaluated at 2 h (its one sample), minutes to 3 h.
    assert [(text, part.rolled) for text, part in cut.ranges()] == [
        ("[3570000ms] offset 7230000ms", False), ("[1ms] offset 3600000ms", True),
        ("[3630000ms]", False)]
    assert minutes_only(0, 60).ranges()[0][0] == "[60000ms]"


def test_a_run_refused_is_read_in_minutes_joined_to_its_neighbours() -> None:
    cut = plan([2 * HOUR, 4 * HOUR, 5 * HOUR], 0, 6 * HOUR, HOUR, MINUTE)
    again = cut.in_minutes({1})
    assert [(p.start, p.end, p.rolled) for p in again.parts] == [
        (0, HOUR - 30, False), (HOUR - 30, 2 * HOUR - 30, True), (2 * HOUR - 30, 6 * HOUR, False)]
    assert len(again.checks()) == 1
    assert cut.in_minutes({0, 1}) == minutes_only(0, 6 * HOUR)
