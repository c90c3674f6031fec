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


def test_a_claimed_gpu_or_mig_device_is_not_free_and_says_whose() -> None:
    from hwinfo.ledger.render import fleet_text
    from hwinfo.render.text.style import Style

    mig = {**HOST, "gpu": "1", "gpu_instance_id": "7", "compute_instance_id": "0"}
    facts = [Sample({**GPU, "__name__": "hwinfo_gpu_processes"}, 0),
             Sample({**GPU, "__name__": "hwinfo_gpu_claim_info", "user": "ann"}, 1),
             Sample({**HOST, "gpu": "1", "__name__": "hwinfo_gpu_mig_enabled"}, 1),
             Sample({**mig, "__name__": "hwinfo_mig_device_info", "profile": "1g.10gb",
                     "mig_uuid": "MIG-7"}, 1),
             Sample({**mig, "__name__": "hwinfo_mig_device_processes"}, 0),
             Sample({**mig, "__name__": "hwinfo_gpu_claim_info", "user": "bo"}, 1)]
    answer = fleet(_Answering(facts), 1000.0)  # type: ignore[arg-type]
    [host] = answer.hosts
    whole, parted = host.gpus
    assert (whole.claimed_by, whole.free) == ("ann", False)
    assert parted.claimed_by is None
    assert [(d.claimed_by, d.free) for d in parted.mig_devices] == [("bo", False)]
    rows = [line.split() for line in fleet_text(answer, None, Style()).splitlines()[2:]]
    assert rows == [["gpu01:9110", "0", "n/a", "claimed", "claimed", "by", "ann"],
                    ["gpu01:9110", "1", "n/a", "MIG", "1/1", "used", "MIG", "7/0", "claimed",
                     "by", "bo"]]
