"""A lab whose truth is known, for the ledger's end-to-end tests: simulated hosts written here,
real `hwinfo serve` daemons, and a real engine evaluating the shipped ledger rules: Prometheus,
or VictoriaMetrics with vmalert."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tests.deploy.artifacts import REPO
from tests.deploy.prometheus_stack import Stack, prometheus_scraping
from tests.deploy.victoria_stack import victoria_scraping
from tests.exporter.serving import Daemon, serving

LEDGER_RULES = REPO / "prometheus" / "hwinfo-ledger.yml"
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


def rules_every_second(workdir: Path, **replace: str) -> Path:
    """The shipped ledger rules, evaluated every second, their roll-ups every ROLLUP_SECONDS
    (and any other text replaced)."""
    text = LEDGER_RULES.read_text()
    text, count = re.subn(r"interval: 1m\b", "interval: 1s", text)
    assert count >= 1, "the ledger groups' interval is no longer `interval: 1m`"
    text, hourly = re.subn(r"interval: 1h\b", f"interval: {ROLLUP_SECONDS}s", text)
    text, windows = re.subn(r"\[1h\] offset 30s", f"[{ROLLUP_SECONDS}s] offset 500ms", text)
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


def recorded_until(stack: Stack) -> float:
    """A time up to which the engine holds every ledger record, minute and hourly: a rule
    interval before the newest evaluation of each group. A group's evaluations run one after
    another, so those before the newest are whole; the interval leaves room for samples that
    VictoriaMetrics makes searchable a moment apart."""
    return min(newest_evaluation(stack), newest_evaluation(stack, f"{EVALUATIONS}_1h")) - 1.0


@contextmanager
def lab(workdir: Path, hosts: dict[str, dict[str, Any]] = LAB, engine: str = "prometheus",
        options: Mapping[str, Sequence[str]] = MappingProxyType({}),
        **rules: str) -> Iterator[tuple[Stack, dict[str, Daemon]]]:
    """One `hwinfo serve` per host (with the host's `options`, e.g. a --root) and an engine
    (ENGINES) with the ledger rules (texts in them replaced as `rules_every_second` does),
    scraped enough."""
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
            rule_files=[rules_every_second(workdir, **rules)]))
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
