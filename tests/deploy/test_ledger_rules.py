"""The ledger's recording rules, checked and unit-tested by Prometheus's own promtool."""

from __future__ import annotations

import yaml

from hwinfo.ledger import job_resources, queries
from tests.deploy.artifacts import REPO
from tests.deploy.test_alert_rules import promtool

LEDGER = REPO / "prometheus" / "hwinfo-ledger.yml"
LEDGER_TESTS = REPO / "prometheus" / "hwinfo-ledger.test.yml"


def test_promtool_check_rules_passes() -> None:
    rules = sum(len(g["rules"]) for g in yaml.safe_load(LEDGER.read_text())["groups"])
    # The ledger's records, the attribution records, the alert, the jobs' own resources, roll-ups.
    assert rules == 72
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
