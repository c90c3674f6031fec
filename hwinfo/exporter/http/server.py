"""The exporter's HTTP/1.1 server: one event loop, h11 for the protocol, threads for the rest.

The thread that calls serve_forever() runs an event loop (selectors) that owns every
connection (connection.py: a socket and its h11.Connection) and waits for all of them, so
slow, silent or flooding clients cost a file descriptor and a little memory, never a thread.
Work that takes time goes to other threads, which hand the connection back when done:
- a fixed pool of workers calls the route's handler, a function of the request, and sends
  what the socket takes of the answer at once; the loop writes the rest. A request that
  finds every worker busy waits at most Limits.queue_wait, then is answered 503;
- password checks that need bcrypt go to the auth gate's bounded queue (auth.py);
- TLS handshake steps of clients not served before go to a thread of their own
  (handshake.py); a served client's are stepped on the loop, as cheap as its requests;
- a web config reload reads its files on a thread of its own (reload.py).
Clients that were served go first in each turn of the loop; the others share a bounded
slice of it.
The thread count is 1 + Limits.workers (+ 1 for bcrypt, + 1 for TLS, + 1 while the web config
is reloaded) whatever the clients do, and shutdown() ends serve_forever() within _STOP_GRACE.
"""

from __future__ import annotations

import collections
import functools
import re
import selectors
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from hwinfo.exporter.auth import AuthGate, BasicAuth, Verdict, client_of
from hwinfo.exporter.http.connection import Closed, Connection, Phase
from hwinfo.exporter.http.handshake import Handshakes
from hwinfo.exporter.http.handshake import step as handshake_step
from hwinfo.exporter.http.inbox import Inbox
from hwinfo.exporter.http.listen import listen, peer_name
from hwinfo.exporter.http.message import (
    BadRequest,
    Handler,
    Limits,
    Request,
    Response,
    has_body,
    plain,
)
from hwinfo.exporter.http.reload import Reloader
from hwinfo.exporter.http.table import Table
from hwinfo.exporter.http.workers import Workers
from hwinfo.exporter.throttled_log import ThrottledLog
from hwinfo.exporter.webconfig import WebConfig
from hwinfo.logs import get_logger

logger = get_logger(__name__)

_SWEEP_INTERVAL = 0.25  # seconds between looks for timed-out connections
# The most one turn of the loop spends on connections of clients never served (TLS set-up,
# wrong passwords), in seconds; the rest wait for the next turn.
_STRANGERS_SLICE = 0.004
_ACCEPTS = 256  # new connections taken in one turn at most: the others get their turn too
# After its last answer on a plain connection, the server stops sending and reads (and
# drops) what the client still sends, for a moment: see Connection.half_close.
_LINGER_SECONDS = 0.5
_LINGER_BYTES = 65536
_STOP_GRACE = 0.25  # seconds that answers under way may take once shutdown() is called
_CLIENTS_KEPT = 4096  # clients remembered as served, for their priority
# What a Go server answers to plain HTTP on a TLS port (net/http), word for word.
_PLAIN_TO_TLS = b"Client sent an HTTP request to an HTTPS server.\n"
_UNAUTHORIZED = Response(
    HTTPStatus.UNAUTHORIZED, b"Unauthorized\n", headers={"WWW-Authenticate": 'Basic realm="hwinfo"'}
)
_TOKEN_START = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]")
_LISTENER = object()
_WAKE = object()


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
        limits: Limits | None = None,
    ) -> None:
        self._limits = limits = limits or Limits()
        self._listener = listen(*address)
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._log = ThrottledLog(logger)
        self._inbox = Inbox()
        self._workers = Workers(routes, limits.workers, limits.queue_wait, self._log,
                                self._reply)
        self._auth = BasicAuth({})
        self._gate: AuthGate[tuple[Connection, Request]] = AuthGate(
            self._auth, lambda item, ok: self._inbox.put(self._checked, *item, ok), limits.auth
        )
        self._handshakes = Handshakes(lambda *step: self._inbox.put(self._stepped, *step))
        self._tls: ssl.SSLContext | None = None
        self._headers: tuple[tuple[str, str], ...] = ()
        self._notes: frozenset[str] = frozenset()
        if web_config is not None:
            self._apply(web_config)
        self._reloader = Reloader(web_config, self._inbox.wake)
        self._table = Table(limits.connections, self._log)
        self._table.selector.register(self._listener, selectors.EVENT_READ, _LISTENER)
        self._table.selector.register(self._inbox.sock, selectors.EVENT_READ, _WAKE)
        # Loop-owned: the clients (addresses) served lately, the most recent last (see
        # Connection.known).
        self._served: collections.OrderedDict[str, None] = collections.OrderedDict()
        # Connections of other clients found ready but not yet acted on, the oldest first.
        self._backlog: dict[Connection, None] = {}
        self._next_sweep = 0.0
        self._steps: dict[Phase, Callable[[Connection], None]] = {
            Phase.PEEK: self._peek, Phase.HANDSHAKE: self._handshake, Phase.READ: self._read,
            Phase.WRITE: self._write, Phase.PAUSED: self._wait_out, Phase.LINGER: self._drain,
        }
        self._stopping = False
        self._closed = False

    def serve_forever(self) -> None:
        """Serve until shutdown(); then finish what is under way (briefly) and close."""
        self._workers.start()
        deadline = None
        try:
            while not self._stopping:
                self._turn()
            deadline = time.monotonic() + _STOP_GRACE
            self._wind_down(deadline)
        finally:
            self._stop(deadline or time.monotonic() + _STOP_GRACE)

    def shutdown(self) -> None:
        """Ask serve_forever() to return soon; safe from a signal handler and from any thread."""
        self._stopping = True
        self._inbox.wake()

    def reload(self) -> None:
        """Load the web config again now, as when its file changes; safe from a signal handler."""
        self._reloader.request()
        self._inbox.wake()

    def close(self) -> None:
        """Release the socket of a server that will not serve (serve_forever() does it too)."""
        if self._closed:
            return
        self._closed = True
        self._gate.close()
        self._table.selector.close()
        self._listener.close()
        self._inbox.close()

    # The event loop.

    def _turn(self, longest: float = _SWEEP_INTERVAL) -> None:
        """Wait for sockets (or other threads), at most `longest` seconds, and act on what is
        ready; never raises.

        Served clients go first, then what the other threads handed back, then the others,
        for at most _STRANGERS_SLICE: however many connections an attacker opens, they do not
        stand between a scraper and the loop. Those not reached wait in a backlog and go
        first among the others next turn, so none is starved.
        """
        try:
            timeout = 0.0 if self._backlog else longest
            if (queued_until := self._workers.next_deadline()) is not None:
                timeout = min(timeout, max(0.0, queued_until - time.monotonic()))
            for key, _ in self._table.selector.select(timeout):
                if key.data is _LISTENER:
                    self._accept()
                elif key.data is _WAKE:
                    self._inbox.woken()
                elif key.data.trusted or key.data.known:
                    self._guarded(key.data, self._on_ready)
                else:
                    self._backlog[key.data] = None
            self._take_inbox()
            until = time.monotonic() + _STRANGERS_SLICE
            while self._backlog and time.monotonic() < until:
                conn = next(iter(self._backlog))
                del self._backlog[conn]
                self._guarded(conn, self._on_ready)
                if self._inbox.pending():  # a scrape's answer: sent before the next stranger
                    self._take_inbox()
            self._dispatch()
            now = time.monotonic()
            if now >= self._next_sweep:
                self._next_sweep = now + _SWEEP_INTERVAL
                self._sweep(now)
            if (config := self._reloader.poll(now)) is not None:
                self._apply(config)
        except Exception as exc:  # noqa: BLE001 - a bug must cost one turn, not the exporter
            self._log.warning("loop", "error in the HTTP server loop: %r", exc, exc_info=True)

    def _guarded(self, conn: Connection, step: Callable[..., None], *args: Any) -> None:
        """Run one step for a connection; a bug costs that connection a 500, never the loop."""
        if conn.closed:
            return  # closed earlier in the same turn (evicted to admit another)
        try:
            step(conn, *args)
        except Exception as exc:  # noqa: BLE001 - logged, throttled: clients can provoke it
            self._log.warning("connection", "error on a connection from %s: %r", conn.peer, exc,
                              exc_info=True)
            if not conn.closed and conn.answered_nothing():
                try:
                    self._answer(conn, None, plain(HTTPStatus.INTERNAL_SERVER_ERROR), False)
                    return
                except Exception as again:  # noqa: BLE001 - closing is all that is left
                    logger.debug("%s: no 500 either: %r", conn.peer, again)
            self._table.close(conn)

    def _on_ready(self, conn: Connection) -> None:
        """The step of the connection's phase, now that its socket is ready for it."""
        step = self._steps.get(conn.phase)  # none for AWAY: its socket is not watched
        if step is not None:
            step(conn)

    def _accept(self) -> None:
        for _ in range(_ACCEPTS):
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
            self._admit(sock, peer_name(address))

    def _admit(self, sock: socket.socket, peer: str) -> None:
        if not self._table.room_for(peer):
            sock.close()
            return
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:  # the client is already gone
            logger.debug("%s: %s", peer, exc)
            sock.close()
            return
        conn = Connection(sock, peer, client_of(peer), self._limits, time.monotonic())
        # An address that asks for password checks (wrong passwords) loses its standing, so
        # that an attacker beside a scraper (the same host, a NAT) does not share it.
        conn.known = conn.client in self._served and self._gate.demand(conn.client) < 1
        conn.phase = Phase.PEEK if self._tls is not None else Phase.READ
        self._table.add(conn)
        if conn.known:
            # Its first bytes (a ClientHello, a request) have often come with the connection:
            # taken now, they do not wait a turn of the loop, which a flood makes long.
            self._guarded(conn, self._on_ready)

    # TLS

    def _peek(self, conn: Connection) -> None:
        """On a TLS port: start the handshake, or tell a plain-HTTP client what is wrong."""
        try:
            first = conn.first_byte()
        except OSError as exc:  # reset before its first byte
            self._drop(conn, f"read failed: {exc}")
            return
        if first is None:
            return
        if not first:
            self._table.close(conn)
        elif conn.is_tls(first):
            assert self._tls is not None
            # The wrapped socket has the same descriptor: the selector, which goes by
            # descriptor, still watches it.
            conn.start_tls(self._tls)
            self._handshake(conn)
        elif _TOKEN_START.match(first):  # a request line's method
            self._answer(conn, None, Response(HTTPStatus.BAD_REQUEST, _PLAIN_TO_TLS), False)
        else:
            self._drop(conn, "neither TLS nor HTTP")

    def _handshake(self, conn: Connection) -> None:
        if conn.known:
            # A served client's handshake costs the loop no more than one of its requests:
            # stepped here, it waits for no queue and no other thread.
            self._stepped(conn, handshake_step(conn))
            return
        self._table.unwatch(conn)
        conn.phase = Phase.AWAY
        self._handshakes.submit(conn, self._gate.demand(conn.client))

    def _stepped(self, conn: Connection, outcome: int | OSError) -> None:
        """A handshake step's outcome, from the handshake thread."""
        if isinstance(outcome, OSError):
            self._drop(conn, f"TLS handshake failed: {outcome}")
        elif outcome:
            conn.phase = Phase.HANDSHAKE
            self._table.watch(conn, outcome)
        else:
            conn.phase = Phase.READ
            self._read(conn)

    # Reading and judging requests.

    def _read(self, conn: Connection) -> None:
        """Take what the client sent, then act on it once a request is complete."""
        if self._receive(conn):
            self._advance(conn)
        elif not conn.closed:  # a read that failed (a reset, a TLS alert) closed it
            self._table.watch(conn, conn.wants)

    def _receive(self, conn: Connection) -> bool:
        """Whether the client sent something (or closed); closes a broken connection."""
        try:
            got = conn.receive(self._limits.head_bytes)
        except OSError as exc:
            self._drop(conn, f"read failed: {exc}")
            return False
        if got:
            now = time.monotonic()
            # From its first byte a request head has head_timeout to arrive, however long
            # the connection was allowed to stay idle before.
            conn.deadline = min(conn.deadline, now + self._limits.head_timeout)
            conn.last_active = now
        return got

    def _advance(self, conn: Connection) -> None:
        """Judge the connection's complete request: answer it now, or pass it on."""
        try:
            request = conn.next_request(self._limits)
        except BadRequest as exc:
            logger.debug("%s: %d %s", conn.peer, exc.status, exc)
            self._answer(conn, None, Response(exc.status) if exc.head_only else plain(exc.status),
                         False)
            return
        except Closed:
            self._table.close(conn)
            return
        if request is None:
            self._table.watch(conn, conn.wants)
            return
        if not self._auth.enabled:
            self._queue(conn, request)
            return
        admission = self._gate.admit(request.headers.get("authorization"), conn.client,
                                     (conn, request))
        if admission.verdict is Verdict.ALLOW:
            self._queue(conn, request)
        elif admission.verdict is Verdict.QUEUED:  # the gate's verdict comes to _checked
            self._table.unwatch(conn)
            conn.phase = Phase.AWAY
        elif admission.verdict is Verdict.DENY:
            self._answer(conn, request, _UNAUTHORIZED, True)
        else:
            self._retry_later(conn, request, admission.verdict is Verdict.LIMITED,
                              admission.retry_after)

    def _checked(self, conn: Connection, request: Request, ok: bool | None) -> None:
        """The auth gate's verdict on a request that needed bcrypt; None: not checked, its
        place given to a client that asked less."""
        if ok:
            self._queue(conn, request)
        elif ok is None:
            self._retry_later(conn, request, False, 1)
        else:
            self._answer(conn, request, _UNAUTHORIZED, True)

    def _retry_later(self, conn: Connection, request: Request, limited: bool,
                     seconds: int) -> None:
        """429 (this client is over its share) or 503 (the password checks are full)."""
        status = HTTPStatus.TOO_MANY_REQUESTS if limited else HTTPStatus.SERVICE_UNAVAILABLE
        if not limited:
            self._log.warning("auth-busy", "too many password checks waiting: answering 503")
        # Answered at once, but its next request is not read before Retry-After: a client
        # that asks again at once gets its answers no faster, and costs the loop nothing.
        conn.resume_at = time.monotonic() + seconds
        self._answer(conn, request, _retry_later(status, seconds), True)

    # Workers.

    def _queue(self, conn: Connection, request: Request) -> None:
        self._table.unwatch(conn)
        conn.phase = Phase.AWAY
        self._workers.submit(conn, request)

    def _dispatch(self) -> None:
        for conn, request in self._workers.dispatch():
            self._guarded(conn, self._answer, request, plain(HTTPStatus.SERVICE_UNAVAILABLE),
                          False)

    def _reply(self, conn: Connection, request: Request, response: Response) -> None:
        """A worker's answer, sent from the worker's thread (while the loop has set conn aside,
        the worker holds it): a scrape's bytes do not wait for a turn of the loop. The loop
        gets the connection back for the rest."""
        failure: Exception | None = None
        try:
            self._send(conn, request, response, True)
        except Exception as exc:  # noqa: BLE001 - the loop drops or logs it (_answered)
            failure = exc
        self._workers.finished()  # before the loop wakes, so that it finds this worker free
        self._inbox.put(self._answered, conn, response, failure)

    def _answered(self, conn: Connection, response: Response, failure: Exception | None) -> None:
        """A worker's answer went out (all or in part): the connection is the loop's again."""
        if isinstance(failure, OSError):
            self._drop(conn, f"write failed: {failure}")
            return
        if failure is not None:
            raise failure  # a bug: logged by _guarded, which answers 500 if it still can
        if 200 <= response.status < 300:
            self._served[conn.client] = None
            self._served.move_to_end(conn.client)
            while len(self._served) > _CLIENTS_KEPT:
                self._served.popitem(last=False)
            conn.trusted = True
        self._sent(conn)

    # Writing.

    def _send(self, conn: Connection, request: Request | None, response: Response,
              keep_alive: bool) -> None:
        """Frame an answer and send what the socket takes now, on the thread that holds the
        connection; OSError if it broke. keep_alive False ends the connection after it; h11
        has the last word, ending it too where the client asked (or HTTP/1.0 needs) that."""
        keep_alive = keep_alive and not self._stopping and not (request and has_body(request))
        conn.prepare(request, response, keep_alive, self._headers)
        conn.write_deadline = time.monotonic() + self._limits.write_timeout
        conn.flush()

    def _answer(self, conn: Connection, request: Request | None, response: Response,
                keep_alive: bool) -> None:
        """Answer from the loop."""
        try:
            self._send(conn, request, response, keep_alive)
        except OSError as exc:
            self._drop(conn, f"write failed: {exc}")
            return
        self._sent(conn)

    def _write(self, conn: Connection) -> None:
        try:
            conn.flush()
        except OSError as exc:
            self._drop(conn, f"write failed: {exc}")
            return
        self._sent(conn)

    def _sent(self, conn: Connection) -> None:
        """After a send: wait for the socket while the answer is unsent; then read the next
        request, or end."""
        conn.last_active = time.monotonic()
        if conn.output:
            conn.phase = Phase.WRITE
            conn.deadline = conn.write_deadline
            self._table.watch(conn, conn.wants)
        elif self._stopping or not conn.next_cycle():
            self._linger(conn)
        elif conn.resume_at > conn.last_active:
            conn.phase = Phase.PAUSED
            conn.deadline = conn.resume_at
            # Still watched, so that a client that hangs up is let go at once.
            self._table.watch(conn, selectors.EVENT_READ)
        else:
            self._resume(conn)

    def _resume(self, conn: Connection) -> None:
        """Wait for the next request; serve one the client already sent in this turn still."""
        now = time.monotonic()
        conn.phase = Phase.READ
        conn.deadline = now + (self._limits.head_timeout if conn.unparsed
                               else self._limits.idle_timeout)
        # Through the inbox, not called: a client that pipelined a thousand requests answered
        # at once (401) would otherwise recurse a thousand levels deep.
        self._inbox.put(self._advance_reading, conn, wake=False)

    def _advance_reading(self, conn: Connection) -> None:
        if conn.phase is Phase.READ:  # not taken by a read in the meantime
            self._advance(conn)

    def _wait_out(self, conn: Connection) -> None:
        """While paused: notice a client that leaves; keep what it sends for later."""
        if not self._receive(conn) or conn.closed:
            return
        if conn.eof:
            self._table.close(conn)
        elif len(conn.unparsed) > self._limits.head_bytes:
            self._table.unwatch(conn)  # enough to act on when the pause ends; the rest can wait

    def _linger(self, conn: Connection) -> None:
        """Close after the last answer; on plain TCP, half-close first and drain the input."""
        if not conn.half_close():
            self._table.close(conn)
            return
        conn.phase = Phase.LINGER
        conn.deadline = time.monotonic() + _LINGER_SECONDS
        self._table.watch(conn, selectors.EVENT_READ)

    def _drain(self, conn: Connection) -> None:
        if conn.drain() == 0 or conn.drained > _LINGER_BYTES:
            self._table.close(conn)

    # Bookkeeping.

    def _sweep(self, now: float) -> None:
        for conn in self._table.expired(now):
            if conn.phase is Phase.PAUSED:
                self._guarded(conn, self._resume)  # its time out is over
            elif conn.phase is Phase.READ and not conn.unparsed:
                self._table.close(conn)  # an idle keep-alive connection, expired
            else:
                self._drop(conn, f"timed out ({conn.phase.value})")

    def _take_inbox(self) -> None:
        for step, args in self._inbox.take():
            self._guarded(args[0], step, *args[1:])

    def _drop(self, conn: Connection, reason: str) -> None:
        logger.debug("%s: dropped: %s", conn.peer, reason)
        self._table.close(conn)

    def _wind_down(self, deadline: float) -> None:
        """After shutdown(): no new connections, idle ones closed, answers under way given
        until `deadline` to go out."""
        self._table.selector.unregister(self._listener)
        for conn in self._handshakes.close(max(0.0, deadline - time.monotonic())):
            self._table.close(conn)
        while (left := deadline - time.monotonic()) > 0:
            for conn in self._table:
                if conn.phase in (Phase.READ, Phase.PAUSED, Phase.HANDSHAKE, Phase.PEEK):
                    self._table.close(conn)
            if not any(c.phase in (Phase.AWAY, Phase.WRITE) for c in self._table):
                return
            self._turn(left)

    def _stop(self, deadline: float) -> None:
        """Close every connection and stop the threads, waiting for none past `deadline`."""
        self._handshakes.close(0.0)
        self._workers.stop(deadline)  # before the sockets close: a worker may hold one
        for conn in self._table:
            self._table.close(conn)
        self._backlog.clear()
        self.close()

    # Web configuration.

    def _apply(self, config: WebConfig) -> None:
        """Start using a web configuration; new connections get its TLS settings."""
        for note in config.notes:
            if note not in self._notes:
                logger.warning("%s", note)
        self._notes = frozenset(config.notes)
        self._tls = config.ssl_context
        self._auth.update(config.users)
        self._headers = tuple(config.headers.items())


@functools.lru_cache(maxsize=64)  # asked for thousands of times a second in a flood
def _retry_later(status: HTTPStatus, seconds: int) -> Response:
    return plain(status, {"Retry-After": str(seconds)})
