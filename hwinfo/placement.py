"""Where a job of a given size goes: the one rule `fleet --need-memory` and `hwinfo run` share.

A place is a whole GPU, an existing MIG device, or (fleet only) a MIG profile an admin could
still create. Both commands offer the places that fit, best fit first: the smallest that
takes the job, so that a larger one stays for a larger job; places that exist before ones
that would have to be made; then by host and by GPU index in numeric order, so that the same
answer comes in the same order every time.
"""

from __future__ import annotations

# Kinds of place, spelled as fleet's JSON spells them.
GPU, MIG_DEVICE, MIG_PROFILE = "gpu", "mig_device", "mig_profile"


def fits(memory_bytes: float | None, need_bytes: float) -> bool:
    """Whether a place with this much memory (free, net of the driver's reserve) takes a job
    needing `need_bytes`; memory not known takes only a job that named no size."""
    if memory_bytes is None:
        return need_bytes <= 0
    return memory_bytes >= need_bytes


def rank(memory_bytes: float | None, kind: str, host: str, gpu: str) -> tuple[float, bool, str,
                                                                              int, str]:
    """The sort key of a place, best fit first; each user appends its own tie-breakers.
    `gpu` is the GPU's index as text ("10" after "9"); memory not known sorts last."""
    return (float("inf") if memory_bytes is None else memory_bytes, kind == MIG_PROFILE,
            host, len(gpu), gpu)
