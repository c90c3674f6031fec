"""`hwinfo report --brief`: the whole machine on one screen, the `watch nvidia-smi` view.

A line each for the host, CPU, memory, disks, network and driver, a row per GPU (the report's
summary table, health included), and a line per user with totals across GPUs, busiest first.
Eight GPUs and their users fit 24 lines of 80 columns.
"""

from __future__ import annotations

from hwinfo.escape import printable_copy
from hwinfo.model.cpu import Cpu
from hwinfo.model.gpu import UserUsage
from hwinfo.model.memory import Memory
from hwinfo.model.network import Network
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.storage import Storage
from hwinfo.render.text.gpu import SUMMARY_ALIGN, SUMMARY_HEADER, SUMMARY_WIDTHS, summary_row
from hwinfo.render.text.gpu_processes import user_totals
from hwinfo.render.text.layout import WIDTH, Section, clip
from hwinfo.render.text.memory import share
from hwinfo.render.text.storage import kind_name, used_share
from hwinfo.render.text.style import Style
from hwinfo.units import NA, duration, link_rate, or_na, percent, size

LINES = 24
_SEP = " · "
# ML flag families, shortest name first: a brief line says which tiers the CPU has.
_ML_TIERS = (
    ("AVX2", ("AVX2",)),
    ("AVX-512", ("AVX512F",)),
    ("VNNI", ("AVX512VNNI", "AVX-VNNI")),
    ("BF16", ("AVX512BF16", "BF16")),
    ("AMX", ("AMX-TILE",)),
    ("NEON", ("NEON",)),
    ("SVE2", ("SVE2",)),
    ("SVE", ("SVE",)),
    ("I8MM", ("I8MM",)),
    ("SME", ("SME",)),
)


def _clip(text: str) -> str:
    return clip(text, WIDTH)


def _ml_short(flags: list[str]) -> str:
    present = set(flags)
    tiers = [name for name, members in _ML_TIERS if present & set(members)]
    if "SVE2" in tiers:
        tiers.remove("SVE")
    return " ".join(tiers)


def cpu_text(cpu: Cpu | None) -> str:
    """The CPU in a line: model, shape, ML tiers, load (the page shows it too)."""
    if cpu is None:
        return NA
    sockets, cores = cpu.sockets, cpu.cores
    shape = (f"{sockets} × {cores // sockets} cores" if sockets and cores
             else f"{or_na(cores, str)} cores")
    parts = [cpu.model_name or NA, f"{shape}, {or_na(cpu.logical_cpus, str)} threads"]
    if cpu.ml_flags:
        parts.append(_ml_short(cpu.ml_flags))
    if cpu.load_average:
        parts.append(f"load {cpu.load_average[0]:.1f}")
    return _SEP.join(parts)


def memory_text(memory: Memory | None) -> str:
    """System memory and swap in a line: used of total."""
    if memory is None or memory.total_bytes is None:
        return NA
    used = memory.used_bytes
    text = f"{or_na(used, size)} / {size(memory.total_bytes)}"
    if used is not None:
        text += " used" + share(used, memory.total_bytes)
    if memory.swap_total_bytes:
        text += f"{_SEP}swap {or_na(memory.swap_used_bytes, size)} / {size(memory.swap_total_bytes)}"
    return text


def _count_of(things: dict[str, list[int]]) -> list[str]:
    """"2 × NVMe 7.68 TiB" per kind, largest total first."""
    ranked = sorted(things.items(), key=lambda item: -sum(item[1]))
    return [f"{len(sizes)} × {name} {size(sum(sizes))}" for name, sizes in ranked]


def storage_text(storage: Storage | None, style: Style) -> str:
    """The disks in a line: how many of each kind, degraded arrays, the fullest filesystem."""
    if storage is None:
        return NA
    kinds: dict[str, list[int]] = {}
    for disk in storage.disks:
        if disk.size_bytes:  # an empty slot (a card reader, an unset zram) holds no data
            kinds.setdefault(kind_name(disk.kind), []).append(disk.size_bytes)
    parts = _count_of(kinds) or ["no disks"]
    parts += [style.bad(f"{a.name} degraded") for a in storage.raid_arrays if a.degraded_disks]
    shares = [(share, fs.mount_point) for fs in storage.filesystems
              if (share := used_share(fs)) is not None]
    if shares:
        fullest, where = max(shares)
        parts.append(f"fullest {where} {percent(fullest)}")
    return _SEP.join(parts)


def network_text(network: Network | None) -> str:
    """The network in a line: interfaces up and their speeds, RDMA ports active."""
    if network is None:
        return NA
    backed = {p.netdev for d in network.rdma_devices for p in d.ports}
    # What the machine talks over: interfaces up that are not in a bond and not an RDMA port's.
    parts = [f"{i.name} " + ("up" if i.speed_bytes_per_second is None
                             else link_rate(i.speed_bytes_per_second))
             for i in network.interfaces if i.operstate == "up" and i.master is None
             and i.kind in ("physical", "vf", "bond") and i.name not in backed]
    # RDMA ports by link layer: how many are active, and at what rate (a port that is down
    # shows the kernel's lowest rate, which says nothing).
    layers: dict[str, list[int | None]] = {}
    for device in network.rdma_devices:
        for port in device.ports:
            layer = "IB" if port.link_layer == "InfiniBand" else "RoCE"
            layers.setdefault(layer, []).append(
                port.rate_bytes_per_second if port.state == "ACTIVE" else -1)
    for layer, rates in sorted(layers.items()):
        active = [r for r in rates if r != -1]
        speeds = "/".join(or_na(r, link_rate) for r in sorted(set(active), key=lambda r: -(r or 0)))
        parts.append(f"{layer} {len(active)} of {len(rates)} active"
                     + (f" ({speeds})" if active else ""))
    return _SEP.join(parts) or "no interface up"


def render_brief(snapshot: Snapshot, style: Style, lines: int = LINES) -> str:
    snapshot = printable_copy(snapshot)
    host = snapshot.host
    out = [
        style.heading(_clip(_SEP.join([
            host.hostname, host.os_name or NA, f"kernel {host.kernel_release or NA}",
            f"up {or_na(host.uptime_seconds, duration)}",
        ]))),
        _clip(f"CPU   {cpu_text(snapshot.cpu)}"),
        _clip(f"Mem   {memory_text(snapshot.memory)}"),
    ]
    # Documents of an hwinfo that read no disks or network (--from an older daemon) lack both.
    if snapshot.storage is not None or snapshot.source("storage") is not None:
        out.append(_clip(f"Disk  {storage_text(snapshot.storage, style)}"))
    if snapshot.network is not None or snapshot.source("network") is not None:
        out.append(_clip(f"Net   {network_text(snapshot.network)}"))
    # Failed sources matter more than who is on the GPUs: their lines are counted first, so
    # the users give way ("+N more users") and the brief keeps its height.
    errors = [style.warn(_clip(f"{error.source}: collection failed: {error.message}"))
              for error in snapshot.errors]
    system = snapshot.gpu
    if system is None:
        out.append("GPUs  not collected (--no-gpu)")
    elif system.status != "ok":
        out.append(style.warn(_clip(f"GPUs  {system.message or system.status}")))
    else:
        out.append(_clip(f"GPUs  {len(system.gpus)}{_SEP}driver {system.driver_version or NA}"
                         f"{_SEP}CUDA {system.cuda_driver_version or NA}"))
        if system.gpus:
            table = Section("", style)
            table.table(SUMMARY_HEADER, [summary_row(g, style) for g in system.gpus],
                        SUMMARY_ALIGN, min_widths=SUMMARY_WIDTHS)
            out += table.lines[1:]
        out += _users(system.users or [], lines - len(out) - len(errors))
    out += _within(errors, lines - len(out), "collection errors")
    return "\n".join(out) + "\n"


def _within(items: list[str], room: int, what: str) -> list[str]:
    """As many of `items` as fit `room` lines, the last line a count of the rest if some do not."""
    if len(items) <= room:
        return items
    if room < 1:
        return []
    return items[: room - 1] + [f"  +{len(items) - room + 1} more {what}"]


def _users(users: list[UserUsage], room: int) -> list[str]:
    """A heading and a line per user, busiest first, within `room` lines; "+N more" for the rest."""
    totals = user_totals(users)
    if not totals or room < 2:
        return []
    return ["Users"] + _within([
        _clip(f"  {total.user or '(unknown)':<12} {or_na(total.used_memory_bytes, size):>9}"
              f" on GPU{'s' if len(total.gpu_indices) > 1 else ''} "
              f"{','.join(map(str, total.gpu_indices))}{_SEP}{total.processes} "
              f"proc{'s' if total.processes != 1 else ''}")
        for total in totals
    ], room - 1, "users")
