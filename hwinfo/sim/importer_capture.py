"""Whole capture files: several nvidia-smi commands' output in one file.

A section starts with a banner of `#` lines naming it (`# load :: query (-q)`) and its command
(`# $ nvidia-smi -q`); its body runs to the next banner. The scenario comes from a `-q`
section; `-L` names MIG devices' profiles, `mig -lgi` gives GPU-instance placements,
`nvlink -s` the NVLink links and `--query-accounted-apps` the processes accounting kept, facts
`-q` does not print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hwinfo.inputs import decimal

__all__ = ["AccountedApp", "Capture", "ListedMigDevice", "MigPlacement", "Section",
           "looks_like_capture", "parse_capture"]

_COMMAND = re.compile(r"# \$ (.+)")
_LABEL = re.compile(r"# (\S[^:]*?) :: (.+)")
# `nvidia-smi -L`: "GPU 0: NAME (UUID: ...)" then "  MIG 3g.40gb     Device  0: (UUID: ...)".
_LIST_GPU = re.compile(r"GPU (\d+): .*")
_LIST_MIG = re.compile(r"\s+MIG (\S+)\s+Device\s+(\d+):(?:\s*\(UUID: ([^)\s]+)\))?.*")
# The capture's own header lines before the first section: "masked:         yes".
_HEADER = re.compile(r"([a-z_]+):\s+(.*)")
# `nvidia-smi mig -lgi` rows: "|   0  MIG 1g.10gb          19        9          2:1     |".
# Its numbers are at most 9 ASCII digits: a row of longer ones is none nvidia-smi prints (and
# int() refuses 4,300 digits and more).
_LGI_NUMBER = r"([0-9]{1,9})"
_LGI_ROW = re.compile(rf"\|\s*{_LGI_NUMBER}\s+MIG\s+(\S+)\s+{_LGI_NUMBER}\s+{_LGI_NUMBER}\s+{_LGI_NUMBER}:{_LGI_NUMBER}\s*\|")
# `nvidia-smi nvlink -s`: "GPU 0: NAME (UUID: ...)" then "\t Link 3: 26.562 GB/s" or
# "\t Link 3: <inactive>".
_NVLINK = re.compile(r"\s+Link (\d+): (.+)")


@dataclass(frozen=True)
class Section:
    label: str  # "load :: query (-q)"
    command: str  # "nvidia-smi -q"
    body: str


@dataclass(frozen=True)
class MigPlacement:
    profile: str  # "1g.10gb"
    profile_id: int
    start: int
    size: int


@dataclass(frozen=True)
class ListedMigDevice:
    profile: str  # "3g.40gb", or "1c.3g.40gb" for a partial compute instance
    uuid: str | None  # as -L printed it (a masked capture prints masked ones)


@dataclass(frozen=True)
class AccountedApp:
    """One `--query-accounted-apps` row: a process NVML accounting kept statistics of."""

    pid: int
    gpu_util_percent: int | None
    memory_util_percent: int | None
    max_memory_mib: int | None
    time_ms: int  # 0 while it runs


def _number(text: str, unit: str) -> int | None:
    """ "71 %" -> 71; "[N/A]", or anything but ASCII digits, -> None."""
    return decimal(text.strip().removesuffix(unit).strip())


@dataclass(frozen=True)
class Capture:
    sections: tuple[Section, ...]
    header: tuple[tuple[str, str], ...] = ()  # "key: value" lines before the first section

    def masked(self) -> bool:
        """Whether the capture says its identifiers (UUIDs, serials) were masked."""
        return dict(self.header).get("masked", "").lower() in ("yes", "true")

    def query_sections(self) -> list[Section]:
        """The `nvidia-smi -q` sections, in file order."""
        return [s for s in self.sections if s.command.split() == ["nvidia-smi", "-q"]]

    def _bodies(self, *argv: str) -> list[str]:
        return [s.body for s in self.sections if s.command.split()[1:] == list(argv)]

    def mig_devices_listed(self) -> dict[tuple[int, int], ListedMigDevice]:
        """(GPU index, MIG device index) -> profile and UUID, from `nvidia-smi -L`."""
        out: dict[tuple[int, int], ListedMigDevice] = {}
        for body in self._bodies("-L"):
            gpu = None
            for line in body.splitlines():
                if (match := _LIST_GPU.fullmatch(line.rstrip())) is not None:
                    gpu = decimal(match.group(1))
                elif (gpu is not None and (match := _LIST_MIG.fullmatch(line.rstrip()))
                      and (device := decimal(match.group(2))) is not None):
                    out[(gpu, device)] = ListedMigDevice(match.group(1), match.group(3))
        return out

    def gpu_instance_placements(self) -> dict[tuple[int, int], MigPlacement]:
        """(GPU index, GI id) -> profile and placement, from `nvidia-smi mig -lgi`."""
        out: dict[tuple[int, int], MigPlacement] = {}
        for body in self._bodies("mig", "-lgi"):
            for line in body.splitlines():
                if (match := _LGI_ROW.fullmatch(line.strip())) is not None:
                    gpu, name, profile_id, gi_id, start, size = match.groups()
                    out[(int(gpu), int(gi_id))] = MigPlacement(
                        name, int(profile_id), int(start), int(size)
                    )
        return out

    def accounted_apps(self, label: str) -> dict[str, list[AccountedApp]]:
        """PCI bus id -> the accounted processes of `--query-accounted-apps` in the sections
        taken at the same moment as `label` ("load :: query (-q)": the "load" ones)."""
        moment = label.split(" :: ", 1)[0]
        out: dict[str, list[AccountedApp]] = {}
        for section in self.sections:
            if (not section.command.startswith("nvidia-smi --query-accounted-apps=")
                    or section.label.split(" :: ", 1)[0] != moment):
                continue
            lines = [line for line in section.body.splitlines() if line.strip()]
            if not lines:
                continue
            header = [name.strip().split(" [")[0] for name in lines[0].split(",")]
            for line in lines[1:]:
                row = dict(zip(header, (cell.strip() for cell in line.split(","))))
                pid, time_ms = _number(row.get("pid", ""), ""), _number(row.get("time", ""), "ms")
                if pid is None or time_ms is None or "gpu_bus_id" not in row:
                    continue
                out.setdefault(row["gpu_bus_id"], []).append(AccountedApp(
                    pid, _number(row.get("gpu_utilization", ""), "%"),
                    _number(row.get("mem_utilization", ""), "%"),
                    _number(row.get("max_memory_usage", ""), "MiB"), time_ms))
        return out

    def nvlink_active(self) -> dict[int, int]:
        """GPU index -> links `nvlink -s` shows with a speed (others are inactive)."""
        out: dict[int, int] = {}
        for body in self._bodies("nvlink", "-s"):
            gpu = None
            for line in body.splitlines():
                if (match := _LIST_GPU.fullmatch(line.rstrip())) is not None:
                    gpu = decimal(match.group(1))
                elif gpu is not None and (match := _NVLINK.fullmatch(line.rstrip())):
                    active = match.group(2).strip() not in ("<inactive>", "")
                    out[gpu] = out.get(gpu, 0) + active
        return out


def looks_like_capture(text: str) -> bool:
    """Whether the text holds command sections (`# $ nvidia-smi ...` banners)."""
    return any(_COMMAND.fullmatch(line.rstrip()) for line in text.splitlines())


def parse_capture(text: str) -> Capture:
    """Split a capture file into its sections."""
    sections: list[Section] = []
    header: list[tuple[str, str]] = []
    label = command = None
    body: list[str] = []
    in_banner = False

    def close() -> None:
        if command is not None:
            sections.append(Section(label or "", command, "\n".join(body)))

    for line in text.splitlines():
        stripped = line.rstrip()
        if stripped.startswith("####"):
            if not in_banner:
                close()
                label = command = None
                body = []
            in_banner = not in_banner
            continue
        if not sections and command is None and not in_banner:
            if (match := _HEADER.fullmatch(stripped)) is not None:
                header.append((match.group(1), match.group(2).strip()))
            continue
        if in_banner:
            if (match := _LABEL.fullmatch(stripped)) is not None:
                label = f"{match.group(1)} :: {match.group(2)}"
            elif (match := _COMMAND.fullmatch(stripped)) is not None:
                command = match.group(1).strip()
            continue
        body.append(line)
    close()
    return Capture(tuple(sections), tuple(header))
