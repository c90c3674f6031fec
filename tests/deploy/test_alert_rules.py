"""The alert rules and the scrape config, checked by Prometheus's own promtool."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from conftest import require_tool

from tests.deploy.artifacts import ALERT_TESTS, ALERTS, REPO, SCRAPE_CONFIG, alert_rules


def promtool(*args: str) -> str:
    result = subprocess.run(
        [require_tool("promtool"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"promtool {' '.join(args)} failed:\n{output}"
    return output


def test_promtool_check_rules_passes() -> None:
    output = promtool("check", "rules", str(ALERTS))
    assert f"SUCCESS: {len(alert_rules())} rules found" in output, output


def test_promtool_unit_tests_pass() -> None:
    output = promtool("test", "rules", str(ALERT_TESTS))
    assert "SUCCESS" in output, output


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    cases: dict[str, set[str]] = defaultdict(set)
    suite = yaml.safe_load(ALERT_TESTS.read_text())
    assert suite["rule_files"] == [ALERTS.name]
    for group in suite["tests"]:
        for case in group.get("alert_rule_test", []):
            cases[case["alertname"]].add("fires" if case.get("exp_alerts") else "quiet")
    names = {rule["alert"] for rule in alert_rules()}
    missing = {
        name: sorted({"fires", "quiet"} - cases[name])
        for name in sorted(names)
        if cases[name] != {"fires", "quiet"}
    }
    assert not missing, f"alerts without a firing or a quiet test case: {missing}"
    assert set(cases) <= names, f"tests of alerts that do not exist: {set(cases) - names}"


def test_every_alert_tells_the_admin_what_to_do() -> None:
    rules = alert_rules()
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names)), "alert names repeat"
    for rule in rules:
        name = rule["alert"]
        assert re.fullmatch(r"Hwinfo[A-Z][A-Za-z]+", name), name
        assert rule.get("labels", {}).get("severity") in ("critical", "warning"), name
        annotations = rule.get("annotations", {})
        assert annotations.get("summary", "").strip(), f"{name} has no summary"
        # A description says what happened and what to do about it: more than a sentence.
        assert len(annotations.get("description", "")) > 150, f"{name}: description too short"
        assert "{{ $labels.instance }}" in annotations["summary"], f"{name}: which host?"


def test_the_scrape_config_is_valid_and_loads_the_alerts_and_the_ledger() -> None:
    output = promtool("check", "config", str(SCRAPE_CONFIG))
    assert "SUCCESS: 2 rule files found" in output, output
    config = yaml.safe_load(SCRAPE_CONFIG.read_text())
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == "hwinfo"]
    targets = [t for group in job["static_configs"] for t in group["targets"]]
    assert targets and all(t.endswith(":9110") for t in targets), targets


def test_the_scrape_config_takes_a_trial_lab_s_5_second_interval(tmp_path: Path) -> None:
    """docs/ledger-commands.md's trial lab scrapes every 5 s: promtool must accept the file
    with only that changed (a scrape_timeout above the interval is refused)."""
    text, changed = re.subn(r"^  scrape_interval: 15s$", "  scrape_interval: 5s",
                            SCRAPE_CONFIG.read_text(), flags=re.MULTILINE)
    assert changed == 1
    for rules in ("prometheus.yml", "hwinfo-alerts.yml", "hwinfo-ledger.yml"):
        (tmp_path / rules).write_text(text if rules == "prometheus.yml"
                                      else (REPO / "prometheus" / rules).read_text())
    output = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert "SUCCESS: 2 rule files found" in output, output


# The commented-out TLS and basic auth lines of prometheus.yml, once uncommented.
_TLS_AND_AUTH = re.compile(
    r"^(\s*)# (scheme: https|tls_config:|  ca_file: .*|basic_auth:|  username: .*|  password_file: .*)$",
    re.MULTILINE,
)


def test_the_commented_tls_and_basic_auth_example_is_valid(tmp_path: Path) -> None:
    text = SCRAPE_CONFIG.read_text()
    variant = _TLS_AND_AUTH.sub(r"\1\2", text)
    files = {}
    for original in re.findall(r"(?:ca_file|password_file): (\S+)", variant):
        files[original] = tmp_path / Path(original).name
        files[original].write_text("secret\n")
        variant = variant.replace(original, str(files[original]))
    for rules in ("hwinfo-alerts.yml", "hwinfo-ledger.yml"):
        (tmp_path / rules).write_text((REPO / "prometheus" / rules).read_text())
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(variant)

    (job,) = yaml.safe_load(variant)["scrape_configs"]
    assert job["scheme"] == "https"
    assert job["tls_config"]["ca_file"] == str(files["/etc/prometheus/hwinfo-ca.crt"])
    assert job["basic_auth"]["username"] == "prometheus"
    assert "password_file" in job["basic_auth"]
    output = promtool("check", "config", str(config_file))
    assert "is valid prometheus config file syntax" in output, output


@pytest.mark.parametrize("path", [ALERTS, ALERT_TESTS, SCRAPE_CONFIG], ids=lambda p: p.name)
def test_yaml_files_parse(path: Path) -> None:
    assert yaml.safe_load(path.read_text())
