"""The idle-holder alert reaches the user who holds the GPU, through a real Alertmanager.

Real daemons (erin holds an idle GPU, alice trains on busy ones), a real Prometheus with the
shipped ledger rules (1 s interval, `for: 3s` instead of an hour), a real Alertmanager with
the shipped example configuration whose receivers are pointed at a webhook receiver on
loopback. erin is told, alice is not; once erin's GPU is busy, she is told it resolved.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from conftest import require_tool

from tests.deploy.artifacts import REPO
from tests.deploy.ledger_stack import LAB, newest_evaluation, rules_every_second
from tests.deploy.prometheus_stack import listening_port, prometheus_scraping, wait_for
from tests.exporter.serving import serving

SHIPPED = REPO / "prometheus" / "alertmanager.yml"
FOR_SECONDS = 3
FOR = f"{FOR_SECONDS}s"


class Inbox:
    """What the webhook receiver got: (receiver, Alertmanager's JSON) in arrival order."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def add(self, receiver: str, message: dict[str, Any]) -> None:
        with self.lock:
            self.messages.append((receiver, message))

    def about(self, user: str) -> list[tuple[str, dict[str, Any]]]:
        with self.lock:
            return [(r, m) for r, m in self.messages
                    if any(a["labels"].get("user") == user for a in m["alerts"])]


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, Inbox]]:
    inbox = Inbox()

    class Receive(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            inbox.add(self.path.strip("/"), json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", inbox
    finally:
        server.shutdown()


def shipped_config_to(receiver_url: str) -> dict[str, Any]:
    """The shipped configuration, its routing as it is, every receiver a webhook to us (no mail
    server here), and its waits in seconds instead of minutes."""
    config = yaml.safe_load(SHIPPED.read_text())
    config.pop("global", None)
    for receiver in config["receivers"]:
        name = receiver["name"]
        for kind in ("email_configs", "webhook_configs"):
            receiver.pop(kind, None)
        receiver["webhook_configs"] = [{"url": f"{receiver_url}/{name}", "send_resolved": True}]
    for route in [config["route"], *config["route"].get("routes", [])]:
        route.update(group_wait="1s", group_interval="1s")
    return config


@contextmanager
def alertmanager(workdir: Path, config: dict[str, Any]) -> Iterator[str]:
    binary = require_tool("prometheus-alertmanager")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "alertmanager.yml").write_text(json.dumps(config))
    log_path = workdir / "alertmanager.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [binary, f"--config.file={workdir / 'alertmanager.yml'}", f"--storage.path={workdir / 'data'}",
         "--web.listen-address=127.0.0.1:0", "--cluster.listen-address="],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield f"127.0.0.1:{listening_port(log_path, proc)}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_the_idle_holder_is_told_and_told_again_when_it_resolves(tmp_path: Path) -> None:
    idle_file, busy_file = tmp_path / "idle.json", tmp_path / "busy.json"
    idle_file.write_text(json.dumps(LAB["idle"]))
    busy_file.write_text(json.dumps(LAB["busy"]))
    rules = rules_every_second(tmp_path, **{"for: 1h": f"for: {FOR}"})
    with webhook_receiver() as (url, inbox), \
            alertmanager(tmp_path / "am", shipped_config_to(url)) as am, \
            serving("--simulate", str(busy_file), "--interval", "0.5") as alice_host:
        erin_args = ("--simulate", str(idle_file), "--interval", "0.5")
        with serving(*erin_args) as erin_host, prometheus_scraping(
                [alice_host, erin_host], tmp_path / "prometheus", rule_files=[rules],
                config={"alerting": {"alertmanagers": [{"static_configs": [{"targets": [am]}]}]}},
        ) as stack, stack.logs_on_failure():
            stack.wait_until_scraped()
            (receiver, message), *_ = wait_for(
                "erin's notification", lambda: inbox.about("erin"), timeout=60)
            # The shipped routing sends erin's idle-holder alerts to her chat webhook.
            assert receiver == "erin-chat"
            assert message["status"] == "firing" and message["groupLabels"] == {"user": "erin"}
            (alert,) = message["alerts"]
            assert alert["labels"]["alertname"] == "HwinfoGpuIdleHeld"
            assert alert["labels"]["gpu"] == "0" and alert["labels"]["instance"] == erin_host[7:]
            assert "erin holds GPU 0" in alert["annotations"]["summary"]
            assert inbox.about("alice") == []  # busy: nobody tells alice anything

            # erin starts working: the same host, her GPU now 90 % busy.
            busy_erin = json.loads(idle_file.read_text())
            busy_erin["gpus"][0]["utilization_gpu_percent"] = 90
            idle_file.write_text(json.dumps(busy_erin))
            erin_host.proc.terminate()
            erin_host.proc.wait(timeout=60)
            # Back on the port Prometheus scrapes: the kernel chose it, nobody else took it.
            with serving(*erin_args, "--port", erin_host.rsplit(":", 1)[1]):
                def resolved() -> bool:
                    return any(m["status"] == "resolved" for _, m in inbox.about("erin"))

                wait_for("erin's alert to resolve", resolved, timeout=60)
                wait_for("erin's GPU to count as busy", lambda: stack.query(
                    'hwinfo:ledger_busy:share{user="erin"}'), timeout=60)
                busy_since = newest_evaluation(stack)
                told = len(inbox.about("erin"))
                # No new firing: the rules were evaluated for longer than `for` and the
                # route's group_wait since (by the engine's progress, not the clock), and
                # never had the alert pending or firing again.
                wait_for("evaluations past `for` after erin got busy", lambda: newest_evaluation(
                    stack) > busy_since + FOR_SECONDS + 1, timeout=60)
                alerts = stack.api("/api/v1/query", {
                    "query": 'ALERTS{alertname="HwinfoGpuIdleHeld", user="erin"}[5m]'}, post=True)
                assert not [at for series in alerts["result"] for at, _ in series["values"]
                            if float(at) >= busy_since]
                assert [m["status"] for _, m in inbox.about("erin")[told:]] == []
