"""Exporter test helpers: a throwaway PKI made with the openssl command, and running servers."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import require_tool

from hwinfo.exporter.http import Handler, Limits, Server
from hwinfo.exporter.webconfig import WebConfig


@dataclass(frozen=True)
class Pki:
    """File names in one directory: a CA, certificates it signed, and a stranger's."""

    dir: Path
    ca: Path
    server_cert: Path  # CN=server-one, for 127.0.0.1 and localhost
    server_key: Path
    other_server_cert: Path  # CN=server-two, the same names: a rotated certificate
    other_server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # a self-signed client certificate the CA never saw
    stranger_key: Path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    openssl = require_tool("openssl")
    where = tmp_path_factory.mktemp("pki")

    def make(name: str, *extra: str) -> tuple[Path, Path]:
        cert, key = where / f"{name}.crt", where / f"{name}.key"
        subprocess.run(
            [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-days", "2", "-subj", f"/CN={name}", "-keyout", key, "-out", cert, *extra],
            check=True, capture_output=True,
        )  # fmt: skip
        return cert, key

    ca, ca_key = make("hwinfo-test-ca")
    signed = [
        "-CA",
        str(ca),
        "-CAkey",
        str(ca_key),
        "-addext",
        "basicConstraints=critical,CA:FALSE",
    ]
    server = [*signed, "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
    client = [*signed, "-addext", "extendedKeyUsage=clientAuth"]
    return Pki(
        where, ca, *make("server-one", *server), *make("server-two", *server),
        *make("client", *client), *make("stranger", "-addext", "extendedKeyUsage=clientAuth"),
    )  # fmt: skip


ServeFactory = Callable[..., Server]


@pytest.fixture
def serve() -> Iterator[ServeFactory]:
    """Start servers on 127.0.0.1 with a free port, each in its own thread; stops them after."""
    running: list[tuple[Server, threading.Thread]] = []

    def start(
        routes: Mapping[str, Handler],
        web_config: WebConfig | None = None,
        limits: Limits | None = None,
        host: str = "127.0.0.1",
    ) -> Server:
        server = Server((host, 0), routes, web_config, limits or Limits())
        thread = threading.Thread(target=server.serve_forever, name="test-http-loop")
        thread.start()
        running.append((server, thread))
        return server

    yield start
    for server, thread in running:
        server.shutdown()
        thread.join(10)
        assert not thread.is_alive()
