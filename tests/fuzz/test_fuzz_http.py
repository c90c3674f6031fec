"""HTTP request heads sent to a real server on loopback: a 4xx, a valid answer, or a clean close.

Never a 5xx, never a hang, never a log line with a traceback, and the server serves a valid
scrape afterwards. One server with basic auth and one without share the examples, so the
parser and the auth gate both see every head.
"""

from __future__ import annotations

import base64
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator

import bcrypt
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from hwinfo.exporter.http import Limits, Response, Server
from hwinfo.exporter.webconfig import load_web_config

ROUTES = {
    "/": lambda request: Response(200, b"hello\n"),
    "/metrics": lambda request: Response(200, b"hwinfo_up 1\n" * 200, "text/plain; version=0.0.4"),
}
VALID = base64.b64encode(b"alice:secret").decode()
# Seconds for a whole answer: generous for a loaded machine, and far below the servers'
# head_timeout, so an answer that came only when that ran out fails the case.
ANSWER_WITHIN = 60.0
LIMITS = Limits(head_timeout=600)

# Nothing is stored between runs.
FUZZ = settings(max_examples=400, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[Server], Records]]:
    config = tmp_path_factory.mktemp("web") / "web.yml"
    hashed = bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode()
    config.write_text(f"basic_auth_users:\n  alice: '{hashed}'\n")
    records = Records()
    package = logging.getLogger("hwinfo")
    level = package.level
    package.addHandler(records)
    package.setLevel(logging.DEBUG)  # tracebacks would show at debug: catch them too
    running = [Server(("127.0.0.1", 0), ROUTES, limits=LIMITS),
               Server(("127.0.0.1", 0), ROUTES, load_web_config(config), LIMITS)]
    loops = [threading.Thread(target=server.serve_forever) for server in running]
    for loop in loops:
        loop.start()
    # Logged in once before the flood of hostile heads: a cached login must keep working.
    assert scrape_works(running[1], VALID)
    yield running, records
    for server in running:
        server.shutdown()
    for loop in loops:
        loop.join(10)
    package.removeHandler(records)
    package.setLevel(level)


def exchange(server: Server, data: bytes) -> bytes:
    """Send data and the end of input; everything the server answers until it closes."""
    with socket.create_connection(server.address, timeout=ANSWER_WITHIN) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused early and closed: what it said is still readable
        received = b""
        deadline = time.monotonic() + ANSWER_WITHIN
        try:
            while chunk := sock.recv(65536):
                received += chunk
                assert time.monotonic() < deadline, "the server kept talking"
        except ConnectionResetError:
            pass  # closed with input unread (beyond what it drains)
        return received


def check(servers: tuple[list[Server], Records], data: bytes) -> None:
    running, records = servers
    seen = len(records.records)
    for server in running:
        answer = exchange(server, data)
        assert answer == b"" or answer.startswith(b"HTTP/1.1 "), answer[:80]
        statuses = [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)]
        # 505 is the 4xx of a version we do not speak (HTTP/2.0 in an HTTP/1 request line).
        assert all(status < 500 or status == 505 for status in statuses), answer[:200]
        event(f"first answer: {statuses[0] if statuses else 'none, closed'}")
    bad = [r for r in records.records[seen:] if r.levelno >= logging.WARNING or r.exc_info]
    assert bad == [], [r.getMessage() for r in bad]


def scrape_works(server: Server, authorization: str | None = None) -> bool:
    head = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if authorization:
        head += f"Authorization: Basic {authorization}\r\n"
    answer = exchange(server, (head + "\r\n").encode())
    return answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"hwinfo_up 1\n")


def mostly(usual: st.SearchStrategy[str], *hostile: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """usual three times in four: heads valid but for one piece reach the deepest checks."""
    return st.integers(0, 3).flatmap(lambda n: usual if n else st.one_of(*hostile))


TOKEN = st.text("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                min_size=1, max_size=8)
ANY_TEXT = st.binary(max_size=24).map(lambda b: b.decode("latin-1"))
METHODS = mostly(st.sampled_from(["GET", "HEAD", "POST", "OPTIONS"]),
                 st.sampled_from(["get", "G ET", ""]), TOKEN, ANY_TEXT)
TARGETS = mostly(
    st.sampled_from(["/", "/metrics", "/metrics?x=1&x=2", "/%2e%2e/%ff", "*", "http://[x/",
                     "http://h:99999999/metrics", "https://[::1]/", "//", "/\x00", "/²",
                     "http://" + "a" * 300 + "/", "/?" + "&" * 200]),
    st.text(max_size=40), ANY_TEXT,
)
VERSIONS = mostly(st.sampled_from(["HTTP/1.1", "HTTP/1.0"]),
                  st.sampled_from(["HTTP/2.0", "HTTP/0.9", "http/1.1", "HTTP/1.1 ", "HTTP/11",
                                   "HTTP/١.١"]), ANY_TEXT)
NAMES = mostly(st.sampled_from(["Host", "Content-Length", "Transfer-Encoding", "Connection",
                                "Authorization", "Accept-Encoding", "Accept"]),
               st.sampled_from(["Host ", " Host", "X:Y", ""]), TOKEN, ANY_TEXT)
VALUES = mostly(
    st.sampled_from(["x", "0", "\xb2", "١", "-1", "1" * 30, "close", "keep-alive", "chunked",
                     "gzip;q=nan", "gzip;q=1e999", "*;q=0.5, gzip;q=0", "Basic " + VALID,
                     "Basic !!!", "Basic " + base64.b64encode(b"\xff:\xfe").decode(),
                     "Basic " + base64.b64encode(b"alice:" + b"p" * 100).decode(),
                     "basic     " + VALID, "Bearer x", "application/openmetrics-text"]),
    ANY_TEXT, st.text(max_size=30),
)
ENDINGS = mostly(st.just("\r\n"), st.sampled_from(["\n", "\r", "\r\r\n", " \r\n"]))


@st.composite
def heads(draw: st.DrawFn) -> bytes:
    """A request head put together from pieces, each valid or hostile."""
    end = draw(ENDINGS)
    line = f"{draw(METHODS)} {draw(TARGETS)} {draw(VERSIONS)}"
    fields = draw(st.lists(st.tuples(NAMES, mostly(st.just(": "), st.sampled_from([":", " : "])),
                                     VALUES), max_size=5))
    fields[:0] = draw(mostly(st.just([("Host", ": ", "x")]), st.just([])))
    text = line + end + "".join(name + sep + value + end for name, sep, value in fields)
    text += draw(mostly(st.just(end), st.sampled_from(["", "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"])))
    return text.encode("utf-8", "surrogatepass")


@FUZZ
@given(heads())
@example(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: \xb2\r\n\r\n")  # raised in int()
@example(b"GET http://[x/ HTTP/1.1\r\nHost: x\r\n\r\n")  # raised in urlsplit()
def test_a_request_head_gets_a_4xx_an_answer_or_a_close(
    servers: tuple[list[Server], Records], data: bytes
) -> None:
    check(servers, data)


@settings(FUZZ, max_examples=150)
@given(st.one_of(st.binary(max_size=200),
                 st.binary(max_size=200).map(lambda b: b"GET / HTTP/1.1\r\nHost: x\r\n" + b),
                 st.binary(max_size=200).map(lambda b: b"\x16\x03\x01" + b)))
def test_any_bytes_get_a_4xx_or_a_close(
    servers: tuple[list[Server], Records], data: bytes
) -> None:
    check(servers, data)


def test_the_servers_still_serve_valid_scrapes_afterwards(
    servers: tuple[list[Server], Records],
) -> None:
    plain, with_auth = servers[0]
    assert scrape_works(plain)
    assert scrape_works(with_auth, VALID)
    assert not scrape_works(with_auth)
