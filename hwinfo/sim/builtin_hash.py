"""SHA-1 and SHA-256 by Python's own modules, where it has them.

hashlib maps OpenSSL's libcrypto first: about 4 MiB of a simulated daemon, which the memory
target of `hwinfo serve` counts. The simulator needs digests only to name things (a driver's
state, a GPU's UUID), never for security.
"""

from __future__ import annotations

import uuid
from typing import Any


def _builtin(name: str, modules: tuple[str, ...]) -> Any:
    for module in modules:
        try:
            return getattr(__import__(module), name)
        except ImportError:
            continue
    import hashlib

    return getattr(hashlib, name)


def sha256_hex(data: bytes) -> str:
    # _sha256 up to Python 3.11, _sha2 from 3.12.
    return _builtin("sha256", ("_sha256", "_sha2"))(data).hexdigest()


def uuid5(namespace: uuid.UUID, name: str) -> uuid.UUID:
    """uuid.uuid5, which imports hashlib: the same UUID (RFC 4122, SHA-1 of namespace and name)."""
    digest = _builtin("sha1", ("_sha1",))(namespace.bytes + name.encode("utf-8")).digest()
    return uuid.UUID(bytes=digest[:16], version=5)
