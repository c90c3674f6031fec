"""Small model objects for rule tests: every field unknown (None) unless the test says."""

from __future__ import annotations

import dataclasses
from typing import Any

from hwinfo.model.cpu import Cpu
from hwinfo.model.gpu import Gpu, GpuSystem
from hwinfo.model.host import Host
from hwinfo.model.memory import Memory
from hwinfo.model.snapshot import SCHEMA_VERSION, Snapshot
from hwinfo.model.sources import SourceError

GIB = 1 << 30


def _unknown(cls: type) -> dict[str, Any]:
    """Every field of a dataclass that has no default, as None."""
    return {f.name: None for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


def make_gpu(index: int = 0, **fields: Any) -> Gpu:
    """A readable A100 with an identity derived from its index, and nothing else known."""
    values = _unknown(Gpu) | {
        "index": index,
        "lost": False,
        "name": "NVIDIA A100-SXM4-80GB",
        "uuid": f"GPU-0000000{index}",
        "serial": f"132002000000{index}",
        "pci_bus_id": f"00000000:0{index}:00.0",
    }
    return Gpu(**(values | fields))


def make_system(*gpus: Gpu, status: str = "ok", message: str | None = None) -> GpuSystem:
    return GpuSystem(status, message, "550.54.15", "12.4", "12.550.54.15", gpus=list(gpus))


def make_memory(total: int = 64 * GIB, available: int = 48 * GIB, swap_total: int = 0,
                swap_used: int = 0) -> Memory:
    return Memory(**_unknown(Memory) | {
        "total_bytes": total, "available_bytes": available,
        "swap_total_bytes": swap_total, "swap_used_bytes": swap_used,
    })


def make_cpu(model_name: str = "AMD EPYC 7742 64-Core Processor", sockets: int = 2) -> Cpu:
    return Cpu(**_unknown(Cpu) | {"model_name": model_name, "sockets": sockets})


def make_snapshot(gpu: GpuSystem | None = None, memory: Memory | None = None, cpu: Cpu | None = None,
                  errors: list[SourceError] | None = None) -> Snapshot:
    return Snapshot(
        schema_version=SCHEMA_VERSION,
        hwinfo_version="0.1.0",
        timestamp_seconds=1_790_000_000.0,
        host=Host(**_unknown(Host) | {"hostname": "gpu-node-1"}),
        cpu=cpu,
        memory=memory,
        gpu=gpu,
        errors=errors or [],
    )
