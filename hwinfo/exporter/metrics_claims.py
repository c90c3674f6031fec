"""Claims of `hwinfo run`: which device each user holds for a command, and who waits.

One series per claimed device of this host's GPUs (a claim naming a device the host does not
have is left out): at most one per GPU and MIG device, whatever the claims directory holds.
"""

from __future__ import annotations

from collections.abc import Iterator

from hwinfo.exporter.metric import Metric, Sample
from hwinfo.exporter.metrics_gpu import GPU_LABELS, gpu_labels, gpus
from hwinfo.model.claims import Claim
from hwinfo.model.snapshot import Snapshot

CLAIM_LABELS = (*GPU_LABELS, "gpu_instance_id", "compute_instance_id", "user")


def _claimed(s: Snapshot) -> Iterator[tuple[tuple[str, ...], Claim]]:
    """(labels, claim) for each claimed GPU or MIG device of the snapshot's GPUs."""
    if s.claims is None or not s.claims.claims:
        return
    for gpu in gpus(s):
        if gpu.lost:
            continue
        places = [(gpu.uuid, ("", ""))]
        if gpu.mig is not None:
            places += [(d.uuid, tuple("" if v is None else str(v)
                                      for v in (d.gpu_instance_id, d.compute_instance_id)))
                       for d in gpu.mig.devices]
        for uuid, ids in places:
            claim = s.claims.holder_of(uuid)
            if claim is not None:
                # A uid without a name by its number, as its processes are labelled: the
                # ledger charges the claim's idle time to the user its processes' time goes to.
                yield (*gpu_labels(gpu), *ids, claim.user or str(claim.uid)), claim


def _info(s: Snapshot) -> Iterator[Sample]:
    for labels, _ in _claimed(s):
        yield labels, 1.0


def _since(s: Snapshot) -> Iterator[Sample]:
    for labels, claim in _claimed(s):
        yield labels, claim.since_seconds


def _count(s: Snapshot, field: str) -> Iterator[Sample]:
    if s.claims is not None and s.claims.present:
        yield (), float(len(getattr(s.claims, field)))


METRICS: tuple[Metric, ...] = (
    Metric(
        "gpu_claim_info",
        "info",
        "A GPU (MIG ids empty) or MIG device `hwinfo run` holds for a user's command.",
        CLAIM_LABELS,
        "claims.claims[]",
        _info,
    ),
    Metric(
        "gpu_claim_start_timestamp_seconds",
        "gauge",
        "When that claim was made, as Unix time.",
        CLAIM_LABELS,
        "claims.claims[].since_seconds",
        _since,
    ),
    Metric(
        "claim_waiters",
        "gauge",
        "`hwinfo run`s waiting in line for a device (absent: no claims directory).",
        (),
        "claims.waiters",
        lambda s: _count(s, "waiters"),
    ),
    Metric(
        "claim_ignored_entries",
        "gauge",
        "Entries of the claims directory refused as untrustworthy or malformed.",
        (),
        "claims.ignored",
        lambda s: _count(s, "ignored"),
    ),
)
