"""The exporter's HTTP/1.1 server: bounded threads, keep-alive, gzip, TLS and basic auth.

The thread that calls serve_forever() runs an event loop (selectors) that owns every
connection except while a worker answers it: idle between requests, in its TLS handshake,
sending its request head, waiting for bcrypt, taking the rest of a response it does not
read fast enough, or told to retry later. Slow, silent or flooding clients therefore cost a
file descriptor and a little memory, never a thread. The loop judges each complete request
head (parsing, cached credentials) and answers errors itself; a fixed pool of worker
threads calls the route's handler and writes what the socket takes at once, then hands
the connection back. A request that finds every worker busy waits in the loop for at most
Limits.queue_wait and is then answered 503. Password checks that need bcrypt go to the
auth gate's own bounded queue (auth.py). The thread count is 1 + Limits.workers (+ 1 for
bcrypt, + 1 while the web config is reloaded) whatever the clients do, and shutdown() ends
serve_forever() within _STOP_GRACE.
"""

from __future__ import annotations

import collections
import functools
import gzip
import heapq
import os
import queue
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from hwinfo.exporter.auth import AuthGate, BasicAuth, GateLimits, Verdict, client_of
from hwinfo.exporter.throttled_log import ThrottledLog
from hwinfo.logs import get_logger

if TYPE_CHECKING:
    import ssl

    from hwinfo.exporter.webconfig import WebConfig, WebConfigError


class _TLS:
    """ssl's socket and retry types, once a web config asks for TLS (load()): ssl and the
    OpenSSL it maps are about 5 MiB of a daemon that serves plain HTTP. Until then no
    socket is one of `socket_type` and no exception one of the empty `want_*` tuples."""

    socket_type: tuple[type, ...] = ()
    want_read: tuple[type[BaseException], ...] = ()
    want_write: tuple[type[BaseException], ...] = ()

    @classmethod
    def load(cls) -> None:
        import ssl

        cls.socket_type = (ssl.SSLSocket,)
        cls.want_read, cls.want_write = (ssl.SSLWantReadError,), (ssl.SSLWantWriteError,)

logger = get_logger(__name__)

_TOKEN_CHAR = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
_TOKEN = re.compile(_TOKEN_CHAR + "+")
_TOKEN_START = re.compile(_TOKEN_CHAR.encode())
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
_TARGET = re.compile(r"[\x21-\x7e]+")  # visible ASCII (RFC 9112 section 3.2)
# ASCII digits only (str.isdigit() also takes '²'), and at most what Go's 63 bits hold.
_CONTENT_LENGTH = re.compile(r"[0-9]{1,18}")
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
# The most one turn of the loop spends on connections that have not logged in (TLS
# handshakes, wrong passwords), in seconds; the rest wait for the next turn, which begins
# with those that have. Hundreds of reconnecting TLS clients otherwise made turns of tens of
# ms, and a scrape that arrived meanwhile waited for the whole turn.
_UNTRUSTED_SLICE = 0.004
_MIN_ACCEPTS = 8  # accepted each turn however long the others took: none is starved
# After its last answer on a plain connection, the server stops sending and reads (and
# drops) what the client still sends, for a moment: closing with unread input would send a
# reset that can destroy the answer before the client reads it.
_LINGER_SECONDS = 0.5
_LINGER_BYTES = 65536
_STOP_GRACE = 0.25  # seconds that answers being made may take once shutdown() is called
# What a Go server answers to plain HTTP on a TLS port (net/http), word for word.
_PLAIN_TO_TLS = b"Client sent an HTTP request to an HTTPS server.\n"
_TLS_HANDSHAKE = 0x16  # the content type of the first TLS record a client sends


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
    auth: GateLimits = field(default_factory=GateLimits)  # bcrypt work, per client and in all


def gzip_bytes(body: bytes) -> bytes:
    """Gzip body as the server would; for handlers that keep a pre-compressed copy."""
    return gzip.compress(body, compresslevel=6, mtime=0)


# Where a connection is. The loop watches it in PEEK, HANDSHAKE, READ, WRITE and LINGER.
_PEEK = "peek"  # on a TLS port, before its first byte tells TLS from plain HTTP
_HANDSHAKE = "handshake"
_READ = "read"  # between requests, or receiving a request head
_QUEUED = "queued"  # a complete request waiting for a worker
_AUTH = "auth"  # a complete request waiting for bcrypt
_WORK = "work"  # in a worker
_WRITE = "write"  # the rest of a response waiting for the socket to take it
_LINGER = "linger"  # answered for the last time; draining the client's input before closing
_PAUSED = "paused"  # told to come back later (429, 503): not read again until Retry-After
# The states in which the loop alone holds a connection, with a deadline.
_IN_LOOP = frozenset({_PEEK, _HANDSHAKE, _READ, _WRITE, _LINGER, _PAUSED})


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
        self._log = ThrottledLog(logger)
        self._auth = BasicAuth({})
        self._gate: AuthGate[tuple[_Conn, _Parsed]] = AuthGate(
            self._auth, lambda item, ok: self._post(self._checked, *item, ok), limits.auth
        )
        self._config: WebConfig | None = None
        self._ssl: ssl.SSLContext | None = None
        self._headers: tuple[tuple[str, str], ...] = ()
        self._watched: tuple[str, ...] = ()
        if web_config is not None:
            self._apply(web_config)
            self._watched = web_config.watched_files()
        self._stamp = _stamp(self._watched)
        self._next_reload = 0.0
        self._reload_requested = False
        # A reload reads and parses off the loop (a hostile YAML file can take seconds) and
        # hands its outcome here: why it was asked for, and a WebConfig or the error.
        self._reloading = False
        self._reloaded: queue.SimpleQueue[tuple[str, WebConfig | WebConfigError]] = (
            queue.SimpleQueue()
        )
        self._selector = selectors.DefaultSelector()
        self._wake_in, self._wake_out = socket.socketpair()
        for sock in (self._listener, self._wake_in, self._wake_out):
            sock.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ, _LISTENER)
        self._selector.register(self._wake_in, selectors.EVENT_READ, _WAKE)
        # Loop-owned state: every open connection, requests waiting for a worker, busy workers.
        self._conns: set[_Conn] = set()
        self._waiting: collections.deque[tuple[_Conn, _Parsed, float]] = collections.deque()
        self._busy = 0
        self._next_sweep = 0.0
        # What workers and the auth gate hand back to the loop: a method and its arguments.
        self._inbox: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]]] = (
            queue.SimpleQueue()
        )
        self._jobs: queue.SimpleQueue[tuple[_Conn, _Parsed] | None] = queue.SimpleQueue()
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
                except Exception as exc:  # noqa: BLE001 - a bug must cost one turn, not the exporter
                    self._log.warning("loop", "error in the HTTP server loop: %r", exc,
                                      exc_info=True)
        finally:
            self._stop()

    def shutdown(self) -> None:
        """Ask serve_forever() to return soon; safe from a signal handler and from any thread."""
        self._stopping = True
        self._wake()

    def reload(self) -> None:
        """Load the web config again now, as when its file changes; safe from a signal handler."""
        self._reload_requested = True
        self._wake()

    def close(self) -> None:
        """Release the socket of a server that will not serve (serve_forever() does it too)."""
        if self._closed:
            return
        self._closed = True
        self._gate.close()
        self._selector.close()
        for sock in (self._listener, self._wake_in, self._wake_out):
            sock.close()

    # The event loop.

    def _turn(self) -> None:
        now = time.monotonic()
        timeout = _SWEEP_INTERVAL
        if self._waiting:
            timeout = min(timeout, max(0.0, self._waiting[0][2] - now))
        accept = False
        others: list[_Conn] = []
        # Connections that logged in go first: however many connections an attacker opens,
        # they do not stand between a scraper and the loop.
        for key, _ in self._selector.select(timeout):
            if key.data is _LISTENER:
                accept = True
            elif key.data is _WAKE:
                self._drain_wake()
            elif key.data.trusted:
                self._guarded(key.data, self._on_ready)
            else:
                others.append(key.data)
        # Those ready but not reached stay ready: the next select reports them at once.
        until = time.monotonic() + _UNTRUSTED_SLICE
        for conn in others:
            if time.monotonic() > until:
                break
            self._guarded(conn, self._on_ready)
        if accept:
            self._accept(until)
        self._take_inbox()
        self._dispatch()
        now = time.monotonic()
        if now >= self._next_sweep:
            self._next_sweep = now + _SWEEP_INTERVAL
            self._sweep(now)
        self._check_config(now)

    def _guarded(self, conn: _Conn, step: Callable[..., None], *args: Any) -> None:
        """Run one step for a connection; a bug costs that connection a 500, never the loop."""
        try:
            step(conn, *args)
        except Exception as exc:  # noqa: BLE001 - logged, throttled: clients can provoke it
            self._log.warning("connection", "error on a connection from %s: %r", conn.peer, exc,
                              exc_info=True)
            if conn.state == _READ and not conn.output:  # nothing of an answer sent yet
                self._answer_now(conn, None, _plain(HTTPStatus.INTERNAL_SERVER_ERROR), False)
            else:
                self._close(conn)

    def _accept(self, until: float) -> None:
        """Accept new connections: a few, then more until `until` (64 at most)."""
        for n in range(64):  # then let the other connections have a turn
            if n >= _MIN_ACCEPTS and time.monotonic() > until:
                return
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, ConnectionAbortedError):
                return
            except OSError as exc:
                # Out of file descriptors: the listener stays readable, so pause a little
                # rather than spin; the sweep frees descriptors as connections time out.
                self._log.warning("accept", "cannot accept connections: %s", exc.strerror or exc)
                time.sleep(0.1)
                return
            self._admit(sock, _peer(address))

    def _admit(self, sock: socket.socket, peer: str) -> None:
        if len(self._conns) >= self._limits.connections:
            idle = [c for c in self._conns if c.state in _IN_LOOP]
            if not idle:
                self._log.warning(
                    "refused", "%d connections open, all of them busy: refusing new ones (%s)",
                    self._limits.connections, peer,
                )  # fmt: skip
                sock.close()
                return
            # The connections quiet longest make room, one that logged in only if no other
            # can; 1/64 of the limit at a time, so a stream of new connections does not pay
            # for a scan each.
            untrusted = [c for c in idle if not c.trusted]
            batch = max(1, self._limits.connections // 64) if untrusted else 1
            quiet = heapq.nsmallest(batch, untrusted or idle, key=lambda c: c.last_active)
            self._log.warning(
                "evicted", "%d connections open: closed the %d quiet longest (from %s, %s, "
                "quiet %.0f s) for %s", self._limits.connections, len(quiet), quiet[0].peer,
                quiet[0].state, time.monotonic() - quiet[0].last_active, peer,
            )  # fmt: skip
            for conn in quiet:
                self._close(conn)
        now = time.monotonic()
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:  # the client is already gone
            logger.debug("%s: %s", peer, exc)
            sock.close()
            return
        conn = _Conn(sock, peer, client_of(peer), now, now + self._limits.head_timeout, self._ssl)
        self._conns.add(conn)
        conn.state = _PEEK if self._ssl is not None else _READ
        self._watch(conn, selectors.EVENT_READ)

    def _on_ready(self, conn: _Conn) -> None:
        if conn.closed:
            return  # closed earlier in the same turn (evicted to admit another)
        if conn.state == _PEEK:
            self._peek(conn)
        elif conn.state == _HANDSHAKE:
            self._handshake(conn)
        elif conn.state == _READ:
            self._read(conn)
        elif conn.state == _WRITE:
            self._write(conn)
        elif conn.state == _LINGER:
            self._drain(conn)
        elif conn.state == _PAUSED:
            self._wait_out(conn)

    def _peek(self, conn: _Conn) -> None:
        """On a TLS port: start the handshake, or tell a plain-HTTP client what is wrong."""
        try:
            first = conn.sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            return
        except OSError as exc:
            self._drop(conn, f"read failed: {exc}")
            return
        if not first:
            self._close(conn)
        elif first[0] == _TLS_HANDSHAKE:
            assert conn.tls is not None
            self._unwatch(conn)  # the wrapped socket is a new object to the selector
            try:
                conn.sock = conn.tls.wrap_socket(
                    conn.sock, server_side=True, do_handshake_on_connect=False
                )
            except OSError as exc:
                self._drop(conn, f"TLS set-up failed: {exc}")
                return
            conn.state = _HANDSHAKE
            self._handshake(conn)
        elif _TOKEN_START.match(first):
            response = Response(HTTPStatus.BAD_REQUEST, _PLAIN_TO_TLS)
            self._answer_now(conn, None, response, False)
        else:
            self._drop(conn, "neither TLS nor HTTP")

    def _handshake(self, conn: _Conn) -> None:
        assert isinstance(conn.sock, _TLS.socket_type)
        try:
            conn.sock.do_handshake()
        except _TLS.want_read:
            self._watch(conn, selectors.EVENT_READ)
            return
        except _TLS.want_write:
            self._watch(conn, selectors.EVENT_WRITE)
            return
        except OSError as exc:
            self._drop(conn, f"TLS handshake failed: {exc}")
            return
        conn.state = _READ
        self._read(conn)

    def _read(self, conn: _Conn) -> None:
        """Take what the client has sent, then act on it once the request head is complete."""
        if self._receive(conn):
            self._watch(conn, selectors.EVENT_READ)
            self._advance(conn)

    def _wait_out(self, conn: _Conn) -> None:
        """While paused: notice a client that leaves; keep what it sends for later."""
        if self._receive(conn) and len(conn.buffer) > self._limits.head_bytes:
            self._unwatch(conn)  # enough to act on when the pause ends; the rest can wait

    def _receive(self, conn: _Conn) -> bool:
        """Add what the client sent to buffer (up to a head's worth); False if it is closed."""
        while len(conn.buffer) <= self._limits.head_bytes:
            try:
                data = conn.sock.recv(65536)
            except (BlockingIOError, *_TLS.want_read):
                break
            except _TLS.want_write:
                self._watch(conn, selectors.EVENT_WRITE)
                return False
            except OSError as exc:
                self._drop(conn, f"read failed: {exc}")
                return False
            if not data:
                self._close(conn)  # the client closed: the normal end of a keep-alive connection
                return False
            now = time.monotonic()
            # From its first byte a request head has head_timeout to arrive, however long
            # the connection was allowed to stay idle before.
            conn.deadline = min(conn.deadline, now + self._limits.head_timeout)
            conn.last_active = now
            conn.buffer += data
            # TLS can hold decrypted bytes the selector does not see; read them now.
            if not (isinstance(conn.sock, _TLS.socket_type) and conn.sock.pending()):
                break
        return True

    def _advance(self, conn: _Conn) -> None:
        """Judge the connection's complete request: answer it now, or queue it."""
        try:
            parsed = conn.take_request(self._limits)
        except _BadRequest as exc:
            logger.debug("%s: %d %s", conn.peer, exc.status, exc.reason)
            self._answer_now(conn, None, _plain(exc.status), False)
            return
        if parsed is None:
            return
        if not self._auth.enabled:
            self._queue(conn, parsed)
            return
        authorization = parsed.request.headers.get("authorization")
        admission = self._gate.admit(authorization, conn.client, (conn, parsed))
        if admission.verdict is Verdict.ALLOW:
            conn.trusted = True
            self._queue(conn, parsed)
        elif admission.verdict is Verdict.QUEUED:
            self._unwatch(conn)
            conn.state = _AUTH
        elif admission.verdict is Verdict.DENY:
            self._answer_now(conn, parsed.request, _UNAUTHORIZED, parsed.keep_alive)
        else:
            self._retry_later(conn, parsed, admission.verdict is Verdict.LIMITED,
                              admission.retry_after)

    def _retry_later(self, conn: _Conn, parsed: _Parsed, limited: bool, seconds: int) -> None:
        """429 (this client is over its share) or 503 (the password checks are full)."""
        status = HTTPStatus.TOO_MANY_REQUESTS if limited else HTTPStatus.SERVICE_UNAVAILABLE
        if not limited:
            self._log.warning("auth-busy", "too many password checks waiting: answering 503")
        response = _retry_later(status, seconds)
        # Answered at once, but its next request is not read before Retry-After: a client
        # that asks again at once gets its answers no faster, and costs the loop nothing.
        conn.resume_at = time.monotonic() + seconds
        self._answer_now(conn, parsed.request, response, parsed.keep_alive)

    def _checked(self, conn: _Conn, parsed: _Parsed, ok: bool | None) -> None:
        """The auth gate's verdict on a request that needed bcrypt; None: not checked, its
        place given to a client that asked less."""
        if conn.closed:
            return
        if ok:
            conn.trusted = True
            self._queue(conn, parsed)
        elif ok is None:
            self._retry_later(conn, parsed, False, 1)
        else:
            self._answer_now(conn, parsed.request, _UNAUTHORIZED, parsed.keep_alive)

    def _queue(self, conn: _Conn, parsed: _Parsed) -> None:
        self._unwatch(conn)
        conn.state = _QUEUED
        self._waiting.append((conn, parsed, time.monotonic() + self._limits.queue_wait))
        self._start_work()  # now, not after the rest of this turn's clients

    def _start_work(self) -> None:
        """Hand waiting requests to free workers."""
        while self._waiting and self._busy < self._limits.workers:
            conn, parsed, _ = self._waiting.popleft()
            if conn.closed:
                continue
            self._busy += 1
            conn.state = _WORK
            self._jobs.put((conn, parsed))

    def _dispatch(self) -> None:
        """Hand waiting requests to free workers; answer 503 to those that waited too long."""
        self._start_work()
        now = time.monotonic()
        while self._waiting and self._waiting[0][2] <= now:
            conn, parsed, _ = self._waiting.popleft()
            if conn.closed:
                continue
            self._log.warning(
                "overload", "all %d workers busy for %.1f s: answering 503",
                self._limits.workers, self._limits.queue_wait,
            )  # fmt: skip
            response = _plain(HTTPStatus.SERVICE_UNAVAILABLE)
            self._answer_now(conn, parsed.request, response, False)

    def _take_inbox(self) -> None:
        while True:
            try:
                step, args = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._guarded(args[0], step, *args[1:])

    def _post(self, step: Callable[..., None], *args: Any) -> None:
        """Have the loop run step(*args) (a _Conn first); for workers and the auth gate."""
        self._inbox.put((step, args))
        self._wake()

    def _answered(self, conn: _Conn) -> None:
        """A worker is done with the connection."""
        self._busy -= 1
        if not conn.closed:
            self._after_write(conn)

    def _answer_now(
        self, conn: _Conn, request: Request | None, response: Response, keep_alive: bool
    ) -> None:
        """Answer from the loop; the socket takes what it can, the loop writes the rest."""
        conn.state = _WRITE
        self._prepare(conn, request, response, keep_alive)
        try:
            self._flush(conn)
        except OSError as exc:
            self._drop(conn, f"write failed: {exc}")
            return
        self._after_write(conn)

    def _write(self, conn: _Conn) -> None:
        try:
            self._flush(conn)
        except OSError as exc:
            self._drop(conn, f"write failed: {exc}")
            return
        conn.last_active = time.monotonic()
        self._after_write(conn)

    def _after_write(self, conn: _Conn) -> None:
        """Wait for the socket while a response is unsent; then read the next request or end."""
        if conn.failed:
            self._close(conn)
        elif conn.output:
            conn.state = _WRITE
            conn.deadline = conn.write_deadline
            self._watch(conn, conn.wants)
        elif not conn.keep_alive or self._stopping:
            self._linger(conn)
        elif conn.resume_at > time.monotonic():
            conn.state = _PAUSED
            conn.deadline = conn.resume_at
            # Still watched, so that a client that hangs up is let go at once.
            self._watch(conn, selectors.EVENT_READ)
        else:
            now = time.monotonic()
            conn.state = _READ
            conn.deadline = now + self._limits.idle_timeout
            conn.last_active = now
            self._watch(conn, selectors.EVENT_READ)
            # Serve what the client already sent (pipelined requests).
            if conn.buffer:
                conn.deadline = now + self._limits.head_timeout
                self._advance(conn)
            elif isinstance(conn.sock, _TLS.socket_type) and conn.sock.pending():
                self._read(conn)

    def _linger(self, conn: _Conn) -> None:
        """Close after the last answer; on plain TCP, half-close first and drain the input."""
        if isinstance(conn.sock, _TLS.socket_type):
            self._close(conn)
            return
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(conn)
            return
        conn.state = _LINGER
        conn.deadline = time.monotonic() + _LINGER_SECONDS
        conn.buffer.clear()
        conn.drained = 0
        self._watch(conn, selectors.EVENT_READ)

    def _drain(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        conn.drained += len(data)
        if not data or conn.drained > _LINGER_BYTES:
            self._close(conn)

    def _sweep(self, now: float) -> None:
        for conn in [c for c in self._conns if c.state in _IN_LOOP and c.deadline <= now]:
            if conn.state == _PAUSED:
                self._guarded(conn, self._after_write)  # its time out is over
            elif conn.state == _READ and not conn.buffer:
                self._close(conn)  # an idle keep-alive connection, expired
            else:
                self._drop(conn, f"timed out ({conn.state})")

    def _drop(self, conn: _Conn, reason: str) -> None:
        logger.debug("%s: dropped: %s", conn.peer, reason)
        self._close(conn)

    def _watch(self, conn: _Conn, events: int) -> None:
        if not conn.events:
            self._selector.register(conn.sock, events, conn)
        elif conn.events != events:
            self._selector.modify(conn.sock, events, conn)
        conn.events = events

    def _unwatch(self, conn: _Conn) -> None:
        if conn.events:
            self._selector.unregister(conn.sock)
            conn.events = 0

    def _close(self, conn: _Conn) -> None:
        self._unwatch(conn)
        self._conns.discard(conn)
        conn.closed = True
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
        """Close every connection; answers being made get _STOP_GRACE, nothing waits longer."""
        for _ in self._workers:
            self._jobs.put(None)
        for conn in [c for c in self._conns if c.state != _WORK]:
            self._close(conn)
        self._waiting.clear()
        deadline = time.monotonic() + _STOP_GRACE
        for worker in self._workers:  # daemon threads: one stuck in a handler is left behind
            worker.join(max(0.0, deadline - time.monotonic()))
        for conn in list(self._conns):
            self._close(conn)
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
        if self._ssl is not None:
            _TLS.load()
        self._auth.update(config.users)
        self._headers = tuple(config.headers.items())

    def _check_config(self, now: float) -> None:
        """Reload on request (SIGHUP), or when the file or one it names changed."""
        self._finish_reload()
        if self._reloading:  # a request made meanwhile stays, for when this one is done
            return
        requested = self._reload_requested
        if not requested and (self._config is None or now < self._next_reload):
            return
        self._reload_requested = False
        self._next_reload = now + _RELOAD_INTERVAL
        stamp = _stamp(self._watched)
        if stamp == self._stamp and not requested:
            return
        # Remembered even when loading fails, so that a broken file is reported once.
        self._stamp = stamp
        self._reload("on request" if requested else "its files changed")

    def _reload(self, why: str) -> None:
        """The one way a running server's web config changes: loaded and vetted by a thread
        of its own, then applied by the loop (_finish_reload). Scrapes are answered and
        SIGTERM obeyed meanwhile, however long the file takes to parse."""
        if self._config is None:
            logger.info("no web config to reload: hwinfo serve was started without one")
            return
        previous = self._config
        from hwinfo.exporter.webconfig import WebConfigError, load_web_config

        def load() -> None:
            try:
                # previous=: a reload that would weaken the running server is refused.
                outcome: WebConfig | WebConfigError = load_web_config(previous.path, previous)
            except WebConfigError as exc:
                outcome = exc
            except Exception as exc:  # noqa: BLE001 - a bug must not leave _reloading set
                outcome = WebConfigError(f"{previous.path}: {exc!r}")
            self._reloaded.put((why, outcome))
            self._wake()

        self._reloading = True
        logger.info("reading the web config %s again (%s)", previous.path, why)
        threading.Thread(target=load, name="hwinfo-reload", daemon=True).start()

    def _finish_reload(self) -> None:
        """Apply what a reload thread loaded, or log why it did not."""
        try:
            why, outcome = self._reloaded.get_nowait()
        except queue.Empty:
            return
        self._reloading = False
        from hwinfo.exporter.webconfig import WebConfigError  # loaded: a config is running

        if isinstance(outcome, WebConfigError):
            logger.warning("web config not reloaded, keeping the previous one: %s", outcome)
            return
        self._apply(outcome)
        logger.info("web config reloaded from %s (%s)", outcome.path, why)
        if outcome.watched_files() != self._watched:
            self._watched = outcome.watched_files()
            self._stamp = _stamp(self._watched)

    # Workers.

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            conn, parsed = job
            try:
                self._respond(conn, parsed)
            except Exception as exc:  # noqa: BLE001 - logged, throttled: clients can provoke it
                self._log.warning("worker", "error answering %s: %r", conn.peer, exc,
                                  exc_info=True)
                self._respond_500(conn)
            self._post(self._answered, conn)

    def _respond(self, conn: _Conn, parsed: _Parsed) -> None:
        """Answer one request: write what the socket takes now; the loop writes the rest."""
        request = parsed.request
        self._prepare(conn, request, self._answer(request), parsed.keep_alive)
        try:
            self._flush(conn)
        except OSError as exc:
            logger.debug("%s: response not delivered: %s", conn.peer, exc)
            conn.failed = True

    def _respond_500(self, conn: _Conn) -> None:
        """After a bug in answering: a 500 if nothing of an answer went out, else a close."""
        conn.failed = True
        if conn.output:
            return
        try:
            self._prepare(conn, None, _plain(HTTPStatus.INTERNAL_SERVER_ERROR), False)
            self._flush(conn)
        except Exception:  # noqa: BLE001 - already logged; closing is all that is left
            return
        conn.failed = False

    def _answer(self, request: Request) -> Response:
        handler = self._routes.get(request.path)
        if handler is None:
            return _plain(HTTPStatus.NOT_FOUND)
        if request.method not in ("GET", "HEAD"):
            return _plain(HTTPStatus.METHOD_NOT_ALLOWED, {"Allow": "GET, HEAD"})
        try:
            response = handler(request)
            if not isinstance(response, Response):
                raise TypeError(f"handler returned {type(response).__name__}, not a Response")
        except Exception as exc:  # noqa: BLE001 - logged, throttled: clients can provoke it
            # One kind per route: the routes are the server's own, so the kinds are bounded.
            self._log.warning("handler " + request.path, "handler for %s failed: %r",
                              request.path, exc, exc_info=True)
            return _plain(HTTPStatus.INTERNAL_SERVER_ERROR)
        return response

    # Writing, from a worker or from the loop (whichever owns the connection).

    def _prepare(
        self, conn: _Conn, request: Request | None, response: Response, keep_alive: bool
    ) -> None:
        """Make the response the connection's output, with the deadline for writing it."""
        keep_alive = keep_alive and not self._stopping
        conn.output.extend(memoryview(part) for part in self._render(request, response, keep_alive))
        conn.keep_alive = keep_alive
        conn.write_deadline = time.monotonic() + self._limits.write_timeout

    @staticmethod
    def _flush(conn: _Conn) -> None:
        """Send what the socket takes without waiting; OSError if the connection broke."""
        output, sock = conn.output, conn.sock
        while output:
            try:
                if isinstance(sock, _TLS.socket_type):
                    # A TLS write that could not finish must be retried with the same buffer.
                    sent = sock.send(output[0])
                else:
                    sent = sock.sendmsg(output)  # head and body in one segment where they fit
            except (BlockingIOError, *_TLS.want_write):
                conn.wants = selectors.EVENT_WRITE
                return
            except _TLS.want_read:  # a TLS renegotiation or key update under way
                conn.wants = selectors.EVENT_READ
                return
            while sent and sent >= len(output[0]):
                sent -= len(output.popleft())
            if sent:
                output[0] = output[0][sent:]

    def _render(
        self, request: Request | None, response: Response, keep_alive: bool
    ) -> tuple[bytes, ...]:
        """Head and body; request None (not parsed) is answered as a plain GET would be."""
        body = response.body
        accept = request.headers.get("accept-encoding", "") if request is not None else ""
        negotiable = response.gzip_body is not None or len(body) >= _GZIP_MIN_BYTES
        gzipped = negotiable and _accepts_gzip(accept)
        if gzipped:
            body = response.gzip_body if response.gzip_body is not None else gzip_bytes(body)
        status = response.status
        lines = [f"HTTP/1.1 {int(status)} {_phrase(status)}", f"Date: {_http_date()}"]
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
        head_only = (request is not None and request.method == "HEAD") or bodiless
        return (head,) if head_only or not body else (head, body)


class _Conn:
    """One client connection: where it is, what it sent unanswered, what it has yet to take."""

    __slots__ = (
        "buffer", "client", "closed", "deadline", "drained", "events", "failed", "keep_alive",
        "last_active", "output", "peer", "resume_at", "scanned", "sock", "state", "tls", "trusted",
        "wants",
        "write_deadline",
    )  # fmt: skip

    def __init__(
        self,
        sock: socket.socket,
        peer: str,
        client: str,
        now: float,
        deadline: float,
        tls: ssl.SSLContext | None,
    ) -> None:
        self.sock = sock
        self.peer = peer
        self.client = client  # whom its failed logins count against (auth.client_of)
        self.tls = tls  # the TLS settings when it connected, for its handshake
        self.state = _READ
        self.buffer = bytearray()
        self.scanned = 0  # bytes of buffer known to hold no complete request head
        self.deadline = deadline
        self.last_active = now
        self.events = 0  # what the selector watches for; 0 when not registered
        self.output: collections.deque[memoryview] = collections.deque()
        self.wants = selectors.EVENT_WRITE  # what the socket needs before more output
        self.write_deadline = deadline
        self.keep_alive = False  # whether to read another request once output is sent
        self.failed = False  # the answer could not be made or sent: close
        self.closed = False
        self.drained = 0
        self.resume_at = 0.0  # monotonic time before which the next request is not read
        self.trusted = False  # it sent valid credentials: the loop serves it first

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
        try:
            return _parse_head(head.decode("latin-1"), limits)
        except (ValueError, UnicodeError) as exc:  # a library's parse error: the input is bad
            raise _BadRequest(HTTPStatus.BAD_REQUEST, f"malformed request: {exc}") from None


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


_date: tuple[int, str] = (0, "")


def _http_date() -> str:
    """The Date header's value, formatted once a second rather than once a response."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, formatdate(now, usegmt=True))
    return _date[1]


@functools.lru_cache(maxsize=64)  # asked for thousands of times a second in a flood
def _retry_later(status: HTTPStatus, seconds: int) -> Response:
    return _plain(status, {"Retry-After": str(seconds)})


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
    if not _CONTENT_LENGTH.fullmatch(length):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "malformed Content-Length")
    path, query = _split_target(target)
    tokens = {token.strip().lower() for token in headers.get("connection", "").split(",")}
    keep_alive = "close" not in tokens if version == "HTTP/1.1" else "keep-alive" in tokens
    # Request bodies are never read: a request with one ends its connection after the answer.
    has_body = length.strip("0") != "" or "transfer-encoding" in headers
    request = Request(method, path, parse_qs(query, keep_blank_values=True), headers)
    return _Parsed(request, keep_alive and not has_body)


def _split_target(target: str) -> tuple[str, str]:
    """Decoded path and raw query of an origin-form or absolute-form request target."""
    if not _TARGET.fullmatch(target):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "malformed request target")
    if target.startswith("/"):
        path, _, query = target.partition("?")
    elif target.lower().startswith(("http://", "https://")):
        parts = urlsplit(target)  # ValueError for a bad authority, such as "http://[x/"
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
