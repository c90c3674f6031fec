"""Keeping some GPUs of a snapshot, named as `nvidia-smi -i` names them."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from hwinfo.inputs import decimal

if TYPE_CHECKING:  # annotations only: `report` parses selectors before its collectors start
    from hwinfo.model.gpu import Gpu
    from hwinfo.model.snapshot import Snapshot

# A PCI bus id with or without its domain: "00000000:07:00.0", "0000:07:00.0", "07:00.0".
_BUS_ID = re.compile(r"(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])")


class SelectionError(ValueError):
    """A GPU selector that names no GPU, or is not one; str() is one line."""


def _bus_key(text: str) -> tuple[int, int, int, int] | None:
    match = _BUS_ID.fullmatch(text.strip().lower())
    if match is None:
        return None
    domain, bus, device, function = match.groups()
    return int(domain or "0", 16), int(bus, 16), int(device, 16), int(function)


def _matches(gpu: Gpu, selector: str) -> bool:
    if (index := decimal(selector)) is not None:
        return gpu.index == index
    if selector.upper().startswith("GPU-"):
        return gpu.uuid is not None and gpu.uuid.lower() == selector.lower()
    key = _bus_key(selector)
    return key is not None and gpu.pci_bus_id is not None and _bus_key(gpu.pci_bus_id) == key


def parse_selectors(values: Iterable[str]) -> list[str]:
    """`--gpu 0 --gpu 2,3` -> ["0", "2", "3"]; a selector of no known form is refused."""
    selectors = [part.strip() for value in values for part in value.split(",")]
    for selector in selectors:
        if not selector:
            raise SelectionError("--gpu: empty GPU selector")
        if not (decimal(selector) is not None or selector.upper().startswith("GPU-") or _bus_key(selector)):
            raise SelectionError(
                f"--gpu {selector!r}: expected an index, a GPU UUID (GPU-...) or a PCI bus id"
            )
    return selectors


def select_gpus(snapshot: Snapshot, selectors: list[str]) -> Snapshot:
    """The snapshot with only the selected GPUs (their users, their claims); SelectionError for a
    selector that names no GPU of this machine."""
    if snapshot.gpu is None or snapshot.gpu.status != "ok":
        raise SelectionError("--gpu: no GPUs were read, so none can be selected")
    gpus = snapshot.gpu.gpus
    for selector in selectors:
        if not any(_matches(gpu, selector) for gpu in gpus):
            known = ", ".join(str(g.index) for g in gpus) or "none"
            raise SelectionError(f"--gpu {selector}: no such GPU (indices: {known})")
    kept = [gpu for gpu in gpus if any(_matches(gpu, s) for s in selectors)]
    indices = {gpu.index for gpu in kept}
    users = snapshot.gpu.users
    system = dataclasses.replace(snapshot.gpu, gpus=kept, users=None if users is None else
                                 [u for u in users if u.gpu_index in indices])
    claims = snapshot.claims
    if claims is not None:  # the claims on the selected GPUs and their MIG devices
        uuids = {gpu.uuid for gpu in kept} | {d.uuid for gpu in kept if gpu.mig is not None
                                              for d in gpu.mig.devices}
        claims = dataclasses.replace(claims, claims=[c for c in claims.claims
                                                     if uuids.intersection(c.devices)])
    return dataclasses.replace(snapshot, gpu=system, claims=claims)
