"""MIG calls of the fake libnvidia-ml: modes, MIG device handles, GPU/compute instance profiles,
placements, capacity and listings.

Behaviour follows nvml.h's per-call notes and facts §2: GI/CI listings and capacity need a
privileged caller (NoPermission otherwise), profile queries take the profile *index* while
every other call takes the profile *ID*, and MIG device indices are dense.
"""

from __future__ import annotations

import ctypes

from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.machine import ComputeInstance, GpuDevice, GpuInstance, Machine, MigDevice
from hwinfo.sim.mig_profiles import (
    COMPUTE_INSTANCE_PROFILE_COUNT,
    GPU_INSTANCE_PROFILE_COUNT,
    ComputeInstanceProfile,
    GpuInstanceProfile,
    MigTable,
    placement_mask,
    remaining_capacity,
)
from hwinfo.sim.nvml_lib_base import (
    INVALID_ARGUMENT,
    NO_PERMISSION,
    NOT_FOUND,
    NOT_SUPPORTED,
    SUCCESS,
    UNSUPPORTED,
    Field,
    Reply,
    Symbol,
    ok,
)
from hwinfo.sim.scenario import MIG_MIN_DRIVER

# Struct versions the caller must set (pynvml nvmlGpuInstanceProfileInfo_v2 and
# nvmlComputeInstanceProfileInfo_v2).
GI_PROFILE_INFO_V2 = 0x02000098
CI_PROFILE_INFO_V2 = 0x02000088
# nvmlDeviceGetMaxMigDeviceCount on A100/H100/H200 with MIG on (facts §2).
MAX_MIG_DEVICES = 7
# Unknown: the driver that added nvmlDeviceGetGpuInstancePossiblePlacements_v2; R470 exports it.
PLACEMENTS_V2_SINCE = (470,)


def _mig_mode(gpu: GpuDevice) -> Reply:
    mig = gpu.spec.mig
    return UNSUPPORTED if mig is None else ok((int(mig.enabled), int(mig.pending)))


def _attributes(dev: MigDevice) -> Reply:
    total = dev.gpu_instance.spec.memory_total_mib
    gi = dev.gpu_instance.spec.profile
    ci = dev.compute_instance.spec.profile
    sms = dev.compute_instance.spec.multiprocessor_count
    return ok(
        (
            ("multiprocessorCount", ci.multiprocessor_count if sms is None else sms),
            # Engines belong to the GPU instance and are shared by its compute instances.
            ("sharedCopyEngineCount", gi.copy_engine_count),
            ("sharedDecoderCount", gi.decoder_count),
            ("sharedEncoderCount", gi.encoder_count),
            ("sharedJpegCount", gi.jpeg_count),
            ("sharedOfaCount", gi.ofa_count),
            ("gpuInstanceSliceCount", gi.slice_count),
            ("computeInstanceSliceCount", ci.slice_count),
            ("memorySizeMB", gi.memory_mib if total is None else total),
        )
    )


FIELDS: tuple[Field, ...] = (
    Field("nvmlDeviceGetMigMode", base.multi, lambda m, g: _mig_mode(g), since=MIG_MIN_DRIVER),
    # nvml.h: zero if MIG is not supported or not enabled.
    # Unknown: the answer on a MIG device handle (NotSupported here).
    Field(
        "nvmlDeviceGetMaxMigDeviceCount",
        base.scalar,
        lambda m, g: ok(MAX_MIG_DEVICES if g.mig_enabled else 0),
        since=MIG_MIN_DRIVER,
    ),
    Field(
        "nvmlDeviceIsMigDeviceHandle",
        base.scalar,
        lambda m, g: ok(0),
        lambda m, d: ok(1),
        since=MIG_MIN_DRIVER,
    ),
    # Unknown: on a physical GPU handle these two answer NotSupported here.
    Field(
        "nvmlDeviceGetGpuInstanceId",
        base.scalar,
        lambda m, g: UNSUPPORTED,
        lambda m, d: ok(d.gpu_instance.spec.id),
        since=MIG_MIN_DRIVER,
    ),
    Field(
        "nvmlDeviceGetComputeInstanceId",
        base.scalar,
        lambda m, g: UNSUPPORTED,
        lambda m, d: ok(d.compute_instance.spec.id),
        since=MIG_MIN_DRIVER,
    ),
    # nvml.h: "This API currently only supports MIG device handles".
    Field(
        "nvmlDeviceGetAttributes_v2",
        base.struct,
        lambda m, g: UNSUPPORTED,
        lambda m, d: _attributes(d),
        since=MIG_MIN_DRIVER,
    ),
)


def _mig_gpu(dev: GpuDevice | MigDevice, need_enabled: bool) -> GpuDevice | int:
    """The GPU a MIG management call is about, or the error for this handle."""
    if isinstance(dev, MigDevice):
        return INVALID_ARGUMENT  # Unknown: what these calls answer on a MIG device handle.
    if dev.spec.mig is None or (need_enabled and not dev.mig_enabled):
        return NOT_SUPPORTED
    return dev


def _table(gpu: GpuDevice) -> MigTable | None:
    """The board's MIG profiles; None for a MIG-capable GPU outside the catalogue (a dump)."""
    # Unknown: the real profile tables of boards the catalogue lacks; their profile queries
    # answer NotSupported rather than invented rows.
    return gpu.spec.board.mig if gpu.spec.board is not None else None


def _profile_by_id(gpu: GpuDevice, profile_id: object) -> GpuInstanceProfile | int:
    table = _table(gpu)
    profile = None if table is None else table.by_id.get(base.as_int(profile_id))
    return NOT_SUPPORTED if profile is None else profile


def _fill_gi_profile(info: object, p: GpuInstanceProfile, named: bool) -> None:
    for name, value in (
        ("id", p.id),
        ("isP2pSupported", 0),
        ("sliceCount", p.slice_count),
        ("instanceCount", p.instance_count),
        ("multiprocessorCount", p.multiprocessor_count),
        ("copyEngineCount", p.copy_engine_count),
        ("decoderCount", p.decoder_count),
        ("encoderCount", p.encoder_count),
        ("jpegCount", p.jpeg_count),
        ("ofaCount", p.ofa_count),
        ("memorySizeMB", p.memory_mib),
    ):
        setattr(info, name, value)
    if named:
        info.name = f"MIG {p.name}".encode()  # type: ignore[attr-defined]


def _gi_profile_info(version: int | None, by_id: bool = False) -> base.Impl:
    """nvmlDeviceGetGpuInstanceProfileInfo[V|ByIdV](device, profile, byref(info))."""

    def impl(machine: Machine, dev: GpuDevice | MigDevice, key: object, ref: object) -> int:
        # nvml.h: the V calls need MIG enabled, the v1 call only MIG support.
        gpu = _mig_gpu(dev, need_enabled=version is not None)
        if isinstance(gpu, int):
            return gpu
        info = ref._obj  # type: ignore[attr-defined]
        if version is not None and info.version != version:
            return base.ARGUMENT_VERSION_MISMATCH
        if by_id:
            profile = _profile_by_id(gpu, key)
        else:
            index = base.as_int(key)
            # nvml.h: enumerate indices from 0 until InvalidArgument; known-but-absent
            # profiles (8_SLICE, the GFX and NO_ME kinds here) are NotSupported.
            if index >= GPU_INSTANCE_PROFILE_COUNT:
                return INVALID_ARGUMENT
            table = _table(gpu)
            profile = NOT_SUPPORTED if table is None else table.by_index.get(index, NOT_SUPPORTED)
        if isinstance(profile, int):
            return profile
        _fill_gi_profile(info, profile, named=version is not None)
        return SUCCESS

    return impl


def _privileged_gpu(
    machine: Machine, dev: GpuDevice | MigDevice, need_enabled: bool
) -> GpuDevice | int:
    """nvml.h marks GI/CI listing, capacity and placements "Requires privileged user"."""
    gpu = _mig_gpu(dev, need_enabled)
    if not isinstance(gpu, int) and not machine.privileged:
        return NO_PERMISSION
    return gpu


def _remaining(
    machine: Machine, dev: GpuDevice | MigDevice, profile_id: object, ref: object
) -> int:
    """nvmlDeviceGetGpuInstanceRemainingCapacity: from the current placements."""
    gpu = _privileged_gpu(machine, dev, need_enabled=True)
    if isinstance(gpu, int):
        return gpu
    profile = _profile_by_id(gpu, profile_id)
    if isinstance(profile, int):
        return profile
    occupied = 0
    for gi in gpu.gpu_instances:
        occupied |= placement_mask(gi.spec.start, gi.spec.profile.memory_slices)
    existing = sum(gi.spec.profile is profile for gi in gpu.gpu_instances)
    ref._obj.value = remaining_capacity(  # type: ignore[attr-defined]
        profile.placement_starts, profile.memory_slices, profile.instance_count, existing, occupied
    )
    return SUCCESS


class PLACEMENT(ctypes.Structure):
    """nvmlGpuInstancePlacement_t / nvmlComputeInstancePlacement_t."""

    _fields_ = (("start", ctypes.c_uint), ("size", ctypes.c_uint))


def _write_placements(
    placements: object, count_ref: object, starts: tuple[int, ...], size: int
) -> int:
    """Placement listing: NULL asks for the count only (nvml.h)."""
    if placements is not None:
        array = (PLACEMENT * len(starts)).from_address(base.address(placements))
        for i, start in enumerate(starts):
            array[i].start, array[i].size = start, size
    count_ref._obj.value = len(starts)  # type: ignore[attr-defined]
    return SUCCESS


def _possible_placements(
    machine: Machine,
    dev: GpuDevice | MigDevice,
    profile_id: object,
    placements: object,
    count_ref: object,
) -> int:
    """nvmlDeviceGetGpuInstancePossiblePlacements_v2: every placement of the profile,
    "regardless of whether MIG is enabled or not" (nvml.h)."""
    gpu = _privileged_gpu(machine, dev, need_enabled=False)
    if isinstance(gpu, int):
        return gpu
    profile = _profile_by_id(gpu, profile_id)
    if isinstance(profile, int):
        return profile
    return _write_placements(placements, count_ref, profile.placement_starts, profile.memory_slices)


def _gpu_instances(
    machine: Machine,
    dev: GpuDevice | MigDevice,
    profile_id: object,
    array: object,
    count_ref: object,
) -> int:
    """nvmlDeviceGetGpuInstances: the caller's array must hold the profile's instanceCount."""
    gpu = _privileged_gpu(machine, dev, need_enabled=True)
    if isinstance(gpu, int):
        return gpu
    profile = _profile_by_id(gpu, profile_id)
    if isinstance(profile, int):
        return profile
    handles = [gi.handle for gi in gpu.gpu_instances if gi.spec.profile is profile]
    if handles:
        base.write_handles(array, handles)
    count_ref._obj.value = len(handles)  # type: ignore[attr-defined]
    return SUCCESS


def _gpu_instance_by_id(
    machine: Machine, dev: GpuDevice | MigDevice, gi_id: object, ref: object
) -> int:
    gpu = _privileged_gpu(machine, dev, need_enabled=True)
    if isinstance(gpu, int):
        return gpu
    wanted = base.as_int(gi_id)
    for gi in gpu.gpu_instances:
        if gi.spec.id == wanted:
            base.write_handle(ref, gi.handle)
            return SUCCESS
    return NOT_FOUND


def _mig_device_by_index(
    machine: Machine, dev: GpuDevice | MigDevice, index: object, ref: object
) -> int:
    if isinstance(dev, MigDevice):
        return NOT_SUPPORTED  # Unknown: the answer on a MIG device handle.
    gpu = _mig_gpu(dev, need_enabled=False)
    if isinstance(gpu, int):
        return gpu
    i = base.as_int(index)
    devices = gpu.mig_devices
    if not 0 <= i < len(devices):
        return NOT_FOUND  # go-nvml #60: past the last MIG device
    base.write_handle(ref, devices[i].handle)
    return SUCCESS


def _parent_of(machine: Machine, dev: GpuDevice | MigDevice, ref: object) -> int:
    # On a non-MIG handle: InvalidArgument (nomad treats InvalidArgument/NotFound as "not MIG").
    if not isinstance(dev, MigDevice):
        return INVALID_ARGUMENT
    base.write_handle(ref, dev.gpu.handle)
    return SUCCESS


def _write_handle_field(struct: ctypes.Structure, name: str, handle: int) -> None:
    offset = getattr(type(struct), name).offset
    ctypes.c_void_p.from_buffer(struct, offset).value = handle


def _gi_info(machine: Machine, gi: GpuInstance, ref: object) -> int:
    """nvmlGpuInstanceGetInfo: (device, id, profileId, placement)."""
    info = ref._obj  # type: ignore[attr-defined]
    _write_handle_field(info, "device", gi.gpu.handle)
    info.id = gi.spec.id
    info.profileId = gi.spec.profile.id
    info.placement.start = gi.spec.start
    info.placement.size = gi.spec.profile.memory_slices
    return SUCCESS


def _ci_profile(gi: GpuInstance, profile_id: object) -> ComputeInstanceProfile | int:
    """A CI profile the GI offers, by NVML_COMPUTE_INSTANCE_PROFILE_* (= its ID)."""
    index = base.as_int(profile_id)
    if index >= COMPUTE_INSTANCE_PROFILE_COUNT:
        return INVALID_ARGUMENT
    table = _table(gi.gpu)
    for profile in () if table is None else table.ci_profiles[gi.spec.profile.id]:
        if profile.index == index:
            return profile
    return NOT_SUPPORTED


def _ci_profile_info(version: int | None) -> base.Impl:
    """nvmlGpuInstanceGetComputeInstanceProfileInfo[V](gi, profile, engProfile, byref(info))."""

    def impl(
        machine: Machine, gi: GpuInstance, profile_id: object, eng_profile: object, ref: object
    ) -> int:
        # NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED is the only engine profile (COUNT = 1).
        if base.as_int(eng_profile) != 0:
            return INVALID_ARGUMENT
        profile = _ci_profile(gi, profile_id)
        if isinstance(profile, int):
            return profile
        info = ref._obj  # type: ignore[attr-defined]
        if version is not None and info.version != version:
            return base.ARGUMENT_VERSION_MISMATCH
        g = gi.spec.profile
        for name, value in (
            ("id", profile.index),
            ("sliceCount", profile.slice_count),
            ("instanceCount", profile.instance_count),
            ("multiprocessorCount", profile.multiprocessor_count),
            ("sharedCopyEngineCount", g.copy_engine_count),
            ("sharedDecoderCount", g.decoder_count),
            ("sharedEncoderCount", g.encoder_count),
            ("sharedJpegCount", g.jpeg_count),
            ("sharedOfaCount", g.ofa_count),
        ):
            setattr(info, name, value)
        if version is not None:
            info.name = f"MIG {profile.name}".encode()
        return SUCCESS

    return impl


def _privileged_ci_profile(
    machine: Machine, gi: GpuInstance, profile_id: object
) -> ComputeInstanceProfile | int:
    if not machine.privileged:
        return NO_PERMISSION
    return _ci_profile(gi, profile_id)


def _ci_remaining(machine: Machine, gi: GpuInstance, profile_id: object, ref: object) -> int:
    profile = _privileged_ci_profile(machine, gi, profile_id)
    if isinstance(profile, int):
        return profile
    occupied = 0
    for ci in gi.compute_instances:
        occupied |= placement_mask(ci.spec.start, ci.spec.profile.slice_count)
    existing = sum(ci.spec.profile is profile for ci in gi.compute_instances)
    ref._obj.value = remaining_capacity(  # type: ignore[attr-defined]
        profile.placement_starts, profile.slice_count, profile.instance_count, existing, occupied
    )
    return SUCCESS


def _ci_placements(
    machine: Machine, gi: GpuInstance, profile_id: object, placements: object, count_ref: object
) -> int:
    profile = _privileged_ci_profile(machine, gi, profile_id)
    if isinstance(profile, int):
        return profile
    return _write_placements(placements, count_ref, profile.placement_starts, profile.slice_count)


def _compute_instances(
    machine: Machine, gi: GpuInstance, profile_id: object, array: object, count_ref: object
) -> int:
    profile = _privileged_ci_profile(machine, gi, profile_id)
    if isinstance(profile, int):
        return profile
    handles = [ci.handle for ci in gi.compute_instances if ci.spec.profile is profile]
    if handles:
        base.write_handles(array, handles)
    count_ref._obj.value = len(handles)  # type: ignore[attr-defined]
    return SUCCESS


def _compute_instance_by_id(machine: Machine, gi: GpuInstance, ci_id: object, ref: object) -> int:
    if not machine.privileged:
        return NO_PERMISSION
    wanted = base.as_int(ci_id)
    for ci in gi.compute_instances:
        if ci.spec.id == wanted:
            base.write_handle(ref, ci.handle)
            return SUCCESS
    return NOT_FOUND


def _ci_info(machine: Machine, ci: ComputeInstance, ref: object) -> int:
    """nvmlComputeInstanceGetInfo_v2: (device, gpuInstance, id, profileId, placement)."""
    info = ref._obj  # type: ignore[attr-defined]
    _write_handle_field(info, "device", ci.gpu.handle)
    _write_handle_field(info, "gpuInstance", ci.gpu_instance.handle)
    info.id = ci.spec.id
    info.profileId = ci.spec.profile.index
    info.placement.start = ci.spec.start
    info.placement.size = ci.spec.profile.slice_count
    return SUCCESS


S = MIG_MIN_DRIVER
SYMBOLS: tuple[Symbol, ...] = (
    *base.field_symbols(FIELDS),
    Symbol("nvmlDeviceGetMigDeviceHandleByIndex", "device", _mig_device_by_index, S),
    Symbol("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", "device", _parent_of, S),
    Symbol("nvmlDeviceGetGpuInstanceProfileInfo", "device", _gi_profile_info(None), S),
    Symbol(
        "nvmlDeviceGetGpuInstanceProfileInfoV", "device", _gi_profile_info(GI_PROFILE_INFO_V2), S
    ),
    Symbol(
        "nvmlDeviceGetGpuInstanceProfileInfoByIdV",
        "device",
        _gi_profile_info(GI_PROFILE_INFO_V2, by_id=True),
        S,
    ),
    Symbol("nvmlDeviceGetGpuInstanceRemainingCapacity", "device", _remaining, S),
    Symbol(
        "nvmlDeviceGetGpuInstancePossiblePlacements_v2",
        "device",
        _possible_placements,
        PLACEMENTS_V2_SINCE,
    ),
    Symbol("nvmlDeviceGetGpuInstances", "device", _gpu_instances, S),
    Symbol("nvmlDeviceGetGpuInstanceById", "device", _gpu_instance_by_id, S),
    Symbol("nvmlGpuInstanceGetInfo", "gpu_instance", _gi_info, S),
    Symbol(
        "nvmlGpuInstanceGetComputeInstanceProfileInfo", "gpu_instance", _ci_profile_info(None), S
    ),
    Symbol(
        "nvmlGpuInstanceGetComputeInstanceProfileInfoV",
        "gpu_instance",
        _ci_profile_info(CI_PROFILE_INFO_V2),
        S,
    ),
    Symbol("nvmlGpuInstanceGetComputeInstanceRemainingCapacity", "gpu_instance", _ci_remaining, S),
    Symbol(
        "nvmlGpuInstanceGetComputeInstancePossiblePlacements", "gpu_instance", _ci_placements, S
    ),
    Symbol("nvmlGpuInstanceGetComputeInstances", "gpu_instance", _compute_instances, S),
    Symbol("nvmlGpuInstanceGetComputeInstanceById", "gpu_instance", _compute_instance_by_id, S),
    Symbol("nvmlComputeInstanceGetInfo_v2", "compute_instance", _ci_info, S),
)
