"""HTTP basic auth against bcrypt hashes, kept off the request path.

A verified login is cached, so a scrape pays for bcrypt once. Everything else that needs
bcrypt goes through a gate: a bounded queue served by one thread, which hands each verdict
back to the caller. A client (by address) may have a few checks waiting and a few recent
failures; past that it is turned away at once. So a flood of wrong passwords costs at most
one core, holds no HTTP worker, and never delays a request whose login is cached.
Every check is for a client not let in yet (a served login is cached), so the gate's thread
runs at a lower priority (a higher nice value, per thread on Linux): while the flood's checks
and the served clients' requests want the same cores, the served go first; a check still
runs, later, and on an idle core at full speed.

The queue is shared by demand, not by arrival: each client's recent requests to the gate
are counted (halving every minute), the check of the client that asked least goes first,
and when the queue is full a client that asked less takes the place of one that asked
more. Wrong passwords from 300 addresses then keep the queue full of each other's checks,
but a scraper that logs in for the first time (after a restart, a password rotation) is
checked next, not answered 503.
"""

from __future__ import annotations

import base64
import enum
import functools
import hashlib
import hmac
import ipaddress
import math
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import bcrypt

from hwinfo.exporter.throttled_log import ThrottledLog
from hwinfo.logs import get_logger

logger = get_logger(__name__)

# bcrypt reads only the first 72 bytes of a password. Longer ones are refused (after the same
# work as any other check) so that two passwords sharing their first 72 bytes are not both good.
MAX_PASSWORD_BYTES = 72

T = TypeVar("T")


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
        self._key = os.urandom(32)
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

    def verify(self, user: str, password: bytes) -> bool:
        """Whether the credentials are valid: from the cache, or else by bcrypt (slow)."""
        key = self.cache_key(user, password)
        if self.cached(key, user):
            return True
        with self._bcrypt_lock:
            # Scrapers that arrived together wait here for the first one's check, then pass.
            if self.cached(key, user):
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

    def cache_key(self, user: str, password: bytes) -> bytes:
        """The HMAC that stands for these credentials in the cache and in the gate's queue."""
        name = user.encode("utf-8")
        # The length prefix keeps ("ab", "c") and ("a", "bc") apart.
        message = len(name).to_bytes(4, "big") + name + password
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def cached(self, key: bytes, user: str) -> bool:
        """Whether the credentials with this cache key were verified against user's current hash."""
        with self._lock:
            hashed = self._users.get(user)
            cached = self._cache.get(key)
            if hashed is None or cached is None or not hmac.compare_digest(cached, hashed):
                return False
            self._cache.move_to_end(key)
            return True

    def _decoy(self, cost: int) -> bytes:
        """A hash of a random password at that cost; called with _bcrypt_lock held."""
        if cost not in self._decoys:
            self._decoys[cost] = bcrypt.hashpw(os.urandom(16).hex().encode(), bcrypt.gensalt(cost))
        return self._decoys[cost]


def _cost(hashed: bytes) -> int:
    # "$2y$10$...": the cost is the two digits after the variant (validated by webconfig).
    return int(hashed[4:6])


class Verdict(enum.Enum):
    ALLOW = "allow"  # a cached login: serve it now
    DENY = "deny"  # no credentials, or not basic auth: 401 now
    QUEUED = "queued"  # bcrypt will decide; the gate calls back
    LIMITED = "limited"  # this client is over its share: 429 now
    BUSY = "busy"  # the queue is full: 503 now


@dataclass(frozen=True)
class Admission:
    verdict: Verdict
    retry_after: int = 0  # seconds, for LIMITED and BUSY


@dataclass(frozen=True)
class GateLimits:
    """How much bcrypt work clients can ask for; times in seconds."""

    queue: int = 32  # distinct credentials waiting for bcrypt, from all clients
    per_client: int = 4  # requests of one client waiting for bcrypt
    failures: int = 5  # failed checks a client may have on its record
    forgive_after: float = 1.0  # one failure leaves the record after this long
    clients: int = 4096  # clients remembered; beyond, the quietest is forgotten
    demand_half_life: float = 60.0  # a client's count of requests halves in this long
    nice: int = 10  # the gate's thread runs this much nicer than the thread that starts it


@dataclass
class _Client:
    waiting: int = 0
    failures: float = 0.0  # decays by one per forgive_after
    asked: float = 0.0  # requests that needed the gate, halving every demand_half_life
    at: float = 0.0  # when failures and asked were last brought up to date


@dataclass
class _Check:
    user: str
    password: bytes
    order: int  # arrival: among equal claims, the first goes first
    waiters: list[tuple[object, str]] = field(default_factory=list)  # (item, client)


class AuthGate(Generic[T]):
    """Decides requests at once where it can; queues the rest for one bcrypt thread.

    admit() is called by one thread (the server's loop); done(item, ok) is called for every
    request it queued: on the gate's thread with the verdict, or with ok=None from admit()
    when a client of less demand took its place (not checked: the caller answers 503).
    Identical credentials waiting together share one check. The thread starts with the
    first queued check.
    """

    def __init__(
        self,
        auth: BasicAuth,
        done: Callable[[T, bool | None], None],
        limits: GateLimits = GateLimits(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.auth = auth
        self._done = done
        self._limits = limits
        self._clock = clock
        self._lock = threading.Lock()  # guards _pending, _ready, _clients, _closed
        self._wakeup = threading.Condition(self._lock)
        self._pending: dict[bytes, _Check] = {}  # waiting or being checked
        self._ready: dict[bytes, _Check] = {}  # waiting: the gate's thread takes the least claim
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._arrivals = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._log = ThrottledLog(logger)

    def admit(self, authorization: str | None, client: str, item: T) -> Admission:
        """The verdict on a request from client (see client_of); for QUEUED, done(item, ok)
        follows."""
        credentials = parse_basic(authorization)
        if credentials is None:
            return Admission(Verdict.DENY)
        user, password = credentials
        key = self.auth.cache_key(user, password)
        if self.auth.cached(key, user):
            return Admission(Verdict.ALLOW)
        limits = self._limits
        dropped: list[tuple[object, str]] = []
        with self._lock:
            record = self._client(client)
            record.asked += 1
            if record.waiting >= limits.per_client or record.failures > limits.failures - 1:
                excess = max(1.0, record.failures - (limits.failures - 1))
                return Admission(Verdict.LIMITED, math.ceil(excess * limits.forgive_after))
            check = self._pending.get(key)
            if check is None:
                if len(self._pending) >= limits.queue:
                    dropped = self._make_room(record.asked)
                    if not dropped:
                        return Admission(Verdict.BUSY, 1)
                self._arrivals += 1
                check = self._pending[key] = _Check(user, password, self._arrivals)
                self._ready[key] = check
                self._wakeup.notify()
            check.waiters.append((item, client))
            record.waiting += 1
        for dropped_item, _ in dropped:
            self._deliver(dropped_item, None)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="hwinfo-bcrypt", daemon=True)
            self._thread.start()
        return Admission(Verdict.QUEUED)

    def demand(self, client: str) -> float:
        """How much the client asked of the gate lately (halving every demand_half_life); 0
        for one not remembered. For ordering other work by the same rule as the gate's queue."""
        with self._lock:
            record = self._clients.get(client)
            if record is None:
                return 0.0
            elapsed = max(0.0, self._clock() - record.at)
            return record.asked * 0.5 ** (elapsed / self._limits.demand_half_life)

    def close(self) -> None:
        """Stop the gate's thread after its current check; queued requests get no verdict."""
        with self._lock:
            self._closed = True
            self._wakeup.notify()

    def _make_room(self, claim: float) -> list[tuple[object, str]]:
        """Drop the waiting check of most demand if it claims more than `claim`; its
        waiters, or none. Called with _lock held."""
        victim = max(self._ready.items(), key=lambda kv: self._claim(kv[1]), default=None)
        if victim is None or self._claim(victim[1])[0] <= claim:
            return []
        key, check = victim
        del self._ready[key], self._pending[key]
        for _, client_key in check.waiters:
            record = self._clients.get(client_key)
            if record is not None:
                record.waiting = max(0, record.waiting - 1)
        return check.waiters

    def _client(self, key: str) -> _Client:
        """The client's record, its failures and demand decayed to now; called with _lock held."""
        now = self._clock()
        client = self._clients.pop(key, None) or _Client(at=now)
        elapsed = max(0.0, now - client.at)
        client.failures = max(0.0, client.failures - elapsed / self._limits.forgive_after)
        client.asked *= 0.5 ** (elapsed / self._limits.demand_half_life)
        client.at = now
        self._clients[key] = client  # the most recent last
        while len(self._clients) > self._limits.clients:
            self._clients.popitem(last=False)
        return client

    def _claim(self, check: _Check) -> tuple[float, int]:
        """How much a check's clients asked (the least of its waiters'), then its arrival:
        the least goes first. As now, not as when it arrived: a client that keeps asking
        falls behind with the checks it queued before. Called with _lock held."""
        asked = min((self._clients[c].asked if c in self._clients else 0.0)
                    for _, c in check.waiters)
        return asked, check.order

    def _next(self) -> tuple[bytes, _Check] | None:
        """The waiting check of least claim, once there is one; None once closed."""
        with self._lock:
            while not self._ready and not self._closed:
                self._wakeup.wait()
            if self._closed:
                return None
            key, check = min(self._ready.items(), key=lambda kv: self._claim(kv[1]))
            del self._ready[key]
            return key, check

    def _run(self) -> None:
        _nicer(self._limits.nice)
        while (taken := self._next()) is not None:
            key, check = taken
            try:
                ok = self.auth.verify(check.user, check.password)
            except Exception as exc:  # noqa: BLE001 - fail closed, keep serving the queue
                ok = False
                self._log.warning("check", "password check failed: %r", exc, exc_info=True)
            with self._lock:
                # Removed with its waiters in one step: a later request starts a new check
                # (which a login cached just now answers without bcrypt).
                del self._pending[key]
                for _, client_key in check.waiters:
                    client = self._client(client_key)
                    client.waiting = max(0, client.waiting - 1)  # 0 if it was forgotten
                    if not ok:
                        client.failures += 1
            for item, _ in check.waiters:
                self._deliver(item, ok)

    def _deliver(self, item: object, ok: bool | None) -> None:
        try:
            self._done(item, ok)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - a bug costs one request, not the gate
            self._log.warning("done", "auth verdict not delivered: %r", exc, exc_info=True)


def _nicer(increment: int) -> None:
    """Lower the calling thread's priority by `increment` nice steps (19 at most).

    Linux keeps a nice value per thread, and setpriority(2) with a thread's id sets that
    thread's alone. Elsewhere the same call would set the whole process's, so it is not made.
    """
    if increment <= 0 or sys.platform != "linux":
        return
    thread = threading.get_native_id()
    try:
        nice = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, nice + increment))
    except OSError as exc:  # a sandbox that forbids it: checks run at the daemon's priority
        logger.debug("password checks keep the daemon's priority: %s", exc)


def client_of(peer: str) -> str:
    """The client a connection counts against: its IPv4 address, or its IPv6 /64.

    One IPv6 host commonly holds a whole /64, so an address of its own per attempt is free.
    """
    if peer.startswith("["):
        host = peer[1:].partition("]")[0]
    else:
        host = peer.rpartition(":")[0] or peer
    return _client_of_host(host)


@functools.lru_cache(maxsize=4096)  # one attacker opening connections by the thousand
def _client_of_host(host: str) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
