"""A scenario's GPUs: their plain fields, processes, accounting and XID events."""

from __future__ import annotations

import re
import uuid as uuid_mod
from collections.abc import Callable, Mapping

from hwinfo import inputs
from hwinfo.cpulist import parse_cpulist
from hwinfo.sim.boards import BOARDS
from hwinfo.sim.scenario_bounds import (
    MAX_ACCOUNTING_BUFFER,
    MAX_BUS_WIDTH_BITS,
    MAX_CLOCK_MHZ,
    MAX_COUNT,
    MAX_CUDA_CORES,
    MAX_DELAY_SECONDS,
    MAX_ENERGY_J,
    MAX_MEMORY_MIB,
    MAX_MINOR_NUMBER,
    MAX_NAME_BYTES,
    MAX_NUMA_NODE,
    MAX_PCIE_GEN,
    MAX_PCIE_WIDTH,
    MAX_POWER_W,
    MAX_RUN_MS,
    MAX_TEMPERATURE_C,
    MIG_MIN_DRIVER,
)
from hwinfo.sim.scenario_defaults import DEFAULT_ACCOUNTING_BUFFER
from hwinfo.sim.scenario_mig import parse_mig
from hwinfo.sim.scenario_model import (
    ADDRESSING_MODES,
    ARCHITECTURES,
    CLOCK_EVENT_REASONS,
    COMPUTE_MODES,
    DRIVER_MODELS,
    PROCESS_TYPES,
    AccountedProcessSpec,
    AccountingSpec,
    Clocks,
    Ecc,
    EccCounts,
    GpuSpec,
    MigSpec,
    Pcie,
    ProcessSpec,
    RemappedRows,
    RetiredPages,
    Window,
    XidEvent,
)
from hwinfo.sim.scenario_reader import Reader, opt_int, opt_str, optional, read_gpm
from hwinfo.sim.scenario_topology import read_wires


def gpu_field_readers(
    r: Reader, imported: bool = False
) -> dict[str, Callable[[str, object], object]]:
    """Reader per plain GPU field; structured fields (mig, processes, ...) are read apart.

    In an imported scenario a counter the dump did not show is NotSupported (None), not 0.
    """
    absent_count = None if imported else 0

    def count_or_none(path: str, key: str, data: Mapping[str, object]) -> int | None:
        value = data.get(key, absent_count)
        return None if value is None else r.int(inputs.member(path, key), value)

    def clocks(path: str, value: object) -> Clocks:
        data = r.obj(path, value, ("graphics", "sm", "memory", "video"))
        return Clocks(
            **{k: opt_int(r, path, data, k, MAX_CLOCK_MHZ)
               for k in ("graphics", "sm", "memory", "video")}
        )

    def pcie(path: str, value: object) -> Pcie:
        bounds = {
            "gen": MAX_PCIE_GEN,
            "max_gen": MAX_PCIE_GEN,
            "gpu_max_gen": MAX_PCIE_GEN,
            "width": MAX_PCIE_WIDTH,
            "max_width": MAX_PCIE_WIDTH,
            "tx_kbps": MAX_COUNT,
            "rx_kbps": MAX_COUNT,
            "replay_counter": MAX_COUNT,
        }
        data = r.obj(path, value, bounds)
        return Pcie(**{k: opt_int(r, path, data, k, high) for k, high in bounds.items()})

    def counts(path: str, value: object) -> EccCounts:
        data = r.obj(path, value, ("corrected", "uncorrected"))
        return EccCounts(
            count_or_none(path, "corrected", data), count_or_none(path, "uncorrected", data)
        )

    def ecc(path: str, value: object) -> Ecc:
        data = r.obj(path, value, ("enabled", "pending", "volatile", "aggregate"), ("enabled",))
        enabled = r.bool(inputs.member(path, "enabled"), data["enabled"])
        return Ecc(
            enabled,
            r.bool(inputs.member(path, "pending"), data.get("pending", enabled)),
            counts(inputs.member(path, "volatile"), data.get("volatile", {})),
            counts(inputs.member(path, "aggregate"), data.get("aggregate", {})),
        )

    def retired(path: str, value: object) -> RetiredPages:
        data = r.obj(path, value, ("single_bit", "double_bit", "pending"))
        return RetiredPages(
            r.int(inputs.member(path, "single_bit"), data.get("single_bit", 0)),
            r.int(inputs.member(path, "double_bit"), data.get("double_bit", 0)),
            r.bool(inputs.member(path, "pending"), data.get("pending", False)),
        )

    def remapped(path: str, value: object) -> RemappedRows:
        data = r.obj(path, value, ("correctable", "uncorrectable", "pending", "failure"))
        return RemappedRows(
            r.int(inputs.member(path, "correctable"), data.get("correctable", 0)),
            r.int(inputs.member(path, "uncorrectable"), data.get("uncorrectable", 0)),
            r.bool(inputs.member(path, "pending"), data.get("pending", False)),
            r.bool(inputs.member(path, "failure"), data.get("failure", False)),
        )

    def capability(path: str, value: object) -> tuple[int, int]:
        items = r.list(path, value)
        if len(items) != 2:
            r.fail(path, f"expected [major, minor], got {len(items)} numbers")
        return r.int(inputs.member(path, 0), items[0], 0, 99), r.int(inputs.member(path, 1), items[1], 0, 99)

    def reasons(path: str, value: object) -> tuple[str, ...]:
        return tuple(
            r.choice(inputs.member(path, i), v, CLOCK_EVENT_REASONS)
            for i, v in enumerate(r.list(path, value))
        )

    def cpus(path: str, value: object) -> tuple[int, ...]:
        try:
            return tuple(parse_cpulist(r.str(path, value)))
        except ValueError as exc:
            r.fail(path, f"expected a CPU list such as '0-23,48-71': {exc}")

    def nodes(path: str, value: object) -> tuple[int, ...]:
        found = cpus(path, value)
        if any(node > MAX_NUMA_NODE for node in found):
            r.fail(path, f"NUMA nodes are at most {MAX_NUMA_NODE}")
        return found

    def bus_id(path: str, value: object) -> str:
        text = r.str(path, value)
        if parse_pci_bus_id(text) is None:
            r.fail(path, "expected a PCI bus id such as '00000000:07:00.0', "
                         f"got {inputs.shown(text)}")
        return text

    def driver_model(path: str, value: object) -> tuple[str, str]:
        data = r.obj(path, value, ("current", "pending"), ("current",))
        current = r.choice(inputs.member(path, "current"), data["current"], DRIVER_MODELS)
        pending = data.get("pending", current)
        return current, r.choice(inputs.member(path, "pending"), pending, DRIVER_MODELS)

    def bounded(high: int) -> Callable[[str, object], int]:
        return lambda path, value: r.int(path, value, 0, high)

    def watts(path: str, value: object) -> float:
        return r.number(path, value, MAX_POWER_W)

    percent, mib, celsius = bounded(100), bounded(MAX_MEMORY_MIB), bounded(MAX_TEMPERATURE_C)

    return {
        "name": lambda path, value: r.str(path, value, MAX_NAME_BYTES),
        "uuid": r.str,
        "serial": optional(r.str),
        "vbios_version": optional(r.str),
        "board_part_number": optional(r.str),
        "pci_bus_id": bus_id,
        "pci_device_id": optional(r.hex_int),
        "pci_subsystem_id": optional(r.hex_int),
        "minor_number": optional(bounded(MAX_MINOR_NUMBER)),
        "architecture": optional(lambda p, v: r.choice(p, v, ARCHITECTURES)),
        "cuda_compute_capability": optional(capability),
        "cuda_cores": optional(bounded(MAX_CUDA_CORES)),
        "memory_bus_width_bits": optional(bounded(MAX_BUS_WIDTH_BITS)),
        "persistence_mode": optional(r.bool),
        "display_mode": optional(r.bool),
        "display_active": optional(r.bool),
        "compute_mode": optional(lambda p, v: r.choice(p, v, COMPUTE_MODES)),
        # null: NVML has no framebuffer figure (a GPU sharing system memory, e.g. GB10).
        "memory_total_mib": optional(mib),
        "memory_reserved_mib": optional(mib),
        "memory_used_mib": optional(mib),
        "memory_free_mib": optional(mib),
        "bar1_total_mib": optional(mib),
        "bar1_used_mib": optional(mib),
        "utilization_gpu_percent": optional(percent),
        "utilization_memory_percent": optional(percent),
        "encoder_percent": optional(percent),
        "decoder_percent": optional(percent),
        "temperature_c": optional(celsius),
        "temperature_slowdown_c": optional(celsius),
        "temperature_shutdown_c": optional(celsius),
        "temperature_gpu_max_c": optional(celsius),
        "temperature_memory_max_c": optional(celsius),
        "fan_percent": optional(percent),
        "power_draw_w": optional(watts),
        "power_limit_w": optional(watts),
        "power_default_limit_w": optional(watts),
        "power_min_limit_w": optional(watts),
        "power_max_limit_w": optional(watts),
        "energy_j": optional(lambda p, v: r.number(p, v, MAX_ENERGY_J)),
        "clocks_mhz": optional(clocks),
        "max_clocks_mhz": optional(clocks),
        "pstate": optional(lambda p, v: r.int(p, v, 0, 15)),
        "pcie": optional(pcie),
        "clock_event_reasons": optional(reasons),
        "ecc": optional(ecc),
        "retired_pages": optional(retired),
        "remapped_rows": optional(remapped),
        "nvlink_links": optional(bounded(MAX_COUNT)),  # checked against the board below
        "numa_node": optional(bounded(MAX_NUMA_NODE)),
        "cpu_affinity": optional(cpus),
        "numa_affinity": optional(nodes),
        "addressing_mode": optional(lambda p, v: r.choice(p, v, ADDRESSING_MODES)),
        "gpm": optional(lambda p, v: read_gpm(r, p, v)),
        "driver_model": optional(driver_model),
    }


_STRUCTURED_GPU_KEYS = (
    "board", "mig", "processes", "lost", "xid_events", "accounting", "nvlink_remote")


def _merge(base: Mapping[str, object], override: Mapping[str, object]) -> dict[str, object]:
    """The board's defaults with the GPU's fields over them; objects merge key by key."""
    out = dict(base)
    for key, value in override.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = _merge(old, value)
        else:
            out[key] = value
    return out


def parse_pci_bus_id(text: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of "00000000:07:00.0", "0000:07:00.0" or "07:00.0"; else None."""
    m = re.fullmatch(r"(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.[0-7]", text)
    if m is None:
        return None
    return int(m.group(1) or "0", 16), int(m.group(2), 16), int(m.group(3), 16)


def read_gpu(
    r: Reader,
    scenario_name: str,
    driver: tuple[int, ...],
    index: int,
    value: object,
    imported: bool = False,
) -> GpuSpec:
    """One GPU; an imported one takes nothing from the catalogue but its MIG table."""
    path = f"gpus[{index}]"
    readers = gpu_field_readers(r, imported)
    data = r.obj(path, value, (*readers, *_STRUCTURED_GPU_KEYS))
    board = None
    if "board" in data:
        board = BOARDS[r.choice(inputs.member(path, "board"), data["board"], BOARDS)]
    if board is not None and not imported:
        merged = _merge(board.defaults, data)
    else:
        merged = dict(data)
        for key in ("name", "memory_total_mib"):
            if key not in merged:
                r.fail(inputs.member(path, key), "required when no board is given")
    # Optional readers let null through (NotSupported); name, uuid, bus id and memory do not.
    values: dict[str, object] = {
        key: read(inputs.member(path, key), merged[key]) if key in merged else None
        for key, read in readers.items()
    }
    # Absent (not null) identity fields get stable defaults derived from the scenario.
    if "uuid" not in merged:
        values["uuid"] = "GPU-" + str(
            uuid_mod.uuid5(uuid_mod.NAMESPACE_URL, f"hwinfo-sim:{scenario_name}:{index}")
        )
    if "pci_bus_id" not in merged:
        values["pci_bus_id"] = f"00000000:{index + 1:02X}:00.0"
    if "minor_number" not in merged and not imported:
        values["minor_number"] = index
    if "serial" not in merged and board is not None and board.has_serial and not imported:
        values["serial"] = (
            f"{uuid_mod.uuid5(uuid_mod.NAMESPACE_URL, str(values['uuid'])).int % 10**13:013d}"
        )
    nvlink_max = board.nvlink_max_links if board else (values["nvlink_links"] or 0)
    if values["nvlink_links"] is not None and values["nvlink_links"] > nvlink_max:  # type: ignore[operator]
        r.fail(inputs.member(path, "nvlink_links"), f"this board has {nvlink_max} NVLink links")

    mig = None
    # A MIG board on a driver older than MIG simply has no MIG, unless the GPU asks for it.
    if merged.get("mig") is not None and ("mig" in data or driver >= MIG_MIN_DRIVER):
        mig = parse_mig(r, inputs.member(path, "mig"), merged["mig"], board, driver)
    processes = parse_processes(r, inputs.member(path, "processes"), data.get("processes", []), mig)
    lost = None
    lost_value = data.get("lost", False)
    if isinstance(lost_value, dict):
        lost = r.window(
            inputs.member(path, "lost"),
            r.obj(inputs.member(path, "lost"), lost_value, ("after_samples", "for_samples")),
        )
    elif r.bool(inputs.member(path, "lost"), lost_value):
        lost = Window(None, None)
    events = tuple(
        _read_xid(r, inputs.member(inputs.member(path, "xid_events"), i), v, mig)
        for i, v in enumerate(r.list(inputs.member(path, "xid_events"), data.get("xid_events", [])))
    )
    accounting = AccountingSpec()
    if "accounting" in data:
        accounting = _read_accounting(r, inputs.member(path, "accounting"), data["accounting"])
        if accounting.enabled and mig is not None and mig.enabled:
            # NVML: on MIG-enabled GPUs accounting mode is DISABLED and cannot be changed.
            r.fail(inputs.member(inputs.member(path, "accounting"), "enabled"),
                   "accounting cannot be on while MIG is enabled")
    remote = data.get("nvlink_remote")
    return GpuSpec(
        index=index,
        board=board,
        nvlink_remote=None if remote is None else read_wires(
            r, inputs.member(path, "nvlink_remote"), remote),
        nvlink_max_links=nvlink_max,
        mig=mig,
        processes=processes,
        lost=lost,
        xid_events=events,
        accounting=accounting,
        **values,  # type: ignore[arg-type]
    )


def _read_accounting(r: Reader, path: str, value: object) -> AccountingSpec:
    data = r.obj(path, value, ("enabled", "buffer_size", "processes"))
    processes = []
    keys = ("pid", "ended_after_s", "run_ms", "gpu_util_percent", "memory_util_percent",
            "max_memory_mib")
    items = r.list(inputs.member(path, "processes"), data.get("processes", []))
    for i, item in enumerate(items):
        p = inputs.member(inputs.member(path, "processes"), i)
        entry = r.obj(p, item, keys, ("pid", "run_ms"))
        processes.append(AccountedProcessSpec(
            pid=r.int(inputs.member(p, "pid"), entry["pid"], 1, 0xFFFFFFFF),
            ended_after_s=r.number(inputs.member(p, "ended_after_s"),
                                   entry.get("ended_after_s", 0), MAX_DELAY_SECONDS * 365),
            run_ms=r.int(inputs.member(p, "run_ms"), entry["run_ms"], 0, MAX_RUN_MS),
            gpu_util_percent=opt_int(r, p, entry, "gpu_util_percent", 100),
            memory_util_percent=opt_int(r, p, entry, "memory_util_percent", 100),
            max_memory_mib=opt_int(r, p, entry, "max_memory_mib", MAX_MEMORY_MIB),
        ))
    buffer_size = r.int(inputs.member(path, "buffer_size"),
                        data.get("buffer_size", DEFAULT_ACCOUNTING_BUFFER), 1, MAX_ACCOUNTING_BUFFER)
    return AccountingSpec(
        enabled=r.bool(inputs.member(path, "enabled"), data.get("enabled", False)),
        buffer_size=buffer_size,
        processes=tuple(sorted(processes, key=lambda a: a.ended_after_s)),
    )


def _read_xid(r: Reader, path: str, value: object, mig: MigSpec | None) -> XidEvent:
    keys = ("after_samples", "xid", "gpu_instance_id", "compute_instance_id")
    data = r.obj(path, value, keys, ("after_samples", "xid"))
    gi, ci = _instance_ids(r, path, data, mig, required=False)
    return XidEvent(
        # nvml.h: events that happen before nvmlDeviceRegisterEvents are not recorded, and
        # nothing can register before sample 1.
        r.int(inputs.member(path, "after_samples"), data["after_samples"], 1),
        r.int(inputs.member(path, "xid"), data["xid"]),
        gi,
        ci,
    )


def _instance_ids(
    r: Reader, path: str, data: Mapping[str, object], mig: MigSpec | None, required: bool
) -> tuple[int | None, int | None]:
    """gpu_instance_id / compute_instance_id of a process or event, checked against the MIG tree."""
    gi_path, ci_path = inputs.member(path, "gpu_instance_id"), inputs.member(path, "compute_instance_id")
    gi, ci = data.get("gpu_instance_id"), data.get("compute_instance_id")
    if mig is None or not mig.enabled:
        if gi is not None or ci is not None:
            r.fail(gi_path if gi is not None else ci_path, "only allowed on a GPU with MIG enabled")
        return None, None
    if gi is None and ci is None and not required:
        return None, None
    if gi is None:
        r.fail(gi_path, "required on a GPU with MIG enabled")
    if ci is None:
        r.fail(ci_path, "required on a GPU with MIG enabled")
    gi, ci = r.int(gi_path, gi), r.int(ci_path, ci)
    instance = next((g for g in mig.gpu_instances if g.id == gi), None)
    if instance is None:
        known = ", ".join(str(g.id) for g in mig.gpu_instances) or "none"
        r.fail(gi_path, f"no GPU instance {gi} on this GPU (existing: {known})")
    if all(c.id != ci for c in instance.compute_instances):
        r.fail(ci_path, f"no compute instance {ci} in GPU instance {gi}")
    return gi, ci


def parse_processes(
    r: Reader, path: str, value: object, mig: MigSpec | None
) -> tuple[ProcessSpec, ...]:
    """A GPU's `processes` list, checked against its MIG tree."""
    out = []
    seen: set[int] = set()
    keys = (
        "pid",
        "used_memory_mib",
        "type",
        "gpu_instance_id",
        "compute_instance_id",
        "user",
        "command",
        "name",
        "visible",
        "sm_percent",
        "memory_percent",
    )
    for i, item in enumerate(r.list(path, value)):
        p = inputs.member(path, i)
        data = r.obj(p, item, keys, ("pid",))
        pid = r.int(inputs.member(p, "pid"), data["pid"], 1, 0xFFFFFFFF)
        if pid in seen:
            r.fail(inputs.member(p, "pid"), f"pid {pid} is listed twice on this GPU")
        seen.add(pid)
        gi, ci = _instance_ids(r, p, data, mig, required=True)
        memory = data.get("used_memory_mib")
        out.append(
            ProcessSpec(
                pid=pid,
                used_memory_mib=None
                if memory is None
                else r.int(inputs.member(p, "used_memory_mib"), memory, 0, MAX_MEMORY_MIB),
                type=r.choice(inputs.member(p, "type"), data.get("type", "compute"), PROCESS_TYPES),
                gpu_instance_id=gi,
                compute_instance_id=ci,
                user=None if data.get("user") is None else r.user(inputs.member(p, "user"),
                                                                   data["user"]),
                command=opt_str(r, p, data, "command"),
                name=opt_str(r, p, data, "name"),
                visible=r.bool(inputs.member(p, "visible"), data.get("visible", True)),
                sm_percent=opt_int(r, p, data, "sm_percent", 100),
                memory_percent=opt_int(r, p, data, "memory_percent", 100),
            )
        )
    return tuple(out)
