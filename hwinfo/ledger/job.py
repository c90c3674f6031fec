"""`hwinfo job JOBID`: one Slurm job's GPU efficiency, from the ledger's attribution rules.

In the spirit of Princeton's jobstats, with nothing installed in Slurm: the job's GPUs are
those whose processes' cgroups named it (hwinfo_gpu_attributed_memory_used_bytes), on every
host Prometheus scrapes, so a job on several hosts adds up.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from hwinfo.ledger import queries
from hwinfo.ledger.advice import catalogue_profiles, smallest_fit
from hwinfo.ledger.prometheus import LedgerError, Prometheus, Sample
from hwinfo.ledger.units import duration_text, utc
from hwinfo.ledger.usage import ledger_group, past_range, plausible, possible, window
from hwinfo.units import percent, size

# Slurm job ids are decimal; an array task may be given as Slurm shows it, 1234_7, which
# names it only where the environment was readable (slurm_array_task is not a label), so
# the number is what the series carry.
_JOB_ID = re.compile(r"\d{1,12}", re.ASCII)
# A GPU busy less than this share of the time the job held it is one it did not need.
_UNDERUSED_BUSY_RATIO = 0.1
# Advice for a smaller GPU: peak memory at most this share of the GPU's and utilization low.
_SMALL_MEMORY_RATIO = 0.25
_SMALL_UTILIZATION_RATIO = 0.25
_IDLE_RATIO = 0.5  # idle-held over held past which the job is told so
_DEVICE = ("job", "instance", "gpu", "uuid", "gpu_instance_id", "compute_instance_id")


def job_id(text: str) -> str:
    """A Slurm job id as given (digits); ValueError otherwise."""
    spec = text.strip()
    if re.fullmatch(r"\d{1,12}_\d{1,10}", spec, re.ASCII):
        raise ValueError(f"{text!r} is an array task: give its own job id "
                         f"(squeue -h -o %A -j {spec})")
    if not _JOB_ID.fullmatch(spec):
        raise ValueError(f"{text!r} is not a Slurm job id (digits, e.g. 4242)")
    return spec.lstrip("0") or "0"


@dataclass
class JobGpu:
    """One GPU (or MIG device) of the job on one host."""

    instance: str
    gpu: str
    uuid: str
    gpu_instance_id: str  # "" for a whole GPU
    compute_instance_id: str
    model: str
    users: list[str] = field(default_factory=list)
    held_seconds: float = 0.0  # wall time the job held it
    held_gpu_seconds: float = 0.0  # in whole GPUs (a 3g.40gb is 3/7)
    busy_gpu_seconds: float = 0.0
    idle_held_gpu_seconds: float = 0.0
    unknown_gpu_seconds: float = 0.0
    utilization_gpu_seconds: float = 0.0
    device_judged_gpu_seconds: float = 0.0  # busy/idle judged by the device, not the user
    unmetered_gpu_seconds: float = 0.0  # held on a GPU split by process count
    energy_joules: float = 0.0
    peak_memory_bytes: float | None = None
    memory_total_bytes: float | None = None  # the GPU's (a MIG device's: its GPU instance's)

    @property
    def busy_ratio(self) -> float | None:
        """Share of the held time with a signal that the device was busy."""
        known = self.held_gpu_seconds - self.unknown_gpu_seconds
        return None if known <= 0 else min(1.0, self.busy_gpu_seconds / known)

    @property
    def mean_utilization_ratio(self) -> float | None:
        known = self.held_gpu_seconds - self.unknown_gpu_seconds
        return None if known <= 0 else min(1.0, self.utilization_gpu_seconds / known)


@dataclass
class Job:
    job_id: str
    since: float
    until: float
    interval_seconds: float
    gpus: list[JobGpu]
    advice: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def hosts(self) -> list[str]:
        return sorted({g.instance for g in self.gpus})

    @property
    def users(self) -> list[str]:
        return sorted({u for g in self.gpus for u in g.users})

    def total(self, name: str) -> float:
        return sum(getattr(g, name) for g in self.gpus)


def _queries(job: str, span: str) -> list[str]:
    only = f'{{slurm_job="{job}"}}'
    keys = ", ".join(_DEVICE)
    measures = {name: f"sum by ({keys}, model) (sum_over_time({record}{only}[{span}]))"
                for name, record in queries.ATTRIBUTED_RECORDS.items()}
    # The held share names the job's devices and users, memory reported or not.
    held = queries.ATTRIBUTED_HELD_RECORD
    measures["samples"] = f"max by ({keys}) (count_over_time({held}{only}[{span}]))"
    measures["users"] = f"group by ({keys}, user) (last_over_time({held}{only}[{span}]))"
    measures["peak_memory"] = (f"max by ({keys}) "
                               f"(max_over_time({queries.ATTRIBUTED_MEMORY}{only}[{span}]))")
    whole = f'group by ({keys}) (last_over_time({held}{{slurm_job="{job}",gpu_instance_id=""}}[{span}]))'
    mig = f'group by ({keys}) (last_over_time({held}{{slurm_job="{job}",gpu_instance_id!=""}}[{span}]))'
    measures["gpu_memory"] = (f"max by ({keys}) ({whole} * on(job, instance, gpu, uuid) "
                              f"group_left last_over_time(hwinfo_gpu_memory_total_bytes[{span}]))")
    measures["mig_memory"] = (f"max by ({keys}) ({mig} * on(job, instance, gpu, uuid, "
                              "gpu_instance_id) group_left max by (job, instance, gpu, uuid, "
                              "gpu_instance_id) (last_over_time("
                              f"hwinfo_mig_gpu_instance_memory_total_bytes[{span}])))")
    return [queries.union(measures), queries.union(queries.profiles(span))]


def job(prometheus: Prometheus, job_id: str, since: float, until: float) -> Job:
    """The job's GPUs over the range; LedgerError when no GPU process of it was seen."""
    group = ledger_group(prometheus.rule_groups(), prometheus.url, queries.ATTRIBUTED_HELD_RECORD)
    span = window(until - since)
    figures, offered = (plausible(part, prometheus.url)
                        for part in prometheus.queries(_queries(job_id, span), until))
    interval = group.interval_seconds
    gpus = _gpus(figures, interval)
    if not gpus:
        raise LedgerError(f"Slurm job {job_id}: no GPU process of it between {utc(since)} and "
                          f"{utc(until)} at {prometheus.url}")
    found = Job(job_id, since, until, interval, gpus)
    _checked(found, prometheus.url)
    found.advice = _advise(found, _profiles(offered))
    if any(g.unknown_gpu_seconds and g.gpu_instance_id for g in gpus):
        found.notes.append("a MIG device without an activity signal (before Hopper): its time "
                           "is neither busy nor idle")
    if any(g.unknown_gpu_seconds and not g.gpu_instance_id for g in gpus):
        found.notes.append("part of the held time has no activity recorded (the ledger's rules "
                           "had just started): it is neither busy nor idle")
    if any(g.unmetered_gpu_seconds for g in gpus):
        found.notes.append("NVML reported no GPU memory for some processes on its GPUs: those "
                           "GPUs were split among their holders by process count")
    if any(g.device_judged_gpu_seconds for g in gpus):
        found.notes.append("busy or idle judged by the GPU's activity, not the job's own "
                           f"(no per-process samples): {found.total('device_judged_gpu_seconds') / 3600:.2f} "
                           f"of {found.total('held_gpu_seconds') / 3600:.2f} GPU-hours held")
    return found


def _gpus(samples: list[Sample], interval: float) -> list[JobGpu]:
    gpus: dict[tuple[str, ...], JobGpu] = {}

    def device(labels: dict[str, str]) -> JobGpu:
        key = tuple(labels.get(k, "") for k in _DEVICE)
        return gpus.setdefault(key, JobGpu(*key[1:], model=""))

    fields = {"held": "held_gpu_seconds", "busy": "busy_gpu_seconds",
              "idle": "idle_held_gpu_seconds", "unknown": "unknown_gpu_seconds",
              "utilization": "utilization_gpu_seconds", "energy": "energy_joules",
              "device_judged": "device_judged_gpu_seconds", "unmetered": "unmetered_gpu_seconds"}
    rest = []
    users: dict[tuple[str, ...], set[str]] = defaultdict(set)  # sorted once: a GPU may have many
    for sample in samples:  # the held figures first: they say which devices the job had
        if sample.labels.get("measure") in fields:
            gpu = device(sample.labels)
            gpu.model = sample.labels.get("model", gpu.model)
            name = fields[sample.labels["measure"]]
            setattr(gpu, name, getattr(gpu, name) + sample.value * interval)
        else:
            rest.append(sample)
    for sample in rest:
        key = tuple(sample.labels.get(k, "") for k in _DEVICE)
        gpu = gpus.get(key)
        measure = sample.labels.get("measure")
        if gpu is None:
            continue
        if measure == "samples":
            gpu.held_seconds = sample.value * interval
        elif measure == "users":
            users[key].add(sample.labels.get("user", ""))
        elif measure == "peak_memory":
            gpu.peak_memory_bytes = sample.value
        elif measure in ("gpu_memory", "mig_memory"):
            gpu.memory_total_bytes = sample.value
    for key, names in users.items():
        gpus[key].users = sorted(names)
    return sorted((g for g in gpus.values() if g.held_gpu_seconds > 0),
                  key=lambda g: (g.instance, _number(g.gpu), g.gpu_instance_id))


def _checked(job: Job, url: str) -> None:
    """A LedgerError where a GPU's figures are more than the range holds, as `usage` refuses
    them: held past the range, held more than a whole GPU at each evaluation, busy, idle and
    unknown more than held; or a peak past the GPU's (MIG device's) memory."""
    for gpu in job.gpus:
        where = f"GPU {gpu.gpu} of {gpu.instance}"
        if past_range(gpu.held_seconds, job.until - job.since, job.interval_seconds):
            raise LedgerError(f"{url}: the job held {where} for {duration_text(gpu.held_seconds)} "
                              f"of a {duration_text(job.until - job.since)} range: no figure can "
                              "be trusted")
        possible(gpu.held_gpu_seconds, gpu.busy_gpu_seconds + gpu.idle_held_gpu_seconds
                 + gpu.unknown_gpu_seconds, 1, gpu.held_seconds, job.interval_seconds, url)
        if (gpu.peak_memory_bytes is not None and gpu.memory_total_bytes is not None
                and gpu.peak_memory_bytes > gpu.memory_total_bytes):
            raise LedgerError(f"{url}: a peak of {size(gpu.peak_memory_bytes)} on {where}, whose "
                              f"memory is {size(gpu.memory_total_bytes)}: no figure can be trusted")


def _number(text: str) -> int:
    return int(text) if text.isdigit() else -1


def _profiles(samples: list[Sample]) -> dict[str, dict[str, dict[str, float]]]:
    """model -> MIG profile -> its memory and GPU share, where some GPU of the model exports them."""
    profiles: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for s in samples:
        measure = s.labels.get("measure")
        if measure in ("profile_memory", "profile_share"):
            profiles[s.labels.get("model", "")][s.labels.get("profile", "")][measure] = s.value
    return profiles


def _advise(job: Job, profiles: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """At most two lines a researcher can act on."""
    lines = []
    busy = [g for g in job.gpus if g.busy_ratio is not None]
    underused = [g for g in busy if (g.busy_ratio or 0) < _UNDERUSED_BUSY_RATIO]
    if len(job.gpus) > 1 and underused:
        needed = max(1, len(job.gpus) - len(underused))
        lines.append(f"{len(underused)} of its {len(job.gpus)} GPUs were busy less than "
                     f"{percent(_UNDERUSED_BUSY_RATIO)} of the time held: ask for {needed} "
                     f"(--gres=gpu:{needed}), or make the code use them all")
    whole = [g for g in job.gpus if not g.gpu_instance_id and g.peak_memory_bytes is not None]
    for gpu in whole[:1] if not lines else ():
        mean = gpu.mean_utilization_ratio
        # The model's profiles as its GPUs export them, else as hwinfo's catalogue has them.
        exported = profiles.get(gpu.model)
        offered = exported or catalogue_profiles(gpu.model)
        fit = None if mean is None else smallest_fit(offered, gpu.peak_memory_bytes or 0.0, mean)
        peak = size(gpu.peak_memory_bytes or 0.0)
        if fit is not None:
            source = "" if exported else " (from hwinfo's MIG catalogue)"
            lines.append(f"peak memory {peak} and mean utilization {percent(mean or 0)} fit a "
                         f"{fit[0]} MIG slice of the {gpu.model}{source}: ask for one instead "
                         "of a whole GPU")
        elif (gpu.memory_total_bytes and mean is not None
              and (gpu.peak_memory_bytes or 0) <= _SMALL_MEMORY_RATIO * gpu.memory_total_bytes
              and mean <= _SMALL_UTILIZATION_RATIO):
            lines.append(f"peak memory {peak} of the GPU's {size(gpu.memory_total_bytes)} and "
                         f"mean utilization {percent(mean)}: a smaller GPU would do")
    held = job.total("held_gpu_seconds")
    idle = job.total("idle_held_gpu_seconds")
    if len(lines) < 2 and held > 0 and idle / held > _IDLE_RATIO:
        lines.append(f"its GPUs sat idle {percent(idle / held)} of the time held: look at what "
                     "the job waits on (input, CPU, the network), or end it sooner")
    return lines[:2]
