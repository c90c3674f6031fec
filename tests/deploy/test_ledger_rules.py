"""The ledger's recording rules, checked and unit-tested by Prometheus's own promtool."""

from __future__ import annotations

from tests.deploy.artifacts import REPO
from tests.deploy.test_alert_rules import promtool

LEDGER = REPO / "prometheus" / "hwinfo-ledger.yml"
LEDGER_TESTS = REPO / "prometheus" / "hwinfo-ledger.test.yml"


def test_promtool_check_rules_passes() -> None:
    assert "SUCCESS: 17 rules found" in promtool("check", "rules", str(LEDGER))


def test_apportioning_on_a_machine_whose_truth_is_known() -> None:
    assert "SUCCESS" in promtool("test", "rules", str(LEDGER_TESTS))
