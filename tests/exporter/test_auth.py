import base64
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import bcrypt
import pytest
from conftest import require_tool

from hwinfo.exporter.auth import (
    Admission,
    AuthGate,
    BasicAuth,
    GateLimits,
    Verdict,
    client_of,
    parse_basic,
)


def make_hash(password: bytes, cost: int = 4) -> bytes:
    return bcrypt.hashpw(password, bcrypt.gensalt(cost))


def header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The hashes bcrypt checked a password against, in order."""
    calls: list[bytes] = []
    real = bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        calls.append(hashed)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", counting)
    yield calls


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (header("alice", "s3:cr:t"), ("alice", b"s3:cr:t")),
        ("basic " + base64.b64encode(b"bob:").decode(), ("bob", b"")),
        (header("jos\u00e9", "pw"), ("jos\u00e9", b"pw")),
        (None, None),
        ("", None),
        ("Bearer abc", None),
        ("Basic not-base64!", None),
        ("Basic " + base64.b64encode(b"no colon").decode(), None),
        ("Basic " + base64.b64encode(b"\xff:pw").decode(), None),
    ],
)
def test_parse_basic(value: str | None, expected: tuple[str, bytes] | None) -> None:
    assert parse_basic(value) == expected


def test_right_wrong_and_unknown(checked: list[bytes]) -> None:
    users = BasicAuth({"alice": make_hash(b"secret")})
    assert users.enabled
    assert users.verify("alice", b"secret")
    assert not users.verify("alice", b"wrong")
    assert not users.verify("mallory", b"secret")
    assert len(checked) == 3
    assert not BasicAuth({}).enabled


def test_2a_and_htpasswd_2y_hashes_verify() -> None:
    line = subprocess.run(
        [require_tool("htpasswd"), "-nbBC", "10", "alice", "secret"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    hashed = line.split(":", 1)[1].encode()
    assert hashed.startswith(b"$2y$10$")
    users = BasicAuth({"alice": hashed, "bob": bcrypt.hashpw(b"pw", bcrypt.gensalt(4, b"2a"))})
    assert users.verify("alice", b"secret")
    assert not users.verify("alice", b"Secret")
    assert users.verify("bob", b"pw")


def test_a_verified_login_is_cached(checked: list[bytes]) -> None:
    users = BasicAuth({"alice": make_hash(b"secret")})
    assert users.verify("alice", b"secret")
    assert users.verify("alice", b"secret")
    assert len(checked) == 1  # the second answer came without bcrypt


def test_logins_arriving_together_share_one_check(checked: list[bytes]) -> None:
    users = BasicAuth({"alice": make_hash(b"secret", cost=6)})
    start = threading.Barrier(8)
    results: list[bool] = []

    def login() -> None:
        start.wait()
        results.append(users.verify("alice", b"secret"))

    threads = [threading.Thread(target=login) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 8
    assert len(checked) == 1


def test_failures_are_not_cached(checked: list[bytes]) -> None:
    users = BasicAuth({"alice": make_hash(b"secret")})
    assert not users.verify("alice", b"guess")
    assert not users.verify("alice", b"guess")
    assert len(checked) == 2


def test_a_changed_hash_invalidates_the_cached_login(checked: list[bytes]) -> None:
    users = BasicAuth({"alice": make_hash(b"old")})
    assert users.verify("alice", b"old")
    users.update({"alice": make_hash(b"new")})
    assert not users.verify("alice", b"old")
    assert users.verify("alice", b"new")
    assert len(checked) == 3


def test_unknown_users_cost_a_check_at_the_highest_configured_cost(checked: list[bytes]) -> None:
    users = BasicAuth({"a": make_hash(b"x", cost=4), "b": make_hash(b"y", cost=5)})
    assert not users.verify("nobody", b"x")
    assert len(checked) == 1 and checked[0].startswith(b"$2b$05$")


def test_the_cache_is_bounded_and_keeps_no_password() -> None:
    users = BasicAuth({name: make_hash(b"password-" + name.encode()) for name in "abc"}, 2)
    for name in "abc":
        assert users.verify(name, b"password-" + name.encode())
    keys = list(users._cache)
    assert len(keys) == 2
    assert all(len(key) == 32 and b"password" not in key for key in keys)


def test_passwords_past_72_bytes_are_refused_after_a_full_check(checked: list[bytes]) -> None:
    # bcrypt ignores bytes past 72; accepting them would accept every such suffix.
    password = b"p" * 72
    users = BasicAuth({"alice": make_hash(password)})
    assert users.verify("alice", password)
    assert not users.verify("alice", password + b"extra")
    assert len(checked) == 2


class HeldBcrypt:
    """bcrypt.checkpw held at its start inside `with held:`: the gate's thread stays busy
    for as long as a test needs, on a machine of any speed (a slow hash was a race)."""

    def __init__(self, real: Callable[[bytes, bytes], bool]) -> None:
        self._real = real
        self._released = threading.Event()
        self._released.set()
        self._entered = threading.Semaphore(0)
        self.thread = 0  # the native id of the thread that called it last

    def __call__(self, password: bytes, hashed: bytes) -> bool:
        self.thread = threading.get_native_id()
        self._entered.release()
        assert self._released.wait(60), "bcrypt was held past the test"
        return self._real(password, hashed)

    def __enter__(self) -> None:
        self._released.clear()

    def __exit__(self, *exc: object) -> None:
        self._released.set()

    def wait_busy(self) -> None:
        """Until a check has begun (since the last one this waited for)."""
        assert self._entered.acquire(timeout=60), "no password check began"


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldBcrypt]:
    holder = HeldBcrypt(bcrypt.checkpw)  # around `checked`'s counter, if a test has both
    monkeypatch.setattr(bcrypt, "checkpw", holder)
    yield holder
    holder.__exit__()  # a failed test must not leave the gate's thread waiting


# The gate: bcrypt off the request path, bounded, shared fairly.


class Verdicts:
    """The gate's callback: verdicts in arrival order, with a way to wait for them."""

    def __init__(self) -> None:
        self.got: list[tuple[str, bool]] = []
        self._changed = threading.Condition()

    def __call__(self, item: str, ok: bool) -> None:
        with self._changed:
            self.got.append((item, ok))
            self._changed.notify_all()

    def wait(self, count: int, timeout: float = 60) -> list[tuple[str, bool]]:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.got) >= count, timeout)
            return list(self.got)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def new_gate() -> Iterator[Callable[..., tuple[AuthGate[object], Verdicts]]]:
    """Makes gates over a user table, each with a verdict recorder; closes them after."""
    gates: list[AuthGate[object]] = []

    def make(users: BasicAuth, **options: object) -> tuple[AuthGate[object], Verdicts]:
        verdicts = Verdicts()
        gates.append(AuthGate(users, verdicts, **options))  # type: ignore[arg-type]
        return gates[-1], verdicts

    yield make
    for gate in gates:
        gate.close()


GateFactory = Callable[..., tuple[AuthGate[object], Verdicts]]


def test_a_cached_login_is_allowed_at_once_while_bcrypt_is_busy(
    new_gate: GateFactory, held: HeldBcrypt
) -> None:
    slow = BasicAuth({"alice": make_hash(b"secret"), "bob": make_hash(b"pw")})
    gate, verdicts = new_gate(slow)
    assert slow.verify("alice", b"secret")  # cached
    with held:  # the gate's thread is busy with bob's check throughout
        assert gate.admit(header("bob", "guess"), "10.0.0.9", "bob").verdict is Verdict.QUEUED
        held.wait_busy()
        admission = gate.admit(header("alice", "secret"), "10.0.0.9", "alice")
        assert admission.verdict is Verdict.ALLOW
        assert verdicts.got == []  # answered before bcrypt was done
    assert verdicts.wait(1) == [("bob", False)]


def test_no_credentials_are_denied_without_bcrypt(
    new_gate: GateFactory, checked: list[bytes]
) -> None:
    users = BasicAuth({"alice": make_hash(b"secret")})
    gate, _ = new_gate(users)
    for value in (None, "", "Bearer x", "Basic !!!"):
        assert gate.admit(value, "10.0.0.1", "x") == Admission(Verdict.DENY)
    assert checked == []


def test_the_gate_checks_and_calls_back(
    new_gate: GateFactory,
) -> None:
    users = BasicAuth({"alice": make_hash(b"secret")})
    gate, verdicts = new_gate(users)
    assert gate.admit(header("alice", "secret"), "10.0.0.1", "right").verdict is Verdict.QUEUED
    assert gate.admit(header("alice", "nope"), "10.0.0.2", "wrong").verdict is Verdict.QUEUED
    assert gate.admit(header("mallory", "x"), "10.0.0.3", "unknown").verdict is Verdict.QUEUED
    assert sorted(verdicts.wait(3)) == [("right", True), ("unknown", False), ("wrong", False)]
    # From now on the right password is cached: allowed at once.
    assert gate.admit(header("alice", "secret"), "10.0.0.1", "again").verdict is Verdict.ALLOW


def test_identical_credentials_waiting_together_share_one_check(
    new_gate: GateFactory, checked: list[bytes], held: HeldBcrypt
) -> None:
    slow = BasicAuth({"bob": make_hash(b"pw"), "alice": make_hash(b"secret")})
    gate, verdicts = new_gate(slow, limits=GateLimits(per_client=100))
    with held:
        assert gate.admit(header("bob", "first"), "10.0.0.1", "first").verdict is Verdict.QUEUED
        held.wait_busy()
        for n in range(5):  # queued behind bob's check, all with the same password
            admission = gate.admit(header("alice", "secret"), f"10.0.0.{n}", f"login-{n}")
            assert admission.verdict is Verdict.QUEUED
    got = verdicts.wait(6)
    assert sorted(got[1:]) == [(f"login-{n}", True) for n in range(5)]
    assert len(checked) == 2  # bob's, and one for the five logins


def test_a_client_past_its_share_is_turned_away_at_once(
    new_gate: GateFactory, held: HeldBcrypt
) -> None:
    clock = Clock()
    limits = GateLimits(per_client=2, failures=3, forgive_after=10.0)
    users = BasicAuth({"alice": make_hash(b"secret")})
    gate, verdicts = new_gate(users, limits=limits, clock=clock)
    # At most two of its checks wait at a time (bcrypt held: neither can end meanwhile)...
    with held:
        for n in range(2):
            assert gate.admit(header("alice", f"g{n}"), "10.0.0.7", "x").verdict is Verdict.QUEUED
        assert gate.admit(header("alice", "g2"), "10.0.0.7", "x").verdict is Verdict.LIMITED
    verdicts.wait(2)
    assert gate.admit(header("alice", "g3"), "10.0.0.7", "x").verdict is Verdict.QUEUED
    verdicts.wait(3)
    # ... and three failures on record are its share: the next attempt gets 429 at once,
    # whatever the user name, so the answer tells nothing about which users exist.
    for user in ("alice", "mallory"):
        admission = gate.admit(header(user, "g4"), "10.0.0.7", "x")
        assert admission == Admission(Verdict.LIMITED, 10)
    # Other clients are not affected, and a cached login never is.
    assert gate.admit(header("alice", "g5"), "10.0.0.8", "y").verdict is Verdict.QUEUED
    assert users.verify("alice", b"secret")
    assert gate.admit(header("alice", "secret"), "10.0.0.7", "z").verdict is Verdict.ALLOW
    # Failures are forgiven one per forgive_after.
    clock.now += 10.5
    assert gate.admit(header("alice", "g6"), "10.0.0.7", "x").verdict is Verdict.QUEUED


def test_a_full_queue_answers_busy(
    new_gate: GateFactory, held: HeldBcrypt
) -> None:
    slow = BasicAuth({"bob": make_hash(b"pw")})
    gate, verdicts = new_gate(slow, limits=GateLimits(queue=2, per_client=100))
    with held:
        for n in range(2):
            assert gate.admit(header("bob", f"g{n}"), f"10.0.{n}.1", n).verdict is Verdict.QUEUED
        assert gate.admit(header("bob", "g3"), "10.0.9.1", 3) == Admission(Verdict.BUSY, 1)
    verdicts.wait(2)


def test_the_client_that_asked_least_is_checked_first(
    new_gate: GateFactory, held: HeldBcrypt
) -> None:
    slow = BasicAuth({"bob": make_hash(b"pw"), "alice": make_hash(b"secret")})
    gate, verdicts = new_gate(slow, limits=GateLimits(per_client=100, failures=100))
    with held:
        assert gate.admit(header("bob", "busy"), "10.0.0.1", "busy").verdict is Verdict.QUEUED
        held.wait_busy()
        for n in range(3):  # an address that keeps asking, queued behind the busy check
            assert gate.admit(header("bob", f"g{n}"), "10.0.0.2",
                              f"flood-{n}").verdict is Verdict.QUEUED
        assert gate.admit(header("alice", "secret"), "10.0.0.3",
                          "newcomer").verdict is Verdict.QUEUED
    got = [item for item, _ in verdicts.wait(5)]
    assert got[:2] == ["busy", "newcomer"]


def test_a_full_queue_gives_a_place_to_a_client_that_asked_less(
    new_gate: GateFactory, held: HeldBcrypt
) -> None:
    slow = BasicAuth({"bob": make_hash(b"pw"), "alice": make_hash(b"secret")})
    gate, verdicts = new_gate(slow, limits=GateLimits(queue=3, per_client=100, failures=100))
    with held:
        assert gate.admit(header("bob", "busy"), "10.0.0.1", "busy").verdict is Verdict.QUEUED
        held.wait_busy()
        for n in range(2):  # the queue full, with two checks of an address that asked twice
            assert gate.admit(header("bob", f"g{n}"), "10.0.0.2",
                              f"flood-{n}").verdict is Verdict.QUEUED
        # An address that asked less takes the place of the last check of the one that asked
        # most, which is answered at once without a check (None: 503).
        assert gate.admit(header("alice", "secret"), "10.0.0.3",
                          "newcomer").verdict is Verdict.QUEUED
        assert verdicts.wait(1) == [("flood-1", None)]
        # The address that asked most does not win its place back.
        assert gate.admit(header("bob", "g2"), "10.0.0.2", "flood-2") == Admission(Verdict.BUSY, 1)
    assert verdicts.wait(4)[1:] == [("busy", False), ("newcomer", True), ("flood-0", False)]


def test_a_failing_check_fails_closed_and_logs_one_line(
    new_gate: GateFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    users = BasicAuth({"alice": make_hash(b"secret")})
    gate, verdicts = new_gate(users, limits=GateLimits(per_client=100, failures=100))

    def broken(password: bytes, hashed: bytes) -> bool:
        raise ValueError("Invalid salt")

    monkeypatch.setattr(bcrypt, "checkpw", broken)
    for n in range(5):
        gate.admit(header("alice", f"secret{n}"), "10.0.0.1", str(n))
    assert [ok for _, ok in verdicts.wait(5)] == [False] * 5
    assert [r.getMessage() for r in caplog.records] == [
        "password check failed: ValueError('Invalid salt')"
    ]
    assert not caplog.records[0].exc_info  # no traceback unless logging at debug


def nice_of(thread: int) -> int:
    """A thread's nice value: field 19 of /proc/self/task/TID/stat (proc(5))."""
    stat = Path(f"/proc/self/task/{thread}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[16])


@pytest.mark.skipif(sys.platform != "linux", reason="a nice value per thread is Linux's")
def test_password_checks_run_at_a_lower_priority_and_still_let_a_login_in(
    new_gate: GateFactory, held: HeldBcrypt
) -> None:
    users = BasicAuth({"alice": make_hash(b"secret")})
    gate, verdicts = new_gate(users, limits=GateLimits(nice=7))
    ours = nice_of(threading.get_native_id())
    with held:
        assert gate.admit(header("alice", "secret"), "10.0.0.1", "login").verdict is Verdict.QUEUED
        held.wait_busy()
        # The check runs on the gate's thread, nicer by 7 (19 at most); the thread that asked
        # (the server's loop) keeps its priority.
        assert held.thread != threading.get_native_id()
        assert nice_of(held.thread) == min(19, ours + 7)
        assert nice_of(threading.get_native_id()) == ours
    assert verdicts.wait(1) == [("login", True)]


@pytest.mark.parametrize(
    ("peer", "client"),
    [
        ("10.1.2.3:5000", "10.1.2.3"),
        ("[2001:db8:1:2:3:4:5:6]:5000", "2001:db8:1:2::/64"),
        ("[::ffff:10.1.2.3]:5000", "10.1.2.3"),
        ("[::1]:80", "::/64"),
    ],
)
def test_clients_are_told_apart_by_address(peer: str, client: str) -> None:
    assert client_of(peer) == client
