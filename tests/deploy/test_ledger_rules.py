"""The ledger's recording rules, checked and unit-tested by Prometheus's own promtool."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from hwinfo.ledger import job_resources, queries
from tests.deploy.artifacts import REPO
from tests.deploy.test_alert_rules import promtool

LEDGER = REPO / "prometheus" / "hwinfo-ledger.yml"
LEDGER_TESTS = REPO / "prometheus" / "hwinfo-ledger.test.yml"


def test_promtool_check_rules_passes() -> None:
    rules = sum(len(g["rules"]) for g in yaml.safe_load(LEDGER.read_text())["groups"])
    # The ledger's records, the attribution records, the alert, the jobs' own resources, roll-ups.
    assert rules == 79
    assert f"SUCCESS: {rules} rules found" in promtool("check", "rules", str(LEDGER))


def test_apportioning_on_a_machine_whose_truth_is_known() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(LEDGER_TESTS))


def test_attribution_on_a_machine_whose_truth_is_known() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(REPO / "prometheus" / "hwinfo-ledger-attribution.test.yml"))


def test_jobs_resources_on_a_machine_whose_truth_is_known() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(REPO / "prometheus" / "hwinfo-ledger-jobs.test.yml"))


def test_the_jobs_records_read_raw_series_only() -> None:
    """vmalert writes records asynchronously: a rule that read another record of its group
    could see an old one or none."""
    groups = {g["name"]: g for g in yaml.safe_load(LEDGER.read_text())["groups"]}
    for rule in groups["hwinfo-ledger-jobs"]["rules"]:
        assert "hwinfo:" not in rule["expr"] and "hwinfo_job_" in rule["expr"], rule["record"]


def test_every_range_the_ledger_reads_has_its_hourly_roll_up() -> None:
    groups = {g["name"]: g for g in yaml.safe_load(LEDGER.read_text())["groups"]}
    hourly = groups["hwinfo-ledger-hourly"]
    assert hourly["interval"] == "1h"
    # What usage reads, grouping by user, host or model (and by job, pod or container), is
    # what the group records, and no more.
    read = set().union(*(queries.rollups(label) for label in (
        "user", "instance", "model", "slurm_job", "pod_uid", "container_id")), job_resources.ROLLUPS)
    assert {rule["record"] for rule in hourly["rules"]} == read
    # Each family counts its own evaluations.
    assert {r for r in read if r.startswith(queries.EVALUATIONS_RECORD)} == {
        f"{queries.EVALUATIONS_RECORD}{suffix}" for suffix in ("_1h", "_by_user_1h", "_by_host_1h")}
    for rule in hourly["rules"]:
        assert "[1h] offset 30s" in rule["expr"], rule["record"]


def test_the_idle_alert_says_the_time_its_for_waits() -> None:
    """Neither Prometheus nor vmalert gives an alert's template its `for:`: the summary and the
    description say it as written, and must say what `for:` says."""
    (alert,) = [rule for group in yaml.safe_load(LEDGER.read_text())["groups"]
                for rule in group["rules"] if rule.get("alert") == "HwinfoGpuIdleHeld"]
    waits = alert["for"]
    assert f"which has been idle for {waits}" in alert["annotations"]["summary"]
    assert f"work for {waits}." in " ".join(alert["annotations"]["description"].split())


# One GPU, alice alone on it at 30 % activity with 1 GiB, all of it Slurm job 5: busy at
# the shipped threshold (0.05); idle, job and all, and alerted on after `for: 1h`, at 0.5.
_THRESHOLD_SERIES = [
    ('hwinfo_gpu_info{job="h",instance="a",gpu="0",uuid="G0",name="NVIDIA H100 80GB HBM3"}', "1x70"),
    ('hwinfo_gpu_mig_enabled{job="h",instance="a",gpu="0",uuid="G0"}', "0x70"),
    ('hwinfo_gpu_user_memory_used_bytes{job="h",instance="a",gpu="0",uuid="G0",user="alice"}',
     "1073741824x70"),
    (('hwinfo_gpu_attributed_memory_used_bytes{job="h",instance="a",gpu="0",uuid="G0",'
      'gpu_instance_id="",compute_instance_id="",user="alice",slurm_job="5",pod_uid="",'
      'container_id=""}'), "1073741824x70"),
    ('hwinfo_gpu_utilization_ratio{job="h",instance="a",gpu="0",uuid="G0"}', "0.3x70"),
]


def test_no_minute_rule_reads_a_record_of_its_own_evaluation() -> None:
    """vmalert runs a group's rules in order but writes their records back through remote
    write, so a rule reading a record of its own evaluation saw its previous sample there. Each
    minute record and the alert read raw series, the constant idle threshold, and (the alert,
    for a GPU not seen now) records of earlier evaluations only."""
    minute = [g for g in yaml.safe_load(LEDGER.read_text())["groups"] if g["interval"] == "1m"]
    assert [g["name"] for g in minute] == ["hwinfo-ledger", "hwinfo-ledger-jobs"]
    earlier = re.compile(r"last_over_time\(hwinfo:ledger_\w+:\w+\[10m\]\)")
    for rule in (rule for group in minute for rule in group["rules"]):
        expr = earlier.sub("", rule["expr"]) if "alert" in rule else rule["expr"]
        read = set(re.findall(r"hwinfo:ledger_\w+:\w+", expr)) - {queries.IDLE_THRESHOLD_RECORD}
        assert not read, (rule.get("record") or rule["alert"], read)


def _count_test(rules: Path, kinds: dict[str, bool], alert: bool) -> dict[str, object]:
    """A promtool test: which of the `kinds` of hwinfo:ledger_{kind}:share have one series at
    2m (True) or none, and whether alice's idle alert fires at 65m."""
    counted = [{"expr": f"count(hwinfo:ledger_{kind}:share)", "eval_time": "2m",
                "exp_samples": [{"labels": "{}", "value": 1}] if there else []}
               for kind, there in kinds.items()]
    counted.append({"expr": 'count(ALERTS{alertname="HwinfoGpuIdleHeld",alertstate="firing",user="alice"})',
                    "eval_time": "65m", "exp_samples": [{"labels": "{}", "value": 1}] if alert else []})
    return {"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": series, "values": values} for series, values in _THRESHOLD_SERIES],
        "promql_expr_test": counted}]}


def test_a_hold_with_no_threshold_to_judge_it_is_unknown(tmp_path: Path) -> None:
    """At vmalert's first evaluation the rules read no threshold (none was written yet): the
    hold, and its job's, is unknown, never dropped from busy + idle + unknown."""
    edited = tmp_path / "ledger-no-threshold.yml"
    edited.write_text(LEDGER.read_text().replace("expr: vector(0.05)", "expr: vector(0.05) < 0"))
    test = tmp_path / "no-threshold.test.yml"
    kinds = {"held": True, "busy": False, "idle": False, "unknown": True,
             "attributed_held": True, "attributed_unknown": True}
    test.write_text(yaml.safe_dump(_count_test(edited, kinds, False)))
    assert "SUCCESS" in promtool("test", "rules", str(test))


def test_the_idle_threshold_is_set_in_one_place(tmp_path: Path) -> None:
    """The threshold is one record: the shipped rules compare activity with it and nothing
    else, and editing its number as docs/ledger.md says moves busy, idle, jobs and the alert."""
    rules = yaml.safe_load(LEDGER.read_text())["groups"]
    exprs = {rule.get("record") or rule.get("alert"): rule["expr"] for g in rules for rule in g["rules"]}
    assert [name for name, expr in exprs.items() if "0.05" in expr] == [queries.IDLE_THRESHOLD_RECORD]
    assert exprs[queries.IDLE_THRESHOLD_RECORD] == "vector(0.05)"
    for threshold, idle in (("0.05", False), ("0.5", True)):
        edited = tmp_path / f"ledger-{threshold}.yml"
        edited.write_text(LEDGER.read_text().replace("expr: vector(0.05)", f"expr: vector({threshold})"))
        test = tmp_path / f"threshold-{threshold}.test.yml"
        kinds = {kind: kind.endswith("idle") == idle
                 for kind in ("busy", "idle", "attributed_busy", "attributed_idle")}
        test.write_text(yaml.safe_dump(_count_test(edited, kinds, idle)))
        assert "SUCCESS" in promtool("test", "rules", str(test))
