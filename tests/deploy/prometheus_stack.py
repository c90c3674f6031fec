"""A real Prometheus on a free loopback port, scraping real `hwinfo serve` daemons.

Shared by the end-to-end tests of the dashboards, the alert rules, the ledger and its
commands: one place knows how to start Prometheus, wait for data and query it.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import require_tool

from tests.deploy.artifacts import ALERTS, queries, rows, substitute

SCRAPES_BEFORE_QUERYING = 3  # so that rate() and increase() over [1m] have samples


@dataclass
class Stack:
    """hwinfo and the Prometheus that scrapes it."""

    hwinfo: str  # the first hwinfo's base URL
    prometheus: str  # Prometheus's base URL
    targets: int  # how many hwinfo daemons it scrapes
    log: Path  # Prometheus's log
    process: subprocess.Popen[bytes]

    def api(
        self, path: str, params: dict[str, str] | list[tuple[str, str]], post: bool = False
    ) -> Any:
        """GET (or POST, for long queries) an HTTP API endpoint; its `data` on success."""
        encoded = urllib.parse.urlencode(params)
        if post:
            request = urllib.request.Request(self.prometheus + path, data=encoded.encode())
        else:
            request = urllib.request.Request(f"{self.prometheus}{path}?{encoded}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            body = json.load(exc)
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query; its result vector (a scalar comes back as one series)."""
        data = self.api("/api/v1/query", {"query": expr}, post=True)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def scrape(self) -> str:
        with urllib.request.urlopen(self.hwinfo + "/metrics", timeout=10) as response:
            return response.read().decode()

    def wait_until_scraped(self) -> None:
        def scraped_enough() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}")
            down = self.query('up{job="hwinfo"} == 0')
            assert not down, f"Prometheus cannot scrape {down[0]['metric']['instance']}"
            expr = f'count_over_time(up{{job="hwinfo"}}[1m]) >= {SCRAPES_BEFORE_QUERYING}'
            return len(self.query(expr)) == self.targets

        wait_for(f"{SCRAPES_BEFORE_QUERYING} scrapes of hwinfo", scraped_enough)

    def log_tail(self, lines: int = 40) -> str:
        return tail(self.log, lines)

    @contextmanager
    def logs_on_failure(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            print(f"--- the last lines of {self.log} ---\n{self.log_tail()}")
            raise


def tail(log: Path, lines: int = 40) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


# What Prometheus and Alertmanager (exporter-toolkit) log once they listen, the port chosen.
_LISTENING = re.compile(rb'msg="Listening on" address=127\.0\.0\.1:(\d+)')


def listening_port(log: Path, process: subprocess.Popen[bytes], timeout: float = 60) -> int:
    """The port a server started with `--web.listen-address=127.0.0.1:0` took, from its log.

    Port 0 lets the kernel choose, so parallel test workers never race for a port.
    """

    def said() -> int | None:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        match = _LISTENING.search(log.read_bytes())
        return int(match.group(1)) if match else None

    return wait_for(f"{log.name} to say where it listens", said, timeout)


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now, all different (bound together, then let go), for daemons
    that cannot be given port 0 (Slurm's take theirs from slurm.conf; VictoriaMetrics and
    vmalert do not say which port they took)."""
    with ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def wait_for(what: str, check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if result := check():
                return result
        except (OSError, AssertionError, KeyError, ValueError) as exc:
            error = exc
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last error: {error})")


@contextmanager
def prometheus_scraping(
    hwinfo_urls: str | Sequence[str],
    workdir: Path,
    rule_files: Sequence[Path] = (ALERTS,),
    flags: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
) -> Iterator[Stack]:
    """Prometheus on a free loopback port, scraping hwinfo every second, with these rules.

    Rules are evaluated every second too; `config` adds top-level sections (`alerting`,
    `remote_write`). Yields as soon as Prometheus runs: `wait_until_scraped` waits for the data.
    """
    binary = require_tool("prometheus")
    workdir.mkdir(parents=True, exist_ok=True)
    urls = [hwinfo_urls] if isinstance(hwinfo_urls, str) else list(hwinfo_urls)
    config_file = workdir / "prometheus.yml"
    config_file.write_text(
        json.dumps(  # JSON is YAML
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(path) for path in rule_files],
                **(config or {}),
                "scrape_configs": [
                    {
                        "job_name": "hwinfo",
                        "scrape_interval": "1s",
                        "scrape_timeout": "1s",
                        "static_configs": [
                            {"targets": [url.removeprefix("http://") for url in urls]}
                        ],
                    }
                ],
            }
        )
    )
    log = workdir / "prometheus.log"
    with log.open("wb") as log_file:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config_file}",
                f"--storage.tsdb.path={workdir / 'data'}",
                "--web.listen-address=127.0.0.1:0",
                *flags,
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        port = listening_port(log, proc)
        stack = Stack(urls[0] if urls else "", f"http://127.0.0.1:{port}", len(urls), log, proc)
        yield stack
    except BaseException:
        print(f"--- the last lines of {log} ---\n{tail(log)}")
        raise
    finally:
        stop(proc)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and SIGKILL if it has not ended 10 s later."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def assert_every_query_answers(stack: Stack, board: dict[str, Any]) -> None:
    """Every query of a dashboard, its variables set to All, runs and returns data."""
    empty, failed = [], []
    for title, expr in queries(board):
        try:
            if not stack.query(substitute(expr, board)):
                empty.append(title)
        except AssertionError as exc:
            failed.append(f"{title}: {exc}")
    assert not failed, "queries Prometheus rejects:\n" + "\n".join(failed)
    assert not empty, f"panels that would show nothing: {empty}"


def stat_values(stack: Stack, board: dict[str, Any], row: str) -> dict[str, float]:
    """Stat panel title -> its number now, for the stat panels of one row."""
    values = {}
    for panel in rows(board)[row]:
        if panel["type"] == "stat":
            (series,) = stack.query(substitute(panel["targets"][0]["expr"], board))
            values[panel["title"]] = float(series["value"][1])
    return values
