"""A real Prometheus scrapes a real `hwinfo serve`: every dashboard query and alert rule runs.

Two short-lived stacks (hwinfo on a simulated machine + Prometheus scraping it every second):
a healthy DGX A100 with MIG, where every dashboard query must return data and no alert
expression may return anything, and `faults-demo`, where exactly the faulty GPUs must show up
in the expressions of the matching alerts. Alert expressions are evaluated directly, so their
`for:` durations do not make the test wait.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from conftest import require_tool

from hwinfo.model.claims import Request
from hwinfo.run.claimdir import Directory
from tests.deploy.artifacts import (
    LABEL_VALUES,
    METRIC_NAME,
    alert_rules,
    dashboard,
    metric_names_used,
    queries,
    substitute,
    variable_query,
    variables,
)
from tests.deploy.prometheus_stack import (
    Stack,
    assert_every_query_answers,
    prometheus_scraping,
    stat_values,
    wait_for,
)
from tests.exporter.serving import serving
from tests.fixtures.cgroups import attributed_tree
from tests.fixtures.job_cgroups import SLURM_V2, write_host
from tests.fixtures.machines import MACHINES, shared_tree, write_tree

SCRAPES_BEFORE_QUERYING = 3  # so that rate() and increase() over [1m] have samples


# GPUs from the simulator; the host from a fixture tree of a 2-socket server, so that the
# host panels do not depend on the machine that runs the tests (a VM may lack NUMA or cpufreq).
SCENARIOS = {
    "healthy": ("--simulate", "dgx-a100-mig", "--process-metrics", "--interval", "0.5"),
    "faulty": ("--simulate", "faults-demo", "--interval", "0.2"),
}
HOST_TREE = "x86-2s-smt"


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    """Both stacks, started together: Prometheus takes ~5 s to scrape a new target at all."""
    require_tool("prometheus")
    with ExitStack() as running:
        started = {}
        for name, args in SCENARIOS.items():
            url = running.enter_context(serving(*args, "--root", str(shared_tree(HOST_TREE))))
            workdir = tmp_path_factory.mktemp(name)
            started[name] = running.enter_context(prometheus_scraping(url, workdir))
        for stack in started.values():
            stack.wait_until_scraped()
        # faults-demo loses GPU 2 after 3 samples (with XID 79): long done, but be sure.
        wait_for("the lost GPU", lambda: started["faulty"].query("hwinfo_gpu_lost == 1"))
        yield started


@pytest.fixture
def healthy(stacks: dict[str, Stack]) -> Stack:
    return stacks["healthy"]


@pytest.fixture
def faulty(stacks: dict[str, Stack]) -> Stack:
    return stacks["faulty"]


BOARD = dashboard()
RULES = {rule["alert"]: rule for rule in alert_rules()}


def test_every_dashboard_query_returns_data_on_a_healthy_fleet(healthy: Stack) -> None:
    with healthy.logs_on_failure():
        assert_every_query_answers(healthy, BOARD)


def test_every_dashboard_variable_has_values(healthy: Stack) -> None:
    with healthy.logs_on_failure():
        for name, var in variables(BOARD).items():
            if var["type"] != "query":
                continue
            match = LABEL_VALUES.match(variable_query(var))
            assert match, f"${name}: {variable_query(var)}"
            params = [("match[]", substitute(match.group("match"), BOARD))]
            values = healthy.api(f"/api/v1/label/{match.group('label')}/values", params)
            assert values, f"${name} has no values"
        gpus = healthy.api("/api/v1/label/gpu/values", [("match[]", "hwinfo_gpu_info")])
        assert sorted(gpus) == [str(i) for i in range(8)]


def alert_hits(stack: Stack) -> dict[str, list[dict[str, str]]]:
    """Alert name -> the label sets its expression returns now (for: not waited for)."""
    return {name: [s["metric"] for s in stack.query(rule["expr"])] for name, rule in RULES.items()}


def test_no_alert_expression_matches_on_a_healthy_fleet(healthy: Stack) -> None:
    with healthy.logs_on_failure():
        hits = {name: series for name, series in alert_hits(healthy).items() if series}
        assert not hits, f"alerts that would fire on a healthy DGX: {hits}"


def test_prometheus_loads_and_evaluates_every_rule(healthy: Stack) -> None:
    def evaluated() -> list[dict[str, Any]]:
        groups = healthy.api("/api/v1/rules", {})["groups"]
        loaded = [rule for group in groups for rule in group["rules"]]
        assert all(rule["health"] != "unknown" for rule in loaded), "not evaluated yet"
        return loaded

    with healthy.logs_on_failure():
        loaded = wait_for("every rule to be evaluated once", evaluated)
        assert sorted(rule["name"] for rule in loaded) == sorted(RULES)
        bad = {rule["name"]: rule.get("lastError") for rule in loaded if rule["health"] != "ok"}
        assert not bad, bad


# faults-demo: alert -> the GPUs its expression must return (every other alert: none).
EXPECTED_ON_FAULTS = {
    "HwinfoGpuLost": {"2"},  # fell off the bus after 3 samples
    "HwinfoGpuXidFault": {"2"},  # XID 79
    "HwinfoGpuXidEvent": {"0"},  # XID 13
    "HwinfoGpuUncorrectableEccErrors": {"0"},
    "HwinfoGpuRowRemapPending": {"0"},
    "HwinfoGpuPcieLinkWidthDegraded": {"1"},  # x8 of x16
    "HwinfoGpuPcieLinkGenerationDegraded": {"1"},  # gen 3 of 4, busy
    "HwinfoGpuThermalThrottling": {"3"},
    "HwinfoGpuTemperatureNearSlowdown": {"3"},
    "HwinfoGpuPowerCapped": {"3"},
}


def test_the_alerts_of_each_fault_match_exactly_the_faulty_gpus(faulty: Stack) -> None:
    with faulty.logs_on_failure():
        got = {
            name: {labels.get("gpu", "(host)") for labels in series}
            for name, series in alert_hits(faulty).items()
        }
        expected = {name: EXPECTED_ON_FAULTS.get(name, set()) for name in RULES}
        assert got == expected
        xids = {s["metric"]["xid"] for s in faulty.query(RULES["HwinfoGpuXidFault"]["expr"])}
        assert xids == {"79"}


def test_every_dashboard_query_runs_on_a_faulty_machine(faulty: Stack) -> None:
    with faulty.logs_on_failure():
        for _title, expr in queries(BOARD):
            faulty.query(substitute(expr, BOARD))


def scraped_names(text: str) -> set[str]:
    return {
        line.split("{")[0].split(" ")[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_every_metric_name_in_grafana_and_prometheus_is_exported(
    healthy: Stack, faulty: Stack, tmp_path: Path
) -> None:
    exported = scraped_names(healthy.scrape()) | scraped_names(faulty.scrape())
    # Page retirement exists only before Ampere (a T4 has it), GPM activity only from Hopper
    # (an H200 in MIG mode has it per GPU instance): one sample each, same renderer.
    for scenario in ("cloud-t4", "h200-mig"):
        textfile = tmp_path / f"{scenario}.prom"
        subprocess.run(
            [sys.executable, "-m", "hwinfo", "export", "--simulate", scenario,
             "--textfile", str(textfile)],
            check=True, capture_output=True, timeout=60,
        )
        exported |= scraped_names(textfile.read_text())
    # Series per job, pod and container exist where a GPU process's cgroup names one, and a
    # claim's where `hwinfo run` holds a GPU.
    claims = tmp_path / "claims"
    claims.mkdir(mode=0o1777)
    report = subprocess.run(
        [sys.executable, "-m", "hwinfo", "report", "--simulate", "workstation-geforce",
         "--format", "json"], check=True, capture_output=True, text=True, timeout=60)
    directory = Directory(str(claims))
    claim = directory.add(".claim", Request(1, None, None, False), ["python", "train.py"],
                          [json.loads(report.stdout)["gpu"]["gpus"][0]["uuid"]])
    try:
        attributed = subprocess.run(
            [sys.executable, "-m", "hwinfo", "export", "--simulate", "workstation-geforce",
             "--root", str(attributed_tree(tmp_path / "attributed")), "--textfile", "-"],
            check=True, capture_output=True, text=True, timeout=60,
            env={**os.environ, "HWINFO_CLAIMS_DIR": str(claims)})
    finally:
        claim.release()
        directory.close()
    exported |= scraped_names(attributed.stdout)
    # A job's own resources, where its cgroup keeps them (a Slurm job on cgroup v2).
    jobs = write_host(SLURM_V2, write_tree(MACHINES["x86-2s-smt"], tmp_path / "jobs"))
    scenario = tmp_path / "job.json"
    scenario.write_text(json.dumps({"format": 1, "description": "a Slurm job", "gpus": [
        {"board": "A100-SXM4-80GB", "processes": [{"pid": SLURM_V2.pid, "used_memory_mib": 1024}]}]}))
    job = subprocess.run([sys.executable, "-m", "hwinfo", "export", "--simulate", str(scenario),
                          "--root", str(jobs), "--textfile", "-"],
                         check=True, capture_output=True, text=True, timeout=60)
    exported |= scraped_names(job.stdout)
    assert all(METRIC_NAME.fullmatch(name) for name in exported if name.startswith("hwinfo"))
    used = metric_names_used()
    assert len(used) > 50
    unknown = {name: files for name, files in used.items() if name not in exported}
    assert not unknown, f"metric names hwinfo does not export: {unknown}"


def test_the_overview_counts_the_dgx_right(healthy: Stack) -> None:
    # 8 GPUs: 6 in MIG mode, 5 of them with processes; GPUs 6 and 7 busy without MIG.
    numbers = stat_values(healthy, BOARD, "Fleet overview")
    assert 0 < numbers.pop("GPU memory in use") < 1
    assert numbers == {
        "Hosts": 1,
        "Exporters down": 0,
        "GPUs": 8,
        "Busy GPUs": 7,
        "Idle GPUs": 1,
        "Idle GPUs holding memory": 0,
        "Open health problems": 0,
    }
    assert set(stat_values(healthy, BOARD, "Health").values()) == {0}


def test_the_health_row_counts_the_faults(faulty: Stack) -> None:
    assert stat_values(faulty, BOARD, "Health") == {
        "Lost GPUs": 1,  # GPU 2
        "GPUs missing since yesterday": 0,  # a lost GPU is still listed
        "GPUs with XIDs": 2,  # 13 on GPU 0, 79 on GPU 2
        "GPUs with uncorrectable ECC errors": 1,  # GPU 0
        "Memory repairs waiting for a reset": 1,  # GPU 0
        "Row remap failures": 0,
        "PCIe links below max width": 1,  # GPU 1
        "GPUs slowed by heat or hardware": 1,  # GPU 3
    }
    assert stat_values(faulty, BOARD, "Fleet overview")["Open health problems"] == 4
