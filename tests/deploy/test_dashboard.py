"""The Grafana dashboards: importable, portable between Grafanas and fleets, and complete."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.artifacts import (
    BUILTINS,
    DASHBOARDS,
    LAB_DASHBOARD,
    LABEL_VALUES,
    VARIABLE,
    dashboard,
    panels,
    queries,
    rows,
    variable_query,
    variables,
)

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

# Row -> panels the issues ask for (more may follow), per dashboard.
REQUIRED = {
    "Fleet overview": [
        "Hosts",
        "GPUs",
        "Busy GPUs",
        "Idle GPUs",
        "Idle GPUs holding memory",
        "Open health problems",
    ],
    "GPUs": [
        "GPU utilization",
        "GPU memory used",
        "Temperature",
        "Power draw",
        "SM clock",
        "Throttled GPUs by reason",
        "PCIe link: current vs maximum",
    ],
    "MIG": ["MIG devices", "Free MIG capacity by profile"],
    "Users": ["GPU memory by user", "GPU processes by user"],
    "Host": [
        "CPU",
        "ML-relevant CPU flags",
        "CPU busy",
        "Load per logical CPU",
        "Memory in use",
        "Swap in use",
    ],
    "Health": [
        "Lost GPUs",
        "GPUs with XIDs",
        "XID errors by code",
        "GPUs with uncorrectable ECC errors",
        "Remapped rows",
        "Health by GPU",
    ],
    "hwinfo exporter": ["Collection time by source", "Age of the data", "Stalled collections"],
}
LAB_REQUIRED = {
    "GPU-hours in the range": [
        "Held GPU-hours by user",
        "Busy, idle-held and unknown GPU-hours by user",
        "Mean utilization while held",
        "Cost by user",
        "Energy by user",
    ],
    "Free now": ["Free GPUs", "Idle MIG devices", "MIG instances that can still be created, by profile"],
    "Fleet": ["Fleet", "Who holds each GPU"],
}

# Anything that names a particular machine: an IP address, a host name, a port.
HARD_CODED = [
    re.compile(r"\b\d{1,3}(\.\d{1,3}){3}\b"),
    re.compile(r"localhost|\.local\b|\.example\b|\.org\b|\.com\b"),
    re.compile(r":\d{2,5}\b"),
    re.compile(r"\b(instance|job|hostname)\s*(=|=~|!=|!~)\s*\"(?!\$)"),
]

BOARD = dashboard()


@pytest.fixture(params=DASHBOARDS, ids=lambda path: path.name)
def board(request: pytest.FixtureRequest) -> dict[str, Any]:
    return dashboard(request.param)


def test_it_imports_through_the_ui(board: dict[str, Any]) -> None:
    (source,) = board["__inputs"]
    assert source["type"] == "datasource" and source["pluginId"] == "prometheus"
    required = {(r["type"], r["id"]) for r in board["__requires"]}
    assert {("grafana", "grafana"), ("datasource", "prometheus")} <= required
    used = {p["type"] for p in panels(board)}
    assert used <= {i for t, i in required if t == "panel"}, "panel plugins missing in __requires"
    assert board["id"] is None and board["uid"] and board["title"]
    assert board["schemaVersion"] >= 36  # Grafana 9.x and later; 39 is Grafana 10.x


def test_the_data_source_is_a_variable(board: dict[str, Any]) -> None:
    var = variables(board)["datasource"]
    assert var["type"] == "datasource" and var["query"] == "prometheus"
    # Filled in by the import wizard; provisioning falls back to a Prometheus data source.
    assert var["current"].get("value") in (None, "${DS_PROMETHEUS}")
    for panel in panels(board):
        assert panel["datasource"] == DATASOURCE, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]
    for var in variables(board).values():
        if var["type"] == "query":
            assert var["datasource"] == DATASOURCE, var["name"]


@pytest.mark.parametrize("name", ["job", "instance", "gpu"])
def test_host_and_gpu_variables_come_from_label_values(name: str) -> None:
    var = variables(BOARD)[name]
    assert var["type"] == "query"
    match = LABEL_VALUES.match(variable_query(var))
    assert match and match.group("label") == name, variable_query(var)
    assert var["multi"] and var["includeAll"] and var["allValue"] == ".*"


def test_gpu_choices_follow_the_chosen_hosts() -> None:
    assert "$instance" in variable_query(variables(BOARD)["gpu"])
    assert "$job" in variable_query(variables(BOARD)["instance"])


def test_no_query_names_a_host_ip_or_port(board: dict[str, Any]) -> None:
    texts = [(title, expr) for title, expr in queries(board)]
    texts += [(f"variable {n}", variable_query(v)) for n, v in variables(board).items()]
    for title, expr in texts:
        for pattern in HARD_CODED:
            assert not pattern.search(expr), f"{title}: {pattern.pattern} in {expr!r}"


def test_every_query_follows_the_variables(board: dict[str, Any]) -> None:
    for title, expr in queries(board):
        assert 'instance=~"$instance"' in expr and 'job=~"$job"' in expr, title
        if "gpu" in variables(board) and re.search(r"\bhwinfo_(gpu|mig)_", expr):
            assert 'gpu=~"$gpu"' in expr, title
        for name in VARIABLE.findall(expr):
            assert name in variables(board) or name in BUILTINS, f"{title}: ${name}"


def test_every_panel_has_a_title_a_description_and_a_query(board: dict[str, Any]) -> None:
    ids = set()
    for panel in panels(board):
        assert panel.get("title"), panel
        assert panel.get("description"), panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target.get("expr", "").strip(), panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        ids.add(panel["id"])
        pos = panel["gridPos"]
        assert 0 <= pos["x"] and pos["x"] + pos["w"] <= 24 and pos["h"] > 0, panel["title"]
    row_ids = {p["id"] for p in board["panels"] if p["type"] == "row"}
    assert len(ids) == len(list(panels(board))) and not ids & row_ids, "panel ids repeat"


@pytest.mark.parametrize(("path", "required"), [(DASHBOARDS[0], REQUIRED), (LAB_DASHBOARD, LAB_REQUIRED)],
                         ids=["hwinfo.json", "lab.json"])
def test_the_rows_the_issues_ask_for_are_there(path: Path, required: dict[str, list[str]]) -> None:
    present = rows(dashboard(path))
    assert list(present) == list(required), "rows missing or out of order"
    for row, titles in required.items():
        have = {p["title"] for p in present[row]}
        assert set(titles) <= have, f"{row}: missing {sorted(set(titles) - have)}"


def test_panels_do_not_overlap(board: dict[str, Any]) -> None:
    # The open dashboard, then each collapsed row as it looks when opened.
    layouts = [board["panels"]] + [r["panels"] for r in board["panels"] if r.get("collapsed")]
    for layout in layouts:
        taken: dict[tuple[int, int], str] = {}
        for panel in layout:
            pos = panel["gridPos"]
            for x in range(pos["x"], pos["x"] + pos["w"]):
                for y in range(pos["y"], pos["y"] + pos["h"]):
                    other = taken.setdefault((x, y), panel["title"])
                    assert other == panel["title"], f"{panel['title']} overlaps {other}"
