"""Wrong passwords from hundreds of addresses: they fill the bcrypt queue, a new login still gets in.

Loopback addresses only: the flood's clients bind to 127.1.x.y (all of 127.0.0.0/8 is
loopback on Linux), one connection per address.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import bcrypt

from .conftest import ServeFactory
from .test_http import ROUTES, auth_config, basic

ADDRESSES = [f"127.1.{n // 200}.{n % 200 + 1}" for n in range(300)]
NEWCOMERS = [f"scraper-{n}" for n in range(5)]


class Flood:
    """One client per address sending wrong passwords on a keep-alive connection, each next
    attempt as soon as the last is answered, until stopped; in a thread of its own."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers: Counter[str] = Counter()  # by status
        self.per_address: Counter[str] = Counter()
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    @contextmanager
    def running(self) -> Iterator[Flood]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(30)

    def wait(self, done: Callable[[Flood], bool], timeout: float = 60) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: done(self), timeout)

    async def _main(self) -> None:
        tasks = [asyncio.ensure_future(self._client(address)) for address in ADDRESSES]
        await asyncio.get_running_loop().run_in_executor(None, self._stop.wait)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _client(self, address: str) -> None:
        attempt = 0
        while not self._stop.is_set():
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port,
                                                           local_addr=(address, 0))
            try:
                while True:
                    attempt += 1
                    token = base64.b64encode(f"alice:guess-{address}-{attempt}".encode()).decode()
                    writer.write(f"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {token}\r\n"
                                 "\r\n".encode())
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), 0)
                    await reader.readexactly(length)
                    with self._changed:
                        self.answers[head.split(b" ", 2)[1].decode()] += 1
                        self.per_address[address] += 1
                        self._changed.notify_all()
                    if b"connection: close" in head.lower():
                        break
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()


def test_new_valid_logins_get_through_a_flood_from_300_addresses(
    serve: ServeFactory, tmp_path: Path
) -> None:
    # Cost 10, as htpasswd -B makes: tens of ms a check, so 300 clients keep the queue full.
    users = {name: bcrypt.hashpw(b"pw", bcrypt.gensalt(10)).decode()
             for name in ("alice", *NEWCOMERS)}
    server = serve(ROUTES, auth_config(tmp_path / "web.yml", users))
    statuses = []
    with Flood(server.address[1]).running() as flood:
        # The queue was full (503s), and every address has asked twice at least.
        assert flood.wait(lambda f: f.answers["503"] > 0 and len(f.per_address) == 300
                          and min(f.per_address.values()) >= 2)
        host, port = server.address
        # Logins not cached (a restart, a rotated password, a new scraper), one at a time,
        # from addresses of their own; before, each found the queue full: 503.
        for n, user in enumerate(NEWCOMERS):
            newcomer = http.client.HTTPConnection(host, port, timeout=30,
                                                  source_address=(f"127.0.0.{n + 3}", 0))
            newcomer.request("GET", "/", headers=basic(user, "pw"))
            statuses.append(newcomer.getresponse().status)
            newcomer.close()
        full = flood.answers["503"]
        assert flood.wait(lambda f: f.answers["503"] > full)  # still full after them
    assert statuses == [200] * len(NEWCOMERS)
    assert {"401", "503"} <= set(flood.answers)
