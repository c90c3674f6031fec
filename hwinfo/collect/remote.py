"""A snapshot taken by a remote `hwinfo serve`, fetched from its /api/v1/snapshot."""

from __future__ import annotations

from hwinfo import inputs, urlfetch
from hwinfo.collect.errors import SetupError
from hwinfo.model.serialize import SchemaError, snapshot_from_document
from hwinfo.model.snapshot import Snapshot

SNAPSHOT_PATH = "/api/v1/snapshot"
SERVICE = "an hwinfo daemon"


class RemoteError(SetupError):
    """The remote snapshot cannot be had; str() is one line for a person."""


def parse_url(url: str) -> urlfetch.Target:
    """The --from URL as a Target; RemoteError (one line) when it is not http(s)://HOST[:PORT]."""
    try:
        return urlfetch.parse_url(url, "--from", "hwinfo serve", SNAPSHOT_PATH)
    except urlfetch.FetchError as exc:
        raise RemoteError(str(exc)) from None


def fetch_snapshot(url: str, ca_file: str | None = None, timeout: float = 10.0) -> Snapshot:
    """The snapshot at `url`, or RemoteError; the whole exchange takes at most `timeout` s."""
    target = parse_url(url)
    try:
        context = urlfetch.tls_context(ca_file) if target.https else None
        content_type, body = urlfetch.fetch(target, context, timeout)
    except urlfetch.FetchError as exc:
        raise RemoteError(str(exc)) from None
    kind = content_type.split(";")[0].strip().lower()
    if kind and kind != "application/json":
        raise RemoteError(f"{target.url} is not {SERVICE} (it answered {kind})")
    try:
        document = inputs.parse_json(body, target.url)
    except inputs.InputError as exc:
        raise RemoteError(f"{target.url} is not {SERVICE} "
                          f"(its answer: {str(exc).removeprefix(target.url).removeprefix(': ')})"
                          ) from None
    try:
        return snapshot_from_document(document, target.url)
    except SchemaError as exc:
        raise RemoteError(str(exc)) from None


class RemoteCollector:
    """A remote daemon in the place of the local collectors (the same collect and close)."""

    def __init__(self, url: str, ca_file: str | None = None, timeout: float = 10.0) -> None:
        parse_url(url)  # a malformed URL fails now, with one line
        self.url, self.ca_file, self.timeout = url, ca_file, timeout

    def collect(self) -> Snapshot:
        return fetch_snapshot(self.url, self.ca_file, self.timeout)

    def close(self) -> None:
        pass
