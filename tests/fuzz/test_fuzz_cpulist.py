"""Linux CPU lists (sysfs and scenario cpu_affinity): bounded CPU numbers, or one ValueError line."""

from __future__ import annotations

from fuzz.mutations import fuzz_settings, one_line_or_valid
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.cpulist import MAX_CPUS, format_cpulist, parse_cpulist

NUMBER = st.one_of(st.integers(0, 200), st.integers(0, 10**12), st.sampled_from([MAX_CPUS - 1, MAX_CPUS]))
PART = st.one_of(NUMBER.map(str), st.tuples(NUMBER, NUMBER).map(lambda r: f"{r[0]}-{r[1]}"))
LISTS = st.one_of(
    st.lists(PART, max_size=8).map(",".join),
    st.text(alphabet="0123456789-, \n\t:_+٣x", max_size=40),
    st.text(max_size=40),
)


@fuzz_settings(400)
@given(LISTS)
def test_a_cpu_list_is_bounded_cpus_or_one_line(text: str) -> None:
    cpus = one_line_or_valid(lambda: parse_cpulist(text), ValueError)
    if cpus is not None:
        assert len(cpus) <= MAX_CPUS and all(0 <= cpu < MAX_CPUS for cpu in cpus)
        assert parse_cpulist(format_cpulist(cpus)) == sorted(set(cpus))


@fuzz_settings(100)
@given(st.lists(st.integers(0, MAX_CPUS - 1), max_size=200))
def test_format_then_parse_is_the_set_of_cpus(cpus: list[int]) -> None:
    assert parse_cpulist(format_cpulist(cpus)) == sorted(set(cpus))
