"""`hwinfo serve` (or `hwinfo board`) as a real subprocess on a free loopback port."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

_LISTENING = re.compile(r"listening on (\S+):(\d+)")


class Daemon(str):
    """The base URL of a running daemon, with its process and its log so far."""

    pid: int
    proc: subprocess.Popen[str]
    log: list[str]


@contextmanager
def serving(*args: str, ready: bool = True, scheme: str = "http",
            env: dict[str, str] | None = None, command: str = "serve") -> Iterator[Daemon]:
    """Start the daemon (`command`: serve, or board with ready=False: it has no /-/ready) with
    these arguments (and environment); yields its base URL; stops it after."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hwinfo",
            command,
            "--address",
            "127.0.0.1",
            "--port",
            "0",
            "--log-level",
            "info",
            *args,
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        port = None
        start_up: list[str] = []  # kept in the log: what is said before listening counts too
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                raise AssertionError(f"hwinfo {command} exited with {proc.wait()}")
            start_up.append(line)
            if match := _LISTENING.search(line):
                port = int(match.group(2))
        assert port is not None, f"hwinfo {command} did not say where it listens"
        url = Daemon(f"{scheme}://127.0.0.1:{port}")
        url.pid, url.proc, url.log = proc.pid, proc, start_up
        # Keep reading the log, or a chatty daemon would block on a full pipe.
        threading.Thread(target=lambda: url.log.extend(proc.stderr), daemon=True).start()
        if ready and scheme == "http":
            wait_ready(url)
        yield url
    finally:
        running = proc.poll() is None  # a test may have stopped it with a signal of its own
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"hwinfo {command} did not stop on SIGTERM") from None
        # As a shell reports a command SIGTERM ended (README: exit status).
        assert not running or proc.returncode == 143, (
            f"hwinfo {command} exited with {proc.returncode} on SIGTERM")


def wait_ready(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/-/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    said = "".join(getattr(url, "log", [])[-10:])  # a Daemon's log: why it is not ready
    raise AssertionError(f"{url} did not become ready; it said:\n{said}")


def get(
    url: str, headers: dict[str, str] | None = None, timeout: float = 60,
    context: ssl.SSLContext | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of a GET; `context` for https."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
