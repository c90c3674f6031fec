import base64
import subprocess
import threading
import time
from collections.abc import Iterator

import bcrypt
import pytest
from conftest import require_tool

from hwinfo.exporter import auth
from hwinfo.exporter.auth import BasicAuth, parse_basic


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

    monkeypatch.setattr(auth.bcrypt, "checkpw", counting)
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
    assert users.check(header("alice", "secret"))
    assert not users.check(header("alice", "wrong"))
    assert not users.check(header("mallory", "secret"))
    assert not users.check(None)
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
    users = BasicAuth({"alice": make_hash(b"secret", cost=10)})
    assert users.verify("alice", b"secret")
    started = time.perf_counter()
    assert users.verify("alice", b"secret")
    assert time.perf_counter() - started < 0.010  # bcrypt at cost 10 takes ~70 ms
    assert len(checked) == 1


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
