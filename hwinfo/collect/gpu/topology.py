"""How NVML says GPUs connect: their enabled NVLink links and far ends, the NUMA nodes near
each GPU, and for `report --topology` every pair's common PCI ancestor and P2P status."""

from __future__ import annotations

from itertools import combinations
from typing import Any

from hwinfo.binding import LIBRARY_MISMATCH, function, pynvml
from hwinfo.model.gpu import GpuPair, NvLink

# nvmlGpuTopologyLevel_t (nvml.h).
LEVELS = {0: "internal", 10: "single", 20: "multiple", 30: "hostbridge", 40: "node", 50: "system"}
# nvmlGpuP2PStatus_t (nvml.h).
P2P_STATUSES = {
    0: "ok",
    1: "chipset_not_supported",
    2: "gpu_not_supported",
    3: "topology_not_supported",
    4: "disabled_by_regkey",
    5: "not_supported",
    6: "unknown",
}
# GpuPair field -> nvmlGpuP2PCapsIndex_t (nvml.h). Literal: nvidia-ml-py spells its READ
# constant `0,`, a tuple that ctypes cannot pass.
_P2P_CAPABILITIES = (("p2p_read", 0), ("p2p_write", 1), ("p2p_nvlink", 2), ("p2p_atomics", 3),
                     ("p2p_pci", 4))
# nvmlNvLinkDeviceType_t (nvml.h).
_REMOTE_TYPES = {0x00: "gpu", 0x01: "ibmnpu", 0x02: "switch", 0xFF: "unknown"}
# Enough 64-bit words for 1024 NUMA nodes, the kernel's most.
_NODE_WORDS = 16
_NODE_SCOPE = 0  # NVML_AFFINITY_SCOPE_NODE
# What a call answers for a fact the GPU, link or driver does not have.
_ABSENT = (pynvml.NVMLError_NotSupported, pynvml.NVMLError_FunctionNotFound,
           pynvml.NVMLError_InvalidArgument, *LIBRARY_MISMATCH)


def members(words: Any) -> list[int]:
    """The members of an NVML bit mask of 64-bit words (a CPU or NUMA node set)."""
    return [w * 64 + bit for w, word in enumerate(words) for bit in range(64) if word >> bit & 1]


def enabled_links(handle: Any) -> list[int] | None:
    """The numbers of the links that report enabled; None when the GPU has no NVLink."""
    enabled = []
    for link in range(pynvml.NVML_NVLINK_MAX_LINKS):
        try:
            if function("nvmlDeviceGetNvLinkState")(handle, link):
                enabled.append(link)
        except (pynvml.NVMLError_NotSupported, pynvml.NVMLError_InvalidArgument):
            # The first link past the GPU's last one answers like this; on link 0 it
            # means the GPU has no NVLink at all.
            return enabled if link else None
    return enabled


def numa_affinity(handle: Any) -> list[int]:
    """The NUMA nodes whose memory is near the GPU (what nvidia-smi's NUMA Affinity shows)."""
    return members(function("nvmlDeviceGetMemoryAffinity")(handle, _NODE_WORDS, _NODE_SCOPE))


def _absent_as_none(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except _ABSENT:
        return None


def read_nvlinks(handle: Any) -> list[NvLink] | None:
    """Each enabled link and its far end: a GPU's or an NVSwitch's bus id, where NVML says."""
    enabled = enabled_links(handle)
    if enabled is None:
        return None
    links = []
    for link in enabled:
        pci = _absent_as_none(function("nvmlDeviceGetNvLinkRemotePciInfo"), handle, link)
        kind = _absent_as_none(function("nvmlDeviceGetNvLinkRemoteDeviceType"), handle, link)
        links.append(NvLink(link, None if pci is None else pci.busId,
                            None if kind is None else _REMOTE_TYPES.get(kind, "unknown")))
    return links


def read_pairs(handles: dict[int, Any]) -> list[GpuPair]:
    """Every pair of readable GPUs (by index): their common ancestor and P2P statuses. A
    call that fails leaves its fact None; a GPU lost meanwhile costs its pairs' facts."""
    pairs = []
    for a, b in combinations(sorted(handles), 2):
        first, second = handles[a], handles[b]
        values = {key: _status(first, second, capability)
                  for key, capability in _P2P_CAPABILITIES}
        level = _quiet(function("nvmlDeviceGetTopologyCommonAncestor"), first, second)
        pairs.append(GpuPair([a, b], None if level is None else LEVELS.get(level), **values))
    return pairs


def _status(first: Any, second: Any, capability: int) -> str | None:
    status = _quiet(function("nvmlDeviceGetP2PStatus"), first, second, capability)
    return None if status is None else P2P_STATUSES.get(status, "unknown")


def _quiet(fn: Any, *args: Any) -> Any:
    """A pair's fact, or None whatever NVML answers instead (a pair has no reason map)."""
    try:
        return fn(*args)
    except (pynvml.NVMLError, *LIBRARY_MISMATCH):
        return None
