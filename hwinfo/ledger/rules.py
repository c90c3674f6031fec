"""The ledger's rule file, prometheus/hwinfo-ledger.yml, composed from named PromQL fragments.

    python -m hwinfo.ledger.rules_file > prometheus/hwinfo-ledger.yml   # written from this

Every record of the minute group is computed from the exporter's raw series (and the
constant idle threshold) alone, never from another record of the same evaluation: vmalert
runs a group's rules in order but writes their results back through remote write, so a rule
that read a record of its own evaluation saw that record's previous sample, or none
(docs/ledger-engines.md). PromQL has no variables, so a concept that several records need
(seen, a holder's weight, held, activity) is a fragment here, written once and spelled out in
full wherever a record reads it.

To add a record: write its fragment (from raw series and the fragments below, by name in
braces, as `{held}`), add a Record to MINUTE (a job's own resource: a JobMeasure to JOBS), and, if `usage` sums it, its name to
hwinfo/ledger/queries.py, which gives it its hourly roll-ups here. A branch of a concept (a
new way to hold a GPU) goes into that concept's fragment, and every record that reads it
follows.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from hwinfo.ledger.queries import (
    ATTRIBUTED_LABELS,
    ATTRIBUTED_RECORDS,
    EVALUATIONS_RECORD,
    GPUS_ROLLUP,
    IDLE_THRESHOLD_RECORD,
    PEAK_ROLLUP,
    SHARE_RECORDS,
    UNSEEN_RECORD,
)
from hwinfo.ledger.rollup import HOST_ROLLUP_SUFFIX, ROLLUP_SUFFIX, USER_ROLLUP_SUFFIX

IDLE_THRESHOLD = 0.05  # the activity at or below which a holding is idle, as shipped

GPU = "job, instance, gpu, uuid"
DEVICE = f"{GPU}, gpu_instance_id, compute_instance_id"
HOLD = f"{DEVICE}, user"  # one holder of one device
MODEL = 'label_replace(hwinfo_gpu_info, "model", "$1", "name", "(.*)")'
MIG_GPU = "hwinfo_gpu_mig_enabled == 1"

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def compose(template: str, **parts: str) -> str:
    """The template (dedented) with each `{name}` replaced by its part in parentheses, the
    part's lines indented under the line that names it."""

    def line(text: str) -> str:
        indent = " " * (len(text) - len(text.lstrip()))

        def part(match: re.Match[str]) -> str:
            body = parts[match.group(1)]
            if "\n" not in body:
                return f"({body})"
            inner = textwrap.indent(body, indent + "  ")
            return f"(\n{inner}\n{indent})"

        return _PLACEHOLDER.sub(part, text)

    return "\n".join(line(text) for text in textwrap.dedent(template).strip("\n").split("\n"))


# Hosts whose GPU data cannot be trusted now: stalled (a hung NVML call leaves the daemon
# serving its last values), or over 60 s old.
UNTRUSTED = compose("""
    hwinfo_collection_stalled{source="gpu"} == 1
    or
    time() - hwinfo_last_success_timestamp_seconds{source="gpu"} > 60
""")
# Each GPU seen now: its host answers (else its series are gone), and its data is trusted.
SEEN = compose(f"""
    group by ({GPU}) (hwinfo_gpu_info)
    unless on(job, instance) {{untrusted}}
""", untrusted=UNTRUSTED)
# The same GPUs, each with its model (value 1), for the shares to take it from.
SEEN_MODELS = compose(f"""
    {MODEL}
    unless on(job, instance) {{untrusted}}
""", untrusted=UNTRUSTED)

# What each user has on each device, whole GPUs' and MIG devices' series together: a whole
# GPU's have no gpu_instance_id and compute_instance_id, so matching on DEVICE keeps the two
# apart. On a GPU in MIG mode the whole-GPU series are the GPU's own figures, never a hold:
# the shares leave them out once, in FACTOR.
MEMORY = '{__name__=~"hwinfo_gpu_user_memory_used_bytes|hwinfo_mig_device_user_memory_used_bytes"}'
PROCESSES = '{__name__=~"hwinfo_gpu_user_processes|hwinfo_mig_device_user_processes"}'
ATTRIBUTED_MEMORY = "hwinfo_gpu_attributed_memory_used_bytes"
ATTRIBUTED_PROCESSES = "hwinfo_gpu_attributed_processes"
NOT_MIG = f"unless on({DEVICE}) ({MIG_GPU})"  # leaves out a MIG GPU's own whole-GPU series

# Holders of a device none of whose processes has a memory figure (WDDM, some containers,
# permissions): such a device is split by process count, not memory.
UNMETERED = compose(f"""
    {PROCESSES} > 0
    unless on({HOLD}) ({MEMORY} > 0)
""")


def weight(memory: str, processes: str) -> str:
    """What each holder (job, pod, container) weighs in the split of a device: processes on a
    device with an unmetered holder, memory on the others (`or on` adds only the devices the
    processes left out)."""
    return compose(f"""
        {processes} > 0
          and on({DEVICE}) {{unmetered}}
        or on({DEVICE})
        {memory} > 0
    """, unmetered=UNMETERED)


# A device `hwinfo run` claims for a user with no process on it: the claimant holds it alone
# (weight 1), as idle-held as any other holder's (docs/run.md). Only a holder is ever claimed
# for, never a job, pod or container.
CLAIMED = compose(f"""
    max by ({HOLD}) (
        hwinfo_gpu_claim_info{{gpu_instance_id=""}}
          and on({GPU}) (hwinfo_gpu_processes == 0)
          unless on({GPU}) ({MIG_GPU})
      or
        hwinfo_gpu_claim_info{{gpu_instance_id!=""}}
          and on({DEVICE}) (hwinfo_mig_device_processes == 0)
    )
""")
WEIGHT = compose(f"""
    {{metered}}
    or on({HOLD})
    {{claimed}}
""", metered=weight(MEMORY, PROCESSES), claimed=CLAIMED)
ATTRIBUTED_WEIGHT = weight(ATTRIBUTED_MEMORY, ATTRIBUTED_PROCESSES)

# What one unit of weight's share of its device is multiplied by: a MIG device's share of the
# GPU (1 for a whole GPU not in MIG mode), with the GPU's model; only on GPUs seen now.
FACTOR = compose(f"""
    (
        hwinfo_mig_device_gpu_share_ratio
      or on({DEVICE})
        group by ({GPU}) (hwinfo_gpu_info) {NOT_MIG}
    )
    * on({GPU}) group_left(model)
      {{seen}}
""", seen=SEEN_MODELS)


def share_of(weights: str) -> str:
    """The share of the GPU that `weights` stand for: each over the weights of its device's
    holders, times the device's FACTOR."""
    return compose(f"""
        {{weights}}
        / on({DEVICE}) group_left
          sum by ({DEVICE}) {{all}}
        * on({DEVICE}) group_left(model)
          {{factor}}
    """, weights=weights, all=WEIGHT, factor=FACTOR)


# Each holder's share of the GPU; each job's (pod's, container's): its weight over its
# device's holders', as its holder's is, so a job is charged what its user is, never more.
HELD = share_of(WEIGHT)
ATTRIBUTED_HELD = share_of(ATTRIBUTED_WEIGHT)

# A MIG device's activity: GPM SM activity of its GPU instance (Hopper and newer).
MIG_ACTIVITY = compose(f"""
    hwinfo_mig_device_gpu_share_ratio * 0
    + on({GPU}, gpu_instance_id) group_left
      hwinfo_mig_gpu_instance_sm_active_ratio
""")
OWN = "clamp_max(hwinfo_gpu_user_sm_utilization_ratio, 1)"
# Each device's activity: utilization (the exporter has none for a GPU in MIG mode), or its
# MIG activity.
DEVICE_ACTIVITY = compose("""
    hwinfo_gpu_utilization_ratio
    or
    {mig}
""", mig=MIG_ACTIVITY)
# Each user with a process, a memory figure or a claim on a device: every holder, and more
# (only holds are ever joined to what is said of them). One selector, all five series.
USERS = (f"group by ({HOLD}) ({{__name__=~"
         '"hwinfo_(gpu|mig_device)_user_(processes|memory_used_bytes)|hwinfo_gpu_claim_info"})')
# The activity that judges each of them: their own processes' SM samples on a whole GPU where
# NVML has them, else the device's.
HOLDER_ACTIVITY = compose(f"""
    {OWN}
    or on({HOLD})
      {USERS}
    * on({DEVICE}) group_left() {{device}}
""", device=DEVICE_ACTIVITY)


def of_held(held: str) -> dict[str, str]:
    """The records that split `held` (a holder's share, or their job's): name suffix -> expr."""
    return {
        "busy:share": compose(f"""
            {{held}}
            and on({HOLD})
              {{activity}} > scalar({IDLE_THRESHOLD_RECORD})
        """, held=held, activity=HOLDER_ACTIVITY),
        "idle:share": compose(f"""
            {{held}}
            and on({HOLD})
              {{activity}} <= scalar({IDLE_THRESHOLD_RECORD})
        """, held=held, activity=HOLDER_ACTIVITY),
        # No activity signal, or no threshold yet to judge it by (vmalert's first evaluation
        # reads none): unknown, never dropped.
        "unknown:share": compose(f"""
            {{held}}
            unless on({HOLD}) ({OWN} and on() {IDLE_THRESHOLD_RECORD})
            unless on({DEVICE}) ({{device}} and on() {IDLE_THRESHOLD_RECORD})
        """, held=held, device=DEVICE_ACTIVITY),
        "device_judged:share": compose(f"""
            {{held}}
            unless on({HOLD}) {OWN}
            and on({DEVICE}) {{device}}
        """, held=held, device=DEVICE_ACTIVITY),
        "unmetered:share": compose(f"""
            {{held}}
            and on({DEVICE}) {{unmetered}}
        """, held=held, unmetered=UNMETERED),
        "utilization:share": compose(f"""
            {{held}}
            * on({HOLD}) group_left() {{activity}}
        """, held=held, activity=HOLDER_ACTIVITY),
        "power:watts": compose(f"""
            {{held}}
            * on({GPU}) group_left hwinfo_gpu_power_draw_watts
        """, held=held),
    }


SPLITS = of_held(HELD)
ATTRIBUTED_SPLITS = of_held(ATTRIBUTED_HELD)

# The idle-holder alert: a hold idle now (a job's, pod's or container's as itself, a holder's
# with none as the holder's: the share of each job, or of each holder without one), or, while
# its GPU cannot be seen, one that was idle at an earlier evaluation of the last 10 minutes
# and never busy since. An unseen GPU has no record at this evaluation, on either engine:
# the records this reads are all of earlier ones.
IDLE_NOW = of_held(share_of(compose(f"""
    {{jobs}}
    or on({HOLD})
    {{holders}}
""", jobs=ATTRIBUTED_WEIGHT, holders=WEIGHT)))["idle:share"]


def _before(record: str) -> str:
    return f"last_over_time({record}[10m])"


IDLE_BEFORE = compose(f"""
    {{idle}}
    unless on({HOLD}) {_before(SHARE_RECORDS["busy"])}
    unless on({GPU}) {{seen}}
""", idle=compose(f"""
    {_before(ATTRIBUTED_RECORDS["idle"])}
    or
    {_before(SHARE_RECORDS["idle"])}
      unless on({HOLD}) {_before(ATTRIBUTED_RECORDS["idle"])}
"""), seen=SEEN)
IDLE_HELD = compose(f"""
    sum by ({HOLD}, {", ".join(ATTRIBUTED_LABELS)}) (
        {{now}}
      or
        {{before}}
    ) > 0
""", now=IDLE_NOW, before=IDLE_BEFORE)


@dataclass(frozen=True)
class Record:
    """One recording rule, with what the file says of it above it."""

    name: str
    expr: str
    comment: str = ""


def _share(name: str) -> str:
    return f"hwinfo:ledger_{name}"


MINUTE = [
    Record(EVALUATIONS_RECORD, "vector(1)"),
    Record(IDLE_THRESHOLD_RECORD, f"vector({IDLE_THRESHOLD:g})",
           "The activity at or below which a holding is idle (0.05: 5 %). The one place it is set."),
    Record("hwinfo:ledger_seen:gpus", SEEN,
           "Each GPU whose data can be trusted now: its host answers (else its series are gone),\n"
           "and its GPU data is under 60 s old and not stalled (a hung NVML call leaves the\n"
           "daemon serving its last values)."),
    Record(UNSEEN_RECORD, compose(f"""
        group by ({GPU}, model) (
          label_replace(last_over_time(hwinfo_gpu_info[1h]), "model", "$1", "name", "(.*)"))
        unless on({GPU}) {{seen}}
    """, seen=SEEN)),
    Record("hwinfo:ledger_unmetered:processes", f"{UNMETERED}\n{NOT_MIG}",
           "Processes of holders of a device none of whose processes has a memory figure (WDDM,\n"
           "some containers, permissions): such a device is split by process count, not memory."),
    Record("hwinfo:ledger_holder:weight", compose(f"""
        {{weights}}
        {NOT_MIG}
    """, weights=WEIGHT),
           "What each holder of a device weighs in its split: memory, or processes (above), or a\n"
           "claim of `hwinfo run` with no process on the device (1)."),
    Record(SHARE_RECORDS["held"], HELD,
           "Each holder's share of the GPU: their weight over the weights of the device's holders,\n"
           "times a MIG device's share of the GPU; with the GPU's model; only while the GPU is seen."),
    Record(SHARE_RECORDS["unmetered"], SPLITS["unmetered:share"],
           "Held on a device split by process count (some holder's memory is not reported)."),
    Record("hwinfo:ledger_activity:ratio", compose(f"""
        (hwinfo_gpu_utilization_ratio unless on({GPU}) ({MIG_GPU}))
        or
        {{mig}}
    """, mig=MIG_ACTIVITY),
           "The activity signal of each device; absent where there is none."),
    Record("hwinfo:ledger_own_activity:ratio", f"{OWN}\nunless on({GPU}) ({MIG_GPU})",
           "Each holder's own activity on a whole GPU: the sum of their processes' SM samples."),
    Record("hwinfo:ledger_user_activity:ratio", compose(f"""
        {{held}} * 0
        + on({HOLD}) group_left() {{activity}}
    """, held=HELD, activity=HOLDER_ACTIVITY),
           "Each holding's activity: the holder's own where it exists, else the device's."),
    Record(SHARE_RECORDS["device_judged"], SPLITS["device_judged:share"],
           "Held by a holder with no SM samples of their own, judged by the device's activity."),
    Record(SHARE_RECORDS["busy"], SPLITS["busy:share"],
           "Held while the holding's activity (above) is over the idle threshold; idle: at or under it."),
    Record(SHARE_RECORDS["idle"], SPLITS["idle:share"]),
    Record(SHARE_RECORDS["unknown"], SPLITS["unknown:share"],
           "Held with no activity signal (or no threshold yet to judge it by): never idle."),
    Record(SHARE_RECORDS["utilization"], SPLITS["utilization:share"],
           "Held share x activity: over a range, this over the held share is the mean\n"
           "utilization while held."),
    Record(SHARE_RECORDS["energy"], SPLITS["power:watts"],
           "The GPU's power apportioned like held time."),
    Record(ATTRIBUTED_RECORDS["held"], ATTRIBUTED_HELD,
           "Slurm jobs, pods and containers (docs/attribution.md): each one's share of a device\n"
           "is its holder's share (held above), split among the holder's jobs by the rule that\n"
           "split the device among holders: GPU memory, or process counts on a device where NVML\n"
           "reports no memory for some holder (hwinfo_gpu_attributed_memory_used_bytes,\n"
           "hwinfo_gpu_attributed_processes). So a job is charged what its user is, never more,\n"
           "and only while the GPU is seen. Labelled with the device, the model, the user charged\n"
           "and slurm_job, pod_uid and container_id (empty where they do not apply). A series\n"
           "exists while the job's processes are on the device and goes stale when they end.\n"
           "Busy, idle, unknown, device-judged and unmetered are the holder's at that evaluation."),
    *(Record(_share(f"attributed_{name}"), ATTRIBUTED_SPLITS[name])
      for name in ("busy:share", "idle:share", "unknown:share", "device_judged:share",
                   "unmetered:share", "utilization:share", "power:watts")),
]

# Jobs' own resources (docs/jobs.md), a group of its own: each Slurm job's, pod's and
# container's CPU, host memory, I/O and pressure from its own cgroup. Each record reads the
# exporter's series alone, as the minute records above do. A series exists while the job has
# a process on a GPU; `and` on the raw series ends each rate with it, where rate()'s window
# would run on. The window is the group's interval, so that the windows tile the job's time.
JOB = "job, instance, user, slurm_job, pod_uid, container_id"
JOB_ROLLUP_KEY = "instance, user, slurm_job, pod_uid, container_id"  # summed over the scrape job
JOB_CPU_ALLOTTED = "hwinfo:ledger_job_cpu_allotted:cpus"  # its evaluations count the job's


def _job(name: str) -> str:
    return f"hwinfo:ledger_job_{name}"


def _job_rate(counter: str, by: str = "") -> str:
    """The counter's rate while the job's series exists (`by`: the label it is split by too)."""
    return compose(f"""
        rate({counter}[1m])
        and on({JOB}{by}) {counter}
    """)


@dataclass(frozen=True)
class JobMeasure:
    """One record of the jobs group, and how its hourly roll-up takes it."""

    record: Record
    by: str = ""  # the label, beside the job's, its roll-up keeps
    peak: bool = False  # the roll-up takes its peak (else its sum)


JOBS = [
    JobMeasure(Record(_job("cpu_used:cpus"), _job_rate("hwinfo_job_cpu_seconds_total"),
                      "CPUs busy (CPU-seconds a second), and the CPUs it may use at the same evaluations.")),
    JobMeasure(Record(JOB_CPU_ALLOTTED, compose(f"""
        hwinfo_job_allotted_cpus
        and on({JOB}) rate(hwinfo_job_cpu_seconds_total[1m])
    """))),
    JobMeasure(Record(_job("cpuset_busy:ratio"), _job_rate("hwinfo_job_cpuset_busy_seconds_total"),
                      "How busy its cpuset's CPUs were, with anyone's work (their mean share of the time).")),
    JobMeasure(Record(_job("memory_peak:bytes"), compose(f"""
        hwinfo_job_memory_peak_bytes
        or on({JOB}) hwinfo_job_memory_used_bytes
    """), "Host memory: the kernel's high-water mark (memory now where the kernel keeps none,\n"
          "before 5.19 on cgroup v2), and the limit where there is one."), peak=True),
    JobMeasure(Record(_job("memory_limit:bytes"), "hwinfo_job_memory_limit_bytes"), peak=True),
    *(JobMeasure(Record(_job(f"io_{name}"), _job_rate(f"hwinfo_job_io_{counter}_total", ", device"),
                        "Bytes a second read and written, and the share of time the device worked for\n"
                        "it, per device." if name.startswith("read") else ""), by="device")
      for name, counter in (("read:bytes_per_second", "read_bytes"),
                            ("written:bytes_per_second", "written_bytes"),
                            ("busy:ratio", "busy_seconds"))),
    *(JobMeasure(Record(_job(f"pressure_{name}:ratio"),
                        _job_rate(f"hwinfo_job_pressure_{name}_seconds_total", ", resource"),
                        "Share of time some (all) of its tasks were stalled on cpu, memory or io\n"
                        "(cgroup v2)." if name == "waiting" else ""), by="resource")
      for name in ("waiting", "stalled")),
]


def _job_hourly(measure: JobMeasure) -> Record:
    how = "max" if measure.peak else "sum"
    return Record(measure.record.name + ROLLUP_SUFFIX, compose(f"""
        {how} by ({JOB_ROLLUP_KEY}{measure.by and ", " + measure.by}) (
          {how}_over_time({measure.record.name}[1h] offset 30s))
    """))


def _hourly(record: str, suffix: str, by: str) -> Record:
    return Record(record + suffix, f"sum by ({by}) (sum_over_time({record}[1h] offset 30s))")


def _peak(by: str) -> str:
    return compose(f"""
        max by ({by}, model) (
          max_over_time(hwinfo_gpu_user_memory_used_bytes[1h] offset 30s)
          * on({GPU}) group_left(model) topk by ({GPU}) (1,
            group by ({GPU}, model) (label_replace(
              last_over_time(hwinfo_gpu_info[1h] offset 30s), "model", "$1", "name", "(.*)"))))
    """)


ATTRIBUTED_KEY = f"user, model, {', '.join(ATTRIBUTED_LABELS)}"
HOURLY = [
    *(Record(EVALUATIONS_RECORD + suffix, f"sum_over_time({EVALUATIONS_RECORD}[1h] offset 30s)",
             "The evaluations each family of roll-ups counted: usage reads a family's hours only where\n"
             "its own count is there (roll-ups of an older layout under other names are not read)."
             if suffix == ROLLUP_SUFFIX else "")
      for suffix in (ROLLUP_SUFFIX, USER_ROLLUP_SUFFIX, HOST_ROLLUP_SUFFIX)),
    _hourly(UNSEEN_RECORD, ROLLUP_SUFFIX, "job, instance, model"),
    *(_hourly(record, USER_ROLLUP_SUFFIX, "user, model") for record in SHARE_RECORDS.values()),
    *(_hourly(record, HOST_ROLLUP_SUFFIX, "job, instance, model") for record in SHARE_RECORDS.values()),
    *(Record(record + ROLLUP_SUFFIX, compose(f"""
        sum by ({ATTRIBUTED_KEY}) (
          sum_over_time({record}[1h] offset 30s))
    """)) for record in ATTRIBUTED_RECORDS.values()),
    Record(GPUS_ROLLUP, compose(f"""
        group by ({GPU}, model) (
          label_replace(last_over_time(hwinfo_gpu_info[1h] offset 30s), "model", "$1", "name", "(.*)"))
    """), "Each GPU seen in the hour, with its model (value 1)."),
    Record(PEAK_ROLLUP + USER_ROLLUP_SUFFIX, _peak("user"),
           "Peak GPU memory of one user on one GPU in the hour, the highest by user and model, and\n"
           "by host and model. A GPU renamed within the hour (a driver upgrade that adds \"NVIDIA \")\n"
           "has two models: its peak goes to one of them (topk), as a join needs."),
    Record(PEAK_ROLLUP + HOST_ROLLUP_SUFFIX, _peak("job, instance")),
    Record("hwinfo:ledger_attributed_memory:peak_bytes" + ROLLUP_SUFFIX,
           "max_over_time(hwinfo_gpu_attributed_memory_used_bytes[1h] offset 30s)",
           "Each job's (pod's, container's) peak GPU memory on a device in the hour."),
    Record(_job("seen:count") + ROLLUP_SUFFIX, compose(f"""
        sum by ({JOB_ROLLUP_KEY}) (
          count_over_time({JOB_CPU_ALLOTTED}[1h] offset 30s))
    """), "--- Jobs' own resources (the hwinfo-ledger-jobs group): each job's sums by host, and\n"
          "the evaluations it was seen at, for the means."),
    *(_job_hourly(measure) for measure in JOBS),
]
