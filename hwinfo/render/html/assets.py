"""The files hwinfo's pages load (stylesheet, script, icon) and the headers that protect them.

Each file is linked with its digest in the query (`?v=`), so a browser may keep it for a year
and an upgrade is never mixed with an old copy. The script is allowed by its hash alone
(CSP Level 3 hash-source with the tag's `integrity`), so no other script runs on a page:
not inline, not from this server, not from anywhere else.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Asset:
    name: str  # the file under static/
    content_type: str
    body: bytes
    sha256: bytes

    @property
    def path(self) -> str:
        """Where it is served."""
        return f"/static/{self.name}"

    @property
    def integrity(self) -> str:
        """"sha256-<base64>": for CSP's script-src and the tag's integrity attribute."""
        return "sha256-" + base64.b64encode(self.sha256).decode()

    @property
    def link(self) -> str:
        """A page's link to it: relative, so a proxy that serves the page under a prefix
        serves this under it too, and versioned by its digest."""
        return f".{self.path}?v={self.sha256.hex()[:12]}"


def _load(name: str, content_type: str) -> Asset:
    body = (resources.files(__package__) / "static" / name).read_bytes()
    return Asset(name, content_type, body, hashlib.sha256(body).digest())


STYLESHEET = _load("hwinfo.css", "text/css; charset=utf-8")
SCRIPT = _load("hwinfo.js", "text/javascript; charset=utf-8")
ICON = _load("favicon.svg", "image/svg+xml")
ASSETS = (STYLESHEET, SCRIPT, ICON)

# Nothing but this server's own stylesheet, icon and hashed script; the page fetches only
# itself again; no frame may hold it and it holds none; a form goes back to this server.
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'",
    f"script-src '{SCRIPT.integrity}'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
))
# nosniff is said here too, not left to the server: a page's safety is the page's.
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",  # frame-ancestors, for browsers from before CSP 2
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",  # a reading is only good now
}
ASSET_HEADERS = {"Cache-Control": "public, max-age=31536000, immutable",
                 "X-Content-Type-Options": "nosniff"}
