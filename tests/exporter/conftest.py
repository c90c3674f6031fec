"""Exporter test helpers: running servers (the throwaway PKI is in tests/conftest.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

import pytest

from hwinfo.exporter.http import Handler, Limits, Server
from hwinfo.exporter.webconfig import WebConfig

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
