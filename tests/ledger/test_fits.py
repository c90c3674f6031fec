"""fits applies to the engine's places what the engine does not weigh: host state, MIG mode,
a lost GPU; and it refuses what no GPU can have (a real engine answers in tests/deploy)."""

from __future__ import annotations

import re

import pytest

from hwinfo.ledger.fits import MODELS, fit_queries, fits
from hwinfo.ledger.fleet import FLAGS, HOSTS
from hwinfo.ledger.prometheus import LedgerError, Sample

A100 = "NVIDIA A100-SXM4-80GB"
GIB = 2**30
UP = {"job": "hwinfo", "instance": "a:9110"}
STALE = {"job": "hwinfo", "instance": "b:9110"}


def place(host: dict[str, str], gpu: str, kind: str, memory: float, **labels: str) -> Sample:
    return Sample({**host, "gpu": gpu, "kind": kind, **labels}, memory)


class _Engine:
    """Answers fits's queries, each by what it asks (what each query means, Prometheus's own
    engine checks in tests/deploy/test_fits_promql.py and test_fleet_promql.py): host a up
    and fresh, host b stale; GPU 1 of a in MIG mode, GPU 2 of a lost; GPUs 0 to 3 of each host
    A100s (GPU 0 of host a once under a shorter name), GPU 4 of host a a T4; and these places
    for the whole GPUs of `need` bytes (the MIG queries answer none)."""

    url = "http://prometheus.test"

    def __init__(self, places: list[Sample], need: int) -> None:
        self.places = places
        self.need = need
        self.up_age = 1.0
        self.models = [Sample({**host, "gpu": str(gpu), "uuid": f"GPU-{gpu}", "name": A100}, 1)
                       for host in (UP, STALE) for gpu in range(4)]
        self.models += [Sample({**UP, "gpu": "0", "uuid": "GPU-0", "name": "A100-SXM4-80GB"}, 1),
                        Sample({**UP, "gpu": "4", "uuid": "GPU-4", "name": "Tesla T4"}, 1)]

    def queries(self, exprs: list[str], at: float) -> list[list[Sample]]:
        hosts = [Sample({**UP, "measure": m}, v)
                 for m, v in (("seen", 1), ("up", 1), ("age", self.up_age))]
        hosts += [Sample({**STALE, "measure": m}, v) for m, v in (("seen", 1), ("up", 1), ("age", 600))]
        flags = [Sample({**UP, "gpu": "1", "__name__": "hwinfo_gpu_mig_enabled"}, 1),
                 Sample({**UP, "gpu": "2", "__name__": "hwinfo_gpu_lost"}, 1)]
        whole, mig = fit_queries(self.need)
        # A query this engine does not know (another size, say) is a KeyError.
        return [{HOSTS: hosts, FLAGS: flags, MODELS: self.models, whole: self.places, mig: []}[expr]
                for expr in exprs]


def test_only_places_their_host_and_gpu_can_take_are_offered() -> None:
    engine = _Engine([
        place(UP, "0", "gpu", 70 * GIB),  # a free whole GPU: offered
        place(UP, "1", "gpu", 70 * GIB),  # in MIG mode: not a whole GPU to offer
        place(UP, "0", "mig_profile", 40 * GIB, profile="3g.40gb"),  # not in MIG mode
        place(UP, "1", "mig_device", 20 * GIB, profile="2g.20gb", mig_uuid="MIG-1"),  # offered
        place(UP, "1", "mig_profile", 10 * GIB, profile="1g.10gb"),  # offered
        place(UP, "2", "gpu", 70 * GIB),  # lost
        place(STALE, "0", "gpu", 70 * GIB),  # its host's data is 10 minutes old
        place({"job": "hwinfo", "instance": "gone:9110"}, "0", "gpu", 70 * GIB),  # not seen
        place(UP, "3", "kernel", 70 * GIB),  # no kind of fit
        place(UP, "5", "gpu", 70 * GIB),  # no hwinfo_gpu_info: nothing names it
        place(UP, "3", "gpu", 8 * GIB),  # too small, though the engine offers it
    ], 9 * GIB)
    found = fits(engine, 1000.0, 9 * GIB)  # type: ignore[arg-type]
    assert [(f.gpu, f.kind, f.memory_bytes / GIB, f.profile, f.mig_uuid, f.uuid, f.model)
            for f in found.fits or []] == [
        ("1", "mig_profile", 10, "1g.10gb", None, "GPU-1", A100),
        ("1", "mig_device", 20, "2g.20gb", "MIG-1", "GPU-1", A100),
        ("0", "gpu", 70, None, None, "GPU-0", A100)]
    assert [(h.instance, h.state, h.gpus) for h in found.hosts] == [
        ("a:9110", "up", []), ("b:9110", "stale", [])]


def test_the_size_reaches_the_engine_and_the_model_is_matched_here() -> None:
    engine = _Engine([place(UP, "4", "gpu", 70 * GIB), place(UP, "3", "gpu", 70 * GIB)], 40 * GIB)
    found = fits(engine, 1000.0, 40 * GIB, re.compile("a100", re.IGNORECASE))  # type: ignore[arg-type]
    assert [f.gpu for f in found.fits or []] == ["3"]
    with pytest.raises(KeyError):  # the places of 40 GiB are not asked for another size
        fits(engine, 1000.0, 41 * GIB)  # type: ignore[arg-type]


@pytest.mark.parametrize("memory", [-1.0, 2.0**60])
def test_memory_no_gpu_can_have_is_refused(memory: float) -> None:
    with pytest.raises(LedgerError, match="cannot be a GPU's"):
        fits(_Engine([place(UP, "0", "gpu", memory)], GIB), 1000.0, GIB)  # type: ignore[arg-type]



def test_a_host_whose_gpu_data_is_from_the_future_is_stale() -> None:
    engine = _Engine([place(UP, "0", "gpu", 70 * GIB)], GIB)
    engine.up_age = -1e300  # a clock that far off: when the data is from is unknown
    found = fits(engine, 1000.0, GIB)  # type: ignore[arg-type]
    assert [(h.instance, h.state) for h in found.hosts] == [("a:9110", "stale"), ("b:9110", "stale")]
    assert found.fits == []
