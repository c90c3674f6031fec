"""Runtime state of a simulated machine: GPUs, MIG trees, processes, samples, faults, events.

The fake library (nvml_lib*.py) answers NVML calls from this state; the objects its handles
point at are devices.py's. Readers never take a lock: every mutation builds new objects and
swaps references, and per-device answer caches are dropped (set to None) for the library to
rebuild. Writers (the scenario clock catching
up, the mutation API below) serialize on one lock, which is never held while a call sleeps.

Scenario time runs with the host's clock from the moment the simulated driver loaded
(driver_load.py: shared by every process simulating the scenario), in samples of
SAMPLE_SECONDS: sample 1 starts at the load. Timed faults, lost GPUs and XID events follow
it, whatever the clients call; the energy counters count from the load.

Mutation API, for benchmarks and tests that change the machine between samples:
    set_processes(gpu, processes)      replace a GPU's processes
    reconfigure_mig(gpu, mig, processes=())   new MIG layout (and the processes on it)
    update_gpu(gpu, **fields)          telemetry and other plain GPU fields, scenario names
    set_lost(gpu, lost)                the GPU falls off the bus, or comes back
    inject_xid(gpu, xid, gpu_instance_id=None, compute_instance_id=None)
    advance(seconds)                   let scenario time pass at once (tests)
Processes that leave a GPU end in its accounting buffer (accounting.py) while accounting is on.
Process and MIG arguments take scenario-format dicts (validated like a file) or parsed specs.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import tempfile
import threading
import time
import uuid as uuid_mod
import weakref
from collections.abc import Iterable, Mapping

from hwinfo.mig.profiles import (
    ComputeInstanceProfile,
    GpuInstanceProfile,
    default_gpu_instance_id,
    free_placements,
    placement_mask,
)
from hwinfo.sim.accounting import AccountingBuffer, Record
from hwinfo.sim.devices import (
    ComputeInstance,
    Device,
    EventSet,
    GpmSample,
    GpuDevice,
    GpuInstance,
    MigDevice,
)
from hwinfo.sim.driver_load import DriverLoad
from hwinfo.sim.scenario_gpu import gpu_field_readers, parse_processes
from hwinfo.sim.scenario_mig import parse_mig
from hwinfo.sim.scenario_model import (
    ComputeInstanceSpec,
    FaultSpec,
    GpuInstanceSpec,
    MigSpec,
    ProcessSpec,
    Scenario,
    ScenarioError,
    Window,
    XidEvent,
)
from hwinfo.sim.scenario_reader import Reader
from hwinfo.sim.sysfs_tree import write_sysfs

# nvmlEventTypeXidCriticalError (nvml.h).
EVENT_XID = 0x8
# NVML's "no instance" value for GI/CI ids (nvml.h nvmlProcessInfo_v2_t, nvmlEventData_t).
NO_INSTANCE = 0xFFFFFFFF
# MIG devices exist from R470 with this UUID form; before, "MIG-GPU-<uuid>/<gi>/<ci>" (the MIG
# User Guide, https://docs.nvidia.com/datacenter/tesla/mig-user-guide/).
NEW_MIG_UUID_DRIVER = (470,)
# One sample of scenario time (docs/scenario-format.md "Samples").
SAMPLE_SECONDS = 1.0


class Machine:
    """A simulated machine built from a Scenario; see the module docstring for mutations."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.driver = scenario.driver.version_tuple
        self.privileged = scenario.privileged
        self.load = DriverLoad(scenario)
        self._skew = 0.0  # seconds advance() added to the host's clock
        self.sample = 1
        self.initialized = 0  # nvmlInit reference count
        self.init_attempts = 0
        self.devices: dict[int, Device] = {}
        self.gpu_instances: dict[int, GpuInstance] = {}
        self.compute_instances: dict[int, ComputeInstance] = {}
        self.event_sets: dict[int, EventSet] = {}
        self.gpm_samples: dict[int, GpmSample] = {}
        # Fault call name -> the faults active at the current sample, in scenario order.
        self.active_faults: dict[str, tuple[FaultSpec, ...]] = {}
        self._lock = threading.Lock()
        # Opaque handle values: non-zero, never reused, never dereferenced.
        self._ids = itertools.count(0x1000, 0x10)
        self._owners: dict[int, tuple[str | None, str | None]] = {}
        self._names: dict[int, str] = {}
        self._sysfs: str | None = None
        self._xids: list[tuple[GpuDevice, XidEvent]] = []
        self.gpus: tuple[GpuDevice, ...] = tuple(
            GpuDevice(next(self._ids), g) for g in scenario.gpus
        )
        # The load moment on the Unix clock, which NVML's accounting timestamps use.
        loaded_wall = time.time() - (time.monotonic() - self.load.loaded_at)
        for gpu in self.gpus:
            self.devices[gpu.handle] = gpu
            gpu.energy_since = self.load.loaded_at
            gpu.accounting = AccountingBuffer(gpu.spec.accounting, loaded_wall)
            gpu.accounting.start((p.pid for p in gpu.processes), loaded_wall)
            self._build_mig(gpu)
            self._xids.extend((gpu, e) for e in gpu.spec.xid_events)
        self._xids.sort(key=lambda item: item[1].after_samples)
        # Only then can a sample change which faults are active or which GPUs are lost.
        self._timed = bool(scenario.faults) or any(g.spec.lost for g in self.gpus)
        self.timed = self._timed or bool(self._xids)
        self._update_owners()
        with self._lock:
            self._advance_to(self.current_sample())

    # -- library sessions -------------------------------------------------------------------

    def init(self) -> int:
        """Count an nvmlInit attempt: 0 (one more reference) or the scenario's init error."""
        with self._lock:
            self.init_attempts += 1
            error = self.scenario.init_error
            limit = self.scenario.init_error_attempts
            if error is not None and (limit is None or self.init_attempts <= limit):
                return error
            self.initialized += 1
            return 0

    def shutdown(self) -> bool:
        """Drop one nvmlInit reference; False when there was none."""
        with self._lock:
            if not self.initialized:
                return False
            self.initialized -= 1
            return True

    # -- samples, faults, lost GPUs, events ------------------------------------------------

    def clock(self) -> float:
        """The host's monotonic clock (seconds), plus whatever advance() added."""
        return time.monotonic() + self._skew

    def wall_clock(self) -> float:
        """The host's Unix time, plus whatever advance() added."""
        return time.time() + self._skew

    def current_sample(self) -> int:
        """The sample scenario time is in: 1 from the driver's load, 2 a sample later, ..."""
        return int((self.clock() - self.load.loaded_at) // SAMPLE_SECONDS) + 1

    def catch_up(self) -> None:
        """Apply what scenario time has started since the last call (every NVML call asks)."""
        if self.timed and self.current_sample() != self.sample:
            with self._lock:
                self._advance_to(self.current_sample())

    def advance(self, seconds: float) -> None:
        """Let `seconds` of scenario time pass now: faults, lost GPUs, XIDs and energy follow."""
        with self._lock:
            self._skew += seconds
            self._advance_to(self.current_sample())

    def _advance_to(self, sample: int) -> None:
        """Move to `sample` and apply what it starts (lock held)."""
        self.sample = max(sample, self.sample)
        if self._timed:
            self._apply_timeline()
        # An XID `after_samples: N` fires once N samples have passed, with sample N + 1.
        while self._xids and self._xids[0][1].after_samples < self.sample:
            self._fire(*self._xids.pop(0))

    def energy_now_mj(self, gpu: GpuDevice) -> int:
        """The GPU's energy counter: its value at the driver's load plus power x time since."""
        elapsed = self.clock() - gpu.energy_since
        return int(gpu.energy_mj + (gpu.spec.power_draw_w or 0.0) * elapsed * 1000)

    def _apply_timeline(self) -> None:
        active: dict[str, list[FaultSpec]] = {}
        for fault in self.scenario.faults:
            if fault.window.active(self.sample):
                active.setdefault(fault.call, []).append(fault)
        self.active_faults = {call: tuple(faults) for call, faults in active.items()}
        for gpu in self.gpus:
            gpu.lost = gpu.spec.lost is not None and gpu.spec.lost.active(self.sample)

    @staticmethod
    def apply_faults(faults: tuple[FaultSpec, ...], gpu_index: int) -> int:
        """Sleep for and return the error of the faults that match this GPU; 0 when none."""
        for fault in faults:
            if fault.gpu is None or fault.gpu == gpu_index:
                if fault.delay_seconds:
                    time.sleep(fault.delay_seconds)
                if fault.error:
                    return fault.error
        return 0

    def _fire(self, gpu: GpuDevice, event: XidEvent) -> None:
        """Queue an XID event on every event set registered for it (lock held)."""
        # nvml.h: without privileges, a MIG-mode GPU reports only events that affect all its
        # instances, i.e. those not attributed to one GPU instance.
        if not self.privileged and gpu.mig_enabled and event.gpu_instance_id is not None:
            return
        for event_set in self.event_sets.values():
            if event_set.registrations.get(gpu.index, 0) & EVENT_XID:
                event_set.queue.append((gpu, event))

    def new_event_set(self) -> EventSet:
        with self._lock:
            event_set = EventSet(next(self._ids))
            self.event_sets[event_set.handle] = event_set
            return event_set

    def register_events(self, event_set: EventSet, gpu: GpuDevice, mask: int) -> None:
        """Record events of these types from now on (earlier ones are not delivered, nvml.h)."""
        with self._lock:
            event_set.registrations[gpu.index] = event_set.registrations.get(gpu.index, 0) | mask

    def free_event_set(self, event_set: EventSet) -> None:
        with self._lock:
            self.event_sets.pop(event_set.handle, None)

    def new_gpm_sample(self) -> GpmSample:
        with self._lock:
            sample = GpmSample(next(self._ids))
            self.gpm_samples[sample.handle] = sample
            return sample

    def free_gpm_sample(self, sample: GpmSample) -> None:
        with self._lock:
            self.gpm_samples.pop(sample.handle, None)

    # -- identity ---------------------------------------------------------------------------

    def process_owner(self, pid: int) -> tuple[str | None, str | None] | None:
        """(user, command line) of a GPU process as the scenario gives them.

        None when the pid is on no GPU or is not `visible` (not in hwinfo's PID namespace).
        Either item is None when the scenario leaves it out.
        """
        return self._owners.get(pid)

    def process_name(self, pid: int) -> str | None:
        """What nvmlSystemGetProcessName answers: the scenario's `name`, else the command
        line's first word; None where process_owner is None or names no command."""
        return self._names.get(pid)

    def sysfs_root(self) -> str:
        """A directory holding the sysfs of the scenario's PCI tree (sysfs_tree.py), written
        on first use and removed with the machine; the collectors read it as a --root."""
        with self._lock:
            if self._sysfs is None:
                directory = tempfile.mkdtemp(prefix="hwinfo-sim-sysfs-")
                weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)
                write_sysfs(self.scenario, directory)
                self._sysfs = directory
            return self._sysfs

    def guessed(self, uuid: str) -> frozenset[str]:
        """What the scenario says an import inferred (GUESSED_GI_FACTS) of the GPU instance
        of the MIG device with this UUID; empty for any other UUID."""
        for gpu in self.gpus:
            for dev in gpu.mig_devices:
                if uuid in dev.uuids:
                    return dev.compute_instance.gpu_instance.spec.guessed
        return frozenset()

    def _update_owners(self) -> None:
        owners: dict[int, tuple[str | None, str | None]] = {}
        names: dict[int, str] = {}
        for gpu in self.gpus:
            for p in gpu.processes:
                if p.visible and p.pid not in owners:
                    owners[p.pid] = (p.user, p.command)
                    name = p.name or next(iter((p.command or '').split()), None)
                    if name:
                        names[p.pid] = name
        self._owners, self._names = owners, names

    def _fold_energy(self, gpu: GpuDevice) -> None:
        """Bank the energy used so far at the old power draw, before the draw changes."""
        gpu.energy_mj, gpu.energy_since = float(self.energy_now_mj(gpu)), self.clock()

    # -- MIG tree ---------------------------------------------------------------------------

    def _build_mig(self, gpu: GpuDevice) -> None:
        """(Re)create the GPU's GI/CI/MIG-device objects from its MigSpec (lock held or init)."""
        for old in gpu.gpu_instances:
            self.gpu_instances.pop(old.handle, None)
            for ci in old.compute_instances:
                self.compute_instances.pop(ci.handle, None)
                if ci.mig_device is not None:
                    self.devices.pop(ci.mig_device.handle, None)
        instances: list[GpuInstance] = []
        mig = gpu.spec.mig
        if mig is not None and mig.enabled:
            for gi_spec in mig.gpu_instances:
                gi = GpuInstance(next(self._ids), gpu, gi_spec)
                gi.compute_instances = tuple(
                    ComputeInstance(next(self._ids), gi, ci_spec)
                    for ci_spec in gi_spec.compute_instances
                )
                instances.append(gi)
        instances.sort(key=lambda g: g.spec.id)
        devices = []
        for gi in instances:
            for ci in sorted(gi.compute_instances, key=lambda c: c.spec.id):
                devices.append(self._new_mig_device(gpu, ci, len(devices)))
        for gi in instances:
            self.gpu_instances[gi.handle] = gi
            for ci in gi.compute_instances:
                self.compute_instances[ci.handle] = ci
        for dev in devices:
            self.devices[dev.handle] = dev
        gpu.gpu_instances = tuple(instances)
        gpu.mig_devices = tuple(devices)

    def _new_mig_device(self, gpu: GpuDevice, ci: ComputeInstance, index: int) -> MigDevice:
        gi_id, ci_id = ci.gpu_instance.spec.id, ci.spec.id
        old_form = f"MIG-{gpu.spec.uuid}/{gi_id}/{ci_id}"
        new_form = "MIG-" + str(
            uuid_mod.uuid5(uuid_mod.NAMESPACE_URL, f"{gpu.spec.uuid}/{gi_id}/{ci_id}")
        )
        if ci.spec.uuid is not None:  # the dump's own (-L), masked or not
            new_form = ci.spec.uuid
        # GetHandleByUUID accepts both forms on drivers that have the new one (NVML's change
        # log in its API reference, https://docs.nvidia.com/deploy/nvml-api/).
        uuids = (new_form, old_form) if self.driver >= NEW_MIG_UUID_DRIVER else (old_form,)
        dev = MigDevice(
            next(self._ids), gpu, index, ci, f"{gpu.spec.name} MIG {ci.spec.profile.name}", uuids
        )
        ci.mig_device = dev
        return dev

    def _commit_mig(self, gpu: GpuDevice, instances: tuple[GpuInstance, ...]) -> None:
        """Make `instances` the GPU's GIs after an NVML create/destroy (lock held).

        Unlike _build_mig, instances that stay keep their handles, as NVML's do; MIG device
        indices follow ascending GI and CI ids.
        """
        instances = tuple(sorted(instances, key=lambda g: g.spec.id))
        mig = gpu.spec.mig
        assert mig is not None
        gpu.spec = dataclasses.replace(
            gpu.spec,
            mig=dataclasses.replace(mig, gpu_instances=tuple(gi.spec for gi in instances)),
        )
        devices = []
        for gi in instances:
            self.gpu_instances[gi.handle] = gi
            for ci in sorted(gi.compute_instances, key=lambda c: c.spec.id):
                self.compute_instances[ci.handle] = ci
                dev = ci.mig_device
                if dev is None:
                    dev = self._new_mig_device(gpu, ci, len(devices))
                    self.devices[dev.handle] = dev
                dev.index = len(devices)
                devices.append(dev)
        gpu.gpu_instances = instances
        gpu.mig_devices = tuple(devices)
        self._invalidate(gpu)

    def create_gpu_instance(
        self, gpu: GpuDevice, profile: GpuInstanceProfile, start: int | None
    ) -> GpuInstance | None:
        """NVML's GI create: at `start`, or where the driver puts it; None when it does not fit."""
        with self._lock:
            board_slices = profile.board_memory_slices
            occupied = 0
            for gi in gpu.gpu_instances:
                occupied |= placement_mask(gi.spec.start, gi.spec.profile.memory_slices)
            existing = sum(gi.spec.profile is profile for gi in gpu.gpu_instances)
            free = free_placements(profile.placement_starts, profile.memory_slices, occupied)
            table = gpu.spec.board.mig.for_driver(self.driver)  # type: ignore[union-attr]
            others = [gi.spec.profile for gi in gpu.gpu_instances]
            if (
                existing >= profile.instance_count
                or not free
                or not table.can_coexist([*others, profile])  # type: ignore[union-attr]
            ):
                return None
            if start is None:
                start = table.driver_placement(profile, occupied)  # type: ignore[union-attr]
            if start not in free:
                return None
            gi_id = default_gpu_instance_id(start, profile.memory_slices, board_slices)
            gi = GpuInstance(next(self._ids), gpu, GpuInstanceSpec(gi_id, start, profile, ()))
            self._commit_mig(gpu, (*gpu.gpu_instances, gi))
            return gi

    def create_compute_instance(
        self, gi: GpuInstance, profile: ComputeInstanceProfile, start: int | None
    ) -> ComputeInstance | None:
        """NVML's CI create inside a GI; None when it does not fit."""
        with self._lock:
            occupied = 0
            for ci in gi.compute_instances:
                occupied |= placement_mask(ci.spec.start, ci.spec.profile.slice_count)
            existing = sum(ci.spec.profile is profile for ci in gi.compute_instances)
            free = free_placements(profile.placement_starts, profile.slice_count, occupied)
            if (
                existing >= profile.instance_count
                or not free
                or (start is not None and start not in free)
            ):
                return None
            # Unknown: the driver's choice of placement (the lowest free one here). CI ids are
            # the lowest unused, as the MIG User Guide's `-cci` examples count 0, 1, 2.
            used = {ci.spec.id for ci in gi.compute_instances}
            ci_id = next(i for i in itertools.count() if i not in used)
            spec = ComputeInstanceSpec(ci_id, free[0] if start is None else start, profile, None)
            ci = ComputeInstance(next(self._ids), gi, spec)
            gi.spec = dataclasses.replace(
                gi.spec, compute_instances=(*gi.spec.compute_instances, spec)
            )
            gi.compute_instances = (*gi.compute_instances, ci)
            self._commit_mig(gi.gpu, gi.gpu.gpu_instances)
            return ci

    def destroy_gpu_instance(self, gi: GpuInstance) -> bool:
        """NVML's GI destroy; False (in use) while it has compute instances or processes."""
        with self._lock:
            gpu = gi.gpu
            if gi.compute_instances or any(p.gpu_instance_id == gi.spec.id for p in gpu.processes):
                return False
            self.gpu_instances.pop(gi.handle, None)
            self._commit_mig(gpu, tuple(g for g in gpu.gpu_instances if g is not gi))
            return True

    def destroy_compute_instance(self, ci: ComputeInstance) -> bool:
        """NVML's CI destroy; False (in use) while processes run in it."""
        with self._lock:
            gi = ci.gpu_instance
            if any(
                p.gpu_instance_id == gi.spec.id and p.compute_instance_id == ci.spec.id
                for p in gi.gpu.processes
            ):
                return False
            self.compute_instances.pop(ci.handle, None)
            if ci.mig_device is not None:
                self.devices.pop(ci.mig_device.handle, None)
            gi.spec = dataclasses.replace(
                gi.spec,
                compute_instances=tuple(c for c in gi.spec.compute_instances if c is not ci.spec),
            )
            gi.compute_instances = tuple(c for c in gi.compute_instances if c is not ci)
            self._commit_mig(gi.gpu, gi.gpu.gpu_instances)
            return True

    @staticmethod
    def _invalidate(gpu: GpuDevice) -> None:
        """Drop the answer tables built from the GPU's old state (after changing it)."""
        gpu.generation += 1
        gpu.answers = None
        for dev in gpu.mig_devices:
            dev.answers = None

    # -- mutation API -----------------------------------------------------------------------

    def _gpu(self, index: int) -> GpuDevice:
        if not 0 <= index < len(self.gpus):
            raise IndexError(f"no GPU {index} (the machine has {len(self.gpus)})")
        return self.gpus[index]

    def _reader(self) -> Reader:
        return Reader(f"{self.scenario.source} (runtime change)")

    def set_processes(
        self, gpu: int, processes: Iterable[ProcessSpec | Mapping[str, object]]
    ) -> None:
        """Replace the GPU's processes (scenario-format dicts or ProcessSpec)."""
        with self._lock:
            dev = self._gpu(gpu)
            specs = self._processes(dev, dev.spec.mig, processes)
            self._account(dev, specs)
            dev.spec = dataclasses.replace(dev.spec, processes=specs)
            self._invalidate(dev)
            self._update_owners()

    def reconfigure_mig(
        self,
        gpu: int,
        mig: MigSpec | Mapping[str, object] | None,
        processes: Iterable[ProcessSpec | Mapping[str, object]] = (),
    ) -> None:
        """Give the GPU a new MIG layout (scenario-format `mig` object) and its processes.

        Old GI/CI/MIG-device handles become invalid (InvalidArgument); new ones get new values.
        """
        # Unknown: real NVML may reuse handle values for new MIG devices (nvml.h: "Handles may
        # be reused and their properties can change").
        with self._lock:
            dev = self._gpu(gpu)
            if mig is not None and not isinstance(mig, MigSpec):
                mig = parse_mig(self._reader(), "mig", mig, dev.spec.board, self.driver)
            specs = self._processes(dev, mig, processes)
            self._account(dev, specs)
            dev.spec = dataclasses.replace(dev.spec, mig=mig, processes=specs)
            if mig is not None and mig.enabled:
                # NVML: on MIG-enabled GPUs accounting mode is set to DISABLED.
                dev.accounting.set_enabled(False, (), self.wall_clock())
            self._build_mig(dev)
            self._invalidate(dev)
            self._update_owners()

    def update_gpu(self, gpu: int, **fields: object) -> None:
        """Change plain GPU fields by their scenario names, e.g. temperature_c=80."""
        with self._lock:
            dev = self._gpu(gpu)
            r = self._reader()
            readers = gpu_field_readers(r)
            values = {}
            for key, value in fields.items():
                if key not in readers:
                    r.fail(key, f"not a plain GPU field (known: {', '.join(sorted(readers))})")
                values[key] = readers[key](key, value)
            self._fold_energy(dev)
            dev.spec = dataclasses.replace(dev.spec, **values)  # type: ignore[arg-type]
            if "energy_j" in values:
                dev.energy_mj, dev.energy_since = (dev.spec.energy_j or 0.0) * 1000, self.clock()
            if "name" in values or "uuid" in values:
                self._build_mig(dev)
            self._invalidate(dev)

    def set_lost(self, gpu: int, lost: bool) -> None:
        """Make the GPU fall off the bus (every call on it: GpuIsLost), or come back."""
        with self._lock:
            dev = self._gpu(gpu)
            dev.spec = dataclasses.replace(dev.spec, lost=Window(None, None) if lost else None)
            dev.lost = lost

    def inject_xid(
        self,
        gpu: int,
        xid: int,
        gpu_instance_id: int | None = None,
        compute_instance_id: int | None = None,
    ) -> None:
        """Raise an XID event now, on every event set registered for the GPU."""
        with self._lock:
            self._fire(
                self._gpu(gpu), XidEvent(self.sample, xid, gpu_instance_id, compute_instance_id)
            )

    def _account(self, dev: GpuDevice, processes: tuple[ProcessSpec, ...]) -> None:
        """Processes that leave the GPU end in its accounting buffer; new ones start (lock held)."""
        now, pids = self.wall_clock(), {p.pid for p in processes}
        dev.accounting.end((p for p in dev.processes if p.pid not in pids), dev.spec, now)
        dev.accounting.start(pids, now)

    def set_accounting(self, gpu: GpuDevice, enabled: bool) -> None:
        """nvmlDeviceSetAccountingMode (callers check MIG mode and privileges)."""
        with self._lock:
            gpu.accounting.set_enabled(enabled, (p.pid for p in gpu.processes), self.wall_clock())

    def clear_accounting(self, gpu: GpuDevice) -> None:
        with self._lock:
            gpu.accounting.clear(self.wall_clock())

    def accounting_records(self, gpu: GpuDevice) -> list[Record]:
        with self._lock:
            return gpu.accounting.records(gpu.spec, self.wall_clock())

    def accounting_record(self, gpu: GpuDevice, pid: int) -> Record | None:
        with self._lock:
            return gpu.accounting.latest(pid, gpu.spec, self.wall_clock())

    def _processes(
        self,
        dev: GpuDevice,
        mig: MigSpec | None,
        processes: Iterable[ProcessSpec | Mapping[str, object]],
    ) -> tuple[ProcessSpec, ...]:
        items = list(processes)
        if all(isinstance(p, ProcessSpec) for p in items):
            return tuple(items)  # type: ignore[arg-type]
        if any(isinstance(p, ProcessSpec) for p in items):
            raise ScenarioError(
                f"scenario {self.scenario.source}: processes: mix of dicts and ProcessSpec"
            )
        return parse_processes(self._reader(), f"gpus[{dev.index}].processes", items, mig)
