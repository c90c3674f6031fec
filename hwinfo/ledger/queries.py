"""The PromQL the ledger sends, in one place: what each figure is made of.

Several measures travel in one query, each tagged with a `measure` label by label_replace
and joined with `or`: one round trip, and Prometheus evaluates them side by side. `usage`
sends one such query for each part of its range (_by_part says why).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from hwinfo.ledger.rollup import HOST_ROLLUP_SUFFIX, ROLLUP_SUFFIX, USER_ROLLUP_SUFFIX, Part, Plan

# The file that records everything below: what to load where a record is missing.
LEDGER_RULES_FILE = "prometheus/hwinfo-ledger.yml"
HELD_RECORD = "hwinfo:ledger_held:share"
GPU_KEY = "job, instance, gpu, uuid"

# Shares recorded by prometheus/hwinfo-ledger.yml, summed over a range and times the group's
# interval: GPU-seconds (power: joules).
SHARE_RECORDS = {
    "held": HELD_RECORD,
    "busy": "hwinfo:ledger_busy:share",
    "idle": "hwinfo:ledger_idle:share",
    "unknown": "hwinfo:ledger_unknown:share",
    "utilization": "hwinfo:ledger_utilization:share",
    "energy": "hwinfo:ledger_power:watts",
    "device_judged": "hwinfo:ledger_device_judged:share",
    "unmetered": "hwinfo:ledger_unmetered:share",
}
# The same shares per Slurm job, pod and container (the ledger's attribution rules).
ATTRIBUTED_HELD_RECORD = "hwinfo:ledger_attributed_held:share"
ATTRIBUTED_RECORDS = {name: record.replace("hwinfo:ledger_", "hwinfo:ledger_attributed_")
                      for name, record in SHARE_RECORDS.items()}
ATTRIBUTED_MEMORY = "hwinfo_gpu_attributed_memory_used_bytes"
# Each GPU that could not be seen at an evaluation (host down, data stale): nobody's.
UNSEEN_RECORD = "hwinfo:ledger_unseen:gpus"
# The activity at or below which a holding is idle, recorded by the rules (their one place).
IDLE_THRESHOLD_RECORD = "hwinfo:ledger_idle_threshold:ratio"
# 1 at each evaluation of the rules: how much of a range they cover.
EVALUATIONS_RECORD = "hwinfo:ledger_evaluations:count"
# Counters of processes that started and ended between two samples (NVML accounting).
ACCOUNTED_COUNTERS = {
    "accounted": "hwinfo_gpu_user_accounted_seconds_total",
    "accounted_utilization": "hwinfo_gpu_user_accounted_busy_seconds_total",
}


def tagged(measure: str, expr: str) -> str:
    return f'label_replace({expr}, "measure", "{measure}", "", "")'


def union(measures: Mapping[str, str]) -> str:
    return "\nor\n".join(tagged(name, expr) for name, expr in measures.items())


def _named(span: str) -> str:
    """hwinfo_gpu_info's last series in `span` (a range selector's suffix), its GPU's name
    copied to a `model` label."""
    return f'label_replace(last_over_time(hwinfo_gpu_info{span}), "model", "$1", "name", "(.*)")'


def _models_in(span: str) -> str:
    """Each GPU seen in `span`, with a model: one of two, where its name changed in the span
    (a driver upgrade that adds "NVIDIA "), since a join needs one."""
    return f"topk by ({GPU_KEY}) (1, group by ({GPU_KEY}, model) ({_named(span)}))"


def models(window: str) -> str:
    """Each GPU seen in the window, with its model as a `model` label, value 1."""
    return _models_in(f"[{window}]")


def with_model(expr: str, window: str) -> str:
    """Per-GPU series given their GPU's model label."""
    return f"({expr}) * on({GPU_KEY}) group_left(model) {models(window)}"


def by_model(aggregation: str, keys: str, expr: str, window: str) -> str:
    """`expr`, a per-GPU vector, aggregated by `keys`, which may name the model."""
    return f"{aggregation} by ({keys}) ({with_model(expr, window)})"


def whole_gpus(window: str) -> str:
    """GPUs never in MIG mode during the window."""
    return f"({models(window)} unless on({GPU_KEY}) (max_over_time(hwinfo_gpu_mig_enabled[{window}]) == 1))"


# The hourly roll-ups' names for what the ledger reads over a range (rollup.py). The shares
# and the users' peak memory are rolled up by user and model (USER_ROLLUP_SUFFIX) and by host
# and model (HOST_ROLLUP_SUFFIX); the attribution group's by user, model, job, pod and
# container (ROLLUP_SUFFIX). Each family has its own count of evaluations.
USER_MEMORY = "hwinfo_gpu_user_memory_used_bytes"
PEAK_ROLLUP = "hwinfo:ledger_user_memory:peak_bytes"
ATTRIBUTED_PEAK_ROLLUP = "hwinfo:ledger_attributed_memory:peak_bytes" + ROLLUP_SUFFIX
ATTRIBUTED_LABELS = ("slurm_job", "pod_uid", "container_id")
# Each GPU seen in an hour, with its model: for the hours, usage() asks the engine's index
# for its series, which reads no sample (a month of its samples took 0.29 s of 100 hosts'
# 1.25 s); for the minutes, the GPUs measure.
GPUS_ROLLUP = "hwinfo:ledger_gpus:info_1h"


def rollup_suffix(by: str) -> str:
    """The suffix of the roll-ups usage() reads when it groups by the label `by`."""
    if by in ATTRIBUTED_LABELS:
        return ROLLUP_SUFFIX
    return HOST_ROLLUP_SUFFIX if by == "instance" else USER_ROLLUP_SUFFIX


def rollups(by: str) -> frozenset[str]:
    """The roll-up records usage() (or attributed_usage()) reads grouping by the label `by`:
    all must be there and evaluating, or a run of hours would add nothing for the one that
    is not."""
    suffix = rollup_suffix(by)
    if by in ATTRIBUTED_LABELS:
        read = {record + suffix for record in ATTRIBUTED_RECORDS.values()}
        read.add(ATTRIBUTED_PEAK_ROLLUP)
    else:
        read = {record + suffix for record in [*SHARE_RECORDS.values(), PEAK_ROLLUP]}
        read.add(UNSEEN_RECORD + ROLLUP_SUFFIX)
    return frozenset({*read, EVALUATIONS_RECORD + suffix, GPUS_ROLLUP})


def _minutes_or_hours(part: Part, suffix: str) -> str:
    """The suffix of what a part reads: roll-ups of the family, or minute records."""
    return suffix if part.rolled else ""


def _common(plan: Plan, suffix: str) -> list[dict[str, str]]:
    """The measures of every usage query, a dict for each part of the plan: the evaluations
    it holds (per series of the count), the GPUs seen in a minute part, and for each run of
    roll-ups how far the evaluations they counted are from the minute records of their
    hours now: more minutes, late data the roll-ups missed; fewer, roll-ups that overlap (a
    group interval edited apart from the rules' [1h] windows). No answer where the minute
    records are gone past the engine's retention while their roll-ups are kept."""
    checks = iter(enumerate(plan.checks()))
    common = []
    for span, part in plan.ranges():
        measures = {"evaluations": f"sum_over_time({EVALUATIONS_RECORD}"
                                   f"{_minutes_or_hours(part, suffix)}{span})"}
        if part.rolled:
            n, (hours, minutes) = next(checks)
            measures[f"check{n}"] = (f"abs(sum(sum_over_time({EVALUATIONS_RECORD}{minutes})) "
                                     f"- sum(sum_over_time({EVALUATIONS_RECORD}{suffix}{hours})))")
        else:
            measures["gpus"] = f"group by ({GPU_KEY}, model) ({_named(span)})"
        common.append(measures)
    return common


def _by_part(plan: Plan, suffix: str, measures: Callable[[str, Part], dict[str, str]],
             whole: dict[str, str]) -> list[str]:
    """A query for each part of the plan, and one for the `whole` range's measures (if any).
    The engine looks a query's series up in every block its range touches: a minute edge
    asked beside a month of hours cost the month (0.13 s, where alone it took 0.005 s), so
    each part goes alone and the client adds them up (usage.merged)."""
    return [union(measures(span, part) | common) for (span, part), common
            in zip(plan.ranges(), _common(plan, suffix))] + ([union(whole)] if whole else [])


def usage(by: str, plan: Plan) -> list[str]:
    """Every figure of `hwinfo usage` by `by` and the model, a query per part of the plan:
    the recorded shares and peak memory; the accounting counters per GPU and user over the
    whole range, which the client joins with the GPUs' models."""
    keys = by if by == "model" else f"{by}, model"
    suffix = rollup_suffix(by)

    def part_measures(span: str, part: Part) -> dict[str, str]:
        read = _minutes_or_hours(part, suffix)
        measures = {name: f"sum by ({keys}) (sum_over_time({record}{read}{span}))"
                    for name, record in SHARE_RECORDS.items()}
        measures["peak_memory"] = f"max by ({keys}) (" + (
            f"max_over_time({PEAK_ROLLUP}{suffix}{span})" if part.rolled else
            f"max_over_time({USER_MEMORY}{span}) * on({GPU_KEY}) group_left(model) "
            f"{_models_in(span)}") + ")"
        measures["unseen"] = (f"sum by (instance, model) (sum_over_time("
                              f"{UNSEEN_RECORD}{_minutes_or_hours(part, ROLLUP_SUFFIX)}{span}))")
        return measures

    # Counters of short processes are read whole: their increase does not add up by hour.
    per_gpu = f"{GPU_KEY}, user"
    return _by_part(plan, suffix, part_measures, {
        name: f"sum by ({per_gpu}) (increase({counter}{plan.whole}))"
        for name, counter in ACCOUNTED_COUNTERS.items()})


def attributed_usage(label: str, plan: Plan) -> list[str]:
    """usage() per Slurm job, pod or container (`label`: slurm_job, pod_uid, container_id):
    the attribution group's shares of the series that have one, and each one's peak memory
    on a GPU. NVML accounting knows no jobs: no accounted measures."""
    only = f'{{{label}!=""}}'

    def part_measures(span: str, part: Part) -> dict[str, str]:
        read = _minutes_or_hours(part, ROLLUP_SUFFIX)
        measures = {name: f"sum by ({label}, model) (sum_over_time({record}{read}{only}{span}))"
                    for name, record in ATTRIBUTED_RECORDS.items()}
        measures["peak_memory"] = (
            f"max by ({GPU_KEY}, {label}) (max_over_time("
            f"{ATTRIBUTED_PEAK_ROLLUP if part.rolled else ATTRIBUTED_MEMORY}{only}{span}))")
        return measures

    return _by_part(plan, ROLLUP_SUFFIX, part_measures, {})


def profiles(window: str) -> dict[str, str]:
    """The MIG profiles each model offers (where some GPU of it exports them): memory and share."""
    return {
        "profile_memory": by_model("max", "model, profile",
                                   f"last_over_time(hwinfo_mig_profile_memory_bytes[{window}])", window),
        "profile_share": by_model("max", "model, profile",
                                  f"last_over_time(hwinfo_mig_profile_gpu_share_ratio[{window}])", window),
    }


def advice(window: str) -> str:
    """What --advise weighs: each hold (a user on a whole GPU): its GPU-seconds and the
    evaluations it was held at (its share of the GPU), its activity, the part of it judged
    by the device's activity and at how many evaluations, and its peak memory; the MIG
    profiles each model offers (where some GPU of it exports them), which models can do MIG
    at all (a GPU exports its MIG mode, on or off), and the rules' idle threshold."""
    hold = f"{GPU_KEY}, user, model"

    def over(function: str, record: str) -> str:
        return f'sum by ({hold}) ({function}({record}{{gpu_instance_id=""}}[{window}]))'

    return union({
        "whole_held": over("sum_over_time", HELD_RECORD),
        "whole_evaluations": over("count_over_time", HELD_RECORD),
        "whole_utilization": over("sum_over_time", SHARE_RECORDS["utilization"]),
        "whole_device_judged": over("sum_over_time", SHARE_RECORDS["device_judged"]),
        "whole_device_judged_evaluations": over("count_over_time", SHARE_RECORDS["device_judged"]),
        "whole_peak_memory": f"max by ({hold}) (max_over_time(hwinfo_gpu_user_memory_used_bytes"
                             f"[{window}]) * on({GPU_KEY}) group_left(model) {whole_gpus(window)})",
        "mig_capable": by_model("max", "model", f"last_over_time(hwinfo_gpu_mig_enabled[{window}])",
                                window),
        "idle_threshold": f"max(last_over_time({IDLE_THRESHOLD_RECORD}[{window}]))",
        **profiles(window),
    })


# The alert of prometheus/hwinfo-ledger.yml that tells of an idle hold: while it is pending
# or firing, the engine keeps its ALERTS_FOR_STATE series, whose value is when it began.
IDLE_ALERT = "HwinfoGpuIdleHeld"
HOLD_KEY = "job, instance, gpu, gpu_instance_id, compute_instance_id, user"


def idle_holds() -> str:
    """What the board adds to fleet's listing: each hold idle now (the ledger's idle record,
    by device and user), since when (its idle alert's start, with the jobs, pods and
    containers it names), and whether the engine evaluates the ledger's rules at all."""
    return union({
        "idle": f"max by ({HOLD_KEY}) ({SHARE_RECORDS['idle']})",
        "since": f"min by ({HOLD_KEY}, slurm_job, pod_uid, container_id) "
                 f'(ALERTS_FOR_STATE{{alertname="{IDLE_ALERT}"}})',
        "rules": f"group({EVALUATIONS_RECORD})",
    })
