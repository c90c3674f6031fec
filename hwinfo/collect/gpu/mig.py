"""The MIG tree of one GPU: MIG devices through their handles, placements and free capacity.

MIG device handles work for any user, so devices, their memory and processes are read
through them. GPU-instance listings and remaining capacity need privileges (nvml.h:
"Requires privileged user"); when refused, those parts are None, not guessed.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from hwinfo.binding import function, pynvml
from hwinfo.collect.gpu.device import memory_info
from hwinfo.collect.gpu.nvml import Reader
from hwinfo.collect.gpu.owners import OwnerLookup
from hwinfo.collect.gpu.processes import listed_processes
from hwinfo.model.gpu import Mig, MigDevice, MigGpuInstance, MigProfileCapacity

MIB = 1 << 20
_MIG_NAME_MARK = " MIG "


@dataclass(frozen=True)
class GpuInstanceProfile:
    """One row of the board's GPU-instance profile table (static per GPU)."""

    id: int
    name: str  # "1g.10gb"
    instances_max: int
    memory_bytes: int
    multiprocessor_count: int
    slices: int  # compute slices


def profile_table(handle: Any) -> list[GpuInstanceProfile]:
    """The board's GPU-instance profiles; empty when the GPU cannot do MIG."""
    profiles = []
    for index in range(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = function("nvmlDeviceGetGpuInstanceProfileInfo")(handle, index)
        except pynvml.NVMLError_NotSupported:
            continue  # this board lacks the profile (e.g. 1g double memory on older A100s)
        except pynvml.NVMLError_InvalidArgument:
            break  # past the last profile index this driver knows
        except pynvml.NVMLError:
            return []
        profiles.append(
            GpuInstanceProfile(
                id=info.id,
                name=info.name.removeprefix("MIG "),
                instances_max=info.instanceCount,
                memory_bytes=info.memorySizeMB * MIB,
                multiprocessor_count=info.multiprocessorCount,
                slices=info.sliceCount,
            )
        )
    return profiles


def gpu_slices(profiles: list[GpuInstanceProfile]) -> int | None:
    """The GPU's compute slices: those of its largest profile (7 on an A100, 4 on an A30)."""
    return max((p.slices for p in profiles), default=None) or None


def _share(slices: int | None, whole: int | None) -> float | None:
    return slices / whole if slices is not None and whole else None


def _profile_of(name: str | None) -> str | None:
    """"NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb" -> "1c.3g.40gb"."""
    if not name or _MIG_NAME_MARK not in name:
        return None
    return name.split(_MIG_NAME_MARK, 1)[1]


def _device(
    index: int, handle: Any, owner_of: OwnerLookup, with_processes: bool, with_command: bool,
    whole: int | None,
) -> MigDevice:
    read = Reader()
    memory = read("memory", memory_info, handle)
    attributes = read("attributes", function("nvmlDeviceGetAttributes"), handle)
    processes, count = listed_processes(read, handle, owner_of, with_processes, with_command)
    return MigDevice(
        index=index,
        uuid=read("uuid", function("nvmlDeviceGetUUID"), handle),
        profile=_profile_of(read("name", function("nvmlDeviceGetName"), handle)),
        gpu_instance_id=read("gpu_instance_id", function("nvmlDeviceGetGpuInstanceId"), handle),
        compute_instance_id=read("compute_instance_id", function("nvmlDeviceGetComputeInstanceId"), handle),
        multiprocessor_count=attributes.multiprocessorCount if attributes is not None else None,
        gpu_share_ratio=_share(
            attributes.computeInstanceSliceCount if attributes is not None else None, whole),
        memory_total_bytes=memory[0] if memory is not None else None,
        memory_used_bytes=memory[1] if memory is not None else None,
        processes=processes,
        process_count=count,
        unavailable=read.unavailable,
    )


def _devices(
    parent: Any, owner_of: OwnerLookup, with_processes: bool, with_command: bool,
    whole: int | None,
) -> list[MigDevice]:
    devices = []
    for index in range(function("nvmlDeviceGetMaxMigDeviceCount")(parent)):
        try:
            handle = function("nvmlDeviceGetMigDeviceHandleByIndex")(parent, index)
        except (pynvml.NVMLError_NotFound, pynvml.NVMLError_InvalidArgument):
            # Indices are dense on drivers seen so far; skipping (not stopping) also
            # survives a gap left by an instance destroyed mid-walk.
            continue
        devices.append(_device(index, handle, owner_of, with_processes, with_command, whole))
    return devices


def _gpu_instances(parent: Any, profiles: list[GpuInstanceProfile]) -> list[MigGpuInstance]:
    """Placements of every GPU instance; raises NoPermission for unprivileged callers."""
    instances = []
    for profile in profiles:
        count = ctypes.c_uint(0)
        handles = (pynvml.c_nvmlGpuInstance_t * profile.instances_max)()
        function("nvmlDeviceGetGpuInstances")(parent, profile.id, handles, ctypes.byref(count))
        for handle in handles[: count.value]:
            info = function("nvmlGpuInstanceGetInfo")(handle)
            instances.append(
                MigGpuInstance(
                    id=info.id,
                    profile=profile.name,
                    profile_id=profile.id,
                    placement_start=info.placement.start,
                    placement_size=info.placement.size,
                )
            )
    return sorted(instances, key=lambda gi: gi.id)


def _capacity(
    read: Reader, parent: Any, profiles: list[GpuInstanceProfile], enabled: bool
) -> list[MigProfileCapacity]:
    """Every profile of the board; what still fits only in MIG mode (and with privileges)."""
    whole = gpu_slices(profiles)
    return [
        MigProfileCapacity(
            profile=profile.name,
            profile_id=profile.id,
            memory_bytes=profile.memory_bytes,
            multiprocessor_count=profile.multiprocessor_count,
            instances_max=profile.instances_max,
            instances_free=read(
                "mig_capacity", function("nvmlDeviceGetGpuInstanceRemainingCapacity"), parent,
                profile.id,
            ) if enabled else None,
            gpu_share_ratio=_share(profile.slices, whole),
        )
        for profile in profiles
    ]


def read_mig(
    read: Reader,
    parent: Any,
    profiles: list[GpuInstanceProfile],
    owner_of: OwnerLookup,
    with_processes: bool,
    with_command: bool,
) -> Mig | None:
    """The MIG state of a GPU; None when it cannot do MIG."""
    mode = read("mig_mode", function("nvmlDeviceGetMigMode"), parent)
    if mode is None:
        return None
    enabled, pending = bool(mode[0]), bool(mode[1])
    mig = Mig(enabled=enabled, pending_enabled=pending,
              capacity=_capacity(read, parent, profiles, enabled))
    if not enabled:
        return mig
    mig.devices = read("mig_devices", _devices, parent, owner_of, with_processes, with_command,
                       gpu_slices(profiles)) or []
    mig.gpu_instances = read("mig_gpu_instances", _gpu_instances, parent, profiles)
    return mig
