"""`hwinfo board` as a command: it listens as `hwinfo serve` does (TLS and basic auth from a
web config), and says in one line what keeps it from starting."""

from __future__ import annotations

import base64
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import bcrypt
from conftest import Pki

from tests.exporter.serving import get, serving


def _refusing() -> socket.socket:
    """A loopback port bound and not listening: connections to it are refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def test_tls_and_basic_auth_from_a_web_config(tmp_path: Path, pki: Pki) -> None:
    config = tmp_path / "web-config.yml"
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4)).decode()
    config.write_text(f"tls_server_config:\n  cert_file: {pki.server_cert}\n"
                      f"  key_file: {pki.server_key}\nbasic_auth_users:\n  ann: '{hashed}'\n")
    context = ssl.create_default_context(cafile=str(pki.ca))

    def fetch(url: str, password: str | None) -> tuple[int, bytes]:
        token = base64.b64encode(f"ann:{password}".encode()).decode()
        status, _, body = get(url + "/", {} if password is None else
                              {"Authorization": f"Basic {token}"}, timeout=30, context=context)
        return status, body

    with _refusing() as engine, serving(
            "--prometheus", f"http://127.0.0.1:{engine.getsockname()[1]}", "--web-config",
            str(config), command="board", ready=False, scheme="https") as url:
        assert fetch(url, None)[0] == 401 and fetch(url, "wrong")[0] == 401
        status, page = fetch(url, "s3cret")
        # In, over TLS: the page says the engine does not answer, and shows nothing invented.
        assert status == 200 and b"NO DATA" in page and b'class="cell' not in page


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", "board", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = _run("--prometheus", "http://127.0.0.1:9", "--address", "127.0.0.1",
                    "--port", str(taken.getsockname()[1]))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("Error:") and len(done.stderr.strip().splitlines()) == 1


def test_a_refresh_out_of_bounds_is_a_usage_error() -> None:
    done = _run("--prometheus", "http://127.0.0.1:9", "--refresh", "0.5")
    assert done.returncode == 2 and "0.5 is not between 2 and 3600 seconds" in done.stderr


def test_no_engine_anywhere_is_a_usage_error() -> None:
    done = _run("--port", "0")
    assert done.returncode == 2 and "Error: no Prometheus to ask: give --prometheus URL" in done.stderr
