"""One client connection: its socket, the h11.Connection that parses and frames its HTTP, and
what the event loop keeps for it. One thread holds a connection at a time: the loop's, but
while the loop has set it aside (Phase.AWAY) for the TLS handshake thread to step its
handshake or for a worker to send its answer.
"""

from __future__ import annotations

import enum
import selectors
import socket
import ssl
from collections import deque

import h11

from hwinfo.exporter.http.message import (
    BadRequest,
    Limits,
    Request,
    Response,
    answer_events,
    h11_error_status,
    has_body,
    parse_request,
)

_TLS_HANDSHAKE = 0x16  # the content type of the first TLS record a client sends
_READ_BYTES = 65536
_JOIN_BYTES = 16384  # a body up to a TLS record's size is sent in one piece with its head


class Phase(enum.Enum):
    """What the loop waits for on a connection."""

    PEEK = "peek"  # on a TLS port, its first byte: TLS or plain HTTP
    HANDSHAKE = "handshake"  # the socket, for the next step of its TLS handshake
    AWAY = "away"  # the handshake thread, a worker or the bcrypt gate: not watched
    READ = "read"  # a request (head), or the client closing
    WRITE = "write"  # the socket taking the rest of an answer
    PAUSED = "paused"  # Retry-After to pass before its next request is read
    LINGER = "linger"  # the client's last input, after the last answer, before closing


class Closed(Exception):
    """The client closed the connection between requests: the normal end of keep-alive."""


class Connection:
    """A client's socket and the h11 state of its HTTP/1.1 exchange."""

    __slots__ = (
        "client", "closed", "deadline", "drained", "eof", "events", "http", "known",
        "last_active", "output", "peer", "phase", "resume_at", "sock", "trusted", "unparsed",
        "wants", "write_deadline",
    )  # fmt: skip

    def __init__(self, sock: socket.socket, peer: str, client: str, limits: Limits,
                 now: float) -> None:
        self.sock: socket.socket = sock
        self.peer = peer
        self.client = client  # whom its failed logins count against (auth.client_of)
        self.http = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.head_bytes)
        # The bytes h11 holds unparsed, mirrored: a request's raw head is checked beyond h11.
        self.unparsed = bytearray()
        self.phase = Phase.READ
        self.deadline = now + limits.head_timeout
        self.last_active = now
        self.events = 0  # what the selector watches for; 0 when not registered
        self.wants = selectors.EVENT_READ  # what the socket needs before the phase goes on
        self.output: deque[memoryview] = deque()
        self.write_deadline = now
        self.resume_at = 0.0  # monotonic time before which the next request is not read
        self.trusted = False  # it was served: the loop serves it first, evicts it last
        # Its client was served lately and asked for no password check since: it goes first
        # from its first byte, its TLS handshake included.
        self.known = False
        self.drained = 0  # bytes read while lingering
        self.eof = False  # the client closed its side
        self.closed = False

    # TLS

    def first_byte(self) -> bytes | None:
        """The client's first byte, left unread; b"" if it closed; None if none yet;
        OSError if the connection broke."""
        try:
            return self.sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            return None

    @staticmethod
    def is_tls(first: bytes) -> bool:
        return first[0] == _TLS_HANDSHAKE

    def start_tls(self, context: ssl.SSLContext) -> None:
        """Wrap the socket for a server-side handshake, stepped later by handshake()."""
        self.sock = context.wrap_socket(self.sock, server_side=True,
                                        do_handshake_on_connect=False)

    def handshake(self) -> int:
        """One non-blocking step of the TLS handshake: 0 once it is done, or the selector
        event it waits for. OSError (ssl.SSLError included) if it failed."""
        assert isinstance(self.sock, ssl.SSLSocket)
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:
            return selectors.EVENT_READ
        except ssl.SSLWantWriteError:
            return selectors.EVENT_WRITE
        return 0

    # Reading

    def receive(self, limit: int) -> bool:
        """Hand h11 what the client sent, while it holds less than `limit` bytes unparsed;
        whether anything came (the client closing counts). OSError if the connection broke."""
        got = False
        while len(self.unparsed) <= limit:
            try:
                data = self.sock.recv(_READ_BYTES)
            except (BlockingIOError, ssl.SSLWantReadError):
                break
            except ssl.SSLWantWriteError:  # a TLS key update under way
                self.wants = selectors.EVENT_WRITE
                return got
            got = True
            self.http.receive_data(data)
            if not data:
                self.eof = True
                break
            self.unparsed += data
            # TLS can hold decrypted bytes the selector does not see; read them now.
            if not (isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()):
                break
        self.wants = selectors.EVENT_READ
        return got

    def next_request(self, limits: Limits) -> Request | None:
        """The next complete request, None until one is; BadRequest for one that cannot be
        answered by a handler, Closed if the client closed between requests."""
        try:
            event = self.http.next_event()
            if isinstance(event, h11.ConnectionClosed):
                raise Closed
            if not isinstance(event, h11.Request):  # NEED_DATA (PAUSED is never asked for)
                return None
            remaining = len(self.http.trailing_data[0])
            head = bytes(self.unparsed[: len(self.unparsed) - remaining])
            del self.unparsed[: len(head)]
            try:
                request = parse_request(event, head, limits)
            except BadRequest as exc:
                exc.head_only = event.method == b"HEAD"
                raise
            if not has_body(request):
                self.http.next_event()  # its EndOfMessage, so that the next request can follow
            return request
        except h11.RemoteProtocolError as exc:
            start = bytes(self.unparsed[: limits.request_line_bytes + 1])
            raise BadRequest(h11_error_status(exc, start, limits), str(exc)) from None

    # Writing

    def prepare(self, request: Request | None, response: Response, keep_alive: bool,
                configured: tuple[tuple[str, str], ...]) -> None:
        """Make the answer the connection's output, framed by h11; h11.LocalProtocolError
        if nothing can be answered now."""
        head, body = answer_events(request, response, keep_alive, configured)
        # h11 writes a head as a piece per line: joined, as TLS makes a record (and a
        # write) of each piece sent. A small body joins them too; a large one is not copied.
        parts = [self.http.send(head) or b""]
        if body:
            data = self.http.send_with_data_passthrough(h11.Data(data=body))
            if len(body) < _JOIN_BYTES:
                parts = [b"".join((*parts, *data))]
            else:
                parts += data
        parts.append(self.http.send(h11.EndOfMessage()) or b"")
        self.output.extend(memoryview(part) for part in parts if part)

    def flush(self) -> None:
        """Send what the socket takes without waiting; OSError if the connection broke."""
        output, sock = self.output, self.sock
        while output:
            try:
                if isinstance(sock, ssl.SSLSocket):
                    # A TLS write that could not finish must be retried with the same buffer.
                    sent = sock.send(output[0])
                else:
                    sent = sock.sendmsg(output)  # head and body in one segment where they fit
            except (BlockingIOError, ssl.SSLWantWriteError):
                self.wants = selectors.EVENT_WRITE
                return
            except ssl.SSLWantReadError:  # a TLS key update under way
                self.wants = selectors.EVENT_READ
                return
            while sent and sent >= len(output[0]):
                sent -= len(output.popleft())
            if sent:
                output[0] = output[0][sent:]

    def next_cycle(self) -> bool:
        """After a whole answer: ready for the next request (True), or to be closed."""
        if self.http.our_state is h11.DONE and self.http.their_state is h11.DONE:
            self.http.start_next_cycle()
            return True
        return False

    def answered_nothing(self) -> bool:
        """Whether no byte of an answer is out or queued: a 500 can still be sent."""
        return not self.output and self.http.our_state in (h11.IDLE, h11.SEND_RESPONSE)

    # Closing

    def half_close(self) -> bool:
        """Stop sending (plain TCP only) and read what the client still sends before closing:
        closing with unread input sends a reset that can destroy the answer before the client
        reads it. False where that does not apply (TLS) or the socket is gone."""
        if isinstance(self.sock, ssl.SSLSocket):
            return False
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            return False
        return True

    def drain(self) -> int:
        """Read and drop what the client sends; the byte count, 0 once it closed."""
        try:
            data = self.sock.recv(_READ_BYTES)
        except BlockingIOError:
            return -1
        except OSError:
            return 0
        self.drained += len(data)
        return len(data)
