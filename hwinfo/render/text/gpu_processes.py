"""Process tables (per GPU or MIG device) and the per-user rollup."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hwinfo.model.gpu import Gpu, GpuProcess, UserUsage
from hwinfo.model.jobs import JobResources
from hwinfo.render.text.layout import Section, clip
from hwinfo.units import NA, duration, or_na, percent, size, size_short


def process_owner(proc: GpuProcess) -> tuple[str, str]:
    """(user, command) cells; a PID outside our namespace says so instead of guessing."""
    if not proc.visible:
        return "?", "(not in this PID namespace, or exited)"
    return proc.user or "?", proc.command or proc.name or "?"


# A user, job, pod or unit name is whatever its owner chose (a unit name may be 255 characters,
# a pod's 253): one that long would widen every row of its table, so it is cut with a mark.
# The widest name a runtime gives fits: "slurm:4294967295.interactive", "podman:<12> (rootless)".
NAME_WIDTH = 32


def _job_cell(proc: GpuProcess) -> str | None:
    """The Slurm job, container, pod or unit its cgroup names; "-": none; None: not read."""
    return None if proc.attribution is None else clip(proc.attribution.label, NAME_WIDTH)


def _percent_cell(ratio: float | None) -> str | None:
    return None if ratio is None else percent(ratio)


def _job_cpu_cell(job: JobResources | None) -> str | None:
    """The CPUs its job kept busy against those it may use: "3.9/4"; None: not known."""
    if job is None or job.busy_cpus is None:
        return None
    allotted = "" if job.allotted_cpus is None else f"/{job.allotted_cpus:.3g}"
    return f"{job.busy_cpus:.1f}{allotted}"


# (header, right-aligned, cell of a (MIG device, process, its job's resources) or None when
# unknown, shown even when no process has a value); a column no process has a value for is
# left out, so a GPU without per-process samples keeps the narrow table.
_Cell = Callable[[str, GpuProcess, "JobResources | None"], "str | None"]
_COLUMNS: tuple[tuple[str, bool, _Cell, bool], ...] = (
    ("MIG", True, lambda where, p, job: where or None, False),
    ("PID", True, lambda where, p, job: str(p.pid), True),
    ("User", False, lambda where, p, job: clip(process_owner(p)[0], NAME_WIDTH), True),
    ("Job", False, lambda where, p, job: _job_cell(p), False),
    ("Memory", True, lambda where, p, job: or_na(p.used_memory_bytes, size).replace(NA, "n/a"),
     True),
    ("T", False, lambda where, p, job: {"compute": "C", "graphics": "G"}.get(p.type, "C+G"), True),
    ("SM", True, lambda where, p, job: _percent_cell(p.sm_utilization_ratio), False),
    # The CPUs its whole job (every process of its cgroup) kept busy: what feeds the GPU.
    ("Job CPU", True, lambda where, p, job: _job_cpu_cell(job), False),
    ("CPU", True, lambda where, p, job: _percent_cell(p.cpu_utilization_ratio), False),
    ("RSS", True, lambda where, p, job: None if p.resident_memory_bytes is None
     else size_short(p.resident_memory_bytes), False),
    ("Time", True, lambda where, p, job: None if p.run_seconds is None
     else duration(p.run_seconds).replace(" ", ""), False),
    ("Command", False, lambda where, p, job: process_owner(p)[1], True),
)


def add_process_table(section: Section, gpu: Gpu, jobs: list[JobResources] | None = None) -> None:
    """One table for the whole GPU; on a MIG GPU its first column names the MIG device.
    `jobs`: the resources of the processes' jobs (snapshot.jobs)."""
    procs = [("", p) for p in gpu.processes or ()]
    if gpu.mig is not None:
        procs += [(str(dev.index), p) for dev in gpu.mig.devices for p in dev.processes or ()]
    if not procs:
        return
    of = {(j.slurm_job, j.pod_uid, j.container_id): j for j in jobs or ()}
    cells = [[cell(where, p, None if (who := p.attribution) is None else
                   of.get((who.slurm_job, who.pod_uid, who.container_id)))
              for _, _, cell, _ in _COLUMNS] for where, p in procs]
    # "-" (the Job column's "none") alone does not earn a column either.
    shown = [i for i, (_, _, _, always) in enumerate(_COLUMNS)
             if always or any(row[i] not in (None, "-") for row in cells)]
    section.line(section.style.dim("Processes"))
    section.table(
        [_COLUMNS[i][0] for i in shown],
        [[row[i] if row[i] is not None else "n/a" for i in shown] for row in cells],
        [_COLUMNS[i][1] for i in shown],
        indent=2,
    )


@dataclass
class UserTotal:
    """One user's GPU use across every GPU."""

    user: str | None
    used_memory_bytes: int | None  # None: NVML told the memory of none of their processes
    processes: int
    gpu_indices: list[int]
    attributions: list[str]  # their processes' jobs, pods and containers


def user_totals(users: list[UserUsage]) -> list[UserTotal]:
    """The per-(GPU, user) rollup summed per user, most memory first."""
    totals: dict[str | None, UserTotal] = {}
    for usage in users:
        total = totals.setdefault(usage.user, UserTotal(usage.user, None, 0, [], []))
        if usage.used_memory_bytes is not None:
            total.used_memory_bytes = (total.used_memory_bytes or 0) + usage.used_memory_bytes
        total.processes += usage.processes
        total.gpu_indices.append(usage.gpu_index)
        total.attributions = sorted({*total.attributions, *usage.attributions})
    return sorted(totals.values(),
                  key=lambda t: (-(t.used_memory_bytes or 0), -t.processes, t.user or "~"))


# Jobs named in a row of the rollup; more are counted ("+3").
_JOBS_SHOWN = 3


def _jobs(attributions: list[str]) -> str:
    shown = ", ".join(clip(label, NAME_WIDTH) for label in attributions[:_JOBS_SHOWN])
    more = len(attributions) - _JOBS_SHOWN
    return shown + (f" +{more}" if more > 0 else "")


def render_users(users: list[UserUsage], section: Section) -> None:
    """A row per user with their totals across GPUs, most memory first, and the jobs,
    pods and containers of their processes where any has one."""
    totals = user_totals(users)
    with_jobs = any(t.attributions for t in totals)
    rows = [
        [clip(t.user or "(unknown)", NAME_WIDTH), ",".join(map(str, t.gpu_indices)),
         or_na(t.used_memory_bytes, size).replace(NA, "n/a"), str(t.processes),
         *([_jobs(t.attributions)] if with_jobs else [])]
        for t in totals
    ]
    header = ("User", "GPUs", "Memory", "Procs", *(["Jobs"] if with_jobs else []))
    section.table(header, rows, (False, False, True, True, *([False] if with_jobs else [])))
