"""One HTTP exchange with a URL a person gave, hostile until proven otherwise.

The whole exchange (name lookup, connect, TLS, headers, body) has one deadline, the body a
size limit, and every way it can go wrong is one line in the user's terms: nothing runs
there, it speaks TLS, its certificate is not trusted, it is something else. `report --from`
and `check --from` fetch a daemon's snapshot with it; the ledger asks Prometheus.
"""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import threading
import urllib.parse
from dataclasses import dataclass

from hwinfo import inputs

# A snapshot of an 8-GPU machine with a thousand processes is well under 2 MiB; a Prometheus
# answer of the ledger's aggregated queries for a thousand hosts is a few MiB.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH: a certificate
# its CA vouches for, of another host.
_NAME_MISMATCH = (62, 64)
# What Go's net/http answers a plain-HTTP request on a TLS port.
_GO_TLS_ANSWER = b"client sent an http request to an https server"


class FetchError(Exception):
    """The answer cannot be had; str() is one line for a person."""


@dataclass(frozen=True)
class Target:
    """Where and how to ask: a parsed --from URL."""

    url: str  # the URL, without credentials: how errors name it
    https: bool
    host: str
    port: int
    path: str
    authorization: str | None
    service: str  # what should answer there, for errors: "hwinfo serve", "Prometheus"


def parse_url(url: str, flag: str, service: str, suffix: str = "") -> Target:
    """The URL given with `flag` as a Target; FetchError (one line) unless http(s)://HOST[:PORT].

    `suffix` is appended to the URL's path unless the path ends with it already.
    """
    expected = (f"{flag} {_without_password(url)!r}: "
                "expected http://HOST:PORT or https://HOST:PORT")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise FetchError(f"{expected} (it holds spaces or control characters)")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:  # "Port out of range 0-65535", a bad [IPv6] literal
        # urllib quotes what it took for the port: with user:password@, maybe the password.
        reason = "its address or port cannot be read" if "@" in url else str(exc)
        raise FetchError(f"{expected} ({reason})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(expected)
    if port == 0:
        raise FetchError(f"{expected} (port 0 is no port to connect to)")
    https = parts.scheme == "https"
    port = port or (443 if https else 80)
    path = parts.path.rstrip("/")
    if not path.endswith(suffix):
        path += suffix
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    authorization = None
    if parts.username is not None:  # http://user:password@host:port, as curl takes it
        authorization = basic_authorization(urllib.parse.unquote(parts.username),
                                            urllib.parse.unquote(parts.password or ""))
    shown = urllib.parse.urlunsplit((parts.scheme, f"{netloc}:{port}", path, "", ""))
    return Target(shown, https, parts.hostname, port, path, authorization, service)


def basic_authorization(user: str, password: str) -> str:
    """The Authorization header of HTTP basic authentication (RFC 7617), UTF-8 encoded."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def same_origin(one: Target, other: Target) -> bool:
    """Whether two targets are one server: scheme, host (lower case: parse_url) and port
    (RFC 6454's origin)."""
    return (one.https, one.host, one.port) == (other.https, other.host, other.port)


def _without_password(url: str) -> str:
    """The URL as an error may show it: a password in it (user:password@) as ***, whether or
    not the rest parses (this is for URLs that do not). A password may hold any character,
    so all up to the last @ goes: for a URL that is wrong anyway, too much hidden beats a
    password shown."""
    scheme, separator, rest = url.partition("://") if "://" in url else ("", "", url)
    credentials, at, after = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    return f"{scheme}{separator}{credentials.partition(':')[0]}:***@{after}"


def tls_context(ca_file: str | None, what: str | None = None) -> ssl.SSLContext:
    """What an https URL is checked against: the system's CAs, or those of `ca_file`, which
    errors name as `what` (by default, as --ca-file gave it).

    The file is read as hostile input (inputs.read_text) and OpenSSL given its text, never its
    name: OpenSSL would wait on a FIFO for ever and read /dev/zero until memory runs out.
    """
    if ca_file is None:
        return ssl.create_default_context()
    what = what or f"--ca-file {ca_file}"
    try:
        pem = inputs.read_text(ca_file, what, inputs.PEM_LIMIT_BYTES)
    except inputs.InputError as exc:
        raise FetchError(str(exc)) from None
    if not pem.strip():  # cadata="" would mean "no cadata": the system's CAs, not none
        raise FetchError(f"{what}: empty, no CA certificate in it")
    try:
        return ssl.create_default_context(cadata=pem)
    except (ssl.SSLError, ValueError) as exc:
        raise FetchError(f"{what}: no CA certificate loads ({inputs.ssl_reason(exc)})") from None


class _Exchange:
    """One request in a thread of its own, so that the caller's deadline covers every step."""

    def __init__(self, target: Target, context: ssl.SSLContext | None, timeout: float,
                 query: str, form: bytes | None) -> None:
        self.target, self.context, self.timeout = target, context, timeout
        self.query, self.form = query, form
        self.connection: http.client.HTTPConnection | None = None
        self.result: tuple[str, bytes] | None = None
        self.error: FetchError | None = None

    def run(self) -> None:
        try:
            self.result = self._ask()
        except FetchError as exc:
            self.error = exc
        except ssl.SSLCertVerificationError as exc:
            if exc.verify_code in _NAME_MISMATCH:  # its CA is trusted: --ca-file is no help
                self.error = FetchError(f"{self.target.url}: its certificate is not for "
                                        f"{self.target.host}: use a name it holds")
            else:
                self.error = FetchError(f"{self.target.url}: its certificate is not trusted "
                                        f"({exc.verify_message}; give its CA with --ca-file)")
        except ssl.SSLError as exc:
            self.error = FetchError(self._tls_problem(exc))
        except (ConnectionResetError, http.client.BadStatusLine) as exc:  # RemoteDisconnected too
            self.error = FetchError(self._broken(exc))
        except ConnectionRefusedError:
            self.error = FetchError(f"{self.target.url}: connection refused "
                                    f"(is {self.target.service} running there?)")
        except socket.gaierror as exc:
            self.error = FetchError(f"{self.target.url}: cannot resolve {self.target.host}: "
                                     f"{exc.strerror}")
        except TimeoutError:
            self.error = FetchError(f"{self.target.url}: no answer within {self.timeout:g} s")
        except http.client.HTTPException as exc:
            self.error = FetchError(f"{self.target.url}: not {self.target.service} (its "
                                    f"answer is not HTTP: {type(exc).__name__})")
        except OSError as exc:
            self.error = FetchError(f"{self.target.url}: {exc.strerror or exc}")
        except Exception as exc:  # noqa: BLE001 - a thread's last word: one line, not a traceback
            self.error = FetchError(f"{self.target.url}: {type(exc).__name__}: "
                                     f"{' '.join(str(exc).split())}")

    def _ask(self) -> tuple[str, bytes]:
        t = self.target
        if t.https:
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                t.host, t.port, timeout=self.timeout, context=self.context)
        else:
            connection = http.client.HTTPConnection(t.host, t.port, timeout=self.timeout)
        self.connection = connection
        headers = {"Accept": "application/json", "User-Agent": "hwinfo"}
        if t.authorization:
            headers["Authorization"] = t.authorization
        if self.form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        path = f"{t.path}?{self.query}" if self.query else t.path
        try:
            connection.request("GET" if self.form is None else "POST", path, self.form, headers)
            response = connection.getresponse()
            body = response.read(MAX_RESPONSE_BYTES + 1)
        finally:
            connection.close()
        if response.status != 200:
            # Go's servers answer plain HTTP on a TLS port with a 400 that says so; others may
            # answer a bare 400: a request as plain as ours is only "bad" to a TLS port.
            if not t.https and response.status == 400 and (
                _GO_TLS_ANSWER in body.lower() or _answers_tls(t.host, t.port, self.timeout)
            ):
                raise FetchError(self._speaks_tls())
            raise FetchError(f"{t.url}: HTTP {response.status} {response.reason}{_said(body)}")
        if len(body) > MAX_RESPONSE_BYTES:
            raise FetchError(f"{t.url}: the answer is larger than "
                              f"{MAX_RESPONSE_BYTES // (1024 * 1024)} MiB, the most accepted")
        return response.getheader("Content-Type", ""), body

    def _speaks_tls(self) -> str:
        return f"{self.target.url} speaks TLS: use https://"

    def _broken(self, exc: Exception) -> str:
        """A plain-HTTP exchange the server cut off: a TLS port does that; say so if it is one."""
        if not self.target.https and _answers_tls(self.target.host, self.target.port, self.timeout):
            return self._speaks_tls()
        what = "closed the connection" if isinstance(exc, http.client.RemoteDisconnected) else exc
        return f"{self.target.url}: {what} without an HTTP answer"

    def _tls_problem(self, exc: ssl.SSLError) -> str:
        if exc.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
            return f"{self.target.url} does not speak TLS: use http://"
        return f"{self.target.url}: TLS failed: {exc.reason or exc}"

    def abandon(self) -> None:
        """Cut a connection still in use (the thread then ends on its own)."""
        sock = self.connection.sock if self.connection is not None else None
        if sock is not None:
            try:
                # socket.socket's own shutdown: an SSLSocket's would tear down its state
                # under the thread that is reading.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass


def _said(body: bytes) -> str:
    """The reason given in an error answer ({"error": ...}, as hwinfo and Prometheus write), if any."""
    try:
        document = inputs.parse_json(body, "answer")
    except inputs.InputError:
        return ""
    reason = document.get("error") if isinstance(document, dict) else None
    return f" ({' '.join(reason.split())[:80]})" if isinstance(reason, str) else ""


def fetch(
    target: Target, context: ssl.SSLContext | None, timeout: float,
    query: str = "", form: bytes | None = None,
) -> tuple[str, bytes]:
    """The Content-Type and body of a 200 answer (a POST when `form` is given), or FetchError.

    The whole exchange takes at most `timeout` s, and Ctrl-C ends the wait at once.
    """
    exchange = _Exchange(target, context, timeout, query, form)
    thread = threading.Thread(target=exchange.run, name="hwinfo-fetch", daemon=True)
    thread.start()
    thread.join(timeout)  # interruptible: Ctrl-C ends the wait at once
    if thread.is_alive():
        exchange.abandon()
        raise FetchError(f"{target.url}: no complete answer within {timeout:g} s")
    if exchange.error is not None:
        raise exchange.error
    assert exchange.result is not None
    return exchange.result


def _answers_tls(host: str, port: int, timeout: float) -> bool:
    """Whether a TLS handshake with host:port gets TLS back (certificates not checked)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with (socket.create_connection((host, port), timeout=min(timeout, 3.0)) as raw,
              context.wrap_socket(raw, server_hostname=host)):
            return True
    except ssl.SSLError as exc:
        # An alert is TLS speaking: e.g. a server that wants a client certificate.
        return "ALERT" in (exc.reason or "")
    except OSError:
        return False
