"""The shared fuzz helpers catch what they promise to: more than one line, too much memory."""

from __future__ import annotations

import pytest
from fuzz import mutations
from fuzz.mutations import MEMORY_LIMIT_BYTES, bounded_memory, one_line_or_valid


@pytest.mark.parametrize("kernel_peak", [True, False])
def test_a_case_that_allocates_past_the_bound_fails(
    kernel_peak: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not kernel_peak:  # where /proc/self/clear_refs is not there: the tracemalloc fallback
        monkeypatch.setattr(mutations, "_reset_peak", lambda: False)
    with pytest.raises(AssertionError, match=r"one case took \d+ MiB at its peak"):
        one_line_or_valid(lambda: len(b"x" * (MEMORY_LIMIT_BYTES + (8 << 20))), ValueError)


def test_memory_freed_before_the_case_does_not_count() -> None:
    kept = b"x" * MEMORY_LIMIT_BYTES  # held before: not the case's
    with bounded_memory():
        small = b"x" * (1 << 20)
    assert len(kept) and len(small)


def test_a_two_line_error_fails() -> None:
    def raise_two_lines() -> None:
        raise ValueError("first\nsecond")

    with pytest.raises(AssertionError):
        one_line_or_valid(raise_two_lines, ValueError)
