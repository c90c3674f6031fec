"""How usage turns the rules' sums into rows, totals, costs and advice (no Prometheus here:
the end-to-end test asks a real one)."""

from __future__ import annotations

import pytest

from hwinfo.ledger.prices import Prices
from hwinfo.ledger.prometheus import LedgerError, RuleGroup, Sample
from hwinfo.ledger.usage import _advice, _rows, _total, ledger_group

A100 = "NVIDIA A100-SXM4-80GB"


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
    rows = _rows(samples, "user", 60.0, Prices({A100: 1.0}, 0.5, "EUR"))
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


PROFILES = [
    *(sample("profile_memory", mib * 2**20, model=A100, profile=name)
      for name, mib in (("1g.10gb", 9856), ("3g.40gb", 40192), ("7g.80gb", 80896))),
    *(sample("profile_share", share, model=A100, profile=name)
      for name, share in (("1g.10gb", 1 / 7), ("3g.40gb", 3 / 7), ("7g.80gb", 1.0))),
]


@pytest.mark.parametrize(("peak_mib", "utilization", "profile"), [
    (9000, 0.0, "1g.10gb"),   # small and idle: the smallest slice
    (9000, 0.3, "3g.40gb"),   # small but 30 % busy: 1/7 of the compute would not do
    (20000, 0.1, "3g.40gb"),  # too big for a 1g.10gb
    (60000, 0.1, None),       # only the whole GPU holds it: no advice
    (9000, 0.9, None),        # too busy for any slice
])
def test_advice_takes_the_smallest_profile_that_holds_memory_and_activity(
        peak_mib: int, utilization: float, profile: str | None) -> None:
    notes: list[str] = []
    advice = _advice([sample("whole_held", 100, user="ann", model=A100),
                      sample("whole_utilization", 100 * utilization, user="ann", model=A100),
                      sample("whole_peak_memory", peak_mib * 2**20, user="ann", model=A100),
                      *PROFILES], 60.0, notes)
    assert [(a.user, a.profile) for a in advice] == [("ann", profile)]
    share = {"1g.10gb": 1 / 7, "3g.40gb": 3 / 7, None: 1.0}[profile]
    assert advice[0].freed_gpu_seconds == pytest.approx(6000 * (1 - share))
    assert notes == []


def test_advice_without_profile_data_says_so_once() -> None:
    notes: list[str] = []
    advice = _advice([sample("whole_held", 1, user=u, model="Tesla T4") for u in ("a", "b")]
                     + [sample("whole_peak_memory", 1, user=u, model="Tesla T4") for u in ("a", "b")],
                     60.0, notes)
    assert [a.profile for a in advice] == [None, None]
    assert notes == ["no MIG profile data for Tesla T4: no GPU of it exports its profiles"]
