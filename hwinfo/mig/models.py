"""Which GPU models have which MIG table: the one place a board's name meets its profiles.

Keyed by the name NVML reports (nvmlDeviceGetName, `nvidia-smi --query-gpu=name`), as the
simulator's boards (hwinfo/sim/boards.py) name them and hwinfo exports it (`hwinfo_gpu_info`'s
`name`). Sources: the MIG User Guide's "Supported GPUs" and the listings profiles.py cites.
A model not here has no MIG table hwinfo knows: a board without MIG, or one not catalogued.
"""

from __future__ import annotations

from collections.abc import Mapping

from hwinfo.mig import profiles
from hwinfo.mig.profiles import MigTable

BY_MODEL: Mapping[str, MigTable] = {
    "NVIDIA A100-SXM4-40GB": profiles.A100_40GB,
    "NVIDIA A100-PCIE-40GB": profiles.A100_40GB,
    "NVIDIA A100-SXM4-80GB": profiles.A100_80GB,
    "NVIDIA A100 80GB PCIe": profiles.A100_80GB,
    "NVIDIA A30": profiles.A30_24GB,
    "NVIDIA H100 80GB HBM3": profiles.H100_80GB,
    "NVIDIA H800": profiles.H100_80GB,
    "NVIDIA H100 PCIe": profiles.H100_PCIE,
    "NVIDIA H800 PCIe": profiles.H100_PCIE,
    "NVIDIA H100 NVL": profiles.H100_NVL,
    "NVIDIA H100 94GB": profiles.H100_NVL,
    "NVIDIA H800 NVL": profiles.H100_NVL,
    "NVIDIA H20": profiles.H20_96GB,
    "NVIDIA GH200 480GB": profiles.GH200_96GB,
    "NVIDIA GH200 144G HBM3e": profiles.GH200_144GB,
    "NVIDIA H200": profiles.H200_141GB,
    "NVIDIA H200 NVL": profiles.H200_141GB,
    "NVIDIA B200": profiles.B200_180GB,
    "NVIDIA GB200": profiles.GB200_186GB,
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": profiles.RTX_PRO_6000,
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": profiles.RTX_PRO_6000,
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": profiles.RTX_PRO_6000,
    "NVIDIA RTX PRO 5000 Blackwell": profiles.RTX_PRO_5000,
    "NVIDIA RTX PRO 4500 Blackwell": profiles.RTX_PRO_4500,
}
_NORMALIZED = {name.lower().removeprefix("nvidia "): table for name, table in BY_MODEL.items()}


def mig_table(model: str) -> MigTable | None:
    """The MIG table of a model as NVML names it, with or without the "NVIDIA " that newer
    drivers put in front (A100-SXM4-40GB on R450, NVIDIA A100-SXM4-40GB later); None: none
    known."""
    return _NORMALIZED.get(model.strip().lower().removeprefix("nvidia "))


def profile_shapes(model: str) -> dict[str, tuple[int, float]]:
    """Each GPU-instance profile of the model's newest table: its memory in bytes and its
    share of the GPU (compute slices over the GPU's), as hwinfo exports a GPU's profiles
    (`hwinfo_mig_profile_memory_bytes`, `hwinfo_mig_profile_gpu_share_ratio`); empty: none
    known."""
    table = mig_table(model)
    if table is None:
        return {}
    whole = max(p.slice_count for p in table.profiles)
    return {p.name: (p.memory_mib << 20, p.slice_count / whole) for p in table.profiles}
