"""Two real Unix users, made for the test and removed after: neither can end, take over or
fake the other's claim, and what one leaves in the directory does not fool the other.
The test makes accounts with useradd, so it runs as root (as the suite does in CI)."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from conftest import require, require_tool

from tests.run.host import Host, eight_idle_h100s, simulated_host, wait_for

# holder.py needs only the standard library. The system's Python runs it as any user; the
# tests' own interpreter may live where only root may look (a ~root/.pyenv), though `hwinfo run`
# itself, started by setpriv, runs from it.
COMMAND_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    env: dict[str, str]

    @property
    def prefix(self) -> list[str]:
        return [require_tool("setpriv"), f"--reuid={self.uid}", f"--regid={self.gid}",
                "--clear-groups", "--"]

    def python(self, code: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, sys.executable, "-c", code, *args], env=self.env,
                              capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def host() -> Iterator[Host]:
    one = eight_idle_h100s()
    one["gpus"] = one["gpus"][:1]
    with simulated_host(one) as made:
        yield made


@pytest.fixture
def users(host: Host) -> Iterator[tuple[User, User]]:
    require(os.geteuid() == 0, "making Unix accounts needs root")
    useradd, userdel = require_tool("useradd"), require_tool("userdel")
    names = [f"hwt{secrets.token_hex(4)}{who}" for who in "ab"]
    made = []
    try:
        for name in names:
            subprocess.run([useradd, "--no-create-home", "--user-group", "--shell",
                            "/usr/sbin/nologin", name], check=True, timeout=120)
            made.append(name)
        found = []
        for name in names:
            account = pwd.getpwnam(name)
            # The simulated driver's state must be the user's own, or it is not used.
            state = host.root / f"sim-{name}"
            state.mkdir(mode=0o700)
            os.chown(state, account.pw_uid, account.pw_gid)
            env = {**host.env, "HOME": "/nonexistent", "USER": name,
                   "HWINFO_SIM_STATE_DIR": str(state)}
            found.append(User(name, account.pw_uid, account.pw_gid, env))
        yield found[0], found[1]
    finally:
        for name in made:
            subprocess.run([userdel, name], check=False, timeout=120)


# What bob tries on alice's claim, each attempt's errno (0: it worked).
_TAMPER = r"""
import errno, fcntl, json, os, signal, struct, sys
directory, name, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
path = os.path.join(directory, name)
def attempt(do):
    try:
        do()
        return 0
    except OSError as exc:
        return exc.errno
def lock(kind):
    fd = os.open(path, os.O_RDONLY)
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", kind, 0, 0, 0, 0))
print(json.dumps({
    "remove": attempt(lambda: os.unlink(path)),
    "rename": attempt(lambda: os.rename(path, path + ".mine")),
    "rewrite": attempt(lambda: os.open(path, os.O_WRONLY)),
    "chmod": attempt(lambda: os.chmod(path, 0o666)),
    "write_lock": attempt(lambda: lock(fcntl.F_WRLCK)),
    "read_lock": attempt(lambda: lock(fcntl.F_RDLCK)),
    "kill_run": attempt(lambda: os.kill(pid, signal.SIGKILL)),
}))
"""

# Bob's fakes: a file named for alice, and a link named for himself to her claim.
_FAKE = r"""
import json, os, sys
directory, alice, bob, name = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
claim = json.dumps({"devices": ["GPU-00000000-0000-0000-0000-000000000000"], "command": ["x"], "request": {"gpus": 1, "need_memory_bytes": None,
                                                  "mig_profile": None, "share": False}})
with open(os.path.join(directory, f"{alice}.1.0123456789abcdef.claim"), "w") as out:
    out.write(claim)
os.symlink(name, os.path.join(directory, f"{bob}.2.0123456789abcdef.claim"))
"""


def _report(host: Host, user: User) -> dict:
    done = subprocess.run([*user.prefix, sys.executable, "-m", "hwinfo", "report", "--simulate",
                           str(host.scenario), "--format", "json"], env=user.env,
                          capture_output=True, text=True, timeout=300, check=False)
    return json.loads(done.stdout)["claims"]


def test_one_user_cannot_end_take_or_fake_anothers_claim(
        host: Host, users: tuple[User, User]) -> None:
    alice, bob = users
    run = host.run("alice", prefix=alice.prefix, env=alice.env, python=COMMAND_PYTHON)
    (gpu,) = host.started("alice")["devices"]
    (name,) = [p.name for p in host.claims.iterdir() if p.name.endswith(".claim")]
    assert name.startswith(f"{alice.uid}.")

    tried = bob.python(_TAMPER, str(host.claims), name, str(run.pid))
    assert json.loads(tried.stdout) == {
        "remove": 1, "rename": 1, "rewrite": 13, "chmod": 1,  # EPERM, EPERM, EACCES, EPERM
        "write_lock": 9,  # EBADF: a write lock needs the file open for writing
        "read_lock": 11,  # EAGAIN: her write lock is in the way
        "kill_run": 1,
    }, tried.stderr
    faked = bob.python(_FAKE, str(host.claims), str(alice.uid), str(bob.uid), name)
    assert faked.returncode == 0, faked.stderr

    seen = _report(host, bob)
    assert [(c["user"], c["devices"]) for c in seen["claims"]] == [(alice.name, [gpu])]
    assert sorted(line.split(": ", 1)[1] for line in seen["ignored"]) == [
        f"belongs to uid {bob.uid}, not to uid {alice.uid} its name gives; ignored",
        "is a symbolic link; ignored"]
    late = host.run("bob", prefix=bob.prefix, env=bob.env, wait="1s",
                    python=COMMAND_PYTHON)
    assert host.ended(late) == 75
    assert "1 of the 1 that fit are claimed" in host.log("bob")

    # Once hers ends, the GPU is his.
    host.release("alice")
    assert host.ended(run) == 0
    after = host.run("bob2", prefix=bob.prefix, env=bob.env, python=COMMAND_PYTHON)
    assert host.started("bob2")["devices"] == [gpu]
    host.release("bob2")
    assert host.ended(after) == 0


def test_a_dead_claim_stays_dead_whatever_another_user_holds_on_it(
        host: Host, users: tuple[User, User]) -> None:
    """alice's run is killed: her claim's file stays, and bob keeps read locks and a flock on
    it; it is no claim for anyone, and her next run clears it away."""
    alice, bob = users
    run = host.run("alice", prefix=alice.prefix, env=alice.env, python=COMMAND_PYTHON)
    (gpu,) = host.started("alice")["devices"]
    (name,) = [p.name for p in host.claims.iterdir() if p.name.endswith(".claim")]
    run.kill()
    run.wait(timeout=300)
    holding = subprocess.Popen(
        [*bob.prefix, sys.executable, "-c", _HOLD, str(host.claims / name)],
        env=bob.env, stdout=subprocess.PIPE, text=True)
    try:
        assert holding.stdout is not None and holding.stdout.readline() == "holding\n"
        assert _report(host, alice)["claims"] == []
        taken = host.run("bob", prefix=bob.prefix, env=bob.env, python=COMMAND_PYTHON)
        assert host.started("bob")["devices"] == [gpu]
        host.release("bob")
        assert host.ended(taken) == 0
    finally:
        holding.kill()
        holding.wait(timeout=300)
    again = host.run("alice2", prefix=alice.prefix, env=alice.env, hold="0",
                     python=COMMAND_PYTHON)
    assert host.ended(again) == 0
    wait_for("her dead claim to be cleared", lambda: not (host.claims / name).exists())
    assert list(host.claims.iterdir()) == []


_HOLD = r"""
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 0, 0))
other = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(other, fcntl.LOCK_EX)
print("holding", flush=True)
time.sleep(600)
"""
