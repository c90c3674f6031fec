"""HTTP basic auth against bcrypt hashes, with a cache so that a scrape pays for bcrypt once."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping

import bcrypt

# bcrypt reads only the first 72 bytes of a password. Longer ones are refused (after the same
# work as any other check) so that two passwords sharing their first 72 bytes are not both good.
MAX_PASSWORD_BYTES = 72


def parse_basic(authorization: str | None) -> tuple[str, bytes] | None:
    """User and password of an `Authorization: Basic ...` header value; None if it is not one."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
        user, colon, password = decoded.partition(b":")
        return (user.decode("utf-8"), password) if colon else None
    except ValueError:  # bad base64 (binascii.Error) or a user name that is not UTF-8
        return None


class BasicAuth:
    """Checks credentials against a user → bcrypt hash table; safe to share between threads."""

    def __init__(self, users: Mapping[str, bytes], cache_size: int = 256) -> None:
        # Cache keys are HMACs under a random per-process key: no password is kept, not even
        # as a fast hash that a leaked cache would let anyone brute-force.
        self._key = secrets.token_bytes(32)
        self._cache_size = cache_size
        self._cache: OrderedDict[bytes, bytes] = OrderedDict()
        self._users: dict[str, bytes] = {}
        self._lock = threading.Lock()  # guards _users and _cache; never held during bcrypt
        # One bcrypt at a time: a burst of bad passwords then takes one core, not all of them.
        self._bcrypt_lock = threading.Lock()
        self._decoys: dict[int, bytes] = {}
        self.update(users)

    @property
    def enabled(self) -> bool:
        """Whether any user is configured, i.e. whether requests must authenticate."""
        return bool(self._users)

    def update(self, users: Mapping[str, bytes]) -> None:
        """Replace the user table; a cached login is honoured only while its user's hash stays."""
        with self._lock:
            self._users = dict(users)

    def check(self, authorization: str | None) -> bool:
        """Whether an Authorization header value carries valid credentials."""
        credentials = parse_basic(authorization)
        return credentials is not None and self.verify(*credentials)

    def verify(self, user: str, password: bytes) -> bool:
        key = self._cache_key(user, password)
        if self._cached(key, user):
            return True
        with self._bcrypt_lock:
            # Scrapers that arrived together wait here for the first one's check, then pass.
            if self._cached(key, user):
                return True
            with self._lock:
                hashed = self._users.get(user)
                cost = max((_cost(known) for known in self._users.values()), default=4)
            # An unknown user costs a check against a decoy hash of the highest configured
            # cost, so the time taken does not tell which user names exist.
            target = hashed if hashed is not None else self._decoy(cost)
            matches = bcrypt.checkpw(password[:MAX_PASSWORD_BYTES], target)
            if not (matches and hashed is not None and len(password) <= MAX_PASSWORD_BYTES):
                return False
            with self._lock:  # before the bcrypt lock is released, for the waiting scrapers
                self._cache[key] = hashed
                self._cache.move_to_end(key)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return True

    def _cached(self, key: bytes, user: str) -> bool:
        """Whether these credentials were verified against the user's current hash."""
        with self._lock:
            hashed = self._users.get(user)
            cached = self._cache.get(key)
            if hashed is None or cached is None or not hmac.compare_digest(cached, hashed):
                return False
            self._cache.move_to_end(key)
            return True

    def _cache_key(self, user: str, password: bytes) -> bytes:
        name = user.encode("utf-8")
        # The length prefix keeps ("ab", "c") and ("a", "bc") apart.
        message = len(name).to_bytes(4, "big") + name + password
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def _decoy(self, cost: int) -> bytes:
        """A hash of a random password at that cost; called with _bcrypt_lock held."""
        if cost not in self._decoys:
            self._decoys[cost] = bcrypt.hashpw(secrets.token_hex(16).encode(), bcrypt.gensalt(cost))
        return self._decoys[cost]


def _cost(hashed: bytes) -> int:
    # "$2y$10$...": the cost is the two digits after the variant (validated by webconfig).
    return int(hashed[4:6])
