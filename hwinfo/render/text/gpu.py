"""The GPU sections: a one-line-per-GPU summary, then a block per GPU, then users."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hwinfo.cpulist import format_cpulist
from hwinfo.escape import printable_copy
from hwinfo.health.findings import Severity
from hwinfo.health.labels import gpu_health
from hwinfo.model.gpu import Activity, Clocks, Ecc, Gpu, GpuSystem, PeakThroughput
from hwinfo.model.jobs import JobResources
from hwinfo.model.memory import Memory
from hwinfo.render.text.gpu_mig import render_mig
from hwinfo.render.text.gpu_processes import add_process_table, render_users
from hwinfo.render.text.layout import Section, clip
from hwinfo.render.text.style import Style
from hwinfo.units import NA, celsius, or_na, pcie_link, percent, size, watts

# Said by every row, so the summary leaves them out.
_NAME_PREFIXES = ("NVIDIA ", "GeForce ")
_SEP = " · "

T = TypeVar("T")


def short_name(name: str | None) -> str:
    name = name or NA
    for prefix in _NAME_PREFIXES:
        name = name.removeprefix(prefix)
    return name


def _mhz(hz: float | None) -> str:
    return or_na(hz, lambda v: f"{v / 1e6:.0f}")


def _memory(gpu: Gpu, host: Memory | None = None) -> str:
    used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
    if total is None and gpu.addressing_mode == "ats":
        # No framebuffer: the GPU takes what it needs of the system memory it shares.
        shared = "shared with the CPU (no framebuffer figure)"
        if host is not None and host.total_bytes is not None:
            shared += f": system {size(host.total_bytes)}"
            if host.available_bytes is not None:
                shared += f", {size(host.available_bytes)} available"
        return shared
    if total is None:
        return NA
    if used is None:
        return f"? / {size(total)}"
    return f"{size(used)} / {size(total)} ({percent(used / total)})"


def _utilization(gpu: Gpu) -> str:
    if gpu.mig is not None and gpu.mig.enabled:
        return "MIG"
    return or_na(gpu.utilization_gpu_ratio, percent)


def memory_short(gpu: Gpu) -> str:
    """"31/40 GiB": used and total in the total's unit, for the summary table."""
    if gpu.memory_total_bytes is None:
        return "shared" if gpu.addressing_mode == "ats" else "n/a"
    return used_of(gpu.memory_used_bytes, gpu.memory_total_bytes)


def used_of(used: float | None, total: float) -> str:
    """"31/40 GiB", "7.5/9.6 GiB": used ("?" when unknown) and total in the total's unit."""
    unit = next(u for u, scale in _UNITS if total >= scale or u == "MiB")
    scale = dict(_UNITS)[unit]

    def number(n: float) -> str:
        n /= scale
        return f"{n:.0f}" if n >= 10 or n == 0 else f"{n:.1f}"

    return f"{'?' if used is None else number(used)}/{number(total)} {unit}"


_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20))
# A name longer than this is cut, so the summary stays within 80 columns.
_NAME_WIDTH = 16

SUMMARY_HEADER = ("#", "Name", "Util", "Memory", "Temp", "Power", "Procs", "Health")
SUMMARY_ALIGN = (True, False, True, True, True, True, True, False)
# As wide as a busy GPU's figures, so a GPU lost between refreshes moves nothing.
SUMMARY_WIDTHS = (1, 4, 4, len("80/80 GiB"), len("87°C"), len("700 W"), 5, 6)


def _process_count(gpu: Gpu) -> str:
    """How many processes NVML lists, read even with --no-processes; "n/a" when refused."""
    return or_na(gpu.process_count, str).replace(NA, "n/a")


def summary_row(gpu: Gpu, style: Style) -> list[str]:
    """One GPU as a row of the summary table (the report's and --brief's)."""
    name = clip(short_name(gpu.name), _NAME_WIDTH)
    severity, words = gpu_health(gpu)
    health = words if severity is Severity.OK else (
        style.bad(words) if severity is Severity.CRITICAL else style.warn(words))
    if gpu.lost or gpu.unavailable.get("gpu"):
        return [str(gpu.index), name, "", "", "", "", "", health]
    return [
        str(gpu.index),
        name,
        _utilization(gpu),
        memory_short(gpu),
        or_na(gpu.temperature_celsius, celsius).replace(NA, "n/a"),
        or_na(gpu.power_draw_watts, watts).replace(NA, "n/a"),
        _process_count(gpu),
        health,
    ]


def _summary(system: GpuSystem, style: Style, note: str | None) -> Section:
    title = f"GPUs ({len(system.gpus)})"
    section = Section(title, style)
    if note is not None:
        section.line(note)
    section.field(
        "Driver",
        f"{system.driver_version or NA} · CUDA {system.cuda_driver_version or NA}"
        f" · NVML {system.nvml_version or NA}",
    )
    section.table(SUMMARY_HEADER,
                  [summary_row(gpu, style) for gpu in system.gpus],
                  SUMMARY_ALIGN, min_widths=SUMMARY_WIDTHS)
    return section


def _clocks(now: Clocks | None, peak: Clocks | None) -> str:
    if now is None and peak is None:
        return NA
    parts = []
    for label, attr in (("SM", "sm_hertz"), ("mem", "memory_hertz"), ("gfx", "graphics_hertz")):
        cur = getattr(now, attr) if now else None
        top = getattr(peak, attr) if peak else None
        if cur is not None or top is not None:
            parts.append(f"{label} {_mhz(cur)}/{_mhz(top)}")
    return " · ".join(parts) + " MHz"


def _rate(value: float) -> str:
    """Tera-rates as people read them: "989", "1,979", "66.9", "9.75"."""
    tera = value / 1e12
    return f"{tera:,.0f}" if tera >= 100 else f"{tera:.3g}"


def _peak(peak: PeakThroughput | None) -> str:
    if peak is None:
        return NA
    source = "rated" if peak.clock_source == "rated" else "NVML max"
    core = [_part(label, value, _rate) for label, value in
            (("FP64", peak.fp64_flops), ("FP32", peak.fp32_flops))]
    tensor = [_part(label, value, _rate) for label, value in
              (("TF32", peak.tf32_flops), ("FP16", peak.fp16_flops), ("BF16", peak.bf16_flops))]
    parts = [p for p in core if p]
    if parts and peak.tensor_clock_hertz != peak.clock_hertz and any(tensor):
        # Hopper datasheets quote CUDA-core and tensor rates at different clocks.
        parts[-1] += f" TFLOPS at {_mhz(peak.clock_hertz)} MHz"
    parts += [p for p in tensor if p]
    if parts:
        parts[-1] += " TFLOPS"
    if peak.int8_ops is not None:
        parts.append(f"INT8 {_rate(peak.int8_ops)} TOPS")
    clock = peak.tensor_clock_hertz or peak.clock_hertz
    if parts and clock is not None:
        parts[-1] += f" at {_mhz(clock)} MHz ({source})"
    if peak.memory_bandwidth_bytes_per_second is not None:
        parts.append(f"memory {peak.memory_bandwidth_bytes_per_second / 1e12:.2f} TB/s")
    return _SEP.join(parts) or NA


def _ecc(ecc: Ecc, style: Style) -> str:
    if not ecc.enabled:
        return "ECC off"
    counts = [
        f"{label}: {or_na(corrected, str)} corrected, {or_na(uncorrected, str)} uncorrected"
        for label, corrected, uncorrected in (
            ("volatile", ecc.volatile_corrected, ecc.volatile_uncorrected),
            ("aggregate", ecc.aggregate_corrected, ecc.aggregate_uncorrected),
        )
        # Volatile counts are not readable on a MIG-mode GPU: leave out what is missing.
        if corrected is not None or uncorrected is not None
    ]
    text = _SEP.join(["ECC on", *counts])
    return style.bad(text) if ecc.volatile_uncorrected or ecc.aggregate_uncorrected else text


def _health(gpu: Gpu, style: Style) -> str:
    parts = [] if gpu.ecc is None else [_ecc(gpu.ecc, style)]
    rows = gpu.remapped_rows
    if rows is not None:
        text = (f"remapped rows: {rows.correctable} correctable, "
                f"{rows.uncorrectable} uncorrectable")
        problems = [w for w, on in (("remap pending", rows.pending),
                                    ("remap failed", rows.failure)) if on]
        parts.append(style.bad(", ".join([text, *problems])) if problems else text)
    pages = gpu.retired_pages
    if pages is not None:
        text = (f"retired pages: {or_na(pages.single_bit, str)} single-bit, "
                f"{or_na(pages.double_bit, str)} double-bit")
        parts.append(style.bad(text + ", retirement pending") if pages.pending else text)
    if gpu.xid_errors:
        parts.append(style.bad("XID " + ", ".join(f"{e.xid} ×{e.count}" for e in gpu.xid_errors)))
    if parts:
        return _SEP.join(parts)
    # "Not on this board" only when NVML said so; an error is not an answer.
    refused = [gpu.unavailable[k] for k in ("ecc", "remapped_rows", "retired_pages") if k in gpu.unavailable]
    return f"{NA} ({refused[0]})" if refused else "no ECC or memory-error reporting on this board"


def _part(label: str, value: T | None, fmt: Callable[[T], str] = str) -> str | None:
    """"label value", or None when the value is unknown (the part is then left out)."""
    return None if value is None else f"{label} {fmt(value)}".strip()


def _joined(*parts: str | None) -> str:
    """The known parts joined by " · "; "not available" only when nothing is known."""
    present = [p for p in parts if p]
    return _SEP.join(present) if present else NA


def activity_text(activity: Activity) -> str:
    """What GPM measured, and over how long."""
    return _joined(
        _part("SM active", activity.sm_active_ratio, percent),
        _part("occupancy", activity.sm_occupancy_ratio, percent),
        _part("tensor", activity.tensor_active_ratio, percent),
        _part("DRAM bandwidth", activity.dram_bandwidth_ratio, percent),
    ) + f" (GPM, over {activity.window_seconds:.1f} s)"


def _detail(gpu: Gpu, style: Style, show_processes: bool, host: Memory | None,
            jobs: list[JobResources] | None) -> Section:
    section = Section(f"GPU {gpu.index}  {gpu.name or NA}", style)
    reason = gpu.unavailable.get("gpu")
    if gpu.lost or reason:
        section.line(style.bad(f"{reason or 'GPU is lost'}: no data from NVML"))
        section.field("UUID", gpu.uuid or NA)
        section.field("PCI", gpu.pci_bus_id or NA)
        return section
    section.field("UUID", gpu.uuid or NA)
    section.field("Board", _joined(
        gpu.architecture,
        _part("CC", gpu.cuda_compute_capability),
        _part("CUDA cores", gpu.cuda_cores),
        _part("PCI", gpu.pci_bus_id),
    ))
    section.field("Identity", _joined(
        _part("serial", gpu.serial),
        _part("VBIOS", gpu.vbios_version),
        _part("part", gpu.board_part_number),
    ))
    section.field("Modes", _joined(
        _part("persistence", gpu.persistence_mode, lambda v: "on" if v else "off"),
        _part("compute", gpu.compute_mode),
        _part("P", gpu.performance_state),
        _part("accounting", gpu.accounting, lambda a: "on" if a.enabled else "off"),
    ).replace("P ", "P"))
    section.field("Memory", _joined(
        _unavailable(gpu, "memory", _memory(gpu, host)),
        _part("reserved", gpu.memory_reserved_bytes or None, size),
        _part("BAR1", gpu.bar1_total_bytes,
              lambda total: f"{or_na(gpu.bar1_used_bytes, size)} / {size(total)}"),
    ))
    if gpu.mig is not None and gpu.mig.enabled:
        # nvml.h: no utilization for a MIG-mode GPU or its instances; GPM (Hopper and newer)
        # measures each GPU instance, shown in the MIG table.
        per_instance = any(d.activity is not None for d in gpu.mig.devices)
        section.field("Utilization", "per GPU instance: SM active in the MIG table (GPM)"
                      if per_instance else "not available in MIG mode")
    else:
        section.field("Utilization", _unavailable(gpu, "utilization", _joined(
            _part("GPU", gpu.utilization_gpu_ratio, percent),
            _part("memory", gpu.utilization_memory_ratio, percent),
            _part("encoder", gpu.utilization_encoder_ratio, percent),
            _part("decoder", gpu.utilization_decoder_ratio, percent),
        )))
        if gpu.activity is not None:
            section.field("Activity", activity_text(gpu.activity))
    section.field("Temperature", _joined(
        _part("", gpu.temperature_celsius, celsius),
        _part("slowdown", gpu.temperature_slowdown_celsius, celsius),
        _part("shutdown", gpu.temperature_shutdown_celsius, celsius),
        _part("fan", gpu.fan_speed_ratio, percent),
    ))
    section.field("Power", _joined(
        "draw " + _unavailable(gpu, "power_draw_watts", or_na(gpu.power_draw_watts, watts)),
        _part("limit", gpu.power_limit_watts, watts),
        _part("range", gpu.power_min_limit_watts,
              lambda lo: f"{lo:.0f}–{or_na(gpu.power_max_limit_watts, watts)}"),
        _part("energy", gpu.energy_joules, lambda j: f"{j / 3.6e6:.1f} kWh"),
    ))
    section.field("Clocks", _clocks(gpu.clocks, gpu.max_clocks))
    reasons = [r for r in (gpu.clock_event_reasons or []) if r != "gpu_idle"]
    if gpu.clock_event_reasons is None:
        section.field("Throttling", NA)
    else:
        # At rest, a power cap is power management (health/rules_gpu.py power_throttling).
        resting = gpu.at_rest() and set(reasons) <= {"sw_power_cap"}
        shown = ", ".join(reasons) + (" (at rest)" if resting else "")
        section.field("Throttling", (style.value if resting else style.warn)(shown)
                      if reasons else "none")
    if gpu.pcie is None:
        section.field("PCIe", NA)
    else:
        link = (f"{pcie_link(gpu.pcie.generation, gpu.pcie.width)}"
                f" of {pcie_link(gpu.pcie.max_generation, gpu.pcie.max_width)}")
        section.field("PCIe", style.warn(link + " (degraded)") if any(gpu.pcie_below_max()) else link)
    section.field("Health", _health(gpu, style))
    section.field("Topology", _joined(
        # The nodes near it, and its own node where its memory is one (Grace boards).
        _part("NUMA", gpu.numa_affinity, format_cpulist),
        _part("own NUMA node", gpu.numa_node),
        _part("CPUs", gpu.cpu_affinity, format_cpulist),
        _part("NVLink", gpu.nvlink_links_active, lambda n: f"{n} active"),
    ))
    section.field("Peak", _peak(gpu.peak))
    if gpu.mig is not None:
        render_mig(gpu.mig, section)
    if show_processes:
        add_process_table(section, gpu, jobs)
    return section


def _unavailable(gpu: Gpu, key: str, text: str) -> str:
    """Say beside a fact why it is missing, when that is more than "not supported"."""
    reason = gpu.unavailable.get(key)
    return f"{text} ({reason})" if reason else text


def gpu_blocks(
    system: GpuSystem | None, style: Style, show_processes: bool = True, note: str | None = None,
    host_memory: Memory | None = None, jobs: list[JobResources] | None = None,
) -> list[str]:
    """The GPU section's blocks: the summary (first, when there are GPUs), a block per GPU,
    the users. `note`: a line on the data's freshness (stale, or not read and why), shown
    first; `host_memory`: the system memory that GPUs sharing it draw on; `jobs`: the CPU
    use of the processes' jobs. Every name shown is escaped before it is styled
    (escape.printable_copy)."""
    system, host_memory, jobs = printable_copy(system), printable_copy(host_memory), printable_copy(jobs)
    if system is None or system.status != "ok" or not system.gpus:
        if system is None and note is None:
            return []  # GPU collection switched off
        section = Section("GPUs", style)
        if note is not None:
            section.line(note)
        if system is not None and system.status != "ok":
            section.line(style.warn(system.message or system.status))
        elif system is not None:
            section.line(f"no NVIDIA GPU found (driver {system.driver_version or NA})")
        return [section.render()]
    blocks = [_summary(system, style, note).render()]
    blocks += [_detail(gpu, style, show_processes, host_memory, jobs).render()
               for gpu in system.gpus]
    if show_processes and system.users:
        users = Section("GPU users", style)
        render_users(system.users, users)
        blocks.append(users.render())
    return blocks


def render_gpus(
    system: GpuSystem | None, style: Style, show_processes: bool = True, note: str | None = None,
    host_memory: Memory | None = None,
) -> str:
    return "\n\n".join(gpu_blocks(system, style, show_processes, note, host_memory))
