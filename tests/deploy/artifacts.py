"""The deployment files under grafana/ and prometheus/, read the way the deploy tests need them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "grafana" / "hwinfo.json"
LAB_DASHBOARD = REPO / "grafana" / "lab.json"  # the ledger's
README = REPO / "README.md"
# The README and the reference pages under docs/, where most examples live.
DOCUMENTATION = [README, *sorted((REPO / "docs").glob("*.md"))]
DASHBOARDS = (DASHBOARD, LAB_DASHBOARD)
ALERTS = REPO / "prometheus" / "hwinfo-alerts.yml"
ALERT_TESTS = REPO / "prometheus" / "hwinfo-alerts.test.yml"
SCRAPE_CONFIG = REPO / "prometheus" / "prometheus.yml"
DEPLOY_DIRS = (REPO / "grafana", REPO / "prometheus")

METRIC_NAME = re.compile(r"\bhwinfo_[a-z0-9_]+")
# `$name` or `${name}` (Grafana also knows `${name:format}`, which the dashboard does not use).
VARIABLE = re.compile(r"\$\{?(\w+)\}?")
LABEL_VALUES = re.compile(r"^label_values\((?:(?P<match>.+),\s*)?(?P<label>\w+)\)$", re.DOTALL)

# What Grafana puts in for its built-in variables, close to what it would for a short range.
BUILTINS = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "5m",
    "__range_s": "300",
}


def dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    return json.loads(path.read_text())


def rows(board: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Row title -> the panels under it, whether the row is collapsed (nested) or not."""
    out: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] | None = None
    for panel in board["panels"]:
        if panel["type"] == "row":
            current = out.setdefault(panel["title"], [])
            current.extend(panel.get("panels", []))
        else:
            assert current is not None, f"panel {panel.get('title')!r} comes before any row"
            current.append(panel)
    return out


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel that is not a row."""
    for members in rows(board).values():
        yield from members


def queries(board: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title + refId, PromQL as written) for every query of every panel."""
    for panel in panels(board):
        for target in panel.get("targets", []):
            yield f"{panel['title']} [{target.get('refId')}]", target.get("expr", "")


def variables(board: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in board["templating"]["list"]}


def variable_query(variable: dict[str, Any]) -> str:
    query = variable.get("query")
    return query.get("query", "") if isinstance(query, dict) else str(query or "")


def substitute(expr: str, board: dict[str, Any]) -> str:
    """A query as Grafana would send it with every variable set to All (a text box to its default)."""
    names = variables(board)

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in BUILTINS:
            return BUILTINS[name]
        assert name in names, f"unknown variable ${name} in {expr!r}"
        if names[name]["type"] in ("textbox", "constant"):  # a number the user types
            return str(names[name]["query"])
        return names[name].get("allValue") or ".*"

    return VARIABLE.sub(value, expr)


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def metric_names_used() -> dict[str, list[str]]:
    """hwinfo metric name -> the files under grafana/ and prometheus/ that use it."""
    used: dict[str, list[str]] = {}
    for directory in DEPLOY_DIRS:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                for name in set(METRIC_NAME.findall(path.read_text())):
                    used.setdefault(name, []).append(str(path.relative_to(REPO)))
    return used
