"""The GPU collector: every NVIDIA GPU, its MIG tree and its processes, as a GpuSystem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from hwinfo.collect.gpu import nvml
from hwinfo.collect.gpu.nvml import NvmlUnavailable
from hwinfo.model.gpu import GpuSystem

if TYPE_CHECKING:
    from hwinfo.collect.gpu.accounting_state import Judged
    from hwinfo.collect.gpu.guessed import GuessLookup
    from hwinfo.collect.gpu.owners import OwnerLookup
    from hwinfo.collect.gpu.session import Session
    from hwinfo.collect.sysfs import Root


class GpuCollector:
    """Starts NVML, tries again each sample while it cannot, and keeps it started between
    samples with its readers' state (session.py)."""

    def __init__(
        self,
        owner_of: OwnerLookup | None = None,
        with_processes: bool = True,
        with_commands: bool = False,
        between_samples: bool = False,
        proc_root: Root | None = None,
        accounting_resumed: Mapping[str, Judged] | None = None,
        guessed_of: GuessLookup | None = None,
        with_topology: bool = False,
    ) -> None:
        """`owner_of` names a process's owner; None: this machine's (processes.local_owner).
        `proc_root`: where those owners' /proc is, for what label() reads; None: this
        machine's with local_owner, else nowhere (a scenario's processes have none).
        `between_samples`: a daemon's, which listens for XID events and counts the jobs NVML
        accounting saw between samples. `accounting_resumed`: what an earlier daemon had
        judged of the accounting buffers (accounting_state.py). `guessed_of`: a simulated
        machine's inferred MIG facts (collect/gpu/guessed.py). `with_topology`: also read
        every GPU pair (GpuSystem.pairs), n² calls."""
        self.owner_of = owner_of
        self.with_processes = with_processes
        self.with_commands = with_commands
        self.between_samples = between_samples
        self.proc_root = proc_root
        self.accounting_resumed = accounting_resumed
        self.guessed_of = guessed_of
        self.with_topology = with_topology
        self._session: Session | None = None

    def collect(self) -> GpuSystem:
        if self._session is None:
            try:
                nvml.start()
            except NvmlUnavailable as exc:
                # Not started: the next sample tries again (a driver being reloaded comes back).
                return GpuSystem(exc.status, str(exc), None, None, None)
            # Imported once NVML has started: the readers, and psutil with them, are its own
            # (20 ms), which a machine without a driver (most of those `hwinfo report` runs on
            # in a lab's login nodes) never needs.
            from hwinfo.collect.gpu.session import Session

            self._session = Session(self)
        return self._session.collect()

    @property
    def accounting_judged(self) -> Mapping[str, Judged] | None:
        """What a daemon keeps of the accounting buffers for the next one; None: nothing."""
        return None if self._session is None else self._session.accounting_judged

    def label(self, system: GpuSystem) -> None:
        """Name the jobs and pods of a sample's processes from what their users write
        (Session.label): after the sample, off the NVML thread and outside its deadline."""
        if self._session is not None:
            self._session.label(system)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            nvml.stop()
            self._session = None
