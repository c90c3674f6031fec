"""One NVML session, from its start to its stop: the readers of every GPU, its MIG tree and its
processes, and what they keep between samples (each board's static facts, GPM samples, XID
events, accounting)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hwinfo.binding import function, pynvml
from hwinfo.collect.gpu import nvml
from hwinfo.collect.gpu.accounting import AccountedProcesses, read_accounting
from hwinfo.collect.gpu.accounting_state import Judged
from hwinfo.collect.gpu.device import read_dynamic, read_static
from hwinfo.collect.gpu.events import XidListener
from hwinfo.collect.gpu.gpm import GpmReader, Key, attach
from hwinfo.collect.gpu.guessed import mark_guesses
from hwinfo.collect.gpu.mig import GpuInstanceProfile, profile_table, read_mig
from hwinfo.collect.gpu.nvml import GpuLost, Reader
from hwinfo.collect.gpu.owners import OwnerLookup
from hwinfo.collect.gpu.processes import listed_processes, live_root, local_owner, user_rollup
from hwinfo.collect.gpu.topology import read_pairs
from hwinfo.collect.job_labels import JobLabels
from hwinfo.logs import get_logger
from hwinfo.model.gpu import Activity, Gpu, GpuSystem, XidErrors

if TYPE_CHECKING:
    from hwinfo.collect.gpu.collector import GpuCollector

log = get_logger("hwinfo.gpu")

# Gpu fields without a default: a lost GPU has them all None but what was known before.
_REQUIRED = [f.name for f in dataclasses.fields(Gpu) if f.default is dataclasses.MISSING
             and f.default_factory is dataclasses.MISSING]


def _cuda_version(value: int | None) -> str | None:
    """12040 -> "12.4", as nvidia-smi prints it."""
    if value is None:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


@dataclasses.dataclass
class _Static:
    """Per-GPU facts read once (by UUID): they stay valid until the board is swapped."""

    values: dict[str, Any]
    unavailable: dict[str, str]
    mig_profiles: list[GpuInstanceProfile]


class Session:
    """The readers of a started NVML (collector.py starts it) and their state between samples."""

    def __init__(self, options: GpuCollector) -> None:
        """`options`: the collector's. Where it names no owners, they are this machine's
        (processes.local_owner), looked up below its own /proc unless it says where."""
        self.options = options
        owner_of, proc_root = options.owner_of, options.proc_root
        if owner_of is None:
            owner_of, proc_root = local_owner, proc_root or live_root()
        self.owner_of: OwnerLookup = owner_of
        self.proc_root = proc_root
        self._labels: JobLabels | None = None
        self._handles: dict[int, Any] = {}  # index -> handle of the GPUs read this sample
        self._static: dict[str, _Static] = {}
        self._uuid_at: dict[int, str] = {}  # index -> UUID last seen there, to name a lost GPU
        self._activities: dict[Key, Activity] = {}
        self._gpm = GpmReader()
        # A daemon listens for XID events and counts the jobs NVML accounting saw between
        # samples; a one-shot report has no "between".
        self._accounted = (AccountedProcesses(self.owner_of, options.accounting_resumed)
                           if options.between_samples and options.with_processes else None)
        self._driver = self._read_driver()
        self._xids = self._start_listener() if options.between_samples else None

    def collect(self) -> GpuSystem:
        try:
            count = function("nvmlDeviceGetCount")()
        except pynvml.NVMLError as exc:
            return GpuSystem("error", f"NVML cannot count the GPUs: {nvml.describe(exc)}",
                             **self._driver)
        self._activities = {}
        self._handles = {}
        gpus = [self._gpu(index) for index in range(count)]
        self._activities.update(self._gpm.finish())
        attach(gpus, self._activities)
        users = user_rollup(gpus) if self.options.with_processes else None
        accounted = [] if self._accounted is None else self._accounted.usage(
            {g.uuid: g.index for g in gpus if g.uuid is not None and not g.lost})
        pairs = read_pairs(self._handles) if self.options.with_topology else None
        return GpuSystem("ok", None, gpus=gpus, users=users, accounted=accounted, pairs=pairs,
                         **self._driver)

    @property
    def accounting_judged(self) -> Mapping[str, Judged] | None:
        """What a daemon keeps of the accounting buffers for the next one; None: nothing."""
        return None if self._accounted is None else self._accounted.judged

    def label(self, system: GpuSystem) -> None:
        """Name the jobs and pods of a sample's processes (array tasks, pod names) from what
        their users write: after the sample, off the NVML thread and outside its deadline."""
        if self.proc_root is None or system.gpus is None or not self.options.with_processes:
            return
        self._labels = self._labels or JobLabels()
        self._labels.apply(self.proc_root, (p for g in system.gpus for p in g.all_processes()))
        system.users = user_rollup(system.gpus)  # its rows list the labels

    def close(self) -> None:
        """Stop listening and sampling; NVML itself is stopped by the collector."""
        if self._xids is not None:
            self._xids.close()
            self._xids = None
        self._gpm.close()

    @staticmethod
    def _start_listener() -> XidListener | None:
        try:
            return XidListener()
        except pynvml.NVMLError as exc:
            log.warning("no XID events: %s", nvml.describe(exc))
            return None

    def _xid_errors(self, uuid: str | None) -> list[XidErrors]:
        return self._xids.errors(uuid) if self._xids is not None and uuid else []

    @staticmethod
    def _read_driver() -> dict[str, str | None]:
        read = Reader()
        return {
            "driver_version": read("driver", function("nvmlSystemGetDriverVersion")),
            "nvml_version": read("driver", function("nvmlSystemGetNVMLVersion")),
            "cuda_driver_version": _cuda_version(
                read("driver", function("nvmlSystemGetCudaDriverVersion"))
            ),
        }

    def _gpu(self, index: int) -> Gpu:
        read = Reader()
        try:
            handle = function("nvmlDeviceGetHandleByIndex")(index)
            uuid = function("nvmlDeviceGetUUID")(handle)
            static = self._static.get(uuid) or self._read_static(uuid, handle)
            self._uuid_at[index] = uuid
            if self._xids is not None:
                self._xids.register(uuid, handle)
            read.unavailable.update(static.unavailable)
            mig = read_mig(read, handle, static.mig_profiles, self.owner_of,
                           self.options.with_processes, self.options.with_commands)
            if mig is not None and self.options.guessed_of is not None:
                mark_guesses(mig, self.options.guessed_of)
            in_mig_mode = mig is not None and mig.enabled
            dynamic = read_dynamic(read, handle, in_mig_mode)
            if self._gpm.supported(handle, uuid):
                instances = sorted({d.gpu_instance_id for d in mig.devices
                                    if d.gpu_instance_id is not None}) if in_mig_mode else None
                self._activities.update(self._gpm.sample(handle, uuid, instances))
            # In MIG mode the parent's process list would repeat its MIG devices' lists:
            # processes are kept (and counted) per MIG device.
            if in_mig_mode:
                processes = [] if self.options.with_processes else None
                counts = [d.process_count for d in mig.devices]
                count = None if None in counts else sum(counts)  # type: ignore[arg-type]
            else:
                processes, count = listed_processes(read, handle, self.owner_of,
                                                    self.options.with_processes, self.options.with_commands)
            accounting = read_accounting(read, handle)
            self._handles[index] = handle
            if self._accounted is not None:
                if accounting is not None and accounting.enabled:
                    self._accounted.update(read, handle, uuid, index, processes or ())
                else:
                    self._accounted.forget(uuid)
        except (GpuLost, pynvml.NVMLError_GpuIsLost):
            return self._unreadable(index, "GPU is lost", lost=True)
        except pynvml.NVMLError as exc:
            # No handle at all (no permission on this GPU's device node, for one).
            return self._unreadable(index, nvml.describe(exc), lost=False)
        return Gpu(
            index=index,
            lost=False,
            uuid=uuid,
            mig=mig,
            processes=processes,
            process_count=count,
            accounting=accounting,
            xid_errors=self._xid_errors(uuid),
            unavailable=read.unavailable,
            **static.values,
            **dynamic,
        )

    def _read_static(self, uuid: str, handle: Any) -> _Static:
        read = Reader()
        static = _Static(read_static(read, handle), read.unavailable, profile_table(handle))
        self._static[uuid] = static
        return static

    def _unreadable(self, index: int, reason: str, lost: bool) -> Gpu:
        """A GPU NVML cannot read: what was known of it before, and why."""
        fields: dict[str, Any] = dict.fromkeys(_REQUIRED)
        uuid = self._uuid_at.get(index)
        if uuid is not None:
            fields.update(self._static[uuid].values, uuid=uuid)
        fields.update(index=index, lost=lost, unavailable={"gpu": reason},
                      xid_errors=self._xid_errors(uuid))
        return Gpu(**fields)
