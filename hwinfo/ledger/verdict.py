"""Why a job does not draw its GPUs: one verdict from its GPU figures and its own CPU, memory
and I/O over its run, with the figures behind it and what to do (docs/jobs.md#the-verdict).

Every threshold is here, and docs/jobs.md's table is checked against them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwinfo.ledger.job_resources import JobResources
from hwinfo.units import percent, size

VERDICTS = ("gpu-bound", "cpu-bound", "io-bound", "idle", "underused", "unknown")
# Mean GPU utilization while held at or above which the GPUs are busy: nothing to fix.
GPU_BUSY_RATIO = 0.5
# CPU-seconds used over allotted at or above which the job's CPUs are near their allotment.
CPU_NEAR_RATIO = 0.8
# A job that used less is starved of CPU where some of its tasks waited for one this share of
# its time or more (PSI `some` of cpu.pressure, cgroup v2; CFS throttling included) ...
CPU_PRESSURE_RATIO = 0.3
# ... or, where no pressure is kept (cgroup v1), where its CPUs were busy this share of the
# time with its work and others' while it used at least CPU_STARVED_RATIO of its allotment.
CPU_SATURATED_RATIO = 0.9
CPU_STARVED_RATIO = 0.05
# Share of its time some of its tasks waited on I/O (PSI `some` of io.pressure, cgroup v2)
# at or above which the job waits on I/O.
IO_PRESSURE_RATIO = 0.3
# Where no pressure is kept (cgroup v1): share of its time its disks worked for it.
IO_BUSY_RATIO = 0.5
# Host memory peak over its limit at or above which it is said to be near it.
MEMORY_NEAR_RATIO = 0.9
# Its CPU figures must cover this many of the rules' evaluations to be judged.
MIN_EVALUATIONS = 3

# What to do, by verdict.
_ADVICE = {
    "gpu-bound": "nothing to fix: its GPUs are busy",
    "cpu-bound": ("give it more data-loader workers (e.g. PyTorch's num_workers) or more CPUs "
                  "(--cpus-per-task, --cpus)"),
    "starved": ("its CPUs were busy with other work: give it CPUs of its own (a cpuset, Slurm's "
                "--exclusive) or fewer jobs beside it"),
    "io-bound": ("stage the data set on a local SSD or in memory (/dev/shm), read it in larger "
                 "files, or give the loader more workers"),
    "idle": "nothing runs on its GPUs: release them (end the job, or ask for none for this part)",
    "underused": ("none of its CPUs, disks or GPUs is saturated: small batches, synchronisation "
                  "between GPUs or processes, the network, or a Python loop; a profiler (Nsight "
                  "Systems, torch.profiler) shows which"),
}
_NO_GPU_SIGNAL = ("no GPU activity was recorded for its held time (a MIG device before Hopper, "
                  "or the ledger's rules had just started)")
_NO_CPU = ("its CPU use was not recorded (no hwinfo_job_* series: its cgroup's CPU time was not "
           "read, or the engine has not loaded the hwinfo-ledger-jobs rules)")
_CPU_ONLY = "its GPUs did nothing meanwhile: a CPU-only stage need not hold them"


@dataclass
class Verdict:
    verdict: str  # one of VERDICTS
    figures: list[str] = field(default_factory=list)  # the figures behind it, for a person
    advice: list[str] = field(default_factory=list)  # what to do
    ruled_out: list[str] = field(default_factory=list)  # underused: why each cause is not it


def judge(gpu_utilization: float | None, resources: JobResources | None,
          interval: float | None, idle_ratio: float) -> Verdict:
    """The verdict of a job (pod, container, user) whose GPUs were `gpu_utilization` busy on
    average while held (None: no activity signal), from its recorded `resources`;
    `idle_ratio`: the activity at or below which the ledger's rules call a hold idle."""
    if gpu_utilization is None:
        return Verdict("unknown", [_NO_GPU_SIGNAL])
    gpu = f"GPU utilization {percent(gpu_utilization)} while held"
    memory = _memory(resources)
    if gpu_utilization >= GPU_BUSY_RATIO:
        return Verdict("gpu-bound", [gpu, *_cpu_figure(resources)], [_ADVICE["gpu-bound"], *memory])
    if resources is None or resources.cpu_efficiency is None:
        return Verdict("unknown", [gpu, _NO_CPU])
    if interval and resources.seen_seconds < MIN_EVALUATIONS * interval:
        seen = round(resources.seen_seconds / interval)
        return Verdict("unknown", [gpu, (f"its CPU use was recorded at {seen} of the rules' "
                                        f"evaluations, fewer than {MIN_EVALUATIONS}")])
    cpu = _cpu_figure(resources)
    waiting, starved = _cpu_waits(resources)
    io, io_bound = _io(resources)
    figures = [gpu, *cpu, *waiting, *io]
    idle_gpus = [_CPU_ONLY] if gpu_utilization <= idle_ratio else []
    if resources.cpu_efficiency >= CPU_NEAR_RATIO:
        return Verdict("cpu-bound", figures, [_ADVICE["cpu-bound"], *idle_gpus, *memory])
    # A job waiting on its disks uses little CPU: where its CPUs were busy with others' work
    # too, the disks it waits on are the cause, and the saturated CPUs only beside it.
    if io_bound:
        return Verdict("io-bound", figures, [_ADVICE["io-bound"], *memory])
    if starved:
        return Verdict("cpu-bound", figures, [_ADVICE["starved"], *idle_gpus, *memory])
    if gpu_utilization <= idle_ratio:
        return Verdict("idle", figures, [_ADVICE["idle"], *memory])
    not_cpu = ", ".join([f"{cpu[0]}, under {percent(CPU_NEAR_RATIO)}", *waiting])
    ruled_out = [f"not CPU-bound: {not_cpu}",
                 f"not I/O-bound: {io[0]}" if io else
                 "I/O not judged: no disk I/O was recorded for it (none, or its cgroup keeps "
                 "none: Slurm on cgroup v1; network filesystems are not seen)"]
    return Verdict("underused", figures, [_ADVICE["underused"], *memory], ruled_out)


def _cpu_figure(resources: JobResources | None) -> list[str]:
    if resources is None or resources.cpu_efficiency is None:
        return []
    allotted = resources.cpu_allotted_seconds / resources.seen_seconds if resources.seen_seconds else None
    of = f" of {allotted:.3g} allotted CPUs" if allotted else ""
    return [f"CPU use {percent(resources.cpu_efficiency)}{of}"]


def _cpu_waits(resources: JobResources) -> tuple[list[str], bool]:
    """Whether a job using less than its allotment waited for CPUs: its tasks' pressure where
    the kernel keeps it, else its CPUs saturated with others' work while it used some."""
    pressure = resources.pressure_ratio("cpu")
    if pressure is not None:
        return ([f"tasks waiting for a CPU {percent(pressure)} of the time (cpu.pressure)"],
                pressure >= CPU_PRESSURE_RATIO)
    busy = resources.cpuset_busy_ratio
    if busy is None:
        return [], False
    return ([f"its CPUs {percent(busy)} busy with its work and others'"],
            busy >= CPU_SATURATED_RATIO and (resources.cpu_efficiency or 0) >= CPU_STARVED_RATIO)


def _io(resources: JobResources) -> tuple[list[str], bool]:
    """Its I/O figures and whether it waits on I/O: pressure where the kernel keeps it,
    else how much of its time its disks worked for it."""
    pressure = resources.pressure_ratio("io")
    read = f"read {size(resources.read_bytes)}"
    if pressure is not None:
        return ([f"tasks waiting on I/O {percent(pressure)} of the time (io.pressure), {read}"],
                pressure >= IO_PRESSURE_RATIO)
    busy = resources.io_busy_ratio
    if busy is not None and (resources.read_bytes or resources.written_bytes or busy):
        return ([f"its disks working for it {percent(busy)} of the time, {read}"],
                busy >= IO_BUSY_RATIO)
    return [], False


def _memory(resources: JobResources | None) -> list[str]:
    if resources is None or not resources.memory_peak_bytes or not resources.memory_limit_bytes:
        return []
    ratio = resources.memory_peak_bytes / resources.memory_limit_bytes
    if ratio < MEMORY_NEAR_RATIO:
        return []
    limit = size(resources.memory_limit_bytes)
    return [(f"host memory peaked at {percent(ratio)} of its {limit} limit: it may swap or be "
            "killed; ask for more (--mem)")]
