"""The server's listening socket, and how peers are named in its log."""

from __future__ import annotations

import socket


class ServerError(Exception):
    """The server cannot start; str() is one line for a person."""


def listen(host: str, port: int) -> socket.socket:
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
        sock.setblocking(False)
        return sock
    raise ServerError(f"cannot listen on {shown}: {_reason(error)}")


def peer_name(address: tuple[str, int] | str) -> str:
    """host:port of a peer, [host]:port for IPv6."""
    if isinstance(address, str):
        return address
    host, port = address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _reason(exc: BaseException | None) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
