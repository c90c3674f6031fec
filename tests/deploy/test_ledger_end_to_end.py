"""`hwinfo usage` and `hwinfo fleet` against a real Prometheus with the shipped ledger rules,
scraping real daemons whose truth is known (tests/deploy/ledger_stack.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.ledger_stack import LAB, lab
from tests.deploy.prometheus_stack import Stack, wait_for

RULE_SAMPLES = 8  # evaluations of the ledger rules before the commands are asked


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with lab(tmp_path_factory.mktemp("ledger")) as (running, _):
        wait_for(f"{RULE_SAMPLES} evaluations of the ledger rules", lambda: running.query(
            f"count_over_time(hwinfo:ledger_held:share[1m]) >= {RULE_SAMPLES}"), timeout=40)
        yield running


def hwinfo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True, check=False,
                          text=True, timeout=60)


def answer(*args: str) -> Any:
    done = hwinfo(*args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_usage_apportions_held_time_between_users(stack: Stack) -> None:
    document = answer("usage", "--prometheus", stack.prometheus, "--since", "1m")
    rows = {row["user"]: row for row in document["rows"]}
    assert set(rows) == {"alice", "erin"}
    alice, erin = rows["alice"], rows["erin"]
    # alice holds 8 GPUs for as long as erin holds 1: 8 times her GPU-seconds, give or take
    # the evaluation in which one host was scraped and the other not yet.
    assert 7 <= alice["held_gpu_seconds"] / erin["held_gpu_seconds"] <= 9
    assert alice["idle_held_gpu_seconds"] == 0 and alice["busy_gpu_seconds"] > 0
    assert erin["busy_gpu_seconds"] == 0 and erin["idle_held_gpu_seconds"] > 0
    assert erin["idle_held_gpu_seconds"] == erin["held_gpu_seconds"]
    assert alice["mean_utilization_ratio"] == pytest.approx(0.9)
    assert erin["mean_utilization_ratio"] == 0
    assert erin["peak_memory_bytes"] == 9000 * 2**20
    # alice's GPUs draw 300 W each: energy is power x held time.
    assert alice["energy_joules"] == pytest.approx(300 * alice["held_gpu_seconds"])
    totals = document["totals"]
    assert totals["held_gpu_seconds"] == pytest.approx(
        alice["held_gpu_seconds"] + erin["held_gpu_seconds"])
    assert "cost" not in totals


def test_usage_by_host_and_model(stack: Stack) -> None:
    by_host = answer("usage", "--prometheus", stack.prometheus, "--since", "1m", "--by", "host")
    assert len(by_host["rows"]) == 2 and all(row["host"] for row in by_host["rows"])
    by_model = answer("usage", "--prometheus", stack.prometheus, "--since", "1m", "--by", "model")
    assert [row["model"] for row in by_model["rows"]] == ["NVIDIA A100-SXM4-80GB"]


def test_usage_costs_and_advice(stack: Stack, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yml"
    prices.write_text("currency: EUR\ngpu_hour:\n  NVIDIA A100-SXM4-80GB: 3600\nkwh: 0\n")
    document = answer("usage", "--prometheus", stack.prometheus, "--since", "1m",
                      "--prices", str(prices), "--advise")
    rows = {row["user"]: row for row in document["rows"]}
    # 3600 per GPU-hour is 1 per GPU-second.
    assert rows["erin"]["cost"] == pytest.approx(rows["erin"]["held_gpu_seconds"])
    assert document["currency"] == "EUR"
    # No GPU of this lab is in MIG mode, so no profile data: the advice says so, never guesses.
    assert all(a["profile"] is None for a in document["advice"])
    assert any("no MIG profile data for NVIDIA A100-SXM4-80GB" in n for n in document["notes"])


def test_usage_text_and_csv(stack: Stack) -> None:
    text = hwinfo("usage", "--prometheus", stack.prometheus, "--since", "1m")
    assert text.returncode == 0, text.stderr
    assert "alice" in text.stdout and "(total)" in text.stdout
    csv = hwinfo("usage", "--prometheus", stack.prometheus, "--since", "1m", "--format", "csv")
    lines = csv.stdout.splitlines()
    assert lines[0].startswith("user,held_gpu_seconds,busy_gpu_seconds,idle_held_gpu_seconds")
    assert [line.split(",")[0] for line in lines[1:]] == ["alice", "erin", "(total)"]


def test_fleet_offers_the_free_gpu_and_only_it(stack: Stack) -> None:
    document = answer("fleet", "--prometheus", stack.prometheus, "--need-memory", "40GiB")
    assert {host["state"] for host in document["hosts"]} == {"up"}
    free = [(h["instance"], g["index"]) for h in document["hosts"] for g in h["gpus"] if g["free"]]
    assert len(free) == 1 and free[0][1] == "1"
    assert [(fit["instance"], fit["gpu"], fit["kind"]) for fit in document["fits"]] == [
        (free[0][0], "1", "gpu")]
    too_big = answer("fleet", "--prometheus", stack.prometheus, "--need-memory", "81GiB")
    assert too_big["fits"] == []
    none_of_it = answer("fleet", "--prometheus", stack.prometheus, "--model", "H100")
    assert none_of_it["hosts"] == []


def test_fleet_text_names_holders(stack: Stack) -> None:
    done = hwinfo("fleet", "--prometheus", stack.prometheus, "--need-memory", "40GiB")
    assert done.returncode == 0, done.stderr
    assert "erin 8.79 GiB" in done.stdout and "free" in done.stdout
    assert "Where 40.0 GiB fits now" in done.stdout


def test_a_host_that_stops_answering_is_down_and_never_free(tmp_path: Path) -> None:
    with lab(tmp_path, {"idle": LAB["idle"]}) as (running, daemons):
        first = answer("fleet", "--prometheus", running.prometheus, "--need-memory", "1GiB")
        assert [fit["gpu"] for fit in first["fits"]] == ["1"]
        os.kill(daemons["idle"].pid, signal.SIGSTOP)  # scrapes now time out
        try:
            def down() -> Any:
                document = answer("fleet", "--prometheus", running.prometheus,
                                  "--need-memory", "1GiB")
                return document if document["hosts"][0]["state"] == "down" else None

            assert wait_for("the host to be down", down, timeout=30)["fits"] == []
        finally:
            os.kill(daemons["idle"].pid, signal.SIGCONT)
