"""Which devices a `hwinfo run` gets now: a presenter of the GPU snapshot and the claims.

A device is a whole GPU not in MIG mode, or a MIG device. One fits a request where it is of
the kind asked for, has the memory free (NVML's free: net of the driver's reserve), and has
no process of another user on it (unless the request shares); it is free where no live claim
holds it. Waiters are served in arrival order: while one ahead could go now, nobody behind it
goes (it takes its devices at its next look). One ahead that cannot go keeps every free
device that fits it, so that a request for four GPUs is not starved by requests for one; a
device it could never use passes to those behind it (a 1g.10gb MIG device to someone behind
a waiter for a 3g.40gb).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hwinfo.model.claims import Request
from hwinfo.model.gpu import GpuProcess, GpuSystem
from hwinfo.placement import GPU, MIG_DEVICE, fits, rank
from hwinfo.render.text.claims import device_label
from hwinfo.units import size


@dataclass(frozen=True)
class Device:
    """A place a command can be given: a whole GPU or a MIG device."""

    uuid: str
    gpu: int  # the GPU's index
    kind: str  # placement.GPU or placement.MIG_DEVICE
    mig_index: int | None
    profile: str | None
    memory_free_bytes: int | None
    memory_total_bytes: int | None  # net of the driver's reserve: the most it can ever have free
    # Owners of its processes; None for one whose owner is not known. None as a whole: the
    # processes were not listed.
    users: frozenset[str | None] | None

    @property
    def label(self) -> str:
        return device_label(self.gpu, self.mig_index, self.profile)


@dataclass(frozen=True)
class Asker:
    """A request and the user who made it."""

    request: Request
    # Named as processes' owners are (their name, else their number): never None, which is a
    # process's owner not known, and never theirs.
    user: str


def devices(system: GpuSystem) -> list[Device]:
    """Every device of the snapshot's GPUs that could be handed out, claimed or not."""
    found = []
    for gpu in system.gpus:
        if gpu.lost or gpu.uuid is None:
            continue
        if gpu.mig is None or not gpu.mig.enabled:
            reserved = gpu.memory_reserved_bytes or 0
            total = None if gpu.memory_total_bytes is None else gpu.memory_total_bytes - reserved
            found.append(Device(gpu.uuid, gpu.index, GPU, None, None, gpu.memory_free_bytes,
                                total, _owners(gpu.processes)))
            continue
        for mig in gpu.mig.devices:
            if mig.uuid is None:
                continue
            total, used = mig.memory_total_bytes, mig.memory_used_bytes
            free = None if total is None or used is None else max(0, total - used)
            found.append(Device(mig.uuid, gpu.index, MIG_DEVICE, mig.index, mig.profile, free,
                                total, _owners(mig.processes)))
    return found


def _owners(processes: list[GpuProcess] | None) -> frozenset[str | None] | None:
    if processes is None:
        return None
    return frozenset(p.user if p.visible else None for p in processes)


def of_kind(device: Device, request: Request) -> bool:
    """Whether the device is of the kind asked for: MIG devices of the profile named; else
    whole GPUs, and MIG devices too where one device with some memory is asked for (as fleet
    --need-memory offers both). CUDA makes one MIG device visible to a process, never more."""
    if request.mig_profile is not None:
        return device.kind == MIG_DEVICE and device.profile == request.mig_profile
    return device.kind == GPU or (request.need_memory_bytes is not None and request.gpus == 1)


def fit(device: Device, asker: Asker) -> bool:
    """Whether the device takes the request now, claims aside."""
    request = asker.request
    if not of_kind(device, request) or not fits(device.memory_free_bytes,
                                                request.need_memory_bytes or 0):
        return False
    if request.share:
        return True
    return device.users is not None and device.users <= {asker.user}


def pick(available: Iterable[Device], asker: Asker) -> list[Device] | None:
    """The devices the request gets from `available`, best fit first; None when too few fit."""
    fitting = sorted((d for d in available if fit(d, asker)), key=_best_first)
    return fitting[:asker.request.gpus] if len(fitting) >= asker.request.gpus else None


def _best_first(device: Device) -> tuple[object, ...]:
    return (*rank(device.memory_free_bytes, device.kind, "", str(device.gpu)),
            -1 if device.mig_index is None else device.mig_index, device.uuid)


def choose(every: Sequence[Device], claimed: set[str], ahead: Sequence[Asker],
           asker: Asker) -> list[Device] | None:
    """What `asker` gets now, after the waiters `ahead` of it (in line order); None: wait."""
    available = [d for d in every if d.uuid not in claimed]
    for earlier in ahead:
        if never(every, earlier.request) is not None:
            continue  # a ticket no run of this host would have taken (written by hand)
        if pick(available, earlier) is not None:
            return None  # it goes first, even where there would be enough for both
        available = [d for d in available if not fit(d, earlier)]
    return pick(available, asker)


def never(every: Sequence[Device], request: Request) -> str | None:
    """Why no wait can serve the request on this host (too few devices of the kind, or too
    few with that much memory even when empty); None when one could."""
    kind = [d for d in every if of_kind(d, request)]
    need = request.need_memory_bytes or 0
    large = [d for d in kind if fits(d.memory_total_bytes, need)]
    if len(large) >= request.gpus:
        return None
    hint = ""
    if request.mig_profile is not None:
        what = f"MIG devices of profile {request.mig_profile}"
        profiles = ", ".join(sorted({d.profile or "?" for d in every if d.kind == MIG_DEVICE}))
        hint = f" (profiles here: {profiles or 'none, no GPU is in MIG mode'})"
    elif any(d.kind == MIG_DEVICE for d in kind):
        what = "GPUs or MIG devices"
    else:
        what = "GPUs not in MIG mode" if len(kind) < len(every) else "GPUs"
        hint = " (--mig-profile NAME asks for a MIG device)" if len(kind) < len(every) else ""
    count = len(kind) if len(kind) < request.gpus else len(large)
    larger = f" with {size(need)} or more" if need and count == len(large) else ""
    return f"this host has {count} {what}{larger}, not {request.gpus}{hint}"


def hindrance(every: Sequence[Device], claimed: set[str], asker: Asker) -> str:
    """What keeps the request waiting, in words."""
    fitting = [d for d in every if fit(d, asker)]
    if len(fitting) < asker.request.gpus:
        return (f"{len(fitting)} fit now; the others are short of free memory or hold other "
                "users' processes")
    held = sum(d.uuid in claimed for d in fitting)
    if len(fitting) - held >= asker.request.gpus:
        return f"{held} of the {len(fitting)} that fit are claimed; the rest wait for those ahead"
    return f"{held} of the {len(fitting)} that fit are claimed"
