"""The MIG part of a GPU's block: mode, the device tree with processes, free capacity."""

from __future__ import annotations

from hwinfo.model.gpu import Mig, MigDevice
from hwinfo.render.text.layout import Section
from hwinfo.units import NA, or_na, percent, size

# After a value a simulated machine's import inferred rather than read (MigDevice.guessed).
GUESSED = "*"


def _profile(dev: MigDevice) -> str:
    if dev.profile is None:
        return NA
    return dev.profile + (GUESSED if "profile" in dev.guessed else "")


def _mode(mig: Mig) -> str:
    state = "enabled" if mig.enabled else "disabled"
    if mig.change_pending:
        state += f" (change to {'enabled' if mig.pending_enabled else 'disabled'} pending reset)"
    return state


def render_mig(mig: Mig, section: Section) -> None:
    style = section.style
    mode = _mode(mig)
    section.field("MIG", style.warn(mode) if mig.change_pending else mode)
    if not mig.enabled:
        return
    if not mig.devices:
        section.line(style.warn("MIG is enabled but no instances exist: the GPU runs no work"), 2)
    else:
        # GPM (Hopper and newer) measures each GPU instance; older boards get no column.
        activity = any(dev.activity is not None for dev in mig.devices)
        rows = []
        for dev in mig.devices:
            sm_active = dev.activity.sm_active_ratio if dev.activity else None
            rows.append([
                str(dev.index),
                _profile(dev),
                or_na(dev.gpu_instance_id, str),
                or_na(dev.compute_instance_id, str),
                or_na(dev.multiprocessor_count, str),
                f"{or_na(dev.memory_used_bytes, size)} / {or_na(dev.memory_total_bytes, size)}",
                or_na(dev.process_count, str).replace(NA, "n/a"),
                *([or_na(sm_active, percent)] if activity else []),
            ])
        section.table(
            ("Dev", "Profile", "GI", "CI", "SMs", "Memory (per GI)", "Procs",
             *(["SM active"] if activity else [])),
            rows,
            (True, False, True, True, True, True, True, *([True] if activity else [])),
            indent=2,
        )
        if any("profile" in dev.guessed for dev in mig.devices):
            section.line(style.dim(f"{GUESSED} inferred by the import of a dump that names no "
                                   "profile, not read"), 2)
    if not mig.capacity or all(c.instances_free is None for c in mig.capacity):
        section.line(style.dim("free capacity: not available (needs privileges)"), 2)
    else:
        free = [f"{c.profile} ×{c.instances_free}" for c in mig.capacity if c.instances_free]
        section.wrapped("free capacity", free or ["none"], sep=", ", indent=2)
