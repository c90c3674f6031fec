"""Inventory drift: hardware that changed since a baseline (a saved `hwinfo report --format json`).

GPUs are matched by UUID, then by PCI bus id (a board swapped in the same slot is a
replacement, not one GPU missing and another added). Telemetry never counts as drift.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from hwinfo import inputs
from hwinfo.health.findings import Problem, Severity
from hwinfo.health.rules_gpu import lists_gpus
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.gpu import Gpu
from hwinfo.model.serialize import SchemaError, snapshot_from_document
from hwinfo.model.snapshot import Snapshot
from hwinfo.units import size

T = TypeVar("T")


class BaselineError(Exception):
    """The baseline file cannot be used; str() is one line for a person."""


def load_baseline(path: str) -> Snapshot:
    """The snapshot a baseline file holds; every failure is one BaselineError line."""
    where = f"baseline {path}"
    try:
        document = inputs.parse_json(inputs.read_text(path, where), where)
    except inputs.InputError as exc:
        raise BaselineError(str(exc)) from None
    try:
        return snapshot_from_document(document, where)
    except SchemaError as exc:
        raise BaselineError(f"{exc} (save one with `hwinfo report --format json`)") from None


@dataclass(frozen=True)
class Change(Generic[T]):
    """One thing as the baseline had it and as it is now."""

    before: T
    after: T


def _identity(gpu: Gpu) -> dict[str, str | None]:
    return {"name": gpu.name, "serial": gpu.serial, "uuid": gpu.uuid, "pci_bus_id": gpu.pci_bus_id}


def _board(gpu: Gpu) -> str:
    """Name, serial and UUID of a board, leaving out what is unknown."""
    parts = [gpu.name or "a GPU"]
    if gpu.serial:
        parts.append(f"serial {gpu.serial}")
    if gpu.uuid:
        parts.append(f"({gpu.uuid})")
    return " ".join(parts)


def _readable(gpu: Gpu) -> bool:
    return not gpu.lost and "gpu" not in gpu.unavailable


def _same_uuid(old: Gpu, new: Gpu) -> bool:
    return old.uuid is not None and new.uuid == old.uuid


def _same_slot(old: Gpu, new: Gpu) -> bool:
    return old.pci_bus_id is not None and new.pci_bus_id == old.pci_bus_id


def _same_index_unnamed(old: Gpu, new: Gpu) -> bool:
    # A GPU lost since NVML started has no UUID or bus id: the one at the same index is
    # the same GPU as far as anyone can tell, and gpu_lost speaks for it.
    return None in (old.uuid, new.uuid) and new.index == old.index


def pair_gpus(before: list[Gpu], after: list[Gpu]) -> list[Change[Gpu | None]]:
    """Each baseline GPU with its GPU now (None: gone), then the GPUs that are new."""
    left = list(after)
    now: list[Gpu | None] = [None] * len(before)
    # Every match by UUID first, so that a slot match never takes a GPU another one names.
    for same in (_same_uuid, _same_slot, _same_index_unnamed):
        for i, old in enumerate(before):
            found = None if now[i] else next((new for new in left if same(old, new)), None)
            if found is not None:
                now[i] = found
                left.remove(found)
    return [Change(old, new) for old, new in zip(before, now)] + [Change(None, g) for g in left]


def gpu_changes(baseline: Snapshot, current: Snapshot) -> list[Change[Gpu | None]]:
    """The GPU pairs to compare; none when either side's driver cannot list its GPUs."""
    old, new = baseline.gpu, current.gpu
    if old is None or new is None or not lists_gpus(old) or not lists_gpus(new):
        return []
    return pair_gpus(old.gpus, new.gpus)


# GPU rules: one Change[Gpu | None] each.


def gpu_missing(change: Change[Gpu | None], limits: Thresholds) -> Iterator[Problem]:
    gone = change.before
    if gone is not None and change.after is None:
        yield Problem(Severity.CRITICAL,
                      f"in the baseline but gone: {_board(gone)}",
                      {"before": _identity(gone)})


def gpu_added(change: Change[Gpu | None], limits: Thresholds) -> Iterator[Problem]:
    new = change.after
    if change.before is None and new is not None:
        yield Problem(Severity.WARNING, f"not in the baseline: {_board(new)}",
                      {"after": _identity(new)})


def gpu_replaced(change: Change[Gpu | None], limits: Thresholds) -> Iterator[Problem]:
    """Another board where the baseline had one (same UUID or slot, other serial, UUID or model)."""
    old, new = change.before, change.after
    if old is None or new is None or old.uuid is None or new.uuid is None:
        return
    if (old.uuid, old.serial, old.name) != (new.uuid, new.serial, new.name):
        yield Problem(Severity.WARNING, f"replaced: was {_board(old)}, now {_board(new)}",
                      {"before": _identity(old), "after": _identity(new)})


def _mig_layout(gpu: Gpu) -> dict[str, Any] | None:
    if gpu.mig is None:
        return None
    devices = sorted(gpu.mig.devices, key=lambda d: (d.gpu_instance_id or 0, d.compute_instance_id or 0))
    # A profile an import inferred keeps its mark (render/text/gpu_mig.py GUESSED).
    return {"enabled": gpu.mig.enabled,
            "profiles": [f"{d.profile}*" if d.profile and "profile" in d.guessed else d.profile
                         for d in devices]}


def _describe_layout(layout: dict[str, Any] | None) -> str:
    if layout is None:
        return "no MIG"
    if not layout["enabled"]:
        return "MIG disabled"
    profiles = layout["profiles"]
    return ", ".join(str(p) for p in profiles) if profiles else "MIG enabled, no instances"


def mig_layout_changed(change: Change[Gpu | None], limits: Thresholds) -> Iterator[Problem]:
    """MIG mode or instances differ on the same GPU (a replaced or unreadable one is not compared)."""
    old, new = change.before, change.after
    if old is None or new is None or old.uuid != new.uuid or not (_readable(old) and _readable(new)):
        return
    before, after = _mig_layout(old), _mig_layout(new)
    if before != after:
        yield Problem(Severity.WARNING,
                      f"MIG layout changed: was {_describe_layout(before)}, "
                      f"now {_describe_layout(after)}",
                      {"before": before, "after": after})


GPU_DRIFT_RULES = (gpu_missing, gpu_added, gpu_replaced, mig_layout_changed)


# Host rules: one Change[Snapshot].


def memory_size_changed(change: Change[Snapshot], limits: Thresholds) -> Iterator[Problem]:
    old, new = change.before.memory, change.after.memory
    if old is None or new is None or not old.total_bytes or new.total_bytes is None:
        return
    if abs(new.total_bytes - old.total_bytes) / old.total_bytes * 100 > limits.memory_drift_percent:
        yield Problem(Severity.WARNING,
                      f"memory size changed: was {size(old.total_bytes)}, now {size(new.total_bytes)}",
                      {"before_bytes": old.total_bytes, "after_bytes": new.total_bytes})


def cpu_changed(change: Change[Snapshot], limits: Thresholds) -> Iterator[Problem]:
    """Another CPU model, or another number of sockets."""
    old, new = change.before.cpu, change.after.cpu
    if old is None or new is None:
        return
    if (old.model_name, old.sockets) != (new.model_name, new.sockets):
        yield Problem(Severity.WARNING,
                      f"CPU changed: was {old.sockets} × {old.model_name}, "
                      f"now {new.sockets} × {new.model_name}",
                      {"before": {"model_name": old.model_name, "sockets": old.sockets},
                       "after": {"model_name": new.model_name, "sockets": new.sockets}})


HOST_DRIFT_RULES = (memory_size_changed, cpu_changed)

