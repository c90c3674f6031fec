"""`hwinfo usage` and `hwinfo fleet` against a real engine with the shipped ledger rules
(Prometheus, and VictoriaMetrics with vmalert), scraping real daemons whose truth is known
(tests/deploy/ledger_stack.py)."""

from __future__ import annotations

import functools
import os
import re
import shlex
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.artifacts import DOCUMENTATION, LAB_DASHBOARD, dashboard
from tests.deploy.ledger_stack import ENGINES, LAB, answer, hwinfo, lab, recorded_until
from tests.deploy.prometheus_stack import Stack, assert_every_query_answers, stat_values, wait_for

# The range the commands are asked about, all of it after the rules' first records: on
# VictoriaMetrics a new series is found a few seconds after it is first written
# (docs/ledger-engines.md). The fixture waits until the idle records have filled the range.
WINDOW = "15s"
RULE_SAMPLES = 20  # evaluations of the idle records before the commands are asked
IDLE_FOR = "2s"  # the idle alert's `for`, an hour as shipped


@pytest.fixture(scope="module", params=ENGINES)
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Stack]:
    with lab(tmp_path_factory.mktemp("ledger"), engine=request.param,
             **{"for: 1h": f"for: {IDLE_FOR}"}) as (running, _):
        wait_for(f"{RULE_SAMPLES} evaluations of the ledger rules", lambda: running.query(
            f"count_over_time(hwinfo:ledger_idle:share[1m]) >= {RULE_SAMPLES}"), timeout=60)
        yield running


def test_usage_apportions_held_time_between_users(stack: Stack) -> None:
    until = time.time()
    # Asked again until the range's last evaluation is written whole: vmalert writes a record
    # at about the moment VictoriaMetrics' latency offset shows its instant, and its records
    # one by one, so on a loaded machine `usage` can read held of the last evaluation and not
    # yet unknown (docs/ledger-engines.md).
    wait_for("usage to apportion the lab's held time", lambda: _apportions(stack, until), timeout=60)


def _apportions(stack: Stack, until: float) -> bool:
    """usage's figures of the WINDOW before `until` are the lab's (AssertionError: not yet)."""
    document = answer("usage", "--prometheus", stack.prometheus, "--since", WINDOW,
                      "--until", f"{until:.3f}")
    rows = {row["user"]: row for row in document["rows"]}
    assert [row["user"] for row in document["rows"]] == ["alice", "erin", "carol"]
    alice, erin, carol = rows["alice"], rows["erin"], rows["carol"]
    # alice holds 8 GPUs for as long as erin holds 1 and carol 3/7 of one, give or take the
    # evaluations in which one host was scraped and another not yet.
    assert alice["held_gpu_seconds"] / erin["held_gpu_seconds"] == pytest.approx(8, rel=0.15)
    assert carol["held_gpu_seconds"] / erin["held_gpu_seconds"] == pytest.approx(3 / 7, rel=0.15)
    # An A100's MIG device has no activity signal: carol's time is unknown, never idle.
    assert carol["unknown_gpu_seconds"] == carol["held_gpu_seconds"]
    assert carol["idle_held_gpu_seconds"] == carol["busy_gpu_seconds"] == 0
    assert carol["mean_utilization_ratio"] is None
    assert alice["idle_held_gpu_seconds"] == 0 and alice["busy_gpu_seconds"] > 0
    assert erin["busy_gpu_seconds"] == 0 and erin["idle_held_gpu_seconds"] > 0
    assert erin["idle_held_gpu_seconds"] == erin["held_gpu_seconds"]
    assert alice["mean_utilization_ratio"] == pytest.approx(0.9)
    assert erin["mean_utilization_ratio"] == 0
    assert erin["peak_memory_bytes"] == 9000 * 2**20
    # alice's GPUs draw 300 W each: energy is power x held time.
    assert alice["energy_joules"] == pytest.approx(300 * alice["held_gpu_seconds"])
    totals = document["totals"]
    assert totals["held_gpu_seconds"] == pytest.approx(sum(r["held_gpu_seconds"] for r in rows.values()))
    assert "cost" not in totals
    return True


def test_the_idle_alert_names_the_idle_holder_only(stack: Stack) -> None:
    def firing() -> list[dict[str, Any]]:
        alerts = stack.api("/api/v1/alerts", {})["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "HwinfoGpuIdleHeld"
                and a["state"] == "firing"]

    [alert] = wait_for(f"the idle alert to fire after {IDLE_FOR}", firing)
    assert (alert["labels"]["user"], alert["labels"]["gpu"]) == ("erin", "0")
    assert "erin holds GPU 0 on" in alert["annotations"]["summary"]


def test_usage_by_host_and_model(stack: Stack) -> None:
    by_host = answer("usage", "--prometheus", stack.prometheus, "--since", WINDOW, "--by", "host")
    assert len(by_host["rows"]) == 3 and all(row["host"] for row in by_host["rows"])
    by_model = answer("usage", "--prometheus", stack.prometheus, "--since", WINDOW, "--by", "model")
    assert [row["model"] for row in by_model["rows"]] == ["NVIDIA A100-SXM4-80GB"]


def test_usage_costs_and_advice(stack: Stack, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yml"
    prices.write_text("currency: EUR\ngpu_hour:\n  NVIDIA A100-SXM4-80GB: 3600\nkwh: 0\n")
    document = answer("usage", "--prometheus", stack.prometheus, "--since", WINDOW,
                      "--prices", str(prices), "--advise")
    rows = {row["user"]: row for row in document["rows"]}
    # 3600 per GPU-hour is 1 per GPU-second.
    assert rows["erin"]["cost"] == pytest.approx(rows["erin"]["held_gpu_seconds"])
    assert document["currency"] == "EUR"
    # Advice per hold. The MIG host exports the A100's profiles: alice's 39 GiB at 90 % fits
    # nothing smaller on any of her 8 GPUs; erin's GPU is idle: release it, which frees all
    # of her GPU-hours.
    advice = document["advice"]
    assert sorted({a["user"] for a in advice}) == ["alice", "erin"]  # carol is on MIG already
    alice = [a for a in advice if a["user"] == "alice"]
    assert sorted(a["gpu"] for a in alice) == [str(i) for i in range(8)]
    assert all(a["verdict"] == "none" and a["freed_gpu_seconds"] == 0 for a in alice)
    [erin] = [a for a in advice if a["user"] == "erin"]
    assert erin["verdict"] == "release"
    assert erin["freed_gpu_seconds"] == erin["held_gpu_seconds"]


def test_usage_text_and_csv(stack: Stack) -> None:
    text = hwinfo("usage", "--prometheus", stack.prometheus, "--since", WINDOW)
    assert text.returncode == 0, text.stderr
    assert "alice" in text.stdout and "(total)" in text.stdout
    csv = hwinfo("usage", "--prometheus", stack.prometheus, "--since", WINDOW, "--format", "csv")
    lines = csv.stdout.splitlines()
    assert lines[0].startswith("user,held_gpu_seconds,busy_gpu_seconds,idle_held_gpu_seconds")
    assert [line.split(",")[0] for line in lines[1:]] == ["alice", "erin", "carol", "(total)"]


def _places_in_listing(listing: Any, need: int) -> set[tuple[str, str, str, str | None]]:
    """Where `need` bytes fit, worked out from `fleet`'s listing as its docs say."""
    places: set[tuple[str, str, str, str | None]] = set()
    for host in listing["hosts"]:
        for gpu in (g for g in host["gpus"] if host["state"] == "up" and not g["lost"]):
            where = (host["instance"], gpu["index"])
            if gpu["free"] and (gpu["memory_free_bytes"] or 0) >= need:
                places.add((*where, "gpu", None))
            if gpu["mig_enabled"]:
                places |= {(*where, "mig_device", d["profile"]) for d in gpu["mig_devices"]
                           if d["free"] and (d["memory_total_bytes"] or 0) >= need}
                places |= {(*where, "mig_profile", p["name"]) for p in gpu["mig_profiles_free"]
                           if (p["memory_bytes"] or 0) >= need}
    return places


def test_fleet_offers_the_free_gpu_and_only_it(stack: Stack) -> None:
    listing = answer("fleet", "--prometheus", stack.prometheus)
    document = answer("fleet", "--prometheus", stack.prometheus, "--need-memory", "40GiB")
    assert {host["state"] for host in document["hosts"]} == {"up"}
    assert all("gpus" not in host for host in document["hosts"])
    free = [(h["instance"], g["index"]) for h in listing["hosts"] for g in h["gpus"] if g["free"]]
    assert len(free) == 1 and free[0][1] == 1
    assert [(fit["instance"], fit["gpu"], fit["kind"]) for fit in document["fits"]] == [
        (free[0][0], 1, "gpu")]
    # The engine's places are the listing's, for every size (the lab stands still).
    for size in (2**30, 9 * 2**30, 10 * 2**30, 20 * 2**30, 40 * 2**30):
        fits = answer("fleet", "--prometheus", stack.prometheus, "--need-memory", f"{size}B")
        assert {(f["instance"], f["gpu"], f["kind"], f["profile"]) for f in fits["fits"]} == \
            _places_in_listing(listing, size), size
    too_big = answer("fleet", "--prometheus", stack.prometheus, "--need-memory", "81GiB")
    assert too_big["fits"] == []
    # 9 GiB: the idle 1g.10gb first, then 1g profiles an admin could create, the free GPU last.
    small = answer("fleet", "--prometheus", stack.prometheus, "--need-memory", "9GiB")["fits"]
    assert (small[0]["kind"], small[0]["profile"]) == ("mig_device", "1g.10gb")
    assert small[-1]["kind"] == "gpu"
    assert {f["profile"] for f in small if f["kind"] == "mig_profile"} >= {"1g.10gb", "2g.20gb"}
    memory = [f["memory_bytes"] for f in small]
    assert memory == sorted(memory)
    none_of_it = answer("fleet", "--prometheus", stack.prometheus, "--model", "H100")
    assert none_of_it["hosts"] == []


def test_fleet_text_names_holders(stack: Stack) -> None:
    done = hwinfo("fleet", "--prometheus", stack.prometheus)
    assert done.returncode == 0, done.stderr
    assert "erin 8.79 GiB" in done.stdout and "free" in done.stdout
    assert "fits now" not in done.stdout
    fits = hwinfo("fleet", "--prometheus", stack.prometheus, "--need-memory", "40GiB")
    assert fits.returncode == 0, fits.stderr
    # alice's host and carol's are up and full: they are listed as offering nothing.
    assert "3 hosts: 3 up\n  offering nothing now:\n" in fits.stdout
    assert len(re.findall(r"^    127\.0\.0\.1:\d+  up, nothing that fits$", fits.stdout,
                          re.MULTILINE)) == 2, fits.stdout
    assert "\n\nWhere 40.0 GiB fits now" in fits.stdout
    assert "HOLDERS" not in fits.stdout and "erin 8.79 GiB" not in fits.stdout  # not the listing


def fleet_once_host_is(stack: Stack, state: str) -> Any:
    """`fleet --need-memory 1GiB` as JSON, once the lab's only host is in this state."""
    def in_state() -> Any:
        document = answer("fleet", "--prometheus", stack.prometheus, "--need-memory", "1GiB")
        return document if document["hosts"][0]["state"] == state else None

    return wait_for(f"the host to be {state}", in_state, timeout=120)


def test_a_host_that_stops_answering_is_down_and_never_free(tmp_path: Path) -> None:
    with lab(tmp_path, {"idle": LAB["idle"]}) as (running, daemons):
        first = answer("fleet", "--prometheus", running.prometheus, "--need-memory", "1GiB")
        assert [fit["gpu"] for fit in first["fits"]] == [1]
        os.kill(daemons["idle"].pid, signal.SIGSTOP)  # scrapes now time out
        try:
            assert fleet_once_host_is(running, "down")["fits"] == []
        finally:
            os.kill(daemons["idle"].pid, signal.SIGCONT)


def test_a_host_whose_nvml_hangs_is_stale_and_never_free(tmp_path: Path) -> None:
    # The simulator's hang: from the 8th sample on (4 s at the lab's 0.5 s interval), every
    # power reading blocks for 10 minutes. The daemon keeps answering scrapes with its last
    # GPU data and hwinfo_collection_stalled{source="gpu"} 1 once its 5 s NVML deadline passes,
    # so Prometheus sees a host that is up but whose GPU data can no longer be trusted: its
    # free GPU 1 must not be offered.
    hanging = {**LAB["idle"], "faults": [
        {"call": "nvmlDeviceGetPowerUsage", "delay_seconds": 600, "after_samples": 8}]}
    with lab(tmp_path, {"idle": hanging}) as (running, _):
        stale = fleet_once_host_is(running, "stale")
        assert stale["fits"] == []
        assert stale["hosts"][0]["gpu_data_age_seconds"] > 0
        text = hwinfo("fleet", "--prometheus", running.prometheus)
        assert text.returncode == 0, text.stderr
        rows = [line for line in text.stdout.splitlines() if line.startswith("  127.0.0.1:")]
        # The host's line ("stale (GPU data N s old)"), then each GPU's: all stale, none free.
        assert len(rows) == 3 and all(" stale" in row and " free" not in row for row in rows), (
            text.stdout)
        fits = hwinfo("fleet", "--prometheus", running.prometheus, "--need-memory", "1GiB")
        assert fits.returncode == 0, fits.stderr
        assert "1 host: 1 stale\n  offering nothing now:\n" in fits.stdout
        assert re.search(r"^    127\.0\.0\.1:\d+  stale \(GPU data \d+ s old\)$", fits.stdout, re.MULTILINE)
        assert "nowhere:" in fits.stdout


LAB_BOARD = dashboard(LAB_DASHBOARD)


def test_every_lab_dashboard_query_answers(stack: Stack) -> None:
    with stack.logs_on_failure():
        assert_every_query_answers(stack, LAB_BOARD)


def test_the_lab_dashboard_counts_what_is_free(stack: Stack) -> None:
    assert stat_values(stack, LAB_BOARD, "Free now") == {
        "Free GPUs": 1, "Idle MIG devices": 1, "Hosts down or stale": 0}


# The ledger examples of the README and docs/: ```text blocks whose first line is "$ hwinfo usage|fleet
# --prometheus URL ...". They are this lab's output; what depends on timing is masked before
# comparing: the clock, the loopback ports Prometheus scrapes (so the hosts' order too), the
# GPU-hours and kWh (how long the lab had run) and the total's mean utilization (the users'
# held times in a ratio that is only nearly 8 : 1). Rows, columns, users, models, memory,
# states, holders, MIG capacity and fits must be as shown.
_README_EXAMPLE = re.compile(r"```text\n\$ (hwinfo (?:usage|fleet) --prometheus [^\n]*)\n(.*?)\n```",
                             re.DOTALL)
_MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"), "<time>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "<host>"),
    # Hours and kWh (those not 0 but under 0.1 as "<0.1"), not sizes.
    (re.compile(r"(?<![\d.<])<?\d+\.\d(?![\d.]| GiB| MiB)"), "<h>"),
    (re.compile(r"\d+%(?=\s+\S+ GiB\s+<h>(?:\s|$))"), "<%>"),
]


def _masked(lines: list[str], sort: bool) -> list[str]:
    masked = []
    for line in lines:
        for pattern, mask in _MASKS[:3]:
            line = pattern.sub(mask, line.rstrip())
        if line.lstrip().startswith("(total)"):
            line = _MASKS[3][0].sub(_MASKS[3][1], line)
        masked.append(line)
    # Hosts are ordered by instance, here a random port: compare fleet rows as a set.
    return sorted(masked) if sort else masked


def test_readme_ledger_examples_are_this_lab_s_output(stack: Stack) -> None:
    examples = [e for page in DOCUMENTATION for e in _README_EXAMPLE.findall(page.read_text())]
    assert {command.split()[1] for command, _ in examples} == {"usage", "fleet"}
    for command, shown in examples:
        argv = shlex.split(command)[1:]
        argv[argv.index("--prometheus") + 1] = stack.prometheus
        # Asked again while the engine makes a new series searchable (seconds late on
        # VictoriaMetrics, docs/ledger-engines.md); each time `--until` the newest time it has
        # recorded whole: on a loaded machine vmalert's newest records arrive late, and a range
        # ending now rightly notes them missing.
        wait_for(f"`{command}` to print its documented output",
                 functools.partial(_prints, stack, argv, shown), timeout=120)


def _prints(stack: Stack, argv: list[str], shown: str) -> bool:
    if "--until" in argv:
        argv = [*argv]
        argv[argv.index("--until") + 1] = f"{recorded_until(stack):.3f}"
    done = hwinfo(*argv)
    assert done.returncode == 0, done.stderr
    fleet = argv[0] == "fleet"
    assert _masked(shown.split("\n"), fleet) == _masked(done.stdout.rstrip("\n").split("\n"), fleet), (
        f"the documented example is not this lab's output; it now reads:\n{done.stdout}")
    return True
