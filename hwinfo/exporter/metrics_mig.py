"""MIG metrics: an info series per MIG device, memory once per GPU instance, free capacity."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hwinfo.exporter.metric import Metric, Sample, each
from hwinfo.exporter.metrics_gpu import ACTIVITY, GPU_LABELS, gpu_labels, gpus
from hwinfo.model.gpu import Gpu, MigDevice
from hwinfo.model.snapshot import Snapshot

GI_LABELS = (*GPU_LABELS, "gpu_instance_id", "profile")


def _mig_gpus(s: Snapshot) -> Iterator[Gpu]:
    return (g for g in gpus(s) if not g.lost and g.mig is not None and g.mig.enabled)


def _device_info(s: Snapshot) -> Iterator[Sample]:
    for gpu in _mig_gpus(s):
        for dev in gpu.mig.devices:
            yield (
                (
                    *gpu_labels(gpu),
                    str(dev.index),
                    dev.uuid or "",
                    _id(dev.gpu_instance_id),
                    _id(dev.compute_instance_id),
                    dev.profile or "",
                    ",".join(dev.guessed),
                ),
                1.0,
            )


def _id(value: int | None) -> str:
    return "" if value is None else str(value)


def _profile(dev: MigDevice) -> str:
    """The profile label of a series other than the info one: left out where an import
    inferred it (only mig_device_info can mark it, by its `guessed` label)."""
    return "" if dev.profile is None or "profile" in dev.guessed else dev.profile


def _gi_profile(profile: str) -> str:
    """A MIG device's GPU-instance profile: "1c.3g.40gb" -> "3g.40gb"."""
    if not profile:
        return ""
    head, _, rest = profile.partition(".")
    return rest if head.endswith("c") and rest else profile


def _devices(s: Snapshot, once_per_gpu_instance: bool = False) -> Iterator[tuple[Gpu, MigDevice]]:
    """(GPU, MIG device) pairs; with once_per_gpu_instance, the first device of each GI only:
    compute instances share their GPU instance's memory, so it must be counted once."""
    for gpu in _mig_gpus(s):
        seen: set[int | None] = set()
        for dev in gpu.mig.devices:
            if once_per_gpu_instance:
                if dev.gpu_instance_id in seen:
                    continue
                seen.add(dev.gpu_instance_id)
            yield gpu, dev


def _per_gpu_instance(value: Callable[[MigDevice], Any]) -> Callable[[Snapshot], Iterator[Sample]]:
    return lambda s: each(
        _devices(s, once_per_gpu_instance=True),
        lambda p: (*gpu_labels(p[0]), _id(p[1].gpu_instance_id), _gi_profile(_profile(p[1]))),
        lambda p: value(p[1]),
    )


def _per_device(value: Callable[[MigDevice], Any]) -> Callable[[Snapshot], Iterator[Sample]]:
    return lambda s: each(
        _devices(s),
        lambda p: (*gpu_labels(p[0]), _id(p[1].gpu_instance_id), _id(p[1].compute_instance_id)),
        lambda p: value(p[1]),
    )


def _capacity(field: str, mig_enabled: bool = True) -> Callable[[Snapshot], Iterator[Sample]]:
    """A value per profile: of MIG-mode GPUs, or (mig_enabled False) of every MIG-capable one."""

    def read(s: Snapshot) -> Iterator[Sample]:
        chosen = _mig_gpus(s) if mig_enabled else (
            g for g in gpus(s) if not g.lost and g.mig is not None)
        for gpu in chosen:
            for row in gpu.mig.capacity or []:
                v = getattr(row, field)
                if v is not None:
                    yield (*gpu_labels(gpu), row.profile), float(v)

    return read


DEVICE_LABELS = (*GPU_LABELS, "gpu_instance_id", "compute_instance_id")

METRICS: tuple[Metric, ...] = (
    Metric(
        "mig_device_info",
        "info",
        "A MIG device: its parent GPU, UUID, instance ids and profile; `guessed` names those a "
        "simulated import inferred.",
        (*GPU_LABELS, "mig_index", "mig_uuid", "gpu_instance_id", "compute_instance_id", "profile",
         "guessed"),
        "gpu.gpus[].mig.devices[]",
        _device_info,
    ),
    Metric(
        "mig_device_multiprocessors",
        "gauge",
        "Streaming multiprocessors of a MIG device.",
        DEVICE_LABELS,
        "gpu.gpus[].mig.devices[].multiprocessor_count",
        _per_device(lambda d: d.multiprocessor_count),
    ),
    Metric(
        "mig_device_gpu_share_ratio",
        "gauge",
        "A MIG device's compute slices over its GPU's: the share of the GPU it is.",
        (*DEVICE_LABELS, "profile"),
        "gpu.gpus[].mig.devices[].gpu_share_ratio",
        lambda s: each(
            _devices(s),
            lambda p: (*gpu_labels(p[0]), _id(p[1].gpu_instance_id),
                       _id(p[1].compute_instance_id), _profile(p[1])),
            lambda p: p[1].gpu_share_ratio,
        ),
    ),
    Metric(
        "mig_device_processes",
        "gauge",
        "Processes on a MIG device.",
        DEVICE_LABELS,
        "gpu.gpus[].mig.devices[].process_count",
        _per_device(lambda d: d.process_count),
    ),
    Metric(
        "mig_gpu_instance_memory_total_bytes",
        "gauge",
        "Memory of a GPU instance (counted once, however many compute instances share it).",
        GI_LABELS,
        "gpu.gpus[].mig.devices[].memory_total_bytes",
        _per_gpu_instance(lambda d: d.memory_total_bytes),
    ),
    Metric(
        "mig_gpu_instance_memory_used_bytes",
        "gauge",
        "Memory in use in a GPU instance.",
        GI_LABELS,
        "gpu.gpus[].mig.devices[].memory_used_bytes",
        _per_gpu_instance(lambda d: d.memory_used_bytes),
    ),
    *(
        Metric(
            f"mig_gpu_instance_{name}",
            "gauge",
            help.replace(" (GPM).", " in a GPU instance (GPM, Hopper and newer)."),
            GI_LABELS,
            f"gpu.gpus[].mig.devices[].activity.{name}",
            _per_gpu_instance(lambda d, name=name: getattr(d.activity, name, None)),
        )
        for name, help in ACTIVITY
    ),
    Metric(
        "mig_profile_free_instances",
        "gauge",
        "How many more GPU instances of a profile fit (needs privileges).",
        (*GPU_LABELS, "profile"),
        "gpu.gpus[].mig.capacity[].instances_free",
        _capacity("instances_free"),
    ),
    Metric(
        "mig_profile_memory_bytes",
        "gauge",
        "Memory of a GPU instance of a profile, on every MIG-capable GPU (MIG on or off).",
        (*GPU_LABELS, "profile"),
        "gpu.gpus[].mig.capacity[].memory_bytes",
        _capacity("memory_bytes", mig_enabled=False),
    ),
    Metric(
        "mig_profile_gpu_share_ratio",
        "gauge",
        "A profile's compute slices over the GPU's, on every MIG-capable GPU (MIG on or off).",
        (*GPU_LABELS, "profile"),
        "gpu.gpus[].mig.capacity[].gpu_share_ratio",
        _capacity("gpu_share_ratio", mig_enabled=False),
    ),
    Metric(
        "mig_profile_max_instances",
        "gauge",
        "How many GPU instances of a profile fit on an empty GPU.",
        (*GPU_LABELS, "profile"),
        "gpu.gpus[].mig.capacity[].instances_max",
        _capacity("instances_max"),
    ),
)
