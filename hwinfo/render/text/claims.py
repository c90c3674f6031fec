"""The claims section: which GPUs `hwinfo run` holds for whom and since when, and who waits."""

from __future__ import annotations

import time

from hwinfo.model.claims import Claims, Request
from hwinfo.model.gpu import GpuSystem
from hwinfo.render.text.layout import Section
from hwinfo.render.text.style import Style
from hwinfo.units import duration, size


def device_label(gpu: int, mig_index: int | None = None, profile: str | None = None) -> str:
    """"GPU 3", or "GPU 0 MIG 2 (1g.10gb)"."""
    if mig_index is None:
        return f"GPU {gpu}"
    return f"GPU {gpu} MIG {mig_index} ({profile or '?'})"


def request_text(request: Request) -> str:
    """What a run asked for: "2 GPUs with 40.0 GiB free", "1 MIG device 1g.10gb"."""
    if request.mig_profile is not None:
        what = f"{request.gpus} MIG device {request.mig_profile}"
    else:
        what = f"{request.gpus} GPU" + ("s" if request.gpus > 1 else "")
    if request.need_memory_bytes:
        what += f" with {size(request.need_memory_bytes)} free"
    return what + (", shared" if request.share else "")


def device_labels(system: GpuSystem | None) -> dict[str, str]:
    """Device UUID -> its label, for every GPU and MIG device of the snapshot."""
    labels: dict[str, str] = {}
    for gpu in system.gpus if system is not None else ():
        if gpu.uuid is not None:
            labels[gpu.uuid] = device_label(gpu.index)
        for dev in gpu.mig.devices if gpu.mig is not None else ():
            if dev.uuid is not None:
                labels[dev.uuid] = device_label(gpu.index, dev.index, dev.profile)
    return labels


def devices_text(labels: list[str]) -> str:
    """"GPU 0,1,2" for whole GPUs; each device's label otherwise."""
    if len(labels) > 1 and all(label.startswith("GPU ") and label[4:].isdigit() for label in labels):
        return "GPU " + ",".join(label[4:] for label in labels)
    return ", ".join(labels)


def _since(when: float, now: float) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
    return f"{stamp} ({duration(max(0.0, now - when))})"


def render_claims(claims: Claims | None, system: GpuSystem | None, style: Style,
                  now: float) -> str:
    """The section; empty where no run holds or waits for anything and nothing was refused."""
    if claims is None or not (claims.claims or claims.waiters or claims.ignored):
        return ""
    section = Section("Claims (hwinfo run)", style)
    labels = device_labels(system)
    rows = [[devices_text([labels.get(d, d) for d in claim.devices]), claim.user or f"uid {claim.uid}",
             _since(claim.since_seconds, now), claim.command or claim.name]
            for claim in claims.claims]
    if rows:
        section.table(["Device", "User", "Since", "Command"], rows, keep_colour=False)
    if claims.waiters:
        section.wrapped("Waiting", [
            f"{w.position}. {w.user or f'uid {w.uid}'}: {request_text(w.request)}, "
            f"{duration(max(0.0, now - w.since_seconds))}" for w in claims.waiters], sep=" · ")
    for line in claims.ignored:
        section.line(style.warn(line))
    return section.render()
