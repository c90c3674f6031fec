"""`usage`, `fleet` and `job` find their engine as docs/ledger-commands.md says: --prometheus,
then HWINFO_PROMETHEUS, then the user's ledger.yml, then the system's; a real server on
loopback that demands basic auth (and one behind TLS) says what arrived."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Pki
from fixtures.loopback import Heard, serving

ANN = ("ann", "ann's s3cret")
LAB = ("lab", "the lab's s3cret")


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def answer(path: str) -> tuple[int, str, bytes]:
    """Prometheus's API as fleet needs it: one host, up, named for the path's first part,
    with one free GPU; for other commands, no ledger rules."""
    prefix = path.split("/")[1]
    host = {"job": "hwinfo", "instance": f"{prefix}:9110"}
    gpu = {**host, "gpu": "0", "uuid": "GPU-1"}
    series = [({"measure": "seen", **host}, "1"), ({"measure": "up", **host}, "1"),
              ({"measure": "age", **host}, "1"),
              ({"__name__": "hwinfo_gpu_info", **gpu, "name": "NVIDIA A100-SXM4-80GB"}, "1"),
              ({"__name__": "hwinfo_gpu_processes", **gpu}, "0")]
    data: Any = ({"groups": []} if path.split("?")[0].endswith("/rules") else
                 {"resultType": "vector",
                  "result": [{"metric": labels, "value": [1, value]} for labels, value in series]})
    return 200, "application/json", json.dumps({"status": "success", "data": data}).encode()


@pytest.fixture
def demanding() -> Iterator[tuple[str, list[Heard]]]:
    """A server that lets in ann's password only, and what it heard."""
    heard: list[Heard] = []
    with serving(answer, demand=basic(*ANN), heard=heard) as url:
        yield url, heard


class Lab:
    """A user's and a system's ledger.yml in a temporary directory, and the environment
    that places them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.user = root / "xdg" / "hwinfo" / "ledger.yml"
        self.system = root / "etc" / "hwinfo" / "ledger.yml"
        self.environ = {**os.environ, "XDG_CONFIG_HOME": str(root / "xdg"),
                        "HWINFO_LEDGER_SYSTEM_CONFIG": str(self.system)}

    def write(self, path: Path, url: str, who: tuple[str, str] | None = None,
              ca: Path | None = None, mode: int = 0o644) -> None:
        config: dict[str, Any] = {"url": url}
        if who is not None:
            secret = path.with_name(f"{who[0]}-password")
            secret.parent.mkdir(parents=True, exist_ok=True)
            secret.write_text(who[1] + "\n")
            secret.chmod(0o600)
            config["basic_auth"] = {"username": who[0], "password_file": secret.name}
        if ca is not None:
            config["tls_config"] = {"ca_file": str(ca)}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config))  # JSON is YAML
        path.chmod(mode)

    def run(self, *args: str, **environ: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True,
                              text=True, timeout=60, check=False,
                              env={**self.environ, **environ})


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


def one_line_error(result: subprocess.CompletedProcess[str], exit_code: int = 1) -> str:
    assert result.returncode == exit_code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    return line


def asked(heard: list[Heard]) -> set[tuple[str, str | None]]:
    """Each path prefix asked and the Authorization it came with; `heard` emptied."""
    found = {(h.path.split("/")[1], h.authorization) for h in heard}
    heard.clear()
    return found


def test_each_source_comes_before_the_next(lab: Lab, demanding: tuple[str, list[Heard]]) -> None:
    url, heard = demanding
    # The system's file alone: its URL and its password arrive (and are not ann's).
    lab.write(lab.system, f"{url}/system", LAB)
    assert "HTTP 401 Unauthorized" in one_line_error(lab.run("fleet"))
    assert asked(heard) == {("system", basic(*LAB))}
    # The user's file, whole: its URL and its password.
    lab.write(lab.user, f"{url}/user", ANN, mode=0o600)
    done = lab.run("fleet")
    assert done.returncode == 0, done.stderr
    assert "user:9110" in done.stdout and "free" in done.stdout
    assert asked(heard) == {("user", basic(*ANN))}
    # HWINFO_PROMETHEUS before the file: the file's password goes with it to the same server.
    done = lab.run("fleet", HWINFO_PROMETHEUS=f"{url}/env")
    assert done.returncode == 0 and "env:9110" in done.stdout, done.stderr
    assert asked(heard) == {("env", basic(*ANN))}
    # --prometheus before both.
    done = lab.run("fleet", "--prometheus", f"{url}/flag", HWINFO_PROMETHEUS=f"{url}/env")
    assert done.returncode == 0 and "flag:9110" in done.stdout, done.stderr
    assert asked(heard) == {("flag", basic(*ANN))}


def test_the_user_s_file_replaces_the_system_s_whole(
        lab: Lab, demanding: tuple[str, list[Heard]]) -> None:
    url, heard = demanding
    lab.write(lab.system, url, ANN)
    lab.write(lab.user, f"{url}/user")  # the same server, no password of its own
    assert "HTTP 401 Unauthorized" in one_line_error(lab.run("fleet"))
    assert asked(heard) == {("user", None)}


def test_a_file_s_password_never_goes_to_another_server(
        lab: Lab, demanding: tuple[str, list[Heard]]) -> None:
    url, heard = demanding
    lab.write(lab.user, url, ANN, mode=0o600)
    elsewhere: list[Heard] = []
    with serving(answer, heard=elsewhere) as other:
        for done in (lab.run("fleet", "--prometheus", f"{other}/flag"),
                     lab.run("fleet", HWINFO_PROMETHEUS=f"{other}/env")):
            assert done.returncode == 0, done.stderr
        assert asked(elsewhere) == {("flag", None), ("env", None)}
    assert heard == []


@pytest.mark.parametrize("command", [["usage"], ["job", "42"]])
def test_every_ledger_command_finds_the_engine_alike(
        lab: Lab, demanding: tuple[str, list[Heard]], command: list[str]) -> None:
    url, heard = demanding
    lab.write(lab.user, f"{url}/user", ANN, mode=0o600)
    # Let in: the server's answer (no ledger rules) is what stops it.
    assert "has not loaded the ledger's recording rules" in one_line_error(lab.run(*command))
    assert asked(heard) == {("user", basic(*ANN))}
    assert "has not loaded" in one_line_error(lab.run(*command, HWINFO_PROMETHEUS=f"{url}/env"))
    assert asked(heard) == {("env", basic(*ANN))}


def test_behind_tls_the_file_s_ca_is_trusted_and_the_option_s_first(lab: Lab, pki: Pki) -> None:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pki.server_cert, pki.server_key)
    heard: list[Heard] = []
    with serving(answer, demand=basic(*ANN), heard=heard, tls=tls) as url:
        lab.write(lab.user, f"{url}/user", ANN, ca=pki.ca, mode=0o600)
        done = lab.run("fleet")
        assert done.returncode == 0 and "user:9110" in done.stdout, done.stderr
        assert asked(heard) == {("user", basic(*ANN))}
        # --ca-file before the file's: a CA that never signed the server's certificate.
        line = one_line_error(lab.run("fleet", "--ca-file", str(pki.stranger_cert)))
        assert "its certificate is not trusted" in line
        lab.write(lab.user, f"{url}/user", ANN, mode=0o600)  # the system's CAs only
        assert "its certificate is not trusted" in one_line_error(lab.run("fleet"))
        assert heard == []  # no request was made over a connection not trusted


def test_no_engine_anywhere_is_a_usage_error(lab: Lab) -> None:
    line = one_line_error(lab.run("fleet"), exit_code=2)
    assert line == (f"Error: no Prometheus to ask: give --prometheus URL, set HWINFO_PROMETHEUS, "
                    f"or write url in {lab.user} or {lab.system}")


@pytest.mark.parametrize(("content", "says"), [
    (b"\x00binary", "not text (it holds NUL bytes)"),
    (b"url: [" + b"[" * 200 + b"\n", "nested too deeply: deeper than 64 levels"),
    (b"url: .inf\n", "url: inf is not a finite number"),
    (b"url: http://a:1\ntls_config: {insecure_skip_verify: true}\n",
     "tls_config.insecure_skip_verify: unknown key (known: ca_file)"),
])
def test_a_hostile_file_is_one_line_and_exit_1(lab: Lab, content: bytes, says: str) -> None:
    lab.system.parent.mkdir(parents=True)
    lab.system.write_bytes(content)
    for command in (["usage"], ["fleet"], ["job", "42"]):
        assert one_line_error(lab.run(*command)) == f"Error: {lab.system}: {says}"


def test_a_fifo_for_a_file_is_one_line(lab: Lab) -> None:
    lab.user.parent.mkdir(parents=True)
    os.mkfifo(lab.user)  # no writer: reading it by name would wait for ever
    assert one_line_error(lab.run("fleet")) == f"Error: {lab.user}: not a regular file (a FIFO)"


def test_the_board_finds_its_engine_as_the_other_commands_do(
        lab: Lab, demanding: tuple[str, list[Heard]]) -> None:
    from tests.exporter.serving import get
    from tests.exporter.serving import serving as running

    url, heard = demanding
    lab.write(lab.user, f"{url}/user", ANN, mode=0o600)
    with running(command="board", ready=False, env=lab.environ) as board:
        status, _, page = get(board + "/")
        assert status == 200 and b"user:9110" in page
    assert asked(heard) == {("user", basic(*ANN))}
