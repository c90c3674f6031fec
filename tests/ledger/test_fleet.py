"""fleet given facts no GPU can have (a real engine answers in tests/deploy)."""

from __future__ import annotations

import pytest

from hwinfo.ledger.fleet import fleet
from hwinfo.ledger.prometheus import LedgerError, Sample

HOST = {"job": "hwinfo", "instance": "gpu01:9110"}
GPU = {**HOST, "gpu": "0"}


class _Answering:
    """Stands in for the engine: one host up and fresh, and `facts` for every GPU query."""

    url = "http://prometheus.test"

    def __init__(self, facts: list[Sample]) -> None:
        self.facts = facts

    def queries(self, exprs: list[str], at: float) -> list[list[Sample]]:
        """The hosts' query first, then the GPU facts, all in the first of the parts."""
        hosts = [Sample({**HOST, "measure": m}, v) for m, v in (("seen", 1), ("up", 1), ("age", 1))]
        return [hosts, self.facts] + [[] for _ in exprs[2:]]


@pytest.mark.parametrize(("name", "value"), [
    ("hwinfo_gpu_memory_total_bytes", -1.0),
    ("hwinfo_gpu_memory_free_bytes", 1e300),
    ("hwinfo_gpu_user_memory_used_bytes", -1e300),
])
def test_memory_no_gpu_can_have_is_refused(name: str, value: float) -> None:
    facts = [Sample({**GPU, "__name__": "hwinfo_gpu_memory_total_bytes"}, 80 * 2**30),
             Sample({**GPU, "__name__": name, "user": "ann"}, value)]
    with pytest.raises(LedgerError, match=f"{name} of .* cannot be a GPU's"):
        fleet(_Answering(facts), 1000.0)  # type: ignore[arg-type]


def test_a_gpu_with_plausible_facts_is_listed() -> None:
    facts = [Sample({**GPU, "__name__": "hwinfo_gpu_memory_total_bytes"}, 80 * 2**30),
             Sample({**GPU, "__name__": "hwinfo_gpu_processes"}, 0)]
    [host] = fleet(_Answering(facts), 1000.0).hosts  # type: ignore[arg-type]
    assert [gpu.index for gpu in host.gpus] == ["0"]
