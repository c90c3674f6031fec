"""The exporter's HTTP/1.1 server: bounded threads, keep-alive, gzip, TLS and basic auth.

The thread that calls serve_forever() runs an event loop (selectors) that owns every
connection while it is idle between requests, in its TLS handshake or sending its request
head. Idle keep-alive connections and slow or silent clients therefore cost a file
descriptor, never a thread. A complete request head goes to a fixed pool of worker threads,
which check credentials, call the route's handler and write the response, then hand the
connection back to the loop. A request that finds every worker busy waits in the loop for
at most Limits.queue_wait and is then answered 503: the thread count is 1 + Limits.workers
whatever the clients do.
"""

from __future__ import annotations

import collections
import gzip
import logging
import os
import queue
import re
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import parse_qs, unquote, urlsplit

from hwinfo.exporter.auth import BasicAuth
from hwinfo.exporter.webconfig import WebConfig, WebConfigError, load_web_config

logger = logging.getLogger(__name__)

_TOKEN_CHAR = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
_TOKEN = re.compile(_TOKEN_CHAR + "+")
_TOKEN_START = re.compile(_TOKEN_CHAR.encode())
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
_VERSION = re.compile(r"HTTP/[0-9]\.[0-9]")
_HEAD_END = re.compile(rb"\r?\n\r?\n")
# Framing and negotiation headers belong to the server; a handler cannot set them.
_SERVER_HEADERS = frozenset(
    {"connection", "content-encoding", "content-length", "content-type", "date", "keep-alive",
     "transfer-encoding", "vary"}
)  # fmt: skip
_DEFAULT_HEADERS = {"X-Content-Type-Options": "nosniff"}
# Below this size gzip saves less than it costs; a handler's own gzip_body is always used.
_GZIP_MIN_BYTES = 1024
_RELOAD_INTERVAL = 1.0  # seconds between checks of the web config's files
_SWEEP_INTERVAL = 0.25  # seconds between looks for timed-out connections
_OVERLOAD_LOG_INTERVAL = 60.0


@dataclass(frozen=True)
class Request:
    """A parsed request head; header names are lower-case, repeated headers joined with ", "."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Response:
    """What a handler returns. gzip_body, when given, is body already gzipped (see gzip_bytes)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)
    gzip_body: bytes | None = None

    def __post_init__(self) -> None:
        if not 200 <= self.status <= 599:
            raise ValueError(f"status {self.status} is not a final HTTP status")
        for name, value in {"Content-Type": self.content_type, **self.headers}.items():
            if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
                raise ValueError(f"invalid response header {name!r}: {value!r}")
        if not _SERVER_HEADERS.isdisjoint(name.lower() for name in self.headers):
            raise ValueError(f"the server sets {', '.join(sorted(_SERVER_HEADERS))} itself")


Handler = Callable[[Request], Response]


class ServerError(Exception):
    """The server cannot start; str() is one line for a person."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what clients can make the server spend; times are in seconds."""

    workers: int = 8
    connections: int = 512
    queue_wait: float = 1.0  # longest wait for a free worker before 503
    head_timeout: float = 10.0  # TLS handshake, and a request head from its first byte
    idle_timeout: float = 120.0  # keep-alive connection between requests
    write_timeout: float = 10.0  # writing one whole response
    request_line_bytes: int = 8192
    head_bytes: int = 32768
    header_count: int = 100


def gzip_bytes(body: bytes) -> bytes:
    """Gzip body as the server would; for handlers that keep a pre-compressed copy."""
    return gzip.compress(body, compresslevel=6, mtime=0)


class Server:
    """Serves routes (exact paths) over HTTP/1.1, with TLS and basic auth from a web config.

    The socket is bound by the constructor (port 0 picks a free port: see `address`).
    serve_forever() runs until shutdown(); it can be run once.
    """

    def __init__(
        self,
        address: tuple[str, int],
        routes: Mapping[str, Handler],
        web_config: WebConfig | None = None,
        limits: Limits = Limits(),
    ) -> None:
        self._routes = dict(routes)
        self._limits = limits
        self._listener = _listen(*address)
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._auth = BasicAuth({})
        self._config: WebConfig | None = None
        self._ssl: ssl.SSLContext | None = None
        self._headers: tuple[tuple[str, str], ...] = ()
        self._watched: tuple[str, ...] = ()
        if web_config is not None:
            self._apply(web_config)
            self._watched = web_config.watched_files()
        self._stamp = _stamp(self._watched)
        self._next_reload = 0.0
        self._selector = selectors.DefaultSelector()
        self._wake_in, self._wake_out = socket.socketpair()
        for sock in (self._listener, self._wake_in, self._wake_out):
            sock.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ, _LISTENER)
        self._selector.register(self._wake_in, selectors.EVENT_READ, _WAKE)
        # Loop-owned state: connections it watches, requests waiting for a worker, busy workers.
        self._idle: set[_Conn] = set()
        self._waiting: collections.deque[tuple[_Conn, _Parsed, float]] = collections.deque()
        self._busy = 0
        self._next_sweep = 0.0
        self._last_overload_log = -_OVERLOAD_LOG_INTERVAL
        # Worker ↔ loop hand-offs.
        self._jobs: queue.SimpleQueue[tuple[_Conn, _Parsed] | None] = queue.SimpleQueue()
        self._returned: queue.SimpleQueue[tuple[_Conn, bool]] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._stopping = False
        self._closed = False

    def serve_forever(self) -> None:
        """Serve until shutdown(); then close every connection and stop the workers."""
        self._workers = [
            threading.Thread(target=self._work, name=f"hwinfo-http-{n}", daemon=True)
            for n in range(self._limits.workers)
        ]
        for worker in self._workers:
            worker.start()
        try:
            while not self._stopping:
                try:
                    self._turn()
                except Exception:  # a bug must cost one turn, not the exporter
                    logger.exception("error in the HTTP server loop")
        finally:
            self._stop()

    def shutdown(self) -> None:
        """Ask serve_forever() to return; safe from a signal handler and from any thread."""
        self._stopping = True
        self._wake()

    def close(self) -> None:
        """Release the socket of a server that will not serve (serve_forever() does it too)."""
        if self._closed:
            return
        self._closed = True
        self._selector.close()
        for sock in (self._listener, self._wake_in, self._wake_out):
            sock.close()

    # The event loop.

    def _turn(self) -> None:
        now = time.monotonic()
        timeout = _SWEEP_INTERVAL
        if self._waiting:
            timeout = min(timeout, max(0.0, self._waiting[0][2] - now))
        for key, _ in self._selector.select(timeout):
            if key.data is _LISTENER:
                self._accept()
            elif key.data is _WAKE:
                self._drain_wake()
            else:
                self._guarded(key.data, self._on_ready)
        self._take_returned()
        self._dispatch()
        now = time.monotonic()
        if now >= self._next_sweep:
            self._next_sweep = now + _SWEEP_INTERVAL
            self._sweep(now)
        if self._config is not None and now >= self._next_reload:
            self._next_reload = now + _RELOAD_INTERVAL
            self._reload_if_changed()

    def _guarded(self, conn: _Conn, step: Callable[[_Conn], None]) -> None:
        """Run one step for a connection; a bug costs that connection, never the loop."""
        try:
            step(conn)
        except Exception:
            logger.exception("error on connection from %s", conn.peer)
            self._close(conn)

    def _accept(self) -> None:
        for _ in range(64):  # then let the other connections have a turn
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, ConnectionAbortedError):
                return
            except OSError as exc:
                # Out of file descriptors: the listener stays readable, so pause a little
                # rather than spin; the sweep frees descriptors as connections time out.
                logger.warning("cannot accept connections: %s", exc.strerror or exc)
                time.sleep(0.1)
                return
            self._admit(sock, _peer(address))

    def _admit(self, sock: socket.socket, peer: str) -> None:
        if len(self._idle) + len(self._waiting) + self._busy >= self._limits.connections:
            if not self._idle:
                logger.debug("%s: refused, %d connections open", peer, self._limits.connections)
                sock.close()
                return
            # The connection that has been quiet longest makes room for the new one.
            self._close(min(self._idle, key=lambda c: c.last_active))
        now = time.monotonic()
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:
                sock = self._ssl.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except OSError as exc:  # the client is already gone
            logger.debug("%s: %s", peer, exc)
            sock.close()
            return
        conn = _Conn(sock, peer, self._ssl is not None, now, now + self._limits.head_timeout)
        self._watch(conn, selectors.EVENT_READ)

    def _on_ready(self, conn: _Conn) -> None:
        if conn not in self._idle:
            return  # closed earlier in the same turn (evicted to admit another)
        if conn.handshaking:
            assert isinstance(conn.sock, ssl.SSLSocket)
            try:
                conn.sock.do_handshake()
            except ssl.SSLWantReadError:
                self._watch(conn, selectors.EVENT_READ)
                return
            except ssl.SSLWantWriteError:
                self._watch(conn, selectors.EVENT_WRITE)
                return
            except OSError as exc:
                self._drop(conn, f"TLS handshake failed: {exc}")
                return
            conn.handshaking = False
        self._read(conn)

    def _read(self, conn: _Conn) -> None:
        """Take what the client has sent, then act on it once the request head is complete."""
        while len(conn.buffer) <= self._limits.head_bytes:
            try:
                data = conn.sock.recv(65536)
            except (BlockingIOError, ssl.SSLWantReadError):
                break
            except ssl.SSLWantWriteError:
                self._watch(conn, selectors.EVENT_WRITE)
                return
            except OSError as exc:
                self._drop(conn, f"read failed: {exc}")
                return
            if not data:
                self._close(conn)  # the client closed: the normal end of a keep-alive connection
                return
            now = time.monotonic()
            # From its first byte a request head has head_timeout to arrive, however long
            # the connection was allowed to stay idle before.
            conn.deadline = min(conn.deadline, now + self._limits.head_timeout)
            conn.last_active = now
            conn.buffer += data
            # TLS can hold decrypted bytes the selector does not see; read them now.
            if not (isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending()):
                break
        self._watch(conn, selectors.EVENT_READ)
        self._advance(conn)

    def _advance(self, conn: _Conn) -> None:
        """Queue the connection's complete request for a worker, or answer a bad one."""
        try:
            parsed = conn.take_request(self._limits)
        except _BadRequest as exc:
            self._reject(conn, exc.status, exc.reason)
            return
        if parsed is None:
            return
        self._unwatch(conn)
        self._waiting.append((conn, parsed, time.monotonic() + self._limits.queue_wait))

    def _dispatch(self) -> None:
        while self._waiting and self._busy < self._limits.workers:
            conn, parsed, _ = self._waiting.popleft()
            self._busy += 1
            self._jobs.put((conn, parsed))
        now = time.monotonic()
        while self._waiting and self._waiting[0][2] <= now:
            conn, _, _ = self._waiting.popleft()
            if now - self._last_overload_log >= _OVERLOAD_LOG_INTERVAL:
                self._last_overload_log = now
                logger.warning(
                    "all %d workers busy for %.1f s: answering 503 (more such are not logged "
                    "for %.0f s)",
                    self._limits.workers,
                    self._limits.queue_wait,
                    _OVERLOAD_LOG_INTERVAL,
                )
            self._reject(conn, HTTPStatus.SERVICE_UNAVAILABLE, "no worker free")

    def _take_returned(self) -> None:
        while True:
            try:
                conn, keep_alive = self._returned.get_nowait()
            except queue.Empty:
                return
            self._busy -= 1
            if not keep_alive or self._stopping:
                self._close(conn)
                continue
            now = time.monotonic()
            conn.deadline = now + self._limits.idle_timeout
            conn.last_active = now
            self._guarded(conn, self._resume)

    def _resume(self, conn: _Conn) -> None:
        """Watch a connection again after its response, serving what it already sent."""
        conn.sock.setblocking(False)
        self._watch(conn, selectors.EVENT_READ)
        if conn.buffer:
            conn.deadline = time.monotonic() + self._limits.head_timeout
            self._advance(conn)
        elif isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending():
            self._read(conn)

    def _sweep(self, now: float) -> None:
        for conn in [c for c in self._idle if c.deadline <= now]:
            if conn.handshaking or conn.buffer:
                self._drop(conn, "timed out before a complete request")
            else:
                self._close(conn)  # an idle keep-alive connection, expired

    def _reject(self, conn: _Conn, status: HTTPStatus, reason: str) -> None:
        """Answer with an error and close; best effort, since the loop must never block."""
        logger.debug("%s: %d %s", conn.peer, status, reason)
        body = f"{status.phrase}\n".encode()
        head = (
            f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: text/plain; charset=utf-8"
            f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        try:
            conn.sock.setblocking(False)
            conn.sock.send(head.encode("ascii") + body)
        except OSError:
            pass  # the client is gone or not reading: closing is all that is left
        self._close(conn)

    def _drop(self, conn: _Conn, reason: str) -> None:
        logger.debug("%s: dropped: %s", conn.peer, reason)
        self._close(conn)

    def _watch(self, conn: _Conn, events: int) -> None:
        if conn not in self._idle:
            self._selector.register(conn.sock, events, conn)
            self._idle.add(conn)
        elif conn.events != events:
            self._selector.modify(conn.sock, events, conn)
        conn.events = events

    def _unwatch(self, conn: _Conn) -> None:
        if conn in self._idle:
            self._selector.unregister(conn.sock)
            self._idle.discard(conn)

    def _close(self, conn: _Conn) -> None:
        self._unwatch(conn)
        conn.sock.close()

    def _wake(self) -> None:
        try:
            self._wake_out.send(b"\0")
        except OSError:
            pass  # already awake (buffer full) or already closed

    def _drain_wake(self) -> None:
        try:
            while self._wake_in.recv(4096):
                pass
        except BlockingIOError:
            pass

    def _stop(self) -> None:
        for _ in self._workers:
            self._jobs.put(None)
        for conn in list(self._idle):
            self._close(conn)
        while self._waiting:
            self._close(self._waiting.popleft()[0])
        # Responses being written get the time one write may take; workers are daemon threads.
        deadline = time.monotonic() + self._limits.write_timeout
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        while True:
            try:
                self._returned.get_nowait()[0].sock.close()
            except queue.Empty:
                break
        self.close()

    # Web configuration.

    def _apply(self, config: WebConfig) -> None:
        """Start using a web configuration; new connections get its TLS settings."""
        seen = set(self._config.notes) if self._config is not None else set()
        for note in config.notes:
            if note not in seen:
                logger.warning("%s", note)
        self._config = config
        self._ssl = config.ssl_context
        self._auth.update(config.users)
        self._headers = tuple(config.headers.items())

    def _reload_if_changed(self) -> None:
        """Load the web config again when it or a file it names changed (rotated certificates)."""
        stamp = _stamp(self._watched)
        if stamp == self._stamp:
            return
        # Remembered even when loading fails, so that a broken file is reported once.
        self._stamp = stamp
        assert self._config is not None
        try:
            config = load_web_config(self._config.path, previous=self._config)
        except WebConfigError as exc:
            logger.warning("web config not reloaded, keeping the previous one: %s", exc)
            return
        self._apply(config)
        logger.info("web config reloaded from %s", config.path)
        if config.watched_files() != self._watched:
            self._watched = config.watched_files()
            self._stamp = _stamp(self._watched)

    # Workers.

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            conn, parsed = job
            keep_alive = False
            try:
                keep_alive = self._respond(conn, parsed)
            except Exception:
                logger.exception("error answering %s", conn.peer)
            self._returned.put((conn, keep_alive))
            self._wake()

    def _respond(self, conn: _Conn, parsed: _Parsed) -> bool:
        """Answer one request; whether the connection stays open for another."""
        request = parsed.request
        response = self._answer(request)
        keep_alive = parsed.keep_alive and not self._stopping
        data = self._render(request, response, keep_alive)
        deadline = time.monotonic() + self._limits.write_timeout
        view = memoryview(data)
        try:
            while view:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("write timed out")
                conn.sock.settimeout(remaining)
                view = view[conn.sock.send(view) :]
        except OSError as exc:
            logger.debug("%s: response not delivered: %s", conn.peer, exc)
            return False
        return keep_alive

    def _answer(self, request: Request) -> Response:
        if self._auth.enabled and not self._auth.check(request.headers.get("authorization")):
            return _UNAUTHORIZED
        handler = self._routes.get(request.path)
        if handler is None:
            return _plain(HTTPStatus.NOT_FOUND)
        if request.method not in ("GET", "HEAD"):
            return _plain(HTTPStatus.METHOD_NOT_ALLOWED, {"Allow": "GET, HEAD"})
        try:
            response = handler(request)
            if not isinstance(response, Response):
                raise TypeError(f"handler returned {type(response).__name__}, not a Response")
        except Exception:
            logger.exception("handler for %s failed", request.path)
            return _plain(HTTPStatus.INTERNAL_SERVER_ERROR)
        return response

    def _render(self, request: Request, response: Response, keep_alive: bool) -> bytes:
        body = response.body
        negotiable = response.gzip_body is not None or len(body) >= _GZIP_MIN_BYTES
        gzipped = negotiable and _accepts_gzip(request.headers.get("accept-encoding", ""))
        if gzipped:
            body = response.gzip_body if response.gzip_body is not None else gzip_bytes(body)
        status = response.status
        lines = [f"HTTP/1.1 {int(status)} {_phrase(status)}", f"Date: {formatdate(usegmt=True)}"]
        bodiless = status in (HTTPStatus.NO_CONTENT, HTTPStatus.NOT_MODIFIED)
        if not bodiless:
            lines += [f"Content-Type: {response.content_type}", f"Content-Length: {len(body)}"]
        if gzipped:
            lines.append("Content-Encoding: gzip")
        if negotiable:
            lines.append("Vary: Accept-Encoding")
        # Later sources win: the operator's web config has the last word.
        headers: dict[str, tuple[str, str]] = {}
        for name, value in (*_DEFAULT_HEADERS.items(), *response.headers.items(), *self._headers):
            headers[name.lower()] = (name, value)
        lines += [f"{name}: {value}" for name, value in headers.values()]
        lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head if request.method == "HEAD" or bodiless else head + body


class _Conn:
    """One client connection and what it has sent that is not answered yet."""

    __slots__ = (
        "buffer", "deadline", "events", "handshaking", "last_active", "peer", "scanned", "sock"
    )  # fmt: skip

    def __init__(
        self, sock: socket.socket, peer: str, handshaking: bool, now: float, deadline: float
    ) -> None:
        self.sock = sock
        self.peer = peer
        self.buffer = bytearray()
        self.scanned = 0  # bytes of buffer known to hold no complete request head
        self.handshaking = handshaking
        self.deadline = deadline
        self.last_active = now
        self.events = 0

    def take_request(self, limits: Limits) -> _Parsed | None:
        """Parse and remove the request head at the start of buffer; None while incomplete."""
        buffer = self.buffer
        if not self.scanned:
            # Empty lines before a request line are allowed (RFC 9112 section 2.2).
            del buffer[: len(buffer) - len(buffer.lstrip(b"\r\n"))]
            if not buffer:
                return None
            if not _TOKEN_START.match(buffer):  # binary noise, or TLS sent to a plain-HTTP port
                raise _BadRequest(HTTPStatus.BAD_REQUEST, "not an HTTP request")
        # Only the new bytes (and 3 before them) can complete the blank line that ends a head,
        # so a client sending one byte at a time does not make every read rescan the buffer.
        match = _HEAD_END.search(buffer, max(0, self.scanned - 3))
        end = match.end() if match else len(buffer)
        self.scanned = 0 if match else end
        too_long = match or end > limits.request_line_bytes
        if too_long and buffer.find(b"\n", 0, limits.request_line_bytes + 1) < 0:
            raise _BadRequest(HTTPStatus.REQUEST_URI_TOO_LONG, "request line too long")
        if end > limits.head_bytes:
            raise _BadRequest(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request head too large")
        if match is None:
            return None
        head = bytes(buffer[:end])
        del buffer[:end]
        return _parse_head(head.decode("latin-1"), limits)


@dataclass(frozen=True)
class _Parsed:
    request: Request
    keep_alive: bool


class _BadRequest(Exception):
    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


_LISTENER = object()
_WAKE = object()
_UNAUTHORIZED = Response(
    HTTPStatus.UNAUTHORIZED, b"Unauthorized\n", headers={"WWW-Authenticate": 'Basic realm="hwinfo"'}
)


def _plain(status: HTTPStatus, headers: Mapping[str, str] | None = None) -> Response:
    """A generic text response that says no more than its status."""
    return Response(status, f"{status.phrase}\n".encode(), headers=headers or {})


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _parse_head(head: str, limits: Limits) -> _Parsed:
    lines = [line.removesuffix("\r") for line in head.split("\n")]
    fields = [line for line in lines[1:] if line]
    if len(fields) > limits.header_count:
        raise _BadRequest(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "too many header fields")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "malformed request line")
    method, target, version = parts
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise _BadRequest(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"{version} not supported")
    headers: dict[str, str] = {}
    for line in fields:
        name, colon, value = line.partition(":")
        value = value.strip(" \t")
        # A space before the colon or a folded line is a known request-smuggling vector.
        if not colon or not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "malformed header field")
        key = name.lower()
        if key not in headers:
            headers[key] = value
        elif key in ("host", "content-length"):
            raise _BadRequest(HTTPStatus.BAD_REQUEST, f"repeated {name} header")
        else:
            headers[key] += ", " + value
    if version == "HTTP/1.1" and "host" not in headers:
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "no Host header")
    length = headers.get("content-length", "0")
    if not length.isdigit():
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "malformed Content-Length")
    path, query = _split_target(target)
    tokens = {token.strip().lower() for token in headers.get("connection", "").split(",")}
    keep_alive = "close" not in tokens if version == "HTTP/1.1" else "keep-alive" in tokens
    # Request bodies are never read: a request with one ends its connection after the answer.
    has_body = int(length) > 0 or "transfer-encoding" in headers
    request = Request(method, path, parse_qs(query, keep_blank_values=True), headers)
    return _Parsed(request, keep_alive and not has_body)


def _split_target(target: str) -> tuple[str, str]:
    """Decoded path and raw query of an origin-form or absolute-form request target."""
    if target.startswith("/"):
        path, _, query = target.partition("?")
    elif target.lower().startswith(("http://", "https://")):
        parts = urlsplit(target)
        path, query = parts.path or "/", parts.query
    else:
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "malformed request target")
    return unquote(path), query


def _accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding value allows gzip (q-values honoured, `*` included)."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, *params = (part.strip().lower() for part in item.split(";"))
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[coding] = weight
    for coding in ("gzip", "x-gzip", "*"):
        if coding in weights:
            return weights[coding] > 0
    return False


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on the first address of host that binds; ServerError otherwise."""
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    shown = f"[{name}]:{port}" if ":" in name else f"{name}:{port}"
    if not 0 <= port <= 65535:
        raise ServerError(f"cannot listen on {shown}: port out of range 0-65535")
    try:
        addresses = socket.getaddrinfo(
            name or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise ServerError(f"cannot listen on {shown}: {_reason(exc)}") from None
    # No host means every interface: prefer IPv6 with IPv4 mapped in, as Go's servers do.
    addresses.sort(key=lambda info: not name and info[0] != socket.AF_INET6)
    error: OSError | None = None
    for family, kind, proto, _, sockaddr in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and sockaddr[0] == "::":
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind(sockaddr)
            sock.listen(socket.SOMAXCONN)  # bursts of new scrapers must not see SYNs dropped
        except OSError as exc:
            sock.close()
            error = error or exc
            continue
        return sock
    raise ServerError(f"cannot listen on {shown}: {_reason(error)}")


def _reason(exc: BaseException | None) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _peer(address: tuple[str, int] | str) -> str:
    if isinstance(address, str):
        return address
    host, port = address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _stamp(files: tuple[str, ...]) -> tuple[tuple[int, int, int] | None, ...]:
    """What tells that a file changed: replaced (inode), rewritten (mtime, size) or gone."""
    stamps: list[tuple[int, int, int] | None] = []
    for name in files:
        try:
            info = os.stat(name)
        except OSError:
            stamps.append(None)
            continue
        stamps.append((info.st_ino, info.st_mtime_ns, info.st_size))
    return tuple(stamps)
