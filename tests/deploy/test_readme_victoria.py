"""The README's VictoriaMetrics commands, run as written: Debian's victoria-metrics started as
its packaged unit starts it, with the flags the README writes into /etc/default, and vmalert
as pasted. They must stay up, scrape hwinfo with prometheus.yml as shipped, and evaluate
the rules, which VictoriaMetrics then serves on the rules API that `hwinfo usage` reads.

Only what cannot run here is changed: the paths under /etc and /var go to a temporary
directory, the fixed ports to free loopback ports (VictoriaMetrics gets an -httpListenAddr
on loopback; nothing listens where vmalert sends alerts), `systemctl restart` is done as
Debian's unit does it, and the targets in prometheus.yml are a simulated host, as the README
tells an admin to set them.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import require_tool

from tests.deploy.artifacts import REPO
from tests.deploy.prometheus_stack import free_ports, stop, tail, wait_for
from tests.exporter.serving import serving

README = (REPO / "README.md").read_text()
# Debian's unit: ExecStart=/usr/bin/victoria-metrics $ARGS, ARGS from /etc/default.
PACKAGED_UNIT = Path("/lib/systemd/system/victoria-metrics.service")
LEDGER_GROUP = "hwinfo-ledger"


def readme_lines() -> list[str]:
    """The README's shell block that runs vmalert, line by line."""
    (block,) = [b for b in re.findall(r"^```sh\n(.*?)\n```$", README, re.DOTALL | re.MULTILINE)
                if "\nvmalert " in f"\n{b}"]
    return block.splitlines()


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


def packaged_start(defaults: Path) -> list[str]:
    """The command Debian's victoria-metrics.service runs, ARGS read from `defaults` as
    systemd's EnvironmentFile= reads them."""
    unit = PACKAGED_UNIT.read_text() if PACKAGED_UNIT.exists() else ""
    assert "EnvironmentFile=/etc/default/victoria-metrics" in unit, f"{PACKAGED_UNIT}: {unit!r}"
    (exec_start,) = re.findall(r"^ExecStart=(\S+) \$ARGS$", unit, re.MULTILINE)
    (args,) = [shlex.split(line.partition("=")[2])[0]
               for line in defaults.read_text().splitlines() if line.startswith("ARGS=")]
    return [require_tool(Path(exec_start).name), *args.split()]


@pytest.fixture
def pasted(tmp_path: Path) -> Iterator[tuple[str, str, list[subprocess.Popen[bytes]]]]:
    """The README's lines run, the two daemons started: VictoriaMetrics' and vmalert's URLs."""
    require_tool("vmalert")
    vm_port, vmalert_port, nobody = free_ports(3)
    here = {"/etc/hwinfo": f"{tmp_path}/etc/hwinfo",
            "/etc/default/victoria-metrics": f"{tmp_path}/etc/default/victoria-metrics",
            "/var/lib/victoria-metrics": f"{tmp_path}/var/lib/victoria-metrics",
            "127.0.0.1:8428": f"127.0.0.1:{vm_port}",
            "127.0.0.1:8880": f"127.0.0.1:{vmalert_port}",
            "127.0.0.1:9093": f"127.0.0.1:{nobody}"}
    (tmp_path / "etc" / "default").mkdir(parents=True)

    def localised(line: str) -> str:
        for theirs, ours in here.items():
            line = line.replace(theirs, ours)
        return line

    with ExitStack() as running:
        host = running.enter_context(serving("--simulate", "dgx-a100-mig"))
        started: list[subprocess.Popen[bytes]] = []
        logs: list[Path] = []

        def start(argv: list[str]) -> None:
            logs.append(tmp_path / f"{Path(argv[0]).name}.log")
            with logs[-1].open("wb") as log:
                started.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, cwd=tmp_path))
            running.callback(stop, started[-1])

        for line in readme_lines():
            command = shlex.split(line)[0]
            if command in ("install", "echo"):
                subprocess.run(["sh", "-c", localised(line)], cwd=REPO, check=True, timeout=60)
                if command == "install":  # the admin sets their hosts as the targets
                    scrape = Path(here["/etc/hwinfo"]) / "prometheus.yml"
                    config = yaml.safe_load(scrape.read_text())
                    (job,) = config["scrape_configs"]
                    job["static_configs"] = [{"targets": [host.removeprefix("http://")]}]
                    scrape.write_text(yaml.safe_dump(config))
            elif line == "systemctl restart victoria-metrics":
                start([*packaged_start(Path(here["/etc/default/victoria-metrics"])),
                       f"-httpListenAddr=127.0.0.1:{vm_port}"])
            elif command == "vmalert":
                start([require_tool("vmalert"), *shlex.split(localised(line))[1:]])
            else:
                raise AssertionError(f"the README has a line this test cannot run: {line}")
        assert [Path(p.args[0]).name for p in started] == ["victoria-metrics", "vmalert"]
        try:
            yield f"http://127.0.0.1:{vm_port}", f"http://127.0.0.1:{vmalert_port}", started
        except BaseException:
            for log in logs:
                print(f"--- the last lines of {log} ---\n{tail(log)}")
            raise


def test_the_readme_s_victoria_metrics_commands_run_the_ledger(
        pasted: tuple[str, str, list[subprocess.Popen[bytes]]]) -> None:
    vm, vmalert, processes = pasted

    def running() -> None:
        # RuntimeError: wait_for gives up at once, where it retries an AssertionError.
        for process in processes:
            if process.poll() is not None:
                raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")

    def ledger_evaluated() -> dict[str, Any] | None:
        running()
        groups = {g["name"]: g for g in get(f"{vmalert}/api/v1/rules")["data"]["groups"]}
        evaluated = groups[LEDGER_GROUP]["lastEvaluation"] > "2000"  # 0001-01-01: not yet
        return groups if evaluated else None

    # vmalert starts each group at a random point of its interval: the minute group within a
    # minute (the hourly one within the hour, which is not waited for).
    groups = wait_for("vmalert to evaluate the ledger's minute group", ledger_evaluated, 120)
    shipped = [g["name"] for path in ("hwinfo-alerts.yml", "hwinfo-ledger.yml")
               for g in yaml.safe_load((REPO / "prometheus" / path).read_text())["groups"]]
    assert sorted(groups) == sorted(shipped)
    errors = {r["name"]: r["lastError"] for g in groups.values() for r in g["rules"] if r["lastError"]}
    assert errors == {}

    # The records come back through VictoriaMetrics' remote-write API, and the rules API
    # `hwinfo usage` reads answers through -vmalert.proxyURL.
    def recorded() -> bool:
        running()
        series = get(f"{vm}/api/v1/series?match[]=hwinfo:ledger_evaluations:count")["data"]
        return series == [{"__name__": "hwinfo:ledger_evaluations:count"}]

    wait_for("the ledger's first record in VictoriaMetrics", recorded, 60)
    proxied = [g["name"] for g in get(f"{vm}/api/v1/rules")["data"]["groups"]]
    assert sorted(proxied) == sorted(shipped)

    # prometheus.yml as shipped, read by VictoriaMetrics: the host is scraped as job hwinfo.
    def scraped() -> bool:
        running()
        found = get(f"{vm}/api/v1/series?match[]=hwinfo_build_info")["data"]
        return [s.get("job") for s in found] == ["hwinfo"]

    wait_for("VictoriaMetrics to scrape hwinfo with prometheus.yml", scraped, 60)
    running()
