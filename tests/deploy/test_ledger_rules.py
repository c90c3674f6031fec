"""The ledger's recording rules, checked and unit-tested by Prometheus's own promtool."""

from __future__ import annotations

import yaml

from tests.deploy.artifacts import REPO
from tests.deploy.test_alert_rules import promtool

LEDGER = REPO / "prometheus" / "hwinfo-ledger.yml"
LEDGER_TESTS = REPO / "prometheus" / "hwinfo-ledger.test.yml"


def test_promtool_check_rules_passes() -> None:
    rules = sum(len(g["rules"]) for g in yaml.safe_load(LEDGER.read_text())["groups"])
    assert rules == 23  # the ledger's records, the attribution records and the alert
    assert f"SUCCESS: {rules} rules found" in promtool("check", "rules", str(LEDGER))


def test_apportioning_on_a_machine_whose_truth_is_known() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(LEDGER_TESTS))


def test_attribution_on_a_machine_whose_truth_is_known() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(REPO / "prometheus" / "hwinfo-ledger-attribution.test.yml"))
