"""Board catalogue: the defaults a scenario GPU inherits from its `board`.

Defaults are written in the scenario file's own vocabulary (docs/scenario-format.md), so a
scenario field overrides the board's field of the same name, and the loader checks both the
same way. Names, PCI ids, memory sizes and units are as NVML reports them.

Sources: A100-SXM4-40GB, T4, RTX 3090, RTX A5000 and GRID P4-1Q values come from real
`nvidia-smi -q -x` dumps in telegraf's and netdata's test data (each cited at its board, with
its driver version); PCI device ids and names from NVIDIA's go-nvml mocks
(https://github.com/NVIDIA/go-nvml/tree/main/pkg/nvml/mock) and gpu-operator's mig-parted
config, MIG tables from hwinfo/mig (which cites each); the rest from public spec sheets.
"""

# Unknown: the idle telemetry (temperatures, power draw, clocks), reserved memory, VBIOS and
# part numbers of boards without a capture (A100-SXM4-80GB, H100-SXM5-80GB, H100-NVL,
# H200-SXM-141GB, RTX-4090), and the subsystem ids of all but the captured boards, are
# plausible values, not observed ones.

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hwinfo.mig.models import mig_table
from hwinfo.mig.profiles import MigTable

Defaults = Mapping[str, object]
# Unknown: the encoder/decoder sampling period per board; 167 ms is what NVML commonly reports.
DEFAULT_SAMPLING_US = 167_000


@dataclass(frozen=True)
class Board:
    """One board: scenario-vocabulary defaults plus facts that are not scenario fields."""

    key: str  # catalogue name used in scenarios, e.g. "A100-SXM4-80GB"
    defaults: Defaults
    multiprocessor_count: int | None  # SMs of the whole GPU
    nvlink_max_links: int  # links NVML reports at all; past it: NotSupported
    has_serial: bool  # GeForce and vGPU boards report no serial (NotSupported)
    utilization_sampling_us: int = DEFAULT_SAMPLING_US

    @property
    def mig(self) -> MigTable | None:
        """Its MIG table, looked up by its name where MIG's catalogue keeps it; None: no MIG."""
        return mig_table(str(self.defaults["name"]))


def _clocks(graphics: int, sm: int, memory: int, video: int) -> dict[str, int]:
    return {"graphics": graphics, "sm": sm, "memory": memory, "video": video}


def _pcie(gen: int, width: int, current_gen: int | None = None) -> dict[str, int]:
    return {
        "gen": current_gen or gen,
        "max_gen": gen,
        "gpu_max_gen": gen,
        "width": width,
        "max_width": width,
        "tx_kbps": 0,
        "rx_kbps": 0,
        "replay_counter": 0,
    }


def _ecc(enabled: bool = True) -> dict[str, object]:
    zero = {"corrected": 0, "uncorrected": 0}
    return {"enabled": enabled, "pending": enabled, "volatile": zero, "aggregate": dict(zero)}


_NO_REMAPS = {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
_NO_RETIRED = {"single_bit": 0, "double_bit": 0, "pending": False}
_MIG_OFF = {"enabled": False}


def _datacenter(**fields: object) -> dict[str, object]:
    """Fields every SXM/NVL datacenter board here shares, updated with the board's own."""
    base: dict[str, object] = {
        "persistence_mode": True,
        # No display: every such board in the captures (A100, T4, H100, L40S) says Display
        # Active: Disabled. Unknown: the display mode of boards with no dump on a driver that
        # prints it (A100 510 says Enabled, T4 515 Disabled; 590 and later print it deprecated).
        "display_mode": False,
        "display_active": False,
        "compute_mode": "default",
        "bar1_used_mib": 1,
        "utilization_gpu_percent": 0,
        "utilization_memory_percent": 0,
        "encoder_percent": 0,
        "decoder_percent": 0,
        "fan_percent": None,  # passively cooled: NotSupported
        "energy_j": 0.0,
        "pstate": 0,
        "clock_event_reasons": [],
        "ecc": _ecc(),
        # Ampere and later remap rows instead (nvmlDeviceGetRemappedRows, "for Ampere or newer";
        # https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/).
        "retired_pages": None,
        "remapped_rows": _NO_REMAPS,
        "mig": _MIG_OFF,
    }
    base.update(fields)
    return base


BOARDS: dict[str, Board] = {
    b.key: b
    for b in (
        Board(
            key="A100-SXM4-40GB",
            # https://github.com/netdata/netdata/blob/master/src/go/plugin/go.d/collector/nvidia_smi/testdata/a100-sxm4-mig.xml (driver 510.47.03).
            defaults=_datacenter(
                name="NVIDIA A100-SXM4-40GB",
                pci_device_id=0x20B010DE,
                pci_subsystem_id=0x134F10DE,
                vbios_version="92.00.45.00.03",
                board_part_number="692-2G506-0200-003",
                architecture="ampere",
                cuda_compute_capability=[8, 0],
                cuda_cores=6912,
                memory_bus_width_bits=5120,
                persistence_mode=False,
                display_mode=True,
                memory_total_mib=40960,
                memory_reserved_mib=605,
                bar1_total_mib=65536,
                temperature_c=36,
                temperature_shutdown_c=92,
                temperature_slowdown_c=89,
                temperature_gpu_max_c=85,
                temperature_memory_max_c=95,
                power_draw_w=66.92,
                power_limit_w=400,
                power_default_limit_w=400,
                power_min_limit_w=100,
                power_max_limit_w=400,
                clocks_mhz=_clocks(1410, 1410, 1215, 1275),
                max_clocks_mhz=_clocks(1410, 1410, 1215, 1290),
                pcie=_pcie(4, 16),
                nvlink_links=12,
            ),
            multiprocessor_count=108,
            nvlink_max_links=12,
            has_serial=True,
        ),
        Board(
            key="A100-SXM4-80GB",
            defaults=_datacenter(
                name="NVIDIA A100-SXM4-80GB",
                pci_device_id=0x20B210DE,
                pci_subsystem_id=0x147F10DE,
                vbios_version="92.00.36.00.02",
                board_part_number="692-2G506-0210-002",
                architecture="ampere",
                cuda_compute_capability=[8, 0],
                cuda_cores=6912,
                memory_bus_width_bits=5120,
                memory_total_mib=81920,
                memory_reserved_mib=653,
                bar1_total_mib=131072,
                temperature_c=34,
                temperature_shutdown_c=92,
                temperature_slowdown_c=89,
                temperature_gpu_max_c=85,
                temperature_memory_max_c=95,
                power_draw_w=62.5,
                power_limit_w=400,
                power_default_limit_w=400,
                power_min_limit_w=100,
                power_max_limit_w=400,
                clocks_mhz=_clocks(210, 210, 1593, 795),
                max_clocks_mhz=_clocks(1410, 1410, 1593, 1290),
                pcie=_pcie(4, 16),
                nvlink_links=12,
            ),
            multiprocessor_count=108,
            nvlink_max_links=12,
            has_serial=True,
        ),
        Board(
            key="H100-SXM5-80GB",
            # Whole-board memory total 81559 MiB, as the H100 80GB HBM3 capture shows
            # (https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt).
            defaults=_datacenter(
                name="NVIDIA H100 80GB HBM3",
                pci_device_id=0x233010DE,
                pci_subsystem_id=0x16C110DE,
                vbios_version="96.00.74.00.09",
                board_part_number="699-2G530-0200-000",
                architecture="hopper",
                cuda_compute_capability=[9, 0],
                cuda_cores=16896,
                memory_bus_width_bits=5120,
                memory_total_mib=81559,
                memory_reserved_mib=329,
                bar1_total_mib=131072,
                temperature_c=33,
                temperature_shutdown_c=92,
                temperature_slowdown_c=89,
                temperature_gpu_max_c=87,
                temperature_memory_max_c=95,
                power_draw_w=72.3,
                power_limit_w=700,
                power_default_limit_w=700,
                power_min_limit_w=200,
                power_max_limit_w=700,
                clocks_mhz=_clocks(345, 345, 2619, 765),
                max_clocks_mhz=_clocks(1980, 1980, 2619, 1755),
                pcie=_pcie(5, 16),
                nvlink_links=18,
            ),
            multiprocessor_count=132,
            nvlink_max_links=18,
            has_serial=True,
        ),
        Board(
            key="H100-NVL",
            # Whole-board memory total 95830 MiB, as nvidia-smi shows a real H100 NVL.
            defaults=_datacenter(
                name="NVIDIA H100 NVL",
                pci_device_id=0x232110DE,
                pci_subsystem_id=0x183910DE,
                vbios_version="96.00.99.00.01",
                board_part_number="900-21010-0020-000",
                architecture="hopper",
                cuda_compute_capability=[9, 0],
                cuda_cores=16896,
                memory_bus_width_bits=6144,
                memory_total_mib=95830,
                memory_reserved_mib=373,
                bar1_total_mib=131072,
                temperature_c=35,
                temperature_shutdown_c=92,
                temperature_slowdown_c=89,
                temperature_gpu_max_c=87,
                temperature_memory_max_c=95,
                power_draw_w=61.0,
                power_limit_w=400,
                power_default_limit_w=400,
                power_min_limit_w=200,
                power_max_limit_w=400,
                clocks_mhz=_clocks(345, 345, 2619, 765),
                max_clocks_mhz=_clocks(1785, 1785, 2619, 1590),
                pcie=_pcie(5, 16),
                nvlink_links=12,
            ),
            multiprocessor_count=132,
            nvlink_max_links=12,
            has_serial=True,
        ),
        Board(
            key="H200-SXM-141GB",
            defaults=_datacenter(
                name="NVIDIA H200",
                # NVIDIA gpu-operator's mig-parted config keys the H200 141GB by 0x2335.
                pci_device_id=0x233510DE,
                pci_subsystem_id=0x18BE10DE,
                vbios_version="96.00.A5.00.01",
                board_part_number="692-2G530-0250-000",
                architecture="hopper",
                cuda_compute_capability=[9, 0],
                cuda_cores=16896,
                memory_bus_width_bits=6144,
                memory_total_mib=143771,
                memory_reserved_mib=565,
                bar1_total_mib=262144,
                temperature_c=32,
                temperature_shutdown_c=92,
                temperature_slowdown_c=89,
                temperature_gpu_max_c=87,
                temperature_memory_max_c=95,
                power_draw_w=78.4,
                power_limit_w=700,
                power_default_limit_w=700,
                power_min_limit_w=200,
                power_max_limit_w=700,
                clocks_mhz=_clocks(345, 345, 3201, 765),
                max_clocks_mhz=_clocks(1980, 1980, 3201, 1755),
                pcie=_pcie(5, 16),
                nvlink_links=18,
            ),
            multiprocessor_count=132,
            nvlink_max_links=18,
            has_serial=True,
        ),
        Board(
            key="RTX-4090",
            defaults={
                "name": "NVIDIA GeForce RTX 4090",
                # Unknown: both (no dump); a board driving no display is taken.
                "display_mode": False,
                "display_active": False,
                "pci_device_id": 0x268410DE,
                "pci_subsystem_id": 0x16F310DE,
                "vbios_version": "95.02.18.80.5F",
                "architecture": "ada",
                "cuda_compute_capability": [8, 9],
                "cuda_cores": 16384,
                "memory_bus_width_bits": 384,
                "persistence_mode": False,
                "compute_mode": "default",
                "memory_total_mib": 24564,
                "memory_reserved_mib": 346,
                "bar1_total_mib": 256,
                "bar1_used_mib": 4,
                "utilization_gpu_percent": 0,
                "utilization_memory_percent": 0,
                "encoder_percent": 0,
                "decoder_percent": 0,
                "temperature_c": 31,
                "temperature_shutdown_c": 92,
                "temperature_slowdown_c": 89,
                "temperature_gpu_max_c": 87,
                "fan_percent": 30,
                "power_draw_w": 21.4,
                "power_limit_w": 450,
                "power_default_limit_w": 450,
                "power_min_limit_w": 150,
                "power_max_limit_w": 600,
                "energy_j": 0.0,
                "clocks_mhz": _clocks(210, 210, 405, 1185),
                "max_clocks_mhz": _clocks(3120, 3120, 10501, 2415),
                "pstate": 8,
                "pcie": _pcie(4, 16, current_gen=1),
                "clock_event_reasons": ["gpu_idle"],
                "ecc": None,
                "retired_pages": None,
                "remapped_rows": None,
                "nvlink_links": 0,
                "mig": None,
            },
            multiprocessor_count=128,
            nvlink_max_links=0,
            has_serial=False,
        ),
        Board(
            key="RTX-3090",
            # https://github.com/influxdata/telegraf/blob/58ff61d01be05ec0d4c2f57c8c89031e026fa0b9/plugins/inputs/nvidia_smi/testdata/3090-v13.xml
            # (driver 590.44.01).
            defaults={
                "name": "NVIDIA GeForce RTX 3090",
                # Display mode: the 525 dump of this board (590 prints it deprecated).
                "display_mode": False,
                "display_active": True,
                "pci_device_id": 0x220410DE,
                "pci_subsystem_id": 0x87AD1043,
                "vbios_version": "94.02.26.48.1B",
                "architecture": "ampere",
                "cuda_compute_capability": [8, 6],
                "cuda_cores": 10496,
                "memory_bus_width_bits": 384,
                "persistence_mode": True,
                "compute_mode": "default",
                "memory_total_mib": 24576,
                "memory_reserved_mib": 450,
                "bar1_total_mib": 256,
                "bar1_used_mib": 7,
                "utilization_gpu_percent": 0,
                "utilization_memory_percent": 1,
                "encoder_percent": 0,
                "decoder_percent": 0,
                "temperature_c": 32,
                "temperature_shutdown_c": 98,
                "temperature_slowdown_c": 95,
                "temperature_gpu_max_c": 93,
                "fan_percent": 0,
                "power_draw_w": 27.23,
                "power_limit_w": 350,
                "power_default_limit_w": 350,
                "power_min_limit_w": 100,
                "power_max_limit_w": 480,
                "energy_j": 0.0,
                "clocks_mhz": _clocks(210, 210, 405, 555),
                "max_clocks_mhz": _clocks(2100, 2100, 9751, 1950),
                "pstate": 8,
                "pcie": {**_pcie(4, 16, current_gen=1), "tx_kbps": 488, "rx_kbps": 439},
                "clock_event_reasons": ["gpu_idle"],
                "ecc": None,
                "retired_pages": None,
                "remapped_rows": None,
                "nvlink_links": 0,
                "mig": None,
            },
            multiprocessor_count=82,
            nvlink_max_links=4,
            has_serial=False,
        ),
        Board(
            key="RTX-A5000",
            # https://github.com/influxdata/telegraf/blob/58ff61d01be05ec0d4c2f57c8c89031e026fa0b9/plugins/inputs/nvidia_smi/testdata/dual_a5000-v13.xml
            # (driver 590.44.01).
            defaults={
                "name": "NVIDIA RTX A5000",
                # Unknown: display mode (its 590 dump prints it deprecated).
                "display_mode": False,
                "display_active": False,
                "pci_device_id": 0x223110DE,
                "pci_subsystem_id": 0x147E10DE,
                "vbios_version": "94.02.6D.00.0D",
                "board_part_number": "900-5G132-1700-000",
                "architecture": "ampere",
                "cuda_compute_capability": [8, 6],
                "cuda_cores": 8192,
                "memory_bus_width_bits": 384,
                "persistence_mode": True,
                "compute_mode": "default",
                "memory_total_mib": 24564,
                "memory_reserved_mib": 450,
                "bar1_total_mib": 256,
                "bar1_used_mib": 5,
                "utilization_gpu_percent": 0,
                "utilization_memory_percent": 0,
                "encoder_percent": 0,
                "decoder_percent": 0,
                "temperature_c": 30,
                "temperature_shutdown_c": 98,
                "temperature_slowdown_c": 95,
                "temperature_gpu_max_c": 90,
                "fan_percent": 30,
                "power_draw_w": 6.52,
                "power_limit_w": 230,
                "power_default_limit_w": 230,
                "power_min_limit_w": 100,
                "power_max_limit_w": 230,
                "energy_j": 0.0,
                "clocks_mhz": _clocks(210, 210, 405, 555),
                "max_clocks_mhz": _clocks(2100, 2100, 8001, 1950),
                "pstate": 8,
                "pcie": _pcie(4, 16, current_gen=1),
                "clock_event_reasons": ["gpu_idle"],
                "ecc": _ecc(enabled=False),
                "retired_pages": None,
                "remapped_rows": _NO_REMAPS,
                "nvlink_links": 0,
                "mig": None,
            },
            multiprocessor_count=64,
            nvlink_max_links=4,
            has_serial=True,
        ),
        Board(
            key="T4",
            # https://github.com/influxdata/telegraf/blob/master/plugins/inputs/nvidia_smi/testdata/tesla-t4.xml
            # (driver 515.105.01, a cloud VM).
            defaults={
                "name": "Tesla T4",
                "display_mode": False,
                "display_active": False,
                "pci_device_id": 0x1EB810DE,
                "pci_subsystem_id": 0x12A210DE,
                "vbios_version": "90.04.84.00.06",
                "board_part_number": "900-2G183-0000-001",
                "architecture": "turing",
                "cuda_compute_capability": [7, 5],
                "cuda_cores": 2560,
                "memory_bus_width_bits": 256,
                "persistence_mode": False,
                "compute_mode": "default",
                "memory_total_mib": 15360,
                "memory_reserved_mib": 388,
                "bar1_total_mib": 256,
                "bar1_used_mib": 5,
                "utilization_gpu_percent": 0,
                "utilization_memory_percent": 0,
                "encoder_percent": 0,
                "decoder_percent": 0,
                "temperature_c": 40,
                "temperature_shutdown_c": 96,
                "temperature_slowdown_c": 93,
                "temperature_gpu_max_c": 85,
                "fan_percent": None,  # passively cooled
                "power_draw_w": 26.78,
                "power_limit_w": 70,
                "power_default_limit_w": 70,
                "power_min_limit_w": 60,
                "power_max_limit_w": 70,
                "energy_j": 0.0,
                "clocks_mhz": _clocks(585, 585, 5000, 810),
                "max_clocks_mhz": _clocks(1590, 1590, 5001, 1470),
                "pstate": 0,
                "pcie": _pcie(3, 16),
                "clock_event_reasons": [],
                "ecc": _ecc(),
                "retired_pages": _NO_RETIRED,  # pre-Ampere: page retirement, no row remapping
                "remapped_rows": None,
                "nvlink_links": 0,
                "mig": None,
            },
            multiprocessor_count=40,
            nvlink_max_links=0,
            has_serial=True,
        ),
        Board(
            key="GRID-P4-1Q",
            # https://github.com/influxdata/telegraf/blob/c68ce7985bdf9030262aadc53fd967fc89ce8a1f/plugins/inputs/nvidia_smi/testdata/tesla_p4.xml:
            # a vGPU guest, where most fields are N/A.
            defaults={
                "name": "GRID P4-1Q",
                "display_mode": True,
                "display_active": True,
                "pci_device_id": 0x1BB310DE,
                "pci_subsystem_id": 0x120410DE,
                "vbios_version": "00.00.00.00.00",
                "architecture": "pascal",
                "cuda_compute_capability": [6, 1],
                "minor_number": None,
                "compute_mode": "default",
                "memory_total_mib": 1024,
                "memory_reserved_mib": 110,
                "bar1_total_mib": 256,
                "bar1_used_mib": 0,
                "utilization_gpu_percent": 0,
                "utilization_memory_percent": 0,
                "encoder_percent": 0,
                "decoder_percent": 0,
                "temperature_c": 0,
                "pstate": 8,
            },
            multiprocessor_count=None,
            nvlink_max_links=0,
            has_serial=False,
        ),
    )
}


def _like(
    base: str,
    key: str,
    multiprocessor_count: int,
    nvlink_max_links: int | None = None,
    **fields: object,
) -> Board:
    """A MIG board described as its nearest catalogue sibling with these fields changed.

    Every field not given is the sibling's, so it is a guess for this board: see the Unknown
    note above the list.
    """
    sibling = BOARDS[base]
    return Board(
        key=key,
        defaults={**sibling.defaults, **fields},
        multiprocessor_count=multiprocessor_count,
        nvlink_max_links=(
            sibling.nvlink_max_links if nvlink_max_links is None else nvlink_max_links
        ),
        has_serial=True,
    )


def _add(board: Board) -> None:
    BOARDS[board.key] = board


def _pcie_card(**fields: object) -> dict[str, object]:
    """A PCIe card with no NVLink bridge fitted."""
    return {"nvlink_links": 0, **fields}


# Every MIG board of NVIDIA's MIG User Guide ("Supported GPUs"), plus the H800 family.
# Sources: names as nvidia-smi prints them and PCI device ids from NVIDIA gpu-operator's default
# mig-parted config (assets/state-mig-manager/0400_configmap.yaml) and the issue threads cited
# in hwinfo/mig/profiles.py; SM and CUDA-core counts, memory bus, power limits and maximum clocks from
# NVIDIA's product pages and datasheets.
# Unknown: for every board below, the idle telemetry, reserved memory, BAR1 size, VBIOS, part
# and subsystem ids (the sibling's); the H100-SXM5 94GB's power limits and clocks (the 80 GB
# board's); the names of the H800, H800 PCIe, H800 NVL, GH200 and
# RTX PRO 6000 Workstation/Max-Q boards and the PCI ids of the last two (0x2BB1, 0x2BB4);
# the memory totals of the H20, GH200, B200, GB200 and RTX PRO 5000 (nominal GiB less the
# sibling's reserve); the SM counts of the GB200 (152) and H20 (78); the RTX PRO 5000's
# PCI id (0x2BB3) and the RTX PRO 4500's (0x2C31), and the RTX PRO 4500's minimum power
# limit and maximum clocks.
_add(
    _like(
        "A100-SXM4-40GB",
        "A100-PCIE-40GB",
        108,
        **_pcie_card(
            name="NVIDIA A100-PCIE-40GB",
            pci_device_id=0x20F110DE,
            power_limit_w=250,
            power_default_limit_w=250,
            power_max_limit_w=250,
            persistence_mode=True,
        ),
    )
)

_add(
    _like(
        "A100-SXM4-80GB",
        "A100-PCIE-80GB",
        108,
        **_pcie_card(
            name="NVIDIA A100 80GB PCIe",
            pci_device_id=0x20B510DE,
            power_limit_w=300,
            power_default_limit_w=300,
            power_max_limit_w=300,
        ),
    )
)

_add(
    _like(
        "A100-PCIE-40GB",
        "A30",
        56,
        4,
        name="NVIDIA A30",
        pci_device_id=0x20B710DE,
        cuda_cores=3584,
        memory_bus_width_bits=3072,
        memory_total_mib=24576,
        # Not the A100's 65536: a real A30 under 535.183.01 shows its MIG devices' BAR1 as
        # 8191 (1g.6gb) and 16383 MiB (2g.12gb), a quarter of 32768 a memory slice less
        # 256 KiB (mig_profiles.mig_bar1_bytes). Unknown: the whole board's figure read
        # directly (32768 follows from that rule).
        bar1_total_mib=32768,
        power_limit_w=165,
        power_default_limit_w=165,
        power_min_limit_w=100,
        power_max_limit_w=165,
        max_clocks_mhz=_clocks(1440, 1440, 1215, 1305),
    )
)

_add(
    _like(
        "H100-SXM5-80GB",
        "H100-PCIE",
        114,
        **_pcie_card(
            name="NVIDIA H100 PCIe",
            pci_device_id=0x233110DE,
            cuda_cores=14592,
            power_limit_w=350,
            power_default_limit_w=350,
            power_max_limit_w=350,
            clocks_mhz=_clocks(345, 345, 1593, 765),
            max_clocks_mhz=_clocks(1755, 1755, 1593, 1680),
        ),
    )
)

_add(
    _like(
        "H100-SXM5-80GB",
        "H100-SXM5-94GB",
        132,
        # TSUBAME 4.0 (H100 SXM5 94GB) users' notes: "NVIDIA H100 94GB", 95830 MiB on 580.105.08;
        # PCI id 0x2339 ("H100 SXM5 94GB" in the PCI id lists).
        name="NVIDIA H100 94GB",
        pci_device_id=0x233910DE,
        memory_bus_width_bits=6144,
        memory_total_mib=95830,
    )
)

_add(
    _like(
        "H100-SXM5-80GB",
        "H800-SXM5-80GB",
        132,
        8,
        name="NVIDIA H800",
        pci_device_id=0x232410DE,
        nvlink_links=8,
    )
)

_add(
    _like(
        "H100-PCIE",
        "H800-PCIE",
        114,
        name="NVIDIA H800 PCIe",
        pci_device_id=0x232210DE,
    )
)

_add(
    _like(
        "H100-NVL",
        "H800-NVL",
        132,
        name="NVIDIA H800 NVL",
        pci_device_id=0x233A10DE,
    )
)

_add(
    _like(
        "H100-SXM5-80GB",
        "H20",
        78,
        name="NVIDIA H20",
        pci_device_id=0x232910DE,
        cuda_cores=9984,
        memory_bus_width_bits=6144,
        memory_total_mib=97871,
        power_limit_w=400,
        power_default_limit_w=400,
        power_max_limit_w=400,
    )
)

_add(
    _like(
        "H100-SXM5-80GB",
        "GH200-96GB",
        132,
        name="NVIDIA GH200 480GB",
        pci_device_id=0x234210DE,
        memory_bus_width_bits=6144,
        memory_total_mib=97871,
        power_limit_w=900,
        power_default_limit_w=900,
        power_max_limit_w=900,
    )
)

_add(
    _like(
        "H200-SXM-141GB",
        "GH200-144GB",
        132,
        name="NVIDIA GH200 144G HBM3e",
        pci_device_id=0x234810DE,
        memory_total_mib=146944,
        power_limit_w=900,
        power_default_limit_w=900,
        power_max_limit_w=900,
    )
)

_add(
    _like(
        "H200-SXM-141GB",
        "H200-NVL",
        132,
        name="NVIDIA H200 NVL",
        pci_device_id=0x233B10DE,
        power_limit_w=600,
        power_default_limit_w=600,
        power_max_limit_w=600,
        max_clocks_mhz=_clocks(1785, 1785, 3201, 1590),
    )
)

_add(
    _like(
        "H200-SXM-141GB",
        "B200",
        148,
        name="NVIDIA B200",
        pci_device_id=0x290110DE,
        architecture="blackwell",
        cuda_compute_capability=[10, 0],
        cuda_cores=18944,
        memory_bus_width_bits=8192,
        memory_total_mib=183359,
        power_limit_w=1000,
        power_default_limit_w=1000,
        power_max_limit_w=1000,
        clocks_mhz=_clocks(120, 120, 3996, 600),
        max_clocks_mhz=_clocks(1965, 1965, 3996, 1965),
        pcie=_pcie(6, 16),
    )
)

_add(
    _like(
        "B200",
        "GB200",
        152,
        name="NVIDIA GB200",
        pci_device_id=0x294110DE,
        cuda_cores=19456,
        memory_total_mib=189471,
        power_limit_w=1200,
        power_default_limit_w=1200,
        power_max_limit_w=1200,
    )
)

_add(
    Board(
        key="RTX-PRO-6000-BLACKWELL-SERVER",
        # bigstack-oss/cubecos #312: 97887 MiB, 600 W, passively cooled (fan N/A).
        defaults=_datacenter(
            name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
            pci_device_id=0x2BB510DE,
            pci_subsystem_id=0x204E10DE,
            vbios_version="98.02.52.00.02",
            board_part_number="900-2G153-0000-000",
            architecture="blackwell",
            cuda_compute_capability=[12, 0],
            cuda_cores=24064,
            memory_bus_width_bits=512,
            memory_total_mib=97887,
            memory_reserved_mib=512,
            bar1_total_mib=131072,
            temperature_c=30,
            temperature_shutdown_c=98,
            temperature_slowdown_c=95,
            temperature_gpu_max_c=90,
            temperature_memory_max_c=95,
            power_draw_w=39.0,
            power_limit_w=600,
            power_default_limit_w=600,
            power_min_limit_w=300,
            power_max_limit_w=600,
            pstate=8,
            clock_event_reasons=["gpu_idle"],
            clocks_mhz=_clocks(180, 180, 405, 600),
            max_clocks_mhz=_clocks(2617, 2617, 14001, 2370),
            pcie=_pcie(5, 16),
            nvlink_links=0,
        ),
        multiprocessor_count=188,
        nvlink_max_links=0,
        has_serial=True,
    )
)

_add(
    _like(
        "RTX-PRO-6000-BLACKWELL-SERVER",
        "RTX-PRO-6000-BLACKWELL-WORKSTATION",
        188,
        name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        pci_device_id=0x2BB110DE,
        fan_percent=30,
    )
)

_add(
    _like(
        "RTX-PRO-6000-BLACKWELL-SERVER",
        "RTX-PRO-6000-BLACKWELL-MAX-Q",
        188,
        name="NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        pci_device_id=0x2BB410DE,
        fan_percent=30,
        power_limit_w=300,
        power_default_limit_w=300,
        power_min_limit_w=150,
        power_max_limit_w=300,
    )
)
_add(
    _like(
        "RTX-PRO-6000-BLACKWELL-WORKSTATION",
        "RTX-PRO-5000-BLACKWELL",
        110,
        name="NVIDIA RTX PRO 5000 Blackwell",
        pci_device_id=0x2BB310DE,
        cuda_cores=14080,
        memory_bus_width_bits=384,
        memory_total_mib=48943,
        power_limit_w=300,
        power_default_limit_w=300,
        power_min_limit_w=150,
        power_max_limit_w=300,
    )
)

_add(
    _like(
        "RTX-PRO-6000-BLACKWELL-WORKSTATION",
        "RTX-PRO-4500-BLACKWELL",
        82,
        # A user's nvidia-smi / -q on a real board (580.142 and others): its name, 32623 MiB,
        # BAR1 32768 MiB, 200 W, VBIOS 98.03.A2.00.01, PCIe Gen5 x16, fan 30 % idle, ECC
        # mode disabled.
        name="NVIDIA RTX PRO 4500 Blackwell",
        ecc=_ecc(enabled=False),
        pci_device_id=0x2C3110DE,
        vbios_version="98.03.A2.00.01",
        cuda_cores=10496,
        memory_bus_width_bits=256,
        memory_total_mib=32623,
        bar1_total_mib=32768,
        power_limit_w=200,
        power_default_limit_w=200,
        power_min_limit_w=150,
        power_max_limit_w=200,
    )
)
