"""A GPU's health in a few words, for the report's summary: the worst finding of the same
rules `hwinfo check` runs, said as a column cell ("ok", "lost", "XID 79", "PCIe x8 of x16")."""

from __future__ import annotations

from collections.abc import Callable

from hwinfo.health.evaluate import evaluate_gpu
from hwinfo.health.findings import Finding, Severity
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.gpu import Gpu


def _pcie(f: Finding) -> str:
    facts = f.facts
    if facts["width"] is not None and facts["max_width"] is not None \
            and facts["width"] < facts["max_width"]:
        return f"PCIe x{facts['width']} of x{facts['max_width']}"
    return f"PCIe gen{facts['generation']} of gen{facts['max_generation']}"


def _held(software: str, hardware: str) -> Callable[[Finding], str]:
    """Words for clocks held down: the hardware reason outranks the software one."""

    def label(f: Finding) -> str:
        return hardware if any(r.startswith("hw_") for r in f.facts["reasons"]) else software

    return label


# Rule name -> its words; every GPU rule has one (a test holds them equal).
LABELS: dict[str, Callable[[Finding], str]] = {
    "gpu_lost": lambda f: "lost",
    "gpu_unreadable": lambda f: "unreadable",
    "xid_errors": lambda f: f"XID {f.facts['xid']}",
    "ecc_uncorrected": lambda f: "ECC uncorrected",
    "row_remap_failed": lambda f: "remap failed",
    "row_remap_pending": lambda f: "remap pending",
    "retired_pages_pending": lambda f: "page retire pending",
    "thermal_throttling": _held("thermal slowdown", "HW thermal slowdown"),
    "power_throttling": _held("power capped", "HW power brake"),
    "hardware_slowdown": lambda f: "hardware slowdown",
    "temperature_near_slowdown": lambda f: "hot",
    "pcie_link_below_max": _pcie,
    "mig_mode_change_pending": lambda f: "MIG change pending",
    "mig_without_instances": lambda f: "MIG, no instances",
    "idle_gpu_memory": lambda f: "idle, memory held",
}


def gpu_health(gpu: Gpu, limits: Thresholds | None = None) -> tuple[Severity, str]:
    """The worst finding about this GPU and its words; (OK, "ok") when there is none."""
    findings = evaluate_gpu(gpu, limits or Thresholds())
    if not findings:
        return Severity.OK, "ok"
    worst = findings[0]  # evaluate_gpu sorts worst first, then in rule order
    return worst.severity, LABELS[worst.rule](worst)
