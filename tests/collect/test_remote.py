"""`--from URL` against real servers on loopback that answer wrongly, slowly, hugely or in TLS."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import require_tool
from health.factories import make_gpu, make_snapshot, make_system

from hwinfo import urlfetch
from hwinfo.collect.remote import RemoteError, fetch_snapshot
from hwinfo.render.json import render_json

SNAPSHOT = make_snapshot(make_system(make_gpu(0)))
Answer = Callable[[socket.socket], None]


def http_answer(status: str, content_type: str, body: bytes) -> Answer:
    def answer(conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)

    return answer


class Server:
    """A loopback TCP server that hands each connection to `answer`, on its own thread."""

    def __init__(self, answer: Answer, tls: ssl.SSLContext | None = None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.answer, self.tls = answer, tls
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            conn.settimeout(30)
            self.answer(conn)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(answer: Answer, tls: ssl.SSLContext | None = None) -> Server:
        servers.append(Server(answer, tls))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def refused(url: str, timeout: float = 10.0, ca_file: str | None = None) -> str:
    with pytest.raises(RemoteError) as raised:
        fetch_snapshot(url, ca_file, timeout=timeout)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_a_snapshot_is_read(serve: Callable[..., Server]) -> None:
    server = serve(http_answer("200 OK", "application/json", render_json(SNAPSHOT).encode()))
    assert fetch_snapshot(f"http://127.0.0.1:{server.port}") == SNAPSHOT


def test_an_html_page_is_not_an_hwinfo_daemon(serve: Callable[..., Server]) -> None:
    server = serve(http_answer("200 OK", "text/html; charset=utf-8", b"<html>router login</html>"))
    assert refused(f"http://127.0.0.1:{server.port}") == (
        f"http://127.0.0.1:{server.port}/api/v1/snapshot is not an hwinfo daemon "
        "(it answered text/html)")


def test_json_that_is_not_a_snapshot_says_so(serve: Callable[..., Server]) -> None:
    body = json.dumps({"status": "success", "data": {"result": []}}).encode()
    server = serve(http_answer("200 OK", "application/json", body))
    assert refused(f"http://127.0.0.1:{server.port}").endswith(
        "/api/v1/snapshot: not an hwinfo snapshot (it has no schema_version)")


@pytest.mark.parametrize(("body", "says"), [
    (b"[" * 100_000, "nested too deeply"),
    (b'{"schema_version": NaN}', "NaN is not a number JSON allows"),
    (b"\xff\xfe binary", "not UTF-8"),
    (b"<html>", "invalid JSON"),
])
def test_an_unreadable_body_is_one_line(serve: Callable[..., Server], body: bytes, says: str) -> None:
    server = serve(http_answer("200 OK", "application/json", body))
    message = refused(f"http://127.0.0.1:{server.port}")
    assert "is not an hwinfo daemon (its answer: " in message and says in message


def test_a_huge_answer_is_cut_at_the_limit(serve: Callable[..., Server]) -> None:
    size = urlfetch.MAX_RESPONSE_BYTES + 1024

    def endless(conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n[" % size)
        chunk = b"0," * 32768
        for _ in range(size // len(chunk) + 1):
            conn.sendall(chunk)

    server = serve(endless)
    assert "larger than 16 MiB, the most accepted" in refused(f"http://127.0.0.1:{server.port}")


def test_a_daemon_error_answer_is_quoted(serve: Callable[..., Server]) -> None:
    server = serve(http_answer("503 Service Unavailable", "application/json",
                               b'{"error": "no sample yet"}\n'))
    assert refused(f"http://127.0.0.1:{server.port}").endswith(
        "HTTP 503 Service Unavailable (no sample yet)")


def test_connection_refused(serve: Callable[..., Server]) -> None:
    # Held bound, never listening: connections are refused, and no parallel test can take it.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        assert refused(f"http://127.0.0.1:{port}") == (
            f"http://127.0.0.1:{port}/api/v1/snapshot: connection refused "
            "(is hwinfo serve running there?)")


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://127.0.0.1:0", "http://[::1/x", "http://h:1/a\x00b",
                                 "http://127.0.0.1:port"])
def test_an_invalid_port_or_address_is_one_line(url: str) -> None:
    assert refused(url).startswith(f"--from {url!r}: expected http://HOST:PORT or https://HOST:PORT")


def _silent(conn: socket.socket) -> None:
    conn.recv(65536)
    time.sleep(60)


def _trickle(conn: socket.socket) -> None:
    # A header line that never ends, one byte at a time for a minute: every read succeeds,
    # none completes, so only a deadline for the whole exchange ends it, and says so.
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    for _ in range(600):
        conn.sendall(b"a")
        time.sleep(0.1)


@pytest.mark.parametrize("answer", [_silent, _trickle])
def test_one_deadline_covers_the_whole_exchange(serve: Callable[..., Server], answer: Answer) -> None:
    server = serve(answer)
    message = refused(f"http://127.0.0.1:{server.port}", timeout=1.0)
    assert "no " in message and "answer within 1 s" in message


def _self_signed(where: Path, names: str) -> tuple[Path, Path]:
    """A self-signed certificate (its own CA) for `names` (a subjectAltName), and its key."""
    openssl = require_tool("openssl")
    cert, key = where / "server.crt", where / "server.key"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", key, "-out", cert,
                    "-addext", f"subjectAltName={names}"],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _self_signed(tmp_path_factory.mktemp("tls"), "IP:127.0.0.1,DNS:localhost")


def _tls_server(serve: Callable[..., Server], certificate: tuple[Path, Path]) -> Server:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return serve(http_answer("200 OK", "application/json", render_json(SNAPSHOT).encode()), context)


@pytest.fixture
def tls_server(serve: Callable[..., Server], certificate: tuple[Path, Path]) -> Server:
    return _tls_server(serve, certificate)


def test_plain_http_to_a_tls_port_says_use_https(tls_server: Server) -> None:
    assert refused(f"http://127.0.0.1:{tls_server.port}") == (
        f"http://127.0.0.1:{tls_server.port}/api/v1/snapshot speaks TLS: use https://")


def test_https_with_its_ca_reads_the_snapshot(tls_server: Server, certificate: tuple[Path, Path]) -> None:
    assert fetch_snapshot(f"https://127.0.0.1:{tls_server.port}", ca_file=str(certificate[0])) == SNAPSHOT


def test_https_to_an_unknown_certificate_says_give_its_ca(tls_server: Server) -> None:
    message = refused(f"https://127.0.0.1:{tls_server.port}")
    assert "its certificate is not trusted" in message and "--ca-file" in message


@pytest.mark.parametrize("names", ["DNS:elsewhere.example", "IP:10.1.2.3,DNS:localhost"])
def test_a_trusted_certificate_of_another_host_says_so_not_give_its_ca(
        serve: Callable[..., Server], tmp_path: Path, names: str) -> None:
    # Its CA is given: the advice to give it would send a user in a circle.
    certificate = _self_signed(tmp_path, names)
    server = _tls_server(serve, certificate)
    assert refused(f"https://127.0.0.1:{server.port}", ca_file=str(certificate[0])) == (
        f"https://127.0.0.1:{server.port}/api/v1/snapshot: its certificate is not for "
        "127.0.0.1: use a name it holds")


def test_https_to_a_plain_http_port_says_use_http(serve: Callable[..., Server]) -> None:
    server = serve(http_answer("400 Bad Request", "text/plain", b"no"))
    assert refused(f"https://127.0.0.1:{server.port}") == (
        f"https://127.0.0.1:{server.port}/api/v1/snapshot does not speak TLS: use http://")


def test_go_servers_answer_to_plain_http_on_tls_is_recognised(serve: Callable[..., Server]) -> None:
    # Go's net/http answers plain HTTP on a TLS port with this 400 (exporter-toolkit does).
    server = serve(http_answer("400 Bad Request", "text/plain; charset=utf-8",
                               b"Client sent an HTTP request to an HTTPS server.\n"))
    assert refused(f"http://127.0.0.1:{server.port}").endswith("speaks TLS: use https://")


def test_credentials_in_the_url_are_sent_and_not_shown(serve: Callable[..., Server]) -> None:
    seen: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        seen.append(conn.recv(65536))
        conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")

    server = serve(answer)
    message = refused(f"http://prom:s3cret@127.0.0.1:{server.port}")
    assert b"Authorization: Basic cHJvbTpzM2NyZXQ=" in seen[0]
    assert "s3cret" not in message and message.endswith("HTTP 401 Unauthorized")


def test_a_real_tls_daemon_named_with_http(tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    from exporter.serving import serving

    config = tmp_path / "web.yml"
    config.write_text(f"tls_server_config:\n  cert_file: {certificate[0]}\n  key_file: {certificate[1]}\n")
    with serving("--simulate", "cloud-t4", "--web-config", str(config), ready=False,
                 scheme="https") as url:
        plain = url.replace("https://", "http://")
        assert refused(plain) == f"{plain}/api/v1/snapshot speaks TLS: use https://"
        deadline = time.monotonic() + 60
        while True:  # the daemon answers 503 until its first sample
            try:
                snapshot = fetch_snapshot(url, ca_file=str(certificate[0]))
                break
            except RemoteError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert snapshot.gpu is not None and snapshot.gpu.gpus[0].name == "Tesla T4"
