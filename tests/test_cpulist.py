"""CPU list strings: what sysfs writes parses; what no kernel writes is refused in one line, bounded."""

from __future__ import annotations

import pytest

from hwinfo.cpulist import MAX_CPUS, format_cpulist, parse_cpulist


@pytest.mark.parametrize(("text", "cpus"), [
    ("0-3,8-11\n", [0, 1, 2, 3, 8, 9, 10, 11]),
    ("5", [5]),
    ("", []),
    ("\n", []),
    ("0-3, 8", [0, 1, 2, 3, 8]),
    (f"0-{MAX_CPUS - 1}", list(range(MAX_CPUS))),
])
def test_lists_the_kernel_writes(text: str, cpus: list[int]) -> None:
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize(("text", "says"), [
    ("0-99999999", "CPU 99999999 is beyond the most this hwinfo accepts (65535)"),
    (str(MAX_CPUS), "CPU 65536 is beyond"),
    ("0-65535,0-65535", "more than 65536 CPUs listed"),
    ("3-1", "bad CPU range '3-1'"),
    ("1_000", "bad CPU list entry '1_000'"),
    ("٣", "bad CPU list entry '٣'"),
    ("-1", "bad CPU list entry '-1'"),
    ("0-3:2", "bad CPU list entry '0-3:2'"),
    ("9" * 5000, "bad CPU list entry '99999999999999999...'"),
])
def test_malformed_or_unbounded_lists_are_one_line(text: str, says: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_cpulist(text)
    assert str(raised.value) == says or str(raised.value).startswith(says)
    assert "\n" not in str(raised.value)


def test_format_is_the_shortest_list() -> None:
    assert format_cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
