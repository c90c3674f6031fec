"""NVIDIA GPUs, their MIG layout and the processes that hold GPU memory.

A field is None when NVML cannot give it (NotSupported, or the call failed). Where
the reason is not plain "not supported" (no permission, GPU lost, timeout) it is
kept in the owner's `unavailable` map, field name -> NVML's error text, so the
report can say "no permission" instead of "not available".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwinfo.model.attribution import Attribution, charged_user
from hwinfo.model.unixtime import UnixTime

# The names Gpu.clock_event_reasons takes, by NVML's bit (nvml.h nvmlClocksEventReason*): the
# collector reads them from the mask, the metrics label a series with each.
CLOCK_EVENT_REASONS = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


@dataclass
class GpuProcess:
    pid: int
    used_memory_bytes: int | None  # None: NVML cannot tell (e.g. WDDM, some vGPU guests)
    type: str  # "compute", "graphics" or "compute+graphics"
    gpu_instance_id: int | None  # None outside MIG
    compute_instance_id: int | None
    # False when the PID is not in hwinfo's PID namespace: it exited, or it runs in a
    # container whose PIDs NVML reports untranslated. Then user and name are unknown.
    visible: bool
    user: str | None
    name: str | None  # command name
    command: str | None = None  # full command line, only when asked for (it can hold secrets)
    # NVML's per-process samples (not on MIG devices, nvml.h): share of the SMs and of memory
    # bandwidth this process used; None: no sample (MIG, or the driver has none).
    sm_utilization_ratio: float | None = None
    memory_utilization_ratio: float | None = None
    # From the host's process table (None for a PID outside our PID namespace).
    run_seconds: float | None = None
    cpu_utilization_ratio: float | None = None  # CPU time over run time, as ps's %CPU
    resident_memory_bytes: int | None = None
    # The Slurm job, container, pod or unit its cgroup names; None: the cgroup was not read.
    attribution: Attribution | None = None

    @property
    def charged_user(self) -> str | None:
        """Whom its GPU time is charged to (attribution.charged_user)."""
        return charged_user(self.user, self.attribution)


@dataclass
class UserUsage:
    """One user's share of one GPU: the per-user rollup labs ask for."""

    gpu_index: int
    # None: processes whose owner cannot be named. Root's processes in a known container or
    # pod are the container's (attribution.charged_user).
    user: str | None
    # Sum over the processes whose memory NVML reports; None when none of them does.
    used_memory_bytes: int | None
    processes: int
    # The Slurm jobs, pods and containers of those processes (Attribution.label), sorted.
    attributions: list[str] = field(default_factory=list)


@dataclass
class Activity:
    """What the GPU's performance monitor (GPM, Hopper and newer) measured over a window.

    Ratios 0..1 of the window: any engine active, SMs busy, warps resident against the
    maximum, tensor pipes busy, and DRAM bandwidth used against the peak.
    """

    window_seconds: float
    graphics_active_ratio: float | None
    sm_active_ratio: float | None
    sm_occupancy_ratio: float | None
    tensor_active_ratio: float | None
    dram_bandwidth_ratio: float | None


@dataclass
class MigDevice:
    """One MIG device: a compute instance inside a GPU instance."""

    index: int
    uuid: str | None
    profile: str | None  # "3g.40gb", or "1c.3g.40gb" for a CI smaller than its GI
    gpu_instance_id: int | None
    compute_instance_id: int | None
    multiprocessor_count: int | None
    # Compute instances of one GPU instance share its memory: these are the GI's figures.
    memory_total_bytes: int | None
    memory_used_bytes: int | None
    # None: not collected (--no-processes); process_count still says how many NVML lists.
    processes: list[GpuProcess] | None = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    # Of its GPU instance (GPM samples GPU instances); None: no GPM (before Hopper), or the
    # first of the two samples it needs.
    activity: Activity | None = None
    # Its compute slices over the GPU's (a 3g.40gb on an A100 is 3/7, a 1c.3g.40gb 1/7).
    gpu_share_ratio: float | None = None
    process_count: int | None = None  # as NVML lists them; None: the list was refused
    # Its fields a simulated machine's import inferred rather than read ("profile", "uuid"):
    # a dump that names no profile or lists no UUID (docs/simulator.md). Empty on real GPUs.
    guessed: list[str] = field(default_factory=list)


@dataclass
class MigGpuInstance:
    """A GPU instance's placement; only privileged callers can list these."""

    id: int
    profile: str | None
    profile_id: int
    placement_start: int
    placement_size: int
    # Its fields a simulated machine's import inferred rather than read (MigDevice.guessed).
    guessed: list[str] = field(default_factory=list)


@dataclass
class MigProfileCapacity:
    """One GPU-instance profile of the board, and how many more of it fit now."""

    profile: str
    profile_id: int
    memory_bytes: int | None
    multiprocessor_count: int | None
    instances_max: int  # on an empty GPU
    # None: not available (MIG is off, or the query needs privileges)
    instances_free: int | None
    gpu_share_ratio: float | None  # its compute slices over the GPU's



@dataclass
class Mig:
    enabled: bool
    pending_enabled: bool | None
    devices: list[MigDevice] = field(default_factory=list)
    # None: the privileged queries were refused (unprivileged user or container).
    gpu_instances: list[MigGpuInstance] | None = None
    # Every profile of the board, MIG on or off; None: the profile table could not be read.
    capacity: list[MigProfileCapacity] | None = None

    @property
    def change_pending(self) -> bool:
        return self.pending_enabled is not None and self.pending_enabled != self.enabled


@dataclass
class Clocks:
    graphics_hertz: float | None
    sm_hertz: float | None
    memory_hertz: float | None
    video_hertz: float | None


@dataclass
class PcieLink:
    generation: int | None
    max_generation: int | None  # of the link as the slot and GPU allow
    gpu_max_generation: int | None  # of the GPU alone
    width: int | None
    max_width: int | None
    tx_bytes_per_second: float | None
    rx_bytes_per_second: float | None
    replay_errors: int | None


@dataclass
class Ecc:
    enabled: bool
    pending_enabled: bool | None
    volatile_corrected: int | None
    volatile_uncorrected: int | None
    aggregate_corrected: int | None
    aggregate_uncorrected: int | None


@dataclass
class RetiredPages:
    single_bit: int | None
    double_bit: int | None
    pending: bool | None


@dataclass
class RemappedRows:
    correctable: int
    uncorrectable: int
    pending: bool
    failure: bool


@dataclass
class PeakThroughput:
    """Theoretical dense rates at the board's rated clock (see hwinfo/collect/gpu/peak.py)."""

    fp64_flops: float | None
    fp32_flops: float | None
    fp16_flops: float | None  # tensor cores where present, FP32 accumulate
    bf16_flops: float | None
    tf32_flops: float | None
    int8_ops: float | None
    memory_bandwidth_bytes_per_second: float | None
    clock_hertz: float | None  # the clock the FP64 and FP32 rates are taken at
    tensor_clock_hertz: float | None  # the clock the tensor (FP16, BF16, TF32, INT8) rates are at
    # "rated": the board's datasheet boost clock; "nvml_max": NVML's maximum SM clock.
    clock_source: str | None


@dataclass
class NvLink:
    """One enabled NVLink link and what is at its other end."""

    link: int
    remote_pci_bus_id: str | None  # "00000000:C4:00.0"; None: NVML did not say
    remote_type: str | None  # "gpu", "switch" (an NVSwitch), "ibmnpu" or "unknown"


@dataclass
class GpuPair:
    """How two GPUs reach each other, as NVML says (read for `report --topology` only)."""

    gpus: list[int]  # the two GPU indices, lower first
    # nvmlDeviceGetTopologyCommonAncestor: "internal" (one board), "single" (one PCIe
    # switch), "multiple" (several switches), "hostbridge", "node", "system"; None: not read.
    common_ancestor: str | None
    # nvmlDeviceGetP2PStatus per capability: "ok", "chipset_not_supported",
    # "gpu_not_supported", "topology_not_supported", "disabled_by_regkey", "not_supported",
    # "unknown"; None: not read.
    p2p_read: str | None
    p2p_write: str | None
    p2p_nvlink: str | None
    p2p_atomics: str | None
    p2p_pci: str | None


@dataclass
class XidErrors:
    """XID errors of one code that NVML reported on a GPU since hwinfo began listening."""

    xid: int
    count: int
    last_timestamp_seconds: UnixTime  # of the most recent one
    # GPU/compute instance of the most recent one, when NVML could attribute it.
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


@dataclass
class Accounting:
    """NVML's per-process accounting on a GPU (nvidia-smi's "Accounting Mode")."""

    enabled: bool
    buffer_size: int | None  # processes the driver's ring buffer keeps statistics of


@dataclass
class AccountedUsage:
    """One user's processes on one GPU that NVML accounting saw start and end between two
    of hwinfo's samples (no sample listed them running), counted since hwinfo started."""

    gpu_index: int
    user: str | None  # None: the process had gone before hwinfo could name its owner
    processes: int
    run_seconds: float
    # Run time times each process's lifetime GPU utilization; processes without one add 0.
    busy_seconds: float


# P8 is the idle P-state of every NVIDIA GPU with P-states; P0-P5 are the working ones.
_RESTING_PSTATE = 8
# Unknown: when drivers set gpu_idle (a real idle RTX 3090 at P8 does not), and how busy a
# P8 GPU driving a desktop gets; a GPU this busy or less in a P8+ state counts as at rest.
_RESTING_UTILIZATION = 0.05


@dataclass
class Gpu:
    index: int
    # True when NVML says the GPU fell off the bus (GpuIsLost); then only index, and
    # what was known before, are filled.
    lost: bool
    name: str | None
    uuid: str | None
    serial: str | None
    vbios_version: str | None
    board_part_number: str | None
    pci_bus_id: str | None
    pci_device_id: int | None
    architecture: str | None
    cuda_compute_capability: str | None  # "8.0"
    cuda_cores: int | None
    persistence_mode: bool | None
    compute_mode: str | None
    memory_total_bytes: int | None
    memory_used_bytes: int | None  # without reserved memory where the driver tells them apart
    memory_free_bytes: int | None
    memory_reserved_bytes: int | None
    bar1_total_bytes: int | None
    bar1_used_bytes: int | None
    utilization_gpu_ratio: float | None
    utilization_memory_ratio: float | None
    utilization_encoder_ratio: float | None
    utilization_decoder_ratio: float | None
    temperature_celsius: float | None
    temperature_slowdown_celsius: float | None
    temperature_shutdown_celsius: float | None
    fan_speed_ratio: float | None
    power_draw_watts: float | None
    power_limit_watts: float | None  # enforced
    power_default_limit_watts: float | None
    power_min_limit_watts: float | None
    power_max_limit_watts: float | None
    energy_joules: float | None  # since the driver was loaded
    clocks: Clocks | None
    max_clocks: Clocks | None
    performance_state: int | None  # P0..P15
    pcie: PcieLink | None
    clock_event_reasons: list[str] | None  # active throttle reasons, by name
    ecc: Ecc | None
    retired_pages: RetiredPages | None
    remapped_rows: RemappedRows | None
    nvlink_links_active: int | None
    numa_node: int | None
    cpu_affinity: list[int] | None  # logical CPUs close to this GPU
    peak: PeakThroughput | None
    mig: Mig | None  # None: the GPU cannot do MIG
    # Outside MIG devices; None: not collected (--no-processes), see process_count.
    processes: list[GpuProcess] | None = field(default_factory=list)
    # Critical XID events by code; empty when none came (or no event listener runs).
    xid_errors: list[XidErrors] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    # The whole GPU, outside MIG mode (see MigDevice.activity for MIG).
    activity: Activity | None = None
    # NVML's addressing mode: "none", "hmm", or "ats" for a GPU sharing the CPU's memory
    # (which then has no framebuffer figure: memory_* are None).
    addressing_mode: str | None = None
    # Windows driver model: "wddm", "tcc" or "mcdm"; None elsewhere (Linux: NotSupported).
    driver_model: str | None = None
    # Processes NVML lists on the GPU and its MIG devices, collected or not; None: refused.
    process_count: int | None = None
    accounting: Accounting | None = None  # None: not available (driver, binding, MIG device)
    # NUMA nodes whose memory is close to this GPU (nvmlDeviceGetMemoryAffinity).
    numa_affinity: list[int] | None = None
    # Its enabled NVLink links and their far ends; None: no NVLink, or not readable.
    nvlinks: list[NvLink] | None = None

    def at_rest(self) -> bool:
        """Idle, so power management may slow it: the `gpu_idle` clock event, or a low-power
        P-state (P8 or deeper) with no work to speak of.

        Drivers do not always set `gpu_idle` when idle: a real RTX 3090 at P8, 0 % busy and
        210 MHz reports only `sw_power_cap` (captures/rtx-3090-driver590-v13.xml).
        """
        if "gpu_idle" in (self.clock_event_reasons or ()):
            return True
        busy = self.utilization_gpu_ratio
        return (
            self.performance_state is not None
            and self.performance_state >= _RESTING_PSTATE
            and (busy is None or busy <= _RESTING_UTILIZATION)
        )

    def pcie_below_max(self) -> tuple[bool, bool]:
        """(fewer lanes than the maximum, slower generation than the maximum).

        A GPU at rest lowers its link generation to save power; its lanes stay, so fewer
        lanes is always a fault and a lower generation only when it works.
        """
        link = self.pcie
        if link is None:
            return False, False
        narrow = link.width is not None and link.max_width is not None and link.width < link.max_width
        slow = (
            link.generation is not None
            and link.max_generation is not None
            and link.generation < link.max_generation
            and not self.at_rest()
        )
        return narrow, slow

    def all_processes(self) -> list[GpuProcess]:
        """Processes on the whole GPU and on its MIG devices."""
        procs = list(self.processes or ())
        if self.mig is not None:
            for device in self.mig.devices:
                procs.extend(device.processes or ())
        return procs


@dataclass
class GpuSystem:
    """The NVIDIA driver as NVML sees it, and every GPU it manages."""

    # "ok", "no_library" (no NVML library), "no_driver", "driver_mismatch",
    # "no_permission", "error"
    status: str
    message: str | None  # one line for a person when status is not "ok"
    driver_version: str | None
    cuda_driver_version: str | None  # "12.4"
    nvml_version: str | None
    gpus: list[Gpu] = field(default_factory=list)
    users: list[UserUsage] | None = field(default_factory=list)  # None: not collected
    # Short jobs NVML accounting saw (`hwinfo serve` only: a one-shot report has no "between").
    accounted: list[AccountedUsage] = field(default_factory=list)
    # Every pair of GPUs NVML could read; None: not collected (`report --topology` does).
    pairs: list[GpuPair] | None = None
