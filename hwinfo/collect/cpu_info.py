"""CPU identity from /proc/cpuinfo (x86 and arm64), and the machine architecture."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

# arm64 kernels print only the MIDR fields; these tables turn them into names, as lscpu does.
# Sources: Linux arch/arm64/include/asm/cputype.h (implementer and part numbers) and
# util-linux sys-utils/lscpu-arm.c (the names lscpu prints, which ours match).
# Several server chips are licensed Arm cores and identify as such: Ampere Altra and
# Graviton2 are Neoverse-N1, Graviton3 is Neoverse-V1, Graviton4 and NVIDIA Grace are
# Neoverse-V2, Azure Cobalt 100 is Neoverse-N2.
ARM_IMPLEMENTERS: dict[int, str] = {
    0x41: "ARM",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x46: "FUJITSU",
    0x48: "HiSilicon",
    0x4E: "NVIDIA",
    0x50: "APM",
    0x51: "Qualcomm",
    0x61: "Apple",
    0x6D: "Microsoft",
    0xC0: "Ampere",
}
ARM_PARTS: dict[tuple[int, int], str] = {
    (0x41, 0xD08): "Cortex-A72",  # Graviton (first generation)
    (0x41, 0xD0C): "Neoverse-N1",
    (0x41, 0xD40): "Neoverse-V1",
    (0x41, 0xD49): "Neoverse-N2",
    (0x41, 0xD4F): "Neoverse-V2",
    (0x41, 0xD83): "Neoverse-V3AE",
    (0x41, 0xD84): "Neoverse-V3",
    (0x41, 0xD8E): "Neoverse-N3",
    (0x42, 0x516): "ThunderX2",
    (0x43, 0x0AF): "ThunderX2-99xx",
    (0x46, 0x001): "A64FX",
    (0x48, 0xD01): "Kunpeng-920",
    (0x4E, 0x003): "Denver 2",
    (0x4E, 0x004): "Carmel",
    (0x50, 0x000): "X-Gene",
    (0x51, 0xC00): "Falkor",
    (0xC0, 0xAC3): "Ampere-1",  # AmpereOne
    (0xC0, 0xAC4): "Ampere-1a",  # AmpereOne (2024 revision)
}


@dataclass(frozen=True)
class CpuIdentity:
    """What the processor says it is; the first online CPU speaks for all of them."""

    vendor: str | None = None
    model_name: str | None = None
    family: int | None = None
    model: int | None = None  # x86: CPUID model; arm64: the MIDR part number
    stepping: int | None = None  # x86: CPUID stepping; arm64: the MIDR revision
    microcode: str | None = None
    flags: list[str] = field(default_factory=list)


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """The per-processor blocks of /proc/cpuinfo as key -> value maps, in file order."""
    blocks: list[dict[str, str]] = []
    for chunk in text.split("\n\n"):
        block: dict[str, str] = {}
        for line in chunk.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                block[key.strip()] = value.strip()
        if "processor" in block:
            blocks.append(block)
    return blocks


def _int(text: str | None, base: int = 10) -> int | None:
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def x86_identity(block: dict[str, str]) -> CpuIdentity:
    return CpuIdentity(
        vendor=block.get("vendor_id") or None,
        model_name=block.get("model name") or None,
        family=_int(block.get("cpu family")),
        model=_int(block.get("model")),
        stepping=_int(block.get("stepping")),
        microcode=block.get("microcode") or None,
        flags=block.get("flags", "").split(),
    )


def arm_identity(block: dict[str, str]) -> CpuIdentity:
    # Base 0: the kernel prints implementer and part in hex ("0x41"), the revision in decimal.
    implementer = _int(block.get("CPU implementer"), 0)
    part = _int(block.get("CPU part"), 0)
    vendor = name = None
    if implementer is not None:
        vendor = ARM_IMPLEMENTERS.get(implementer)
        if part is not None:
            name = ARM_PARTS.get((implementer, part))
    return CpuIdentity(
        vendor=vendor,
        model_name=name,
        model=part,
        stepping=_int(block.get("CPU revision"), 0),
        flags=block.get("Features", "").split(),
    )


def py_cpuinfo_identity() -> CpuIdentity:
    """The identity py-cpuinfo finds where there is no /proc/cpuinfo (macOS, BSD)."""
    # Only where there is no /proc/cpuinfo: never needed on Linux, it costs 4 ms to import
    # (and about 1 s a call).
    import cpuinfo

    info: dict[str, Any] = cpuinfo.get_cpu_info()
    return CpuIdentity(
        vendor=info.get("vendor_id_raw") or None,
        model_name=info.get("brand_raw") or None,
        family=info.get("family"),
        model=info.get("model"),
        stepping=info.get("stepping"),
        flags=list(info.get("flags", [])),
    )


def read_identity(blocks: list[dict[str, str]], use_py_cpuinfo: bool = False) -> CpuIdentity:
    """Identity from the first processor block, or from py-cpuinfo for a machine without procfs."""
    if use_py_cpuinfo:
        return py_cpuinfo_identity()
    if not blocks:
        return CpuIdentity()
    first = blocks[0]
    if "CPU implementer" in first:
        return arm_identity(first)
    return x86_identity(first)


def architecture(blocks: list[dict[str, str]], live: bool) -> str | None:
    """uname's machine name; for a fixture tree, what its cpuinfo implies."""
    if live:
        return os.uname().machine
    if not blocks:
        return None
    first = blocks[0]
    if "CPU implementer" in first:
        return "aarch64"
    # The long-mode flag marks a 64-bit x86 processor.
    if "lm" in first.get("flags", "").split():
        return "x86_64"
    return None
