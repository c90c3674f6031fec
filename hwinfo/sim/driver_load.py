"""When the simulated driver loaded: one moment shared by every process that simulates a scenario.

Real NVML counts energy and a machine's faults happen from the moment the kernel driver
loaded, whichever client asks. The simulator's driver of a scenario loads when the first
process starts simulating it and stays loaded while any process on this host simulates it
(as the real driver stays loaded while a client holds it); the next process after the last
one has ended loads it anew, so a scenario replays from its start.

Mechanism: a state file per scenario (named by a digest of its content, so two paths to one
file share a driver and an edited file gets its own) holds the load moment on the host's
monotonic clock, which all processes share. Each simulating process holds a shared flock on
it; a process that can take it exclusively is alone, so it writes a new load moment. A short
exclusive lock on a second file serializes that check. Where no state file can be used (no
writable private directory, no flock), the driver loads in this process alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import stat
import time
import weakref

from hwinfo.sim.scenario_model import Scenario

try:
    import fcntl
except ImportError:  # not POSIX: every process loads its own driver
    fcntl = None  # type: ignore[assignment]

STATE_DIR_VAR = "HWINFO_SIM_STATE_DIR"
# How long to wait for another process's load check (it takes microseconds).
CHECK_DEADLINE_SECONDS = 5.0
_MAX_STATE_BYTES = 64


def state_dir() -> str:
    """$HWINFO_SIM_STATE_DIR, else $XDG_RUNTIME_DIR/hwinfo-sim, else /tmp/hwinfo-sim-UID."""
    explicit = os.environ.get(STATE_DIR_VAR)
    if explicit:
        return explicit
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "hwinfo-sim")
    return os.path.join("/tmp", f"hwinfo-sim-{os.getuid()}")


def scenario_key(scenario: Scenario) -> str:
    """Names a scenario's driver by content: the same machine whatever path led to it."""
    anonymous = dataclasses.replace(scenario, name="", source="")
    return hashlib.sha256(repr(anonymous).encode()).hexdigest()[:24]


class DriverLoad:
    """The load moment (time.monotonic() seconds) of a scenario's driver, held while alive."""

    def __init__(self, scenario: Scenario) -> None:
        self.loaded_at = time.monotonic()
        self.shared = False
        try:
            held = _hold(state_dir(), scenario_key(scenario), self.loaded_at)
        except OSError:
            return  # this process alone: loaded now
        if held is not None:
            fd, self.loaded_at = held
            self.shared = True
            self._finalizer = weakref.finalize(self, os.close, fd)

    def release(self) -> None:
        """Stop holding the driver (also done when this object is collected)."""
        if self.shared:
            self._finalizer()


def _private_dir(path: str) -> bool:
    """Create the state directory if needed; True if it is ours alone (no trap laid for us)."""
    with contextlib.suppress(FileExistsError):
        os.makedirs(path, mode=0o700)
    info = os.lstat(path)
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _open(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _hold(directory: str, key: str, now: float) -> tuple[int, float] | None:
    """The state file's descriptor, with a shared lock held, and the load moment it holds
    (`now` if this process is the first); None where no state file can be used."""
    if fcntl is None or not _private_dir(directory):
        return None
    check = _open(os.path.join(directory, f"{key}.check"))
    try:
        _lock_before_deadline(check)
        fd = _open(os.path.join(directory, f"{key}.load"))
        try:
            loaded_at = None if _try_lock(fd, fcntl.LOCK_EX) else _read(fd)
            if loaded_at is None:  # the first client, or garbage in the file
                loaded_at = now
                _write(fd, now)
            # Nobody else can lock it meanwhile: they wait for the check lock we hold.
            fcntl.flock(fd, fcntl.LOCK_SH)
        except OSError:
            os.close(fd)
            raise
        return fd, loaded_at
    finally:
        os.close(check)  # releases the check lock


def _try_lock(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _lock_before_deadline(fd: int) -> None:
    deadline = time.monotonic() + CHECK_DEADLINE_SECONDS
    while not _try_lock(fd, fcntl.LOCK_EX):
        if time.monotonic() > deadline:
            raise TimeoutError("another process holds the simulated driver's load check")
        time.sleep(0.005)


def _read(fd: int) -> float | None:
    """The load moment in the state file; None if it holds none that can be true."""
    text = os.pread(fd, _MAX_STATE_BYTES, 0)
    try:
        value = float(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None
    # A moment in the future is from another boot's clock, or garbage (nan fails both).
    return value if 0 <= value <= time.monotonic() else None


def _write(fd: int, value: float) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{value!r}\n".encode("ascii"), 0)
