"""MIG calls of the fake libnvidia-ml: modes, MIG device handles, GPU/compute instance profiles,
placements, capacity and listings.

Behaviour follows nvml.h's per-call notes (https://github.com/NVIDIA/go-nvml/blob/main/gen/
nvml/nvml.h) and nvidia-ml-py's pynvml.py: GI/CI listings and capacity need a privileged caller
(NoPermission otherwise), profile queries take the profile *index* while every other call
takes the profile *ID*, and MIG device indices are dense (an index past the last is NotFound:
https://github.com/NVIDIA/go-nvml/issues/60).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from hwinfo.mig.profiles import (
    COMPUTE_INSTANCE_PROFILE_COUNT,
    GPU_INSTANCE_PROFILE_COUNT,
    ComputeInstanceProfile,
    GpuInstanceProfile,
    MigTable,
    placement_mask,
    remaining_capacity,
)
from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.devices import ComputeInstance, GpuDevice, GpuInstance, MigDevice
from hwinfo.sim.machine import Machine
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

# Struct versions the caller must set (pynvml nvmlGpuInstanceProfileInfo_v2 and
# nvmlComputeInstanceProfileInfo_v2).
GI_PROFILE_INFO_V2 = 0x02000098
CI_PROFILE_INFO_V2 = 0x02000088
# nvml.h return codes of the instance create/destroy calls.
IN_USE = 19
INSUFFICIENT_RESOURCES = 23


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
    Field("nvmlDeviceGetMigMode", base.multi, lambda m, g: _mig_mode(g)),
    # nvml.h: zero if MIG is not supported or not enabled; 7 on A100/H100/H200 and 4 on A30
    # and RTX PRO 6000 (MIG User Guide, "Supported GPUs": at most 7 or 4 instances).
    # Unknown: the answer on a MIG device handle (NotSupported here).
    Field(
        "nvmlDeviceGetMaxMigDeviceCount",
        base.scalar,
        lambda m, g: ok(_max_mig_devices(m, g) if g.mig_enabled else 0),
    ),
    Field(
        "nvmlDeviceIsMigDeviceHandle",
        base.scalar,
        lambda m, g: ok(0),
        lambda m, d: ok(1),
    ),
    # Unknown: on a physical GPU handle these two answer NotSupported here.
    Field(
        "nvmlDeviceGetGpuInstanceId",
        base.scalar,
        lambda m, g: UNSUPPORTED,
        lambda m, d: ok(d.gpu_instance.spec.id),
    ),
    Field(
        "nvmlDeviceGetComputeInstanceId",
        base.scalar,
        lambda m, g: UNSUPPORTED,
        lambda m, d: ok(d.compute_instance.spec.id),
    ),
    # nvml.h: "This API currently only supports MIG device handles".
    Field(
        "nvmlDeviceGetAttributes_v2",
        base.struct,
        lambda m, g: UNSUPPORTED,
        lambda m, d: _attributes(d),
    ),
)


def _mig_gpu(dev: GpuDevice | MigDevice, need_enabled: bool) -> GpuDevice | int:
    """The GPU a MIG management call is about, or the error for this handle."""
    if isinstance(dev, MigDevice):
        return INVALID_ARGUMENT  # Unknown: what these calls answer on a MIG device handle.
    if dev.spec.mig is None or (need_enabled and not dev.mig_enabled):
        return NOT_SUPPORTED
    return dev


def _table(machine: Machine, gpu: GpuDevice) -> MigTable | None:
    """The GPU's MIG table as the machine's driver branch reports it; None for a MIG-capable
    GPU outside the catalogue (an imported dump)."""
    # Unknown: the real profile tables of boards the catalogue lacks; their profile queries
    # answer NotSupported rather than invented rows.
    board = gpu.spec.board
    if board is None or board.mig is None:
        return None
    return board.mig.for_driver(machine.driver)


def _max_mig_devices(machine: Machine, gpu: GpuDevice) -> int:
    table = _table(machine, gpu)
    # Unknown: the figure of a board outside the catalogue; the 8-slice boards' 7 is taken.
    return 7 if table is None else table.max_gpu_instances


def _profile_by_id(
    machine: Machine, gpu: GpuDevice, profile_id: object
) -> GpuInstanceProfile | int:
    table = _table(machine, gpu)
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
            profile = _profile_by_id(machine, gpu, key)
        else:
            index = base.as_int(key)
            # nvml.h: enumerate indices from 0 until InvalidArgument; known-but-absent
            # profiles (8_SLICE, the GFX and NO_ME kinds here) are NotSupported.
            if index >= GPU_INSTANCE_PROFILE_COUNT:
                return INVALID_ARGUMENT
            table = _table(machine, gpu)
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
    profile = _profile_by_id(machine, gpu, profile_id)
    if isinstance(profile, int):
        return profile
    occupied = 0
    for gi in gpu.gpu_instances:
        occupied |= placement_mask(gi.spec.start, gi.spec.profile.memory_slices)
    existing = sum(gi.spec.profile is profile for gi in gpu.gpu_instances)
    others = [gi.spec.profile for gi in gpu.gpu_instances]
    ref._obj.value = (  # type: ignore[attr-defined]
        remaining_capacity(
            profile.placement_starts,
            profile.memory_slices,
            profile.instance_count,
            existing,
            occupied,
        )
        if _table(machine, gpu).can_coexist([*others, profile])  # type: ignore[union-attr]
        else 0
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
    profile = _profile_by_id(machine, gpu, profile_id)
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
    profile = _profile_by_id(machine, gpu, profile_id)
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


def _ci_profile(
    machine: Machine, gi: GpuInstance, profile_id: object
) -> ComputeInstanceProfile | int:
    """A CI profile the GI offers, by NVML_COMPUTE_INSTANCE_PROFILE_* (= its ID)."""
    index = base.as_int(profile_id)
    if index >= COMPUTE_INSTANCE_PROFILE_COUNT:
        return INVALID_ARGUMENT
    table = _table(machine, gi.gpu)
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
        profile = _ci_profile(machine, gi, profile_id)
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
    return _ci_profile(machine, gi, profile_id)


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


def _placement_arg(placement: object) -> tuple[int, int] | None:
    """(start, size) of a placement argument: byref(struct), pointer(struct) or the struct."""
    obj = getattr(placement, "_obj", placement)
    if isinstance(obj, ctypes._Pointer):
        obj = obj.contents
    try:
        return int(obj.start), int(obj.size)  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return None


def _created(
    with_placement: bool, rest: tuple[object, ...], size: int, starts: tuple[int, ...],
    create: Callable[[int | None], GpuInstance | ComputeInstance | None],
) -> int:
    """The shared tail of the create calls: check a requested placement, create, write the
    new handle through the last argument."""
    start = None
    if with_placement:
        placement = _placement_arg(rest[0])
        if placement is None or placement[1] != size or placement[0] not in starts:
            return INVALID_ARGUMENT
        start = placement[0]
    made = create(start)
    if made is None:
        return INSUFFICIENT_RESOURCES
    base.write_handle(rest[-1], made.handle)
    return SUCCESS


def _create_gpu_instance(with_placement: bool) -> base.Impl:
    """nvmlDeviceCreateGpuInstance[WithPlacement](device, profileId, [placement,] &gi)."""

    def impl(
        machine: Machine, dev: GpuDevice | MigDevice, profile_id: object, *rest: object
    ) -> int:
        gpu = _privileged_gpu(machine, dev, need_enabled=True)
        if isinstance(gpu, int):
            return gpu
        profile = _profile_by_id(machine, gpu, profile_id)
        if isinstance(profile, int):
            return profile
        return _created(with_placement, rest, profile.memory_slices, profile.placement_starts,
                        lambda start: machine.create_gpu_instance(gpu, profile, start))

    return impl


def _create_compute_instance(with_placement: bool) -> base.Impl:
    """nvmlGpuInstanceCreateComputeInstance[WithPlacement](gi, profileId, [placement,] &ci)."""

    def impl(machine: Machine, gi: GpuInstance, profile_id: object, *rest: object) -> int:
        profile = _privileged_ci_profile(machine, gi, profile_id)
        if isinstance(profile, int):
            return profile
        return _created(with_placement, rest, profile.slice_count, profile.placement_starts,
                        lambda start: machine.create_compute_instance(gi, profile, start))

    return impl


def _destroy_gpu_instance(machine: Machine, gi: GpuInstance) -> int:
    # nvml.h: fails while the GPU instance is in use (compute instances or processes in it).
    if not machine.privileged:
        return NO_PERMISSION
    return SUCCESS if machine.destroy_gpu_instance(gi) else IN_USE


def _destroy_compute_instance(machine: Machine, ci: ComputeInstance) -> int:
    if not machine.privileged:
        return NO_PERMISSION
    return SUCCESS if machine.destroy_compute_instance(ci) else IN_USE

SYMBOLS: tuple[Symbol, ...] = (
    *base.field_symbols(FIELDS),
    Symbol("nvmlDeviceGetMigDeviceHandleByIndex", "device", _mig_device_by_index),
    Symbol("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", "device", _parent_of),
    Symbol("nvmlDeviceGetGpuInstanceProfileInfo", "device", _gi_profile_info(None)),
    Symbol(
        "nvmlDeviceGetGpuInstanceProfileInfoV",
        "device",
        _gi_profile_info(GI_PROFILE_INFO_V2),
    ),
    Symbol(
        "nvmlDeviceGetGpuInstanceProfileInfoByIdV",
        "device",
        _gi_profile_info(GI_PROFILE_INFO_V2, by_id=True),
    ),
    Symbol("nvmlDeviceGetGpuInstanceRemainingCapacity", "device", _remaining),
    Symbol(
        "nvmlDeviceGetGpuInstancePossiblePlacements_v2",
        "device",
        _possible_placements,
    ),
    Symbol("nvmlDeviceGetGpuInstances", "device", _gpu_instances),
    Symbol("nvmlDeviceGetGpuInstanceById", "device", _gpu_instance_by_id),
    Symbol("nvmlGpuInstanceGetInfo", "gpu_instance", _gi_info),
    Symbol(
        "nvmlGpuInstanceGetComputeInstanceProfileInfo",
        "gpu_instance",
        _ci_profile_info(None),
    ),
    Symbol(
        "nvmlGpuInstanceGetComputeInstanceProfileInfoV",
        "gpu_instance",
        _ci_profile_info(CI_PROFILE_INFO_V2),
    ),
    Symbol("nvmlGpuInstanceGetComputeInstanceRemainingCapacity", "gpu_instance", _ci_remaining),
    Symbol(
        "nvmlGpuInstanceGetComputeInstancePossiblePlacements",
        "gpu_instance",
        _ci_placements,
    ),
    Symbol("nvmlGpuInstanceGetComputeInstances", "gpu_instance", _compute_instances),
    Symbol("nvmlGpuInstanceGetComputeInstanceById", "gpu_instance", _compute_instance_by_id),
    Symbol("nvmlComputeInstanceGetInfo_v2", "compute_instance", _ci_info),
    Symbol("nvmlDeviceCreateGpuInstance", "device", _create_gpu_instance(False)),
    Symbol(
        "nvmlDeviceCreateGpuInstanceWithPlacement",
        "device",
        _create_gpu_instance(True),
    ),
    Symbol("nvmlGpuInstanceDestroy", "gpu_instance", _destroy_gpu_instance),
    Symbol(
        "nvmlGpuInstanceCreateComputeInstance", "gpu_instance", _create_compute_instance(False)
    ),
    Symbol(
        "nvmlGpuInstanceCreateComputeInstanceWithPlacement",
        "gpu_instance",
        _create_compute_instance(True),
    ),
    Symbol("nvmlComputeInstanceDestroy", "compute_instance", _destroy_compute_instance),
)
