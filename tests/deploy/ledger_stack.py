"""A lab whose truth is known, for the ledger's end-to-end tests: simulated hosts written here,
real `hwinfo serve` daemons, and a real engine evaluating the shipped ledger rules: Prometheus,
or VictoriaMetrics with vmalert."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hwinfo.ledger.queries import EVALUATIONS_RECORD, HELD_RECORD, SHARE_RECORDS, UNSEEN_RECORD
from tests.deploy.artifacts import REPO
from tests.deploy.prometheus_stack import Stack, prometheus_scraping, wait_for
from tests.deploy.victoria_stack import victoria_scraping
from tests.exporter.serving import Daemon, serving

LEDGER_RULES = REPO / "prometheus" / "hwinfo-ledger.yml"
IDLE_RECORD = SHARE_RECORDS["idle"]
A100 = "A100-SXM4-80GB"
# The engines the ledger is tested on (docs/ledger-engines.md).
ENGINES = ("prometheus", "victoria-metrics")


def _process(pid: int, user: str, mib: int) -> dict[str, Any]:
    return {"pid": pid, "used_memory_mib": mib, "user": user, "command": "python train.py"}


# "busy": alice trains on all 8 GPUs. "idle": erin holds GPU 0 and does nothing; GPU 1 is free.
# "mig": carol on a 3g.40gb (3/7 of the GPU; an A100 has no activity signal per MIG device),
# an idle 1g.10gb beside it, and room for more.
LAB = {
    "busy": {"format": 1, "description": "alice on 8 busy GPUs", "gpus": [
        {"board": A100, "utilization_gpu_percent": 90, "power_draw_w": 300,
         "processes": [_process(1000 + i, "alice", 40000)]} for i in range(8)]},
    "idle": {"format": 1, "description": "erin holds an idle GPU; a free one beside it", "gpus": [
        {"board": A100, "utilization_gpu_percent": 0, "power_draw_w": 60,
         "processes": [_process(2000, "erin", 9000)]},
        {"board": A100, "utilization_gpu_percent": 0, "power_draw_w": 50, "processes": []}]},
    "mig": {"format": 1, "description": "carol on a 3g.40gb, an idle 1g.10gb", "gpus": [
        {"board": A100, "power_draw_w": 140,
         "mig": {"enabled": True, "gpu_instances": [{"profile": "3g.40gb", "start": 4, "id": 2},
                                                    {"profile": "1g.10gb", "start": 0, "id": 9}]},
         "processes": [{**_process(3000, "carol", 20000), "gpu_instance_id": 2,
                        "compute_instance_id": 0}]}]},
}


# The hourly roll-ups' period in the tests, and how far before its evaluation an hour ends
# (half the minute rules' interval, as shipped).
ROLLUP_SECONDS = 5


def rules_every_second(workdir: Path, rollup_seconds: int = ROLLUP_SECONDS, every: int = 1,
                       **replace: str) -> Path:
    """The shipped ledger rules, evaluated every second (or `every` seconds), their roll-ups
    every `rollup_seconds` (and any other text replaced)."""
    text = LEDGER_RULES.read_text()
    text, count = re.subn(r"interval: 1m\b", f"interval: {every}s", text)
    assert count >= 1, "the ledger groups' interval is no longer `interval: 1m`"
    text, hourly = re.subn(r"interval: 1h\b", f"interval: {rollup_seconds}s", text)
    text, windows = re.subn(r"\[1h\] offset 30s", f"[{rollup_seconds}s] offset 500ms", text)
    assert hourly == 1 and windows >= 1, "the roll-ups are no longer `interval: 1h`, `[1h] offset 30s`"
    for old, new in replace.items():
        assert old in text, f"{old!r} is not in {LEDGER_RULES}"
        text = text.replace(old, new)
    path = workdir / "hwinfo-ledger.yml"
    path.write_text(text)
    return path


# The first rule of the minute group; with `_1h`, of the hourly one (prometheus/hwinfo-ledger.yml).
EVALUATIONS = "hwinfo:ledger_evaluations:count"


def newest_evaluation(stack: Stack, record: str = EVALUATIONS) -> float:
    """When the engine last evaluated the rule group that `record` leads, by the samples it
    holds: its own progress, however far behind the clock a loaded machine has left it."""
    data = stack.api("/api/v1/query", {"query": f"{record}[1m]"}, post=True)
    return max((float(time) for series in data["result"] for time, _ in series["values"]),
               default=0.0)


def recorded_until(stack: Stack, hourly: bool = True) -> float:
    """A time up to which the engine holds every ledger record, minute and hourly (the minute
    records alone where not `hourly`: a lab whose roll-ups are an hour apart): a rule interval
    before the newest evaluation of each group. A group's evaluations run one after another,
    so those before the newest are whole; the interval leaves room for samples that
    VictoriaMetrics makes searchable a moment apart."""
    groups = (EVALUATIONS, f"{EVALUATIONS}_1h") if hourly else (EVALUATIONS,)
    return min(newest_evaluation(stack, record) for record in groups) - 1.0


@contextmanager
def lab(workdir: Path, hosts: dict[str, dict[str, Any]] = LAB, engine: str = "prometheus",
        options: Mapping[str, Sequence[str]] = MappingProxyType({}),
        rollup_seconds: int = ROLLUP_SECONDS, every: int = 1,
        **rules: str) -> Iterator[tuple[Stack, dict[str, Daemon]]]:
    """One `hwinfo serve` per host (with the host's `options`, e.g. a --root) and an engine
    (ENGINES) with the ledger rules (every `every` s, roll-ups every `rollup_seconds`, texts
    in them replaced, as `rules_every_second` does), scraped enough."""
    with ExitStack() as running:
        daemons = {}
        for name, scenario in hosts.items():
            path = workdir / f"{name}.json"
            path.write_text(json.dumps(scenario))
            daemons[name] = running.enter_context(
                serving("--simulate", str(path), "--interval", "0.5", *options.get(name, ())))
        scraping = victoria_scraping if engine == "victoria-metrics" else prometheus_scraping
        stack = running.enter_context(scraping(
            list(daemons.values()), workdir / engine,
            rule_files=[rules_every_second(workdir, rollup_seconds, every, **rules)]))
        stack.wait_until_scraped()
        yield stack, daemons


def hwinfo(*args: str) -> subprocess.CompletedProcess[str]:
    """The hwinfo command line, as a user runs it against the lab."""
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True,
                          check=False, text=True, timeout=60)


def answer(*args: str) -> Any:
    """A ledger command's JSON answer; it must succeed."""
    done = hwinfo(*args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def alert_of(stack: Stack, user: str) -> tuple[str | None, str | None]:
    """The state and activeAt of `user`'s idle-holder alert on the engine's /api/v1/alerts
    (VictoriaMetrics asks vmalert, which answers `null` where there is none)."""
    for alert in stack.api("/api/v1/alerts", {})["alerts"] or []:
        if alert["labels"].get("user") == user:
            return alert["state"], alert["activeAt"]
    return None, None


def idle_in_history(stack: Stack, user: str) -> bool:
    """Whether the idle-holder alert's read of the past (the idle record by name over the last
    10 minutes, at a time a few seconds back, as vmalert asks) finds `user`'s hold: what keeps
    the alert while the GPU is not seen. VictoriaMetrics finds a series some seconds after it
    is first written; as shipped (`for: 1h`) the alert cannot fire before that."""
    found = stack.api("/api/v1/query", {"query": f"last_over_time({IDLE_RECORD}[10m])",
                                        "time": f"{int(time.time()) - 3}"}, post=True)["result"]
    return any(series["metric"].get("user") == user for series in found)


def restart_under_alert(running: ExitStack, old: Daemon, scenario: Path, stack: Stack,
                        user: str, every: float) -> tuple[Daemon, list[tuple[str | None, str | None]]]:
    """Stop a daemon, and once an evaluation of the rules has found its GPUs unseen, start it
    again on its port; `user`'s alert (state, activeAt) at every look, until three evaluations
    after their hold is recorded again (the rules run every `every` s)."""
    port = old.rsplit(":", 1)[1]
    instance = f'instance="127.0.0.1:{port}"'
    seen: list[tuple[str | None, str | None]] = []

    def looking(event: str) -> Any:
        seen.append(alert_of(stack, user))
        return stack.query(event)

    old.proc.terminate()
    old.proc.wait(timeout=60)
    wait_for("an evaluation to find the daemon's GPUs unseen",
             lambda: looking(f"{UNSEEN_RECORD}{{{instance}}}"))
    new = running.enter_context(serving("--simulate", str(scenario), "--interval", "0.5",
                                        "--port", port))
    (back,) = wait_for(f"{user}'s hold to be recorded again",
                       lambda: looking(f'timestamp({HELD_RECORD}{{{instance},user="{user}"}})'))
    wait_for("three evaluations more", lambda: looking(
        f"timestamp({EVALUATIONS_RECORD}) >= {float(back['value'][1]) + 3 * every}"))
    return new, seen
