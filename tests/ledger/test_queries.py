"""The PromQL the ledger sends: each family of roll-ups is read with its own count, and each
part of a range is a query of its own (what a query means: tests/deploy/test_*_promql.py)."""

from __future__ import annotations

import re

import pytest

from hwinfo.ledger import queries
from hwinfo.ledger.rollup import plan

HOUR, MINUTE = 3600.0, 60.0
# Three whole hours inside the range: one run of roll-ups between two minute edges.
PLAN = plan([2 * HOUR, 3 * HOUR, 4 * HOUR], 1000, 5 * HOUR, HOUR, MINUTE)


@pytest.mark.parametrize(("label", "suffix"), [("user", "_by_user_1h"), ("model", "_by_user_1h"),
                                               ("instance", "_by_host_1h")])
def test_a_family_is_read_with_its_own_count(label: str, suffix: str) -> None:
    sent = "\n".join(queries.usage(label, PLAN))
    counts = set(re.findall(r"hwinfo:ledger_evaluations:count\w*", sent))
    assert counts == {queries.EVALUATIONS_RECORD, queries.EVALUATIONS_RECORD + suffix}
    shares = set(re.findall(r"hwinfo:ledger_held:share\w*", sent))
    assert shares == {queries.HELD_RECORD, queries.HELD_RECORD + suffix}
    assert queries.rollups(label) >= {queries.EVALUATIONS_RECORD + suffix, queries.HELD_RECORD + suffix}


def test_attributed_shares_read_the_attribution_family() -> None:
    sent = "\n".join(queries.attributed_usage("slurm_job", PLAN))
    assert set(re.findall(r"hwinfo:ledger_evaluations:count\w*", sent)) == {
        queries.EVALUATIONS_RECORD, queries.EVALUATIONS_RECORD + "_1h"}


def test_each_part_is_a_query_of_its_own_and_the_counters_one_more() -> None:
    # The engine looks a query's series up over its whole range: the minute edges must not
    # share a query with the month of hours between them.
    sent = queries.usage("user", PLAN)
    assert len(sent) == len(PLAN.parts) + 1
    for query, (span, part) in zip(sent, PLAN.ranges()):
        ranges = set(re.findall(r"\[\d+ms\](?: offset \d+ms)?", query))
        if part.rolled:  # its check reads the minute count over the hours it rolls up
            assert ranges == {span, PLAN.checks()[0][1]}
        else:
            assert ranges == {span}
    assert "increase(" in sent[-1] and "increase(" not in "".join(sent[:-1])
    assert len(queries.attributed_usage("pod_uid", PLAN)) == len(PLAN.parts)
