"""The claims directory as `hwinfo run` writes it: claims, tickets in line, and the one lock
under which anyone decides who gets what (the layout: collect/claims.py).

Deciding takes the directory's own flock: every `hwinfo run` reads the claims and the line,
and writes its claim or ticket, under it, so that no device is handed to two at once. Each
claim or ticket is then kept by its own lock, which the kernel drops when its process ends,
`kill -9` included: a dead one is simply not counted, and its owner's next run removes it.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hwinfo.collect.claims import (
    DEFAULT_DIRECTORY,
    MAX_COMMAND_ARGS,
    TEMP,
    ClaimsError,
    Reading,
    open_directory,
    read_directory,
    take_lock,
)
from hwinfo.model.claims import Request

# The sticky bit lets anyone add an entry and only its owner (or root) remove or rename it.
MODE = 0o1777
ENTRY_MODE = 0o644
# The directory's lock is held for the few milliseconds of one decision; one held past this
# is someone else's doing (a stopped or hostile process), and waiting on it ends.
LOCK_PATIENCE_SECONDS = 10.0
# What an entry keeps of its command, which is there for people to read: at most this much of
# JSON, each argument at most ARGUMENT_CHARS. The file must stay one every reader accepts (at
# most MAX_ENTRY_BYTES, MAX_COMMAND_ARGS arguments): a longer command made the claim
# unreadable to the next run, which was handed the same device. 64 MIG devices take 7 KiB.
COMMAND_BYTES = 6 * 1024
ARGUMENT_CHARS = 256


class Busy(Exception):
    """The directory's lock stayed taken."""


class Held:
    """A claim or ticket of this process, alive while its descriptor is open."""

    def __init__(self, directory: int, name: str, fd: int) -> None:
        self.directory, self.name, self.fd = directory, name, fd

    def release(self) -> None:
        """Removed, then unlocked: never seen dead by others."""
        try:
            os.unlink(self.name, dir_fd=self.directory)
        except FileNotFoundError:
            pass
        os.close(self.fd)


class Directory:
    """The open claims directory."""

    def __init__(self, path: str) -> None:
        self.path = path
        fd = open_directory(path)
        if fd is None:
            fd = _made(path)
        self.fd = fd

    def close(self) -> None:
        os.close(self.fd)

    @contextmanager
    def deciding(self, patience: float = LOCK_PATIENCE_SECONDS) -> Iterator[Reading]:
        """The directory read under its lock, held for the body: a decision no one else makes
        at the same time. Busy when the lock stays taken for `patience` seconds."""
        give_up = time.monotonic() + patience
        pause = 0.001
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up:
                    raise Busy(f"the claims directory {self.path} stayed locked for "
                               f"{patience:g} s (by another process)") from None
                time.sleep(pause)  # a stop signal raises out of it
                pause = min(pause * 2, 0.05)
        try:
            reading = read_directory(self.fd, self.path)
            self._tidy(reading.dead)
            if not reading.complete:  # a claim among the entries not read could be missed
                raise ClaimsError(f"{reading.ignored[-1]}, so nothing is handed out: ask an "
                                  "admin to look at what fills it")
            yield reading
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def read(self) -> Reading:
        """The directory as it is, without its lock: for looking, not deciding."""
        return read_directory(self.fd, self.path)

    def add(self, suffix: str, request: Request, argv: Sequence[str],
            devices: Sequence[str] = (), sequence: int = 0) -> Held:
        """A new claim or ticket of this process, locked before it takes its name. Decided
        under the lock, `sequence` is Reading.next_sequence."""
        base = f"{os.geteuid()}.{os.getpid()}.{secrets.token_hex(8)}"
        temp, name = f".{base}{TEMP}", base + suffix
        content = json.dumps({"devices": list(devices), "command": kept_command(argv),
                              "request": dataclasses.asdict(request), "sequence": sequence}).encode()
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     ENTRY_MODE, dir_fd=self.fd)
        try:
            os.fchmod(fd, ENTRY_MODE)  # whatever the umask: others must be able to read it
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view):]
            take_lock(fd)
            os.rename(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            os.unlink(temp, dir_fd=self.fd)
            os.close(fd)
            raise
        return Held(self.fd, name, fd)

    def _tidy(self, dead: list[str]) -> None:
        """This user's entries whose process is gone, removed (nobody else may)."""
        for name in dead:
            try:
                os.unlink(name, dir_fd=self.fd)
            except OSError:
                pass  # removed by another of this user's runs, or not ours to remove after all


def kept_command(argv: Sequence[str]) -> list[str]:
    """The command as an entry keeps it: each argument cut to ARGUMENT_CHARS; where they are
    more than MAX_COMMAND_ARGS or COMMAND_BYTES, the first that fit, then a last one saying how
    many were left out."""
    cut = [a if len(a) <= ARGUMENT_CHARS else a[:ARGUMENT_CHARS - 1] + "…"
           for a in argv[:MAX_COMMAND_ARGS]]
    if len(argv) <= MAX_COMMAND_ARGS and _fitting(cut, COMMAND_BYTES) == len(cut):
        return cut
    # Room for the count; the program's name is always kept (an entry needs one).
    kept = max(1, min(_fitting(cut, COMMAND_BYTES - 64), MAX_COMMAND_ARGS - 1))
    return [*cut[:kept], f"… ({len(argv) - kept} more arguments)"]


def _fitting(arguments: list[str], budget: int) -> int:
    """How many of the first arguments fit `budget` bytes of JSON."""
    size = 0
    for count, argument in enumerate(arguments):
        size += len(json.dumps(argument)) + 2
        if size > budget:
            return count
    return len(arguments)


def _made(path: str) -> int:
    """The default directory, made as systemd/hwinfo-claims.conf would make it where hwinfo
    runs as root; ClaimsError otherwise."""
    default = os.path.join("/", DEFAULT_DIRECTORY)
    if path != default or os.geteuid() != 0:
        how = ("ask an admin to install systemd/hwinfo-claims.conf as "
               "/etc/tmpfiles.d/hwinfo-claims.conf and run systemd-tmpfiles --create"
               if path == default else "make it with: install -d -m 1777 " + path)
        raise ClaimsError(f"claims directory {path} does not exist: {how}")
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    try:
        os.mkdir(path, MODE)
        os.chmod(path, MODE)  # the umask took the sticky and write bits off
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise ClaimsError(f"cannot make the claims directory {path}: {exc.strerror}") from None
    fd = open_directory(path)
    if fd is None:
        raise ClaimsError(f"claims directory {path} vanished as it was made")
    return fd
