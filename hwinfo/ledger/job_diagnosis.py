"""`hwinfo job`'s answer to "why does my job not draw its GPUs": the job's GPU figures (job.py)
beside its own CPU, memory and I/O (job_resources.py), the verdict (verdict.py), and what
Slurm says of it where it can be asked (collect/slurm_job.py, by the command); as text lines
and as JSON keys.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hwinfo.ledger.job import Job
from hwinfo.ledger.job_resources import NOT_RECORDED, JobResources, figures
from hwinfo.ledger.prometheus import Prometheus
from hwinfo.ledger.units import duration_text, figure
from hwinfo.ledger.usage import window
from hwinfo.ledger.verdict import Verdict, judge
from hwinfo.model.slurm import SlurmJob
from hwinfo.units import percent, size

# The disk inventory's series (exporter/metrics_storage.py): a disk's kind by its name.
DISK_INFO = "hwinfo_disk_info"
# A GPU busy less than this share of the time held is one the job did not use (job.py's
# advice counts the same).
USED_BUSY_RATIO = 0.1


@dataclass
class Diagnosis:
    verdict: Verdict
    gpu_utilization: float | None  # mean over its GPUs while held
    gpus_held: int
    gpus_used: int  # busy at least USED_BUSY_RATIO of the time held
    gpu_peak_memory_bytes: float | None
    resources: JobResources | None
    slurm: SlurmJob | None = None
    slurm_note: str | None = None  # why Slurm says nothing
    notes: list[str] = field(default_factory=list)


def diagnose(prometheus: Prometheus, job: Job) -> Diagnosis:
    """Why the job does (not) draw its GPUs, from what the ledger recorded."""
    groups = prometheus.rule_groups()
    found = figures(prometheus, groups, "slurm_job", job.since, job.until,
                    f'slurm_job="{job.job_id}"')
    resources = None if found is None else found.rows.get(job.job_id)
    held = job.total("held_gpu_seconds") - job.total("unknown_gpu_seconds")
    utilization = job.total("utilization_gpu_seconds") / held if held > 0 else None
    peaks = [g.peak_memory_bytes for g in job.gpus if g.peak_memory_bytes is not None]
    utilization = None if utilization is None else min(1.0, utilization)
    verdict = (Verdict("unknown", [NOT_RECORDED]) if found is None else
               judge(utilization, resources, found.interval_seconds, found.idle_threshold))
    if verdict.verdict == "io-bound" and resources is not None:
        _on_hdds(prometheus, job, resources, verdict)
    diagnosis = Diagnosis(
        verdict,
        utilization, len(job.gpus),
        sum(1 for g in job.gpus if (g.busy_ratio or 0) >= USED_BUSY_RATIO),
        max(peaks) if peaks else None, resources)
    if found is None:
        diagnosis.notes.append(f"{prometheus.url}: {NOT_RECORDED}")
    return diagnosis


def _on_hdds(prometheus: Prometheus, job: Job, resources: JobResources, verdict: Verdict) -> None:
    """Say where an I/O-bound job read from spinning disks: the disks of its hosts whose
    inventory (hwinfo_disk_info, docs/metrics.md) says `hdd`. A device no disk_info names (a
    dm or md device, an older hwinfo) is not guessed at."""
    read = {device for device, count in resources.read_bytes_by_device.items() if count > 0}
    if not read:
        return
    span = window(job.until - job.since)
    hdds = {s.labels.get("device", "") for s in prometheus.query(
        f'group by (instance, device) (last_over_time({DISK_INFO}{{kind="hdd"}}[{span}]))',
        job.until) if s.labels.get("instance") in job.hosts}
    spinning = sorted(read & hdds)
    if spinning:
        what = "a spinning disk" if len(spinning) == 1 else "spinning disks"
        verdict.figures.append(f"its data set is read from {', '.join(spinning)}: {what} (HDD)")
        verdict.advice.insert(0, "its data set sits on an HDD, which serves a few hundred "
                                 "random reads a second: copy it to an SSD, NVMe or /dev/shm "
                                 "before the job")


def diagnosis_record(d: Diagnosis) -> dict[str, Any]:
    """The JSON keys it adds to `hwinfo job --format json`."""
    r = d.resources
    return {
        "verdict": d.verdict.verdict,
        "cpu_efficiency": None if r is None else r.cpu_efficiency,
        "diagnosis": {"figures": d.verdict.figures, "advice": d.verdict.advice,
                      "ruled_out": d.verdict.ruled_out},
        "gpu_utilization_ratio": d.gpu_utilization,
        "gpus_held": d.gpus_held, "gpus_used": d.gpus_used,
        "gpu_peak_memory_bytes": d.gpu_peak_memory_bytes,
        "host": None if r is None else {
            "seen_seconds": r.seen_seconds,
            "cpu_used_seconds": r.cpu_used_seconds,
            "cpu_allotted_seconds": r.cpu_allotted_seconds,
            "memory_peak_bytes": r.memory_peak_bytes,
            "memory_limit_bytes": r.memory_limit_bytes,
            "read_bytes": r.read_bytes, "written_bytes": r.written_bytes,
            "read_bytes_by_device": r.read_bytes_by_device,
            "io_busy_ratio": r.io_busy_ratio,
            "cpuset_busy_ratio": r.cpuset_busy_ratio,
            "pressure_waiting_ratio": {k: r.share(v) for k, v in r.waiting_seconds.items()},
            "pressure_stalled_ratio": {k: r.share(v) for k, v in r.stalled_seconds.items()},
        },
        "slurm": None if d.slurm is None else asdict(d.slurm),
        "slurm_note": d.slurm_note,
        "diagnosis_notes": d.notes,
    }


def diagnosis_lines(d: Diagnosis) -> list[tuple[str, str]]:
    """(heading, line) pairs for the text answer: the verdict, its figures and advice, the
    job's own resources, and Slurm's record."""
    lines = [("Verdict", d.verdict.verdict), *(("", f"{f}") for f in d.verdict.figures)]
    lines += [("", f"not it: {r}") for r in d.verdict.ruled_out]
    lines += [("", f"→ {a}") for a in d.verdict.advice]
    r = d.resources
    if r is not None and r.seen_seconds > 0:
        allotted = r.cpu_allotted_seconds / r.seen_seconds
        cpu = (f"{percent(r.cpu_efficiency)} of {allotted:.3g} CPUs "
               f"({figure(r.cpu_used_seconds / 3600, 2)} of "
               f"{figure(r.cpu_allotted_seconds / 3600, 2)} CPU-hours)"
               if r.cpu_efficiency is not None else "not recorded")
        memory = "not recorded" if r.memory_peak_bytes is None else size(r.memory_peak_bytes) + (
            f" of its {size(r.memory_limit_bytes)} limit" if r.memory_limit_bytes else ", no limit")
        io = f"read {size(r.read_bytes)}, written {size(r.written_bytes)}"
        lines.append(("Host", f"CPU {cpu} · memory peak {memory} · {io}"))
    lines.append(("Slurm", _slurm_line(d)))
    lines += [("", f"note: {n}") for n in d.notes]
    return lines


def _slurm_line(d: Diagnosis) -> str:
    used = f"held {d.gpus_held}, used {d.gpus_used}"
    if d.slurm is None:
        return f"{d.slurm_note}; the ledger saw GPUs {used}"
    s = d.slurm
    limit = "no limit" if s.time_limit_seconds is None else duration_text(s.time_limit_seconds)
    elapsed = "n/a" if s.elapsed_seconds is None else duration_text(s.elapsed_seconds)
    asked = "n/a" if s.gpus_requested is None else str(s.gpus_requested)
    return (f"{s.name or 'n/a'} · user {s.user or 'n/a'} · account {s.account or 'n/a'} · "
            f"partition {s.partition or 'n/a'} · {s.state or 'n/a'} · elapsed {elapsed} of "
            f"{limit} · nodes {s.nodes or 'n/a'} · GPUs asked for {asked}, {used} "
            f"(from {s.source})")
