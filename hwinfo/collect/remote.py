"""A snapshot taken by a remote `hwinfo serve`, fetched from its /api/v1/snapshot."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request

from hwinfo.collect.sources import SetupError
from hwinfo.model.serialize import SchemaError, snapshot_from_document
from hwinfo.model.snapshot import Snapshot

SNAPSHOT_PATH = "/api/v1/snapshot"


class RemoteError(SetupError):
    """The remote snapshot cannot be had; str() is one line for a person."""


def _request(url: str) -> urllib.request.Request:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RemoteError(f"--from {url!r}: expected http://HOST:PORT or https://HOST:PORT")
    path = parts.path.rstrip("/")
    if not path.endswith(SNAPSHOT_PATH):
        path += SNAPSHOT_PATH
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    if parts.port:
        netloc += f":{parts.port}"
    request = urllib.request.Request(urllib.parse.urlunsplit((parts.scheme, netloc, path, "", "")))
    if parts.username is not None:  # http://user:password@host:port, as curl takes it
        token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(token.encode()).decode())
    return request


def fetch_snapshot(url: str, ca_file: str | None = None, timeout: float = 10.0) -> Snapshot:
    request = _request(url)
    try:
        context = ssl.create_default_context(cafile=ca_file) if request.type == "https" else None
    except (OSError, ssl.SSLError) as exc:
        raise RemoteError(f"--ca-file {ca_file}: not a usable CA certificate: {exc}") from None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            document = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise RemoteError(f"{request.full_url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise RemoteError(f"{request.full_url}: {exc.reason}") from None
    except (OSError, ValueError) as exc:
        raise RemoteError(f"{request.full_url}: {exc}") from None
    try:
        return snapshot_from_document(document, request.full_url)
    except SchemaError as exc:
        raise RemoteError(str(exc)) from None


class RemoteCollector:
    """A remote daemon in the place of the local collectors (the same collect and close)."""

    def __init__(self, url: str, ca_file: str | None = None) -> None:
        _request(url)  # a malformed URL fails now, with one line
        self.url, self.ca_file = url, ca_file

    def collect(self) -> Snapshot:
        return fetch_snapshot(self.url, self.ca_file)

    def close(self) -> None:
        pass
