"""Which machine the collectors read: this one, a procfs tree, and real or simulated NVML."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Protocol

from hwinfo.collect.claims import directory_path
from hwinfo.collect.deadline import GuardedGpu
from hwinfo.collect.errors import SetupError
from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.collect.gpu.owners import OwnerLookup, ProcessOwner, tree_owners
from hwinfo.collect.job_resources import JobResourcesCollector
from hwinfo.collect.pci import PciCollector
from hwinfo.collect.snapshot import SnapshotCollector
from hwinfo.collect.sysfs import Root, RootError

if TYPE_CHECKING:
    from hwinfo.collect.gpu.accounting_state import Judged
    from hwinfo.collect.remote import RemoteCollector


class SimulatedMachine(Protocol):
    """What the collectors ask of a simulated machine (hwinfo/sim's Machine, which the command
    line installs under pynvml) besides NVML: its processes' owners, what an import of it
    guessed, and its sysfs tree."""

    def process_owner(self, pid: int) -> tuple[str | None, str | None] | None: ...

    def process_name(self, pid: int) -> str | None: ...

    def guessed(self, uuid: str) -> Collection[str]: ...

    def sysfs_root(self) -> str: ...


def machine_owners(machine: SimulatedMachine) -> OwnerLookup:
    """Process owners as a simulated machine's scenario names them."""

    def owner_of(pid: int) -> ProcessOwner | None:
        found = machine.process_owner(pid)
        return None if found is None else ProcessOwner(*found, machine.process_name(pid))

    return owner_of


# How far apart a one-shot report reads a job's CPU time: its use now, over a window as short
# as the CPU section's is noise (a scheduler tick is up to 10 ms).
ONE_SHOT_WINDOW = 0.1


def open_collector(
    root: str = "/",
    machine: SimulatedMachine | None = None,
    gpus: bool = True,
    with_processes: bool = True,
    with_commands: bool = False,
    between_samples: bool = False,
    nvml_timeout: float = 10.0,
    processes_below_root: bool = False,
    accounting_resumed: Mapping[str, Judged] | None = None,
    with_jobs: bool = True,
    topology: bool = False,
) -> SnapshotCollector:
    """The local collectors; NVML is called only behind a deadline of nvml_timeout seconds.
    `machine`: the simulated machine installed under pynvml (None: this machine's NVML).
    `processes_below_root`: a simulated machine's GPU processes are looked up below
    root/proc/PID/ (the scenario's owners where there is none). `accounting_resumed`: what
    an earlier daemon had judged of NVML's accounting buffers. `with_jobs`: the cgroups of the
    jobs on the GPUs are read (collect/job_resources.py). `topology`: also the PCI places of
    GPUs, NICs and drives (a simulated machine's own sysfs tree) and every GPU pair's NVML
    topology."""
    try:
        # It reads the static inventory, where a file no procfs holds is refused.
        collector = SnapshotCollector(Root(root), claims=directory_path(root),
                                      with_commands=with_commands)
    except RootError as exc:
        raise SetupError(str(exc)) from None
    pci_root = collector.root
    if gpus:
        collector.gpu = open_gpu(
            machine, with_processes=with_processes, with_commands=with_commands,
            between_samples=between_samples, nvml_timeout=nvml_timeout,
            proc_root=collector.root if processes_below_root else None,
            accounting_resumed=accounting_resumed, topology=topology)
        if machine is not None and topology:
            pci_root = Root(machine.sysfs_root())  # the simulated machine's own sysfs
        if with_processes and with_jobs:
            # A one-shot report reads a job twice, this far apart, to tell its CPU use now.
            collector.jobs = JobResourcesCollector(collector.root,
                                                   0.0 if between_samples else ONE_SHOT_WINDOW)
    if topology:  # with --no-gpu too: the NICs and drives are still there
        collector.pci = PciCollector(pci_root)
    return collector


def open_gpu(
    machine: SimulatedMachine | None = None,
    with_processes: bool = True,
    with_commands: bool = False,
    between_samples: bool = False,
    nvml_timeout: float = 10.0,
    proc_root: Root | None = None,
    accounting_resumed: Mapping[str, Judged] | None = None,
    topology: bool = False,
) -> GuardedGpu:
    """The GPU collector behind a deadline of nvml_timeout seconds per sample. `machine`: the
    simulated machine it reads (None: this machine's NVML); `proc_root`: its GPU processes
    are looked up below it (open_collector)."""
    owners = None  # this machine's: looked up once NVML starts (GpuCollector)
    guessed_of = None  # real NVML infers nothing
    if machine is not None:
        owners, guessed_of = machine_owners(machine), machine.guessed
        if proc_root is not None:
            owners = tree_owners(proc_root, owners)
    return GuardedGpu(GpuCollector(
        owners, with_processes=with_processes, with_commands=with_commands,
        between_samples=between_samples, proc_root=proc_root if machine is not None else None,
        accounting_resumed=accounting_resumed, guessed_of=guessed_of, with_topology=topology,
    ), nvml_timeout)


def open_source(
    from_url: str | None, ca_file: str | None, root: str, machine: SimulatedMachine | None,
    **options: bool | float,
) -> SnapshotCollector | RemoteCollector:
    """A remote daemon when a URL is given, else the local collectors; SetupError otherwise."""
    if from_url:
        # `--from`'s own: an HTTP client with TLS (http.client and ssl, 25 ms) that a report
        # of this machine never needs.
        from hwinfo.collect.remote import RemoteCollector

        return RemoteCollector(from_url, ca_file)
    return open_collector(root, machine, **options)
