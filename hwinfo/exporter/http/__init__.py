"""The exporter's HTTP server: h11 under a selectors event loop, with TLS and basic auth."""

from hwinfo.exporter.http.listen import ServerError
from hwinfo.exporter.http.message import (
    Handler,
    Limits,
    Request,
    Response,
    gzip_bytes,
    preferred_type,
)
from hwinfo.exporter.http.server import Server

__all__ = ["Handler", "Limits", "Request", "Response", "Server", "ServerError", "gzip_bytes",
           "preferred_type"]
