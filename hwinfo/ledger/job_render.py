"""`hwinfo job`'s answer as text for a researcher and JSON for scripts (base units, null for
a figure not available, as the ledger's other answers)."""

from __future__ import annotations

from typing import Any

from hwinfo.escape import printable_copy, to_json
from hwinfo.ledger.job import Job, JobGpu
from hwinfo.ledger.job_diagnosis import Diagnosis, diagnosis_lines, diagnosis_record
from hwinfo.ledger.render import NA, _when
from hwinfo.ledger.units import duration_text, figure
from hwinfo.ledger.usage import JOULES_PER_KWH
from hwinfo.render.text.layout import Section
from hwinfo.render.text.style import Style
from hwinfo.units import duration, percent, size

_GPU_FIELDS = ("held_seconds", "held_gpu_seconds", "busy_gpu_seconds", "idle_held_gpu_seconds",
               "unknown_gpu_seconds", "device_judged_gpu_seconds", "unmetered_gpu_seconds",
               "busy_ratio", "mean_utilization_ratio", "peak_memory_bytes", "memory_total_bytes",
               "energy_joules")
_TOTALS = ("held_gpu_seconds", "busy_gpu_seconds", "idle_held_gpu_seconds",
           "unknown_gpu_seconds", "device_judged_gpu_seconds", "unmetered_gpu_seconds",
           "energy_joules")


def _gpu_record(gpu: JobGpu) -> dict[str, Any]:
    return {"instance": gpu.instance, "gpu": gpu.gpu, "uuid": gpu.uuid,
            "gpu_instance_id": gpu.gpu_instance_id or None,
            "compute_instance_id": gpu.compute_instance_id or None, "model": gpu.model,
            "users": gpu.users, **{name: getattr(gpu, name) for name in _GPU_FIELDS}}


def job_json(job: Job, diagnosis: Diagnosis | None = None) -> str:
    document = {
        "slurm_job": job.job_id, "since": job.since, "until": job.until,
        "rule_interval_seconds": job.interval_seconds, "hosts": job.hosts, "users": job.users,
        "gpus": [_gpu_record(g) for g in job.gpus],
        "totals": {name: job.total(name) for name in _TOTALS},
        "advice": job.advice, "notes": job.notes,
        **(diagnosis_record(diagnosis) if diagnosis is not None else {}),
    }
    return to_json(document) + "\n"


def _ratio(value: float | None) -> str:
    return NA if value is None else percent(value)


def _memory(gpu: JobGpu) -> str:
    if gpu.peak_memory_bytes is None:
        return NA
    of = "" if gpu.memory_total_bytes is None else f" / {size(gpu.memory_total_bytes)}"
    return size(gpu.peak_memory_bytes) + of


def job_text(job: Job, style: Style, diagnosis: Diagnosis | None = None) -> str:
    job, diagnosis = printable_copy(job), printable_copy(diagnosis)
    hosts = job.hosts
    section = Section(f"Slurm job {job.job_id}: GPU efficiency, {_when(job.since)} to "
                      f"{_when(job.until)}", style)
    section.line(f"User {', '.join(job.users) or NA} · {len(hosts)} host"
                 f"{'s' if len(hosts) != 1 else ''} ({', '.join(hosts)}) · {len(job.gpus)} GPU"
                 f"{'s' if len(job.gpus) != 1 else ''} · rules every "
                 f"{duration_text(job.interval_seconds)}")
    held = job.total("held_gpu_seconds")
    idle = job.total("idle_held_gpu_seconds")
    section.line(f"Held {figure(held / 3600, 2)} GPU-hours · idle-held "
                 f"{figure(idle / 3600, 2)} ({_ratio(idle / held if held else None)}) · energy "
                 f"{figure(job.total('energy_joules') / JOULES_PER_KWH, 3)} kWh")
    rows = [[g.instance, g.gpu + (f" MIG {g.gpu_instance_id}/{g.compute_instance_id}"
                                  if g.gpu_instance_id else ""),
             g.model, duration(g.held_seconds), _ratio(g.busy_ratio),
             _ratio(g.mean_utilization_ratio), _memory(g)] for g in job.gpus]
    section.table(["HOST", "GPU", "MODEL", "HELD", "BUSY", "UTIL", "PEAK MEM / SIZE"], rows,
                  right=[False, True, False, True, True, True, True])
    if job.advice:
        section.line("")
        section.line(style.heading("Advice"), indent=0)
        for line in job.advice:
            section.line(line)
    for note in job.notes:
        section.line(f"note: {note}")
    if diagnosis is not None:
        section.line("")
        for heading, line in diagnosis_lines(diagnosis):
            section.line(f"{style.heading(heading)}: {line}" if heading else f"  {line}")
    return section.render() + "\n"
