"""The ledger's recording rules, checked and unit-tested by Prometheus's own promtool."""

from __future__ import annotations

import yaml

from hwinfo.ledger import queries
from tests.deploy.artifacts import REPO
from tests.deploy.test_alert_rules import promtool

LEDGER = REPO / "prometheus" / "hwinfo-ledger.yml"
LEDGER_TESTS = REPO / "prometheus" / "hwinfo-ledger.test.yml"


def test_promtool_check_rules_passes() -> None:
    rules = sum(len(g["rules"]) for g in yaml.safe_load(LEDGER.read_text())["groups"])
    assert rules == 42  # the ledger's records, the attribution records, the alert, roll-ups
    assert f"SUCCESS: {rules} rules found" in promtool("check", "rules", str(LEDGER))


def test_apportioning_on_a_machine_whose_truth_is_known() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(LEDGER_TESTS))


def test_attribution_on_a_machine_whose_truth_is_known() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(REPO / "prometheus" / "hwinfo-ledger-attribution.test.yml"))


def test_every_range_the_ledger_reads_has_its_hourly_roll_up() -> None:
    groups = {g["name"]: g for g in yaml.safe_load(LEDGER.read_text())["groups"]}
    hourly = groups["hwinfo-ledger-hourly"]
    assert hourly["interval"] == "1h"
    summed = [*queries.SHARE_RECORDS.values(), *queries.ATTRIBUTED_RECORDS.values(),
              queries.UNSEEN_RECORD, queries.EVALUATIONS_RECORD]
    assert {rule["record"] for rule in hourly["rules"]} == {
        f"{record}_1h" for record in summed} | {queries.GPUS_ROLLUP, *queries.PEAK_ROLLUPS.values()}
    for rule in hourly["rules"]:
        assert "[1h] offset 30s" in rule["expr"], rule["record"]
