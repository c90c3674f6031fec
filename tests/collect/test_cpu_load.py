import os

import pytest
from fixtures.machines import cpu_jiffies, shared_tree

from hwinfo.collect.cpu_load import busy_ratios, parse_cpu_times, parse_load_average
from hwinfo.collect.sysfs import Root

STAT_BEFORE = """\
cpu  1000 0 500 8000 500 0 0 0 0 0
cpu0 500 0 250 4000 250 0 0 0 0 0
cpu1 500 0 250 4000 250 0 0 0 0 0
intr 123 0 0
ctxt 456
"""
# 100 ticks later: cpu0 ran 60 (20 of them a guest's, inside user), waited on I/O 10 and
# idled 30; cpu1 only idled.
STAT_AFTER = """\
cpu  1050 0 510 8130 510 0 0 0 20 0
cpu0 550 0 260 4030 260 0 0 0 20 0
cpu1 500 0 250 4100 250 0 0 0 0 0
intr 456 0 0
ctxt 789
"""


def test_busy_and_total_leave_guest_time_out() -> None:
    assert parse_cpu_times(STAT_AFTER) == {0: (550 + 260, 550 + 260 + 4030 + 260), 1: (750, 5100)}


def test_ratios_over_a_window() -> None:
    assert busy_ratios(parse_cpu_times(STAT_BEFORE), parse_cpu_times(STAT_AFTER)) == [0.6, 0.0]


def test_a_cpu_must_be_in_both_readings() -> None:
    after = parse_cpu_times(STAT_AFTER + "cpu2 9 0 9 9 0 0 0 0 0 0\n")
    assert busy_ratios(parse_cpu_times(STAT_BEFORE), after) == [0.6, 0.0]


def test_no_elapsed_time_and_backward_counters() -> None:
    before = {0: (100, 1000), 1: (100, 1000)}
    after = {0: (100, 1000), 1: (90, 1010)}  # iowait can step back: clamp, do not go negative
    assert busy_ratios(before, after) == [0.0, 0.0]


def test_old_kernels_with_fewer_fields() -> None:
    assert parse_cpu_times("cpu0 10 20 30 40\n") == {0: (60, 100)}


def test_fixture_stat() -> None:
    times = parse_cpu_times(Root(shared_tree("x86-2s-smt")).read_text("proc/stat"))
    assert sorted(times) == list(range(32))
    jiffies = cpu_jiffies(1209600 * 100, 5)
    assert times[5] == (sum(jiffies[:8]) - jiffies[3] - jiffies[4], sum(jiffies[:8]))


def test_missing_or_malformed() -> None:
    assert parse_cpu_times(None) == {}
    assert parse_cpu_times("cpu0 1 2 x 4\n\n") == {}
    assert parse_load_average(None) is None
    assert parse_load_average("1.0 2.0") is None
    assert parse_load_average("1.0 two 3.0 1/2 3") is None


def test_load_average() -> None:
    assert parse_load_average(Root(shared_tree("x86-2s-smt")).read_text("proc/loadavg")) == [
        12.43,
        11.87,
        10.02,
    ]


def test_live_load_average_matches_os() -> None:
    ours = parse_load_average(Root("/").read_text("proc/loadavg"))
    assert ours is not None and len(ours) == 3
    # /proc/loadavg rounds to 0.01, and the kernel may update it between the two reads.
    assert ours == pytest.approx(os.getloadavg(), abs=0.05)
