"""Requests and responses as handlers see them, and what the server adds to an answer.

h11 parses and frames; this module holds what hwinfo asks beyond HTTP/1.1's grammar (limits,
the request targets it serves) and what it answers with (gzip negotiation, its headers).
"""

from __future__ import annotations

import functools
import gzip
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import parse_qs, unquote, urlsplit

import h11

from hwinfo.exporter.auth import GateLimits

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
# A line of a request head that starts with a space or tab continues the line before
# (obs-fold). h11 joins such lines; RFC 9112 section 5.2 lets a server refuse them instead,
# which hwinfo does: a folded line is a known request-smuggling vector.
_FOLDED = re.compile(rb"\n[ \t]")
# Framing and negotiation headers belong to the server; a handler cannot set them.
_SERVER_HEADERS = frozenset(
    {"connection", "content-encoding", "content-length", "content-type", "date", "keep-alive",
     "transfer-encoding", "vary"}
)  # fmt: skip
_DEFAULT_HEADERS = {"X-Content-Type-Options": "nosniff"}
# Below this size gzip saves less than it costs; a handler's own gzip_body is always used.
_GZIP_MIN_BYTES = 1024


@dataclass(frozen=True)
class Request:
    """A parsed request head; header names are lower-case, repeated headers joined with ", "."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Response:
    """What a handler returns. gzip_body, when given, is body already gzipped (see gzip_bytes);
    vary names the request headers the handler chose the answer by, for caches (Vary)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)
    gzip_body: bytes | None = None
    vary: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 200 <= self.status <= 599:
            raise ValueError(f"status {self.status} is not a final HTTP status")
        for name, value in {"Content-Type": self.content_type, **self.headers}.items():
            if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
                raise ValueError(f"invalid response header {name!r}: {value!r}")
        if not _SERVER_HEADERS.isdisjoint(name.lower() for name in self.headers):
            raise ValueError(f"the server sets {', '.join(sorted(_SERVER_HEADERS))} itself")


Handler = Callable[[Request], Response]


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


class BadRequest(Exception):
    """The client's request cannot be answered by a handler; status is what to answer."""

    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.head_only = False  # it was a HEAD request, whose answer has no body


def gzip_bytes(body: bytes) -> bytes:
    """Gzip body as the server would; for handlers that keep a pre-compressed copy."""
    return gzip.compress(body, compresslevel=6, mtime=0)


def plain(status: HTTPStatus, headers: Mapping[str, str] | None = None) -> Response:
    """A generic text response that says no more than its status."""
    return Response(status, f"{status.phrase}\n".encode(), headers=headers or {})


def parse_request(event: h11.Request, head: bytes, limits: Limits) -> Request:
    """The request h11 parsed from `head` (its raw bytes), held to hwinfo's own limits."""
    if event.http_version not in (b"1.0", b"1.1"):
        raise BadRequest(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED,
                         f"HTTP/{event.http_version.decode()} not supported")
    if len(head) > limits.head_bytes:  # h11 bounds only a head still incomplete
        raise BadRequest(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request head too large")
    if len(event.target) > limits.request_line_bytes:
        raise BadRequest(HTTPStatus.REQUEST_URI_TOO_LONG, "request line too long")
    if len(event.headers) > limits.header_count:
        raise BadRequest(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "too many header fields")
    if _FOLDED.search(head):
        raise BadRequest(HTTPStatus.BAD_REQUEST, "folded header line")
    headers: dict[str, str] = {}
    for name, value in event.headers:  # names already lower-case
        key, text = name.decode("ascii"), value.decode("latin-1")
        headers[key] = headers[key] + ", " + text if key in headers else text
    path, query = _split_target(event.target.decode("ascii"))
    return Request(event.method.decode("ascii"), path, parse_qs(query, keep_blank_values=True),
                   headers)


def has_body(request: Request) -> bool:
    """Whether a body follows the head: never read, so its connection ends after the answer."""
    return request.headers.get("content-length", "0").strip("0") != "" or \
        "transfer-encoding" in request.headers


def _split_target(target: str) -> tuple[str, str]:
    """Decoded path and raw query of an origin-form or absolute-form request target."""
    if target.startswith("/"):
        path, _, query = target.partition("?")
    elif target.lower().startswith(("http://", "https://")):
        try:
            parts = urlsplit(target)
        except ValueError:  # a bad authority, such as "http://[x/"
            raise BadRequest(HTTPStatus.BAD_REQUEST, "malformed request target") from None
        path, query = parts.path or "/", parts.query
    else:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "malformed request target")
    return unquote(path), query


def h11_error_status(error: h11.RemoteProtocolError, head_start: bytes,
                     limits: Limits) -> HTTPStatus:
    """What to answer a request h11 could not parse: its hint, as a 4xx."""
    hint = error.error_status_hint
    if hint == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE and \
            head_start.find(b"\n", 0, limits.request_line_bytes + 1) < 0:
        return HTTPStatus.REQUEST_URI_TOO_LONG  # no end to the request line within its limit
    # h11 hints 501 for a transfer coding it does not know: the request is what is wrong.
    return HTTPStatus(hint) if 400 <= hint < 500 else HTTPStatus.BAD_REQUEST


def answer_events(
    request: Request | None,
    response: Response,
    keep_alive: bool,
    configured: tuple[tuple[str, str], ...],
) -> tuple[h11.Response, bytes]:
    """The response head (for h11 to frame) and the body to send with it.

    request None (not parsed) is answered as a plain GET would be; `configured` are the web
    config's headers, which have the last word.
    """
    body = response.body
    accept = request.headers.get("accept-encoding", "") if request is not None else ""
    negotiable = response.gzip_body is not None or len(body) >= _GZIP_MIN_BYTES
    gzipped = negotiable and accepts_gzip(accept)
    if gzipped:
        body = response.gzip_body if response.gzip_body is not None else gzip_bytes(body)
    status = response.status
    fields = [("Date", _http_date())]
    bodiless = status in (HTTPStatus.NO_CONTENT, HTTPStatus.NOT_MODIFIED)
    if not bodiless:
        fields += [("Content-Type", response.content_type), ("Content-Length", str(len(body)))]
    if gzipped:
        fields.append(("Content-Encoding", "gzip"))
    if vary := (*response.vary, *(("Accept-Encoding",) if negotiable else ())):
        fields.append(("Vary", ", ".join(vary)))
    headers: dict[str, tuple[str, str]] = {}
    for name, value in (*_DEFAULT_HEADERS.items(), *response.headers.items(), *configured):
        headers[name.lower()] = (name, value)
    fields += headers.values()
    fields.append(("Connection", "keep-alive" if keep_alive else "close"))
    head_only = (request is not None and request.method == "HEAD") or bodiless
    return _head(status, tuple(fields)), b"" if head_only else body


@functools.lru_cache(maxsize=256)
def _head(status: int, fields: tuple[tuple[str, str], ...]) -> h11.Response:
    """h11's response head, which it validates as it is made: made once a second for the
    same answer (its Date changes), not once a request, as a flood of 401s or 429s asks."""
    return h11.Response(status_code=status, headers=list(fields), reason=_phrase(status))


def weights(header: str) -> dict[str, float]:
    """The q-value of each item of an Accept or Accept-Encoding value, by its name in lower
    case (parameters other than q dropped; a name given twice, as a media type in two versions
    is, has its higher weight); an unreadable q is 0, and so is one outside 0..1 (RFC 9110
    section 12.4.2)."""
    found: dict[str, float] = {}
    for item in header.split(","):
        name, *params = (part.strip().lower() for part in item.split(";"))
        weight = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
                if not 0.0 <= weight <= 1.0:  # NaN and inf included
                    weight = 0.0
        found[name] = max(weight, found.get(name, 0.0))
    return found


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding value allows gzip (q-values honoured, `*` included)."""
    given = weights(accept_encoding)
    for coding in ("gzip", "x-gzip", "*"):
        if coding in given:
            return given[coding] > 0
    return False


def preferred_type(accept: str, offered: tuple[str, ...]) -> str:
    """The media type of `offered` (lower case, without parameters) that an Accept value
    weights highest, the first offered on a tie and where none is acceptable: RFC 9110
    section 12.5.1, the most specific range that matches a type giving its weight, and a
    weight of 0 meaning "not acceptable"."""
    if not accept.strip():
        return offered[0]
    given = weights(accept)

    def weight(media: str) -> float:
        for media_range in (media, media.partition("/")[0] + "/*", "*/*"):
            if media_range in given:
                return given[media_range]
        return 0.0

    best = max(offered, key=weight)  # max keeps the first of equals
    return best if weight(best) > 0 else offered[0]


_date: tuple[int, str] = (0, "")


def _http_date() -> str:
    """The Date header's value, formatted once a second rather than once a response."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, formatdate(now, usegmt=True))
    return _date[1]


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
