"""The objects an NVML handle of the simulated library points at: GPUs, MIG GPU and compute
instances, MIG devices, event sets and GPM sample buffers.

machine.py builds and swaps them; the library (nvml_lib*.py) reads them without a lock, so
each is replaced rather than changed in place where a reader could see half a change.
"""

from __future__ import annotations

from collections import deque

from hwinfo.sim.scenario_model import (
    ComputeInstanceSpec,
    GpmSpec,
    GpuInstanceSpec,
    GpuSpec,
    ProcessSpec,
    XidEvent,
)


def gpu_instance_idle_used_mib(memory_slices: int) -> int:
    """Memory a GPU instance shows as used with nothing running in it."""
    # Unknown: only one value is observed, 19 MiB for a 3g.20gb (4 memory slices) on an
    # A100-SXM4-40GB under R510 (https://github.com/netdata/netdata/blob/master/src/go/plugin/go.d/collector/nvidia_smi/testdata/a100-sxm4-mig.xml);
    # other real listings show 11-44 MiB (13 MiB for an idle 2g.20gb of an A100 80GB in
    # https://github.com/XuehaiPan/nvitop/pull/8). Scaled by size.
    return 11 + 2 * memory_slices


class ComputeInstance:
    """A MIG compute instance; each one is also a MIG device."""

    __slots__ = ("gpu_instance", "handle", "mig_device", "spec")

    def __init__(
        self, handle: int, gpu_instance: GpuInstance, spec: ComputeInstanceSpec
    ) -> None:
        self.handle = handle
        self.gpu_instance = gpu_instance
        self.spec = spec
        self.mig_device: MigDevice | None = None

    @property
    def gpu(self) -> GpuDevice:
        return self.gpu_instance.gpu


class GpuInstance:
    """A MIG GPU instance."""

    __slots__ = ("compute_instances", "gpu", "handle", "spec")

    def __init__(self, handle: int, gpu: GpuDevice, spec: GpuInstanceSpec) -> None:
        self.handle = handle
        self.gpu = gpu
        self.spec = spec
        self.compute_instances: tuple[ComputeInstance, ...] = ()

    def memory_used_mib(self) -> int:
        """What the GI's MIG devices report as used: CI shares (or their processes) + overhead."""
        if self.spec.memory_used_mib is not None:
            return self.spec.memory_used_mib  # as a dump showed it, below the overhead too
        used = gpu_instance_idle_used_mib(self.spec.profile.memory_slices)
        for ci in self.compute_instances:
            if ci.spec.memory_used_mib is not None:
                used += ci.spec.memory_used_mib
            else:
                used += sum(
                    p.used_memory_mib or 0
                    for p in self.gpu.processes
                    if p.gpu_instance_id == self.spec.id and p.compute_instance_id == ci.spec.id
                )
        return used


class Device:
    """Anything a device handle points at; `answers` caches the library's replies (None: stale)."""

    __slots__ = ("answers", "handle")
    gpu: GpuDevice
    index: int

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.answers: dict[str, object] | None = None


class GpuDevice(Device):
    """A physical GPU."""

    __slots__ = (
        "accounting",
        "energy_mj",
        "energy_since",
        "generation",
        "gpu",
        "gpu_instances",
        "index",
        "lost",
        "mig_devices",
        "spec",
    )

    def __init__(self, handle: int, spec: GpuSpec) -> None:
        super().__init__(handle)
        self.gpu = self  # what every handle's object has: the physical GPU it belongs to
        self.index = spec.index
        self.spec = spec
        self.lost = False
        self.gpu_instances: tuple[GpuInstance, ...] = ()
        self.mig_devices: tuple[MigDevice, ...] = ()  # by MIG index
        # Bumped by every change, so an answer table built from older state is not kept.
        self.generation = 0
        # Energy counter in mJ at `energy_since` (Machine.clock() seconds; set by the Machine).
        self.energy_mj = (spec.energy_j or 0.0) * 1000
        self.energy_since = 0.0

    @property
    def processes(self) -> tuple[ProcessSpec, ...]:
        return self.spec.processes

    @property
    def mig_enabled(self) -> bool:
        return self.spec.mig is not None and self.spec.mig.enabled

    def memory_used_mib(self) -> int:
        """Used memory without the reserved part: the scenario's figure or the processes'."""
        if self.spec.memory_used_mib is not None:
            return self.spec.memory_used_mib
        if self.mig_enabled:
            return sum(gi.memory_used_mib() for gi in self.gpu_instances)
        return sum(p.used_memory_mib or 0 for p in self.processes)


class MigDevice(Device):
    """The MIG device of one compute instance."""

    __slots__ = ("compute_instance", "gpu", "index", "name", "uuid", "uuids")

    def __init__(
        self,
        handle: int,
        gpu: GpuDevice,
        index: int,
        ci: ComputeInstance,
        name: str,
        uuids: tuple[str, ...],
    ) -> None:
        super().__init__(handle)
        self.gpu = gpu
        self.index = index
        self.compute_instance = ci
        self.name = name
        self.uuid = uuids[0]
        self.uuids = uuids  # every form GetHandleByUUID accepts

    @property
    def gpu_instance(self) -> GpuInstance:
        return self.compute_instance.gpu_instance


class _NoGpu:
    """Stands in for the GPU of handles that belong to none (event sets)."""

    index = -1
    lost = False


NO_GPU = _NoGpu()


class EventSet:
    __slots__ = ("gpu", "handle", "queue", "registrations")

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.gpu = NO_GPU
        self.registrations: dict[int, int] = {}  # GPU index -> registered event type mask
        self.queue: deque[tuple[GpuDevice, XidEvent]] = deque()


class GpmSample:
    """A GPM sample buffer (nvmlGpmSampleAlloc): empty until a SampleGet fills it."""

    __slots__ = ("gpm", "gpu", "handle", "source", "taken_at")

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.gpu = NO_GPU  # a buffer belongs to no GPU: freeing it works whatever happened
        self.source: tuple[int, int | None] | None = None  # (GPU index, GPU instance id)
        self.taken_at = 0.0
        self.gpm: GpmSpec | None = None
