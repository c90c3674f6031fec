"""The claims directory of `hwinfo run`, read-only: who holds which device, and who waits.

Every entry is hostile input: anyone who may create a claim may also create a link, a FIFO,
a huge file, or a file named for another user. The layout (hwinfo/run/claimdir.py writes it):

- `UID.PID.TOKEN.claim`: a claim; `UID.PID.TOKEN.wait`: a waiter's ticket. JSON of at most
  MAX_ENTRY_BYTES, owned by UID, mode 0644, held by its `hwinfo run` with an open file
  description lock (fcntl F_OFD_SETLK, F_WRLCK) for as long as it lives. A write lock needs the
  file open for writing, which only its owner (and root) can do: nobody else can keep another
  user's entry alive, and nobody can end one, since the kernel drops the lock only when its
  holder closes it or dies.
- `.UID.PID.TOKEN.tmp`: an entry being written, then renamed into place already locked.

An entry counts only where it is a regular file, not a link (O_NOFOLLOW), with one name,
owned by the uid its name gives, writable by its owner alone, no larger than a claim can be,
well-formed, and locked now; one with several names (a hard link someone made) counts once.
Another name is not refused: where fs.protected_hardlinks is off, anyone could give someone
else's live claim a second name, and a refusal would end that claim. Anything else is left alone: a dead entry (its process gone)
silently, the rest with one line each.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pwd
import re
import shlex
import stat
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hwinfo.model.claims import Claim, Claims, Request, Waiter

ENV_VAR = "HWINFO_CLAIMS_DIR"
# Below --root: /run is a tmpfs, emptied at boot as every claim's process is gone then;
# systemd/hwinfo-claims.conf (tmpfiles.d) makes it sticky and world-writable, like /tmp.
DEFAULT_DIRECTORY = "run/hwinfo/claims"
CLAIM, WAIT, TEMP = ".claim", ".wait", ".tmp"
MAX_ENTRY_BYTES = 16384
# Entries looked at in one reading: a directory of a million files costs this many, not all.
MAX_ENTRIES = 1024
MAX_DEVICES = 64  # a claim of more is not one this host can have
MAX_COMMAND_ARGS = 256
MAX_SEQUENCE = 2**53
_NAME = re.compile(r"([0-9]{1,10})\.([0-9]{1,10})\.([0-9a-f]{16})(\.claim|\.wait)", re.ASCII)
# GPU-<uuid>, MIG-<uuid>, or the R450 form MIG-GPU-<uuid>/<gi>/<ci>.
_DEVICE = re.compile(r"(GPU|MIG)-[0-9A-Za-z/-]{1,100}", re.ASCII)
_PROFILE = re.compile(r"[0-9A-Za-z.+-]{1,40}", re.ASCII)
# struct flock on Linux: l_type, l_whence (short), l_start, l_len (off_t), l_pid (int).
_FLOCK = "hhqqi4x"


class ClaimsError(Exception):
    """The claims directory cannot be used (missing, not trustworthy); one line for a person."""


def directory_path(root: str = "/") -> str:
    """$HWINFO_CLAIMS_DIR, else /run/hwinfo/claims below `root`."""
    return os.environ.get(ENV_VAR) or os.path.join(root, DEFAULT_DIRECTORY)


def open_directory(path: str) -> int | None:
    """A descriptor of the claims directory; None where it does not exist; ClaimsError where it
    is not a directory anyone could trust: a link, or one where another user could delete or
    replace someone's claim (another owner than root or us; writable by others, not sticky)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        # O_DIRECTORY is judged before O_NOFOLLOW: a link to a directory is ENOTDIR too.
        what = ("is a symbolic link" if os.path.islink(path) else
                {errno.ENOTDIR: "is not a directory"}.get(exc.errno or 0, exc.strerror))
        raise ClaimsError(f"claims directory {path} {what}") from None
    info = os.fstat(fd)
    problem = None
    if info.st_uid not in (0, os.geteuid()):
        problem = f"belongs to uid {info.st_uid}, who could remove anyone's claim"
    elif info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        problem = "is writable by others without the sticky bit: anyone could remove a claim"
    if problem:
        os.close(fd)
        raise ClaimsError(f"claims directory {path} {problem}; refused")
    return fd


def lock_held(fd: int) -> bool:
    """Whether someone holds a write lock on the whole file: asked, never taken."""
    probe = struct.pack(_FLOCK, fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0)
    kind = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_OFD_GETLK, probe))[0]
    return kind != fcntl.F_UNLCK


def take_lock(fd: int) -> None:
    """Hold a write lock on the whole file for as long as `fd` is open; OSError if another has."""
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))


@dataclass
class Entry:
    """A live claim or ticket, judged sound."""

    inode: tuple[int, int]  # (st_dev, st_ino): one entry, whatever its names
    name: str
    uid: int
    pid: int
    # When it took its name (claims and tickets are renamed into place): the kernel's time,
    # which no one can set back, unlike what a file says.
    ctime_ns: int
    devices: list[str]
    argv: list[str]
    request: Request
    sequence: int  # taken under the directory's lock: the order of entries of one instant

    @property
    def since(self) -> float:
        return self.ctime_ns / 1e9


@dataclass
class Reading:
    """One reading of the directory: live entries, refusals, and what `hwinfo run` needs."""

    claims: list[Entry]
    waiters: list[Entry]  # in line order
    ignored: list[str]
    dead: list[str]  # names of this uid's entries whose process is gone (it may remove them)
    last_sequence: int  # the highest number an entry took, live or dead
    complete: bool = True  # False: more entries than MAX_ENTRIES, the rest not judged

    @property
    def next_sequence(self) -> int:
        """The number a new entry takes: one more than any so far, but never past what a
        reader accepts. Anyone may leave a file holding the largest: one more made every later
        claim one that readers refused, and its devices were handed out again. Entries that
        share it are ordered by their time, then name, as those of one instant are."""
        return min(self.last_sequence + 1, MAX_SEQUENCE)


def read_directory(fd: int, path: str) -> Reading:
    """Judge every entry of the open claims directory."""
    reading = Reading([], [], [], [], 0)
    # One entry per file, whatever its names. A file named both a claim and a ticket is a
    # claim: hwinfo run never renames one into the other, so the ticket name is someone's link,
    # which must not turn a live claim into a waiter and free its devices for others.
    found: dict[tuple[int, int], Entry] = {}
    for count, name in enumerate(_names(fd)):
        if count == MAX_ENTRIES:
            reading.ignored.append(f"{path} holds more than {MAX_ENTRIES} entries: "
                                   "the rest are not read")
            reading.complete = False
            break
        if name.startswith(".") and name.endswith(TEMP):
            continue  # being written, or left by a process that died writing it
        match = _NAME.fullmatch(name)
        if match is None:
            reading.ignored.append(f"{path}/{name}: not a claim's name; ignored")
            continue
        try:
            entry = _judge(fd, name, int(match.group(1)), int(match.group(2)), reading)
        except _Refused as exc:
            reading.ignored.append(f"{path}/{name}: {exc}; ignored")
            continue
        if entry is not None and (entry.inode not in found
                                  or name.endswith(CLAIM) and not _is_claim(found[entry.inode])):
            found[entry.inode] = entry
    for entry in found.values():
        (reading.claims if _is_claim(entry) else reading.waiters).append(entry)
    reading.claims.sort(key=lambda e: (e.ctime_ns, e.sequence, e.name))
    reading.waiters.sort(key=lambda e: (e.ctime_ns, e.sequence, e.name))
    return reading


def read_claims(path: str, with_commands: bool = False) -> Claims:
    """The claims directory at `path` as the snapshot carries it; ClaimsError if refused."""
    fd = open_directory(path)
    if fd is None:
        return Claims(path, present=False)
    try:
        reading = read_directory(fd, path)
    finally:
        os.close(fd)
    return to_claims(path, reading, with_commands)


def to_claims(path: str, reading: Reading, with_commands: bool) -> Claims:
    """A reading as the snapshot carries it: owners by name, commands as asked."""
    names = user_namer()
    return Claims(
        path, True,
        [Claim(e.devices, names(e.uid), e.uid, e.pid, e.since, *_command(e.argv, with_commands),
               e.request) for e in reading.claims],
        [Waiter(i, names(e.uid), e.uid, e.pid, e.since, *_command(e.argv, with_commands),
                e.request) for i, e in enumerate(reading.waiters, 1)],
        reading.ignored,
    )


def _is_claim(entry: Entry) -> bool:
    return entry.name.endswith(CLAIM)


class _Refused(Exception):
    """Why an entry is not trusted, as the end of a line."""


def _names(fd: int) -> Iterator[str]:
    with os.scandir(fd) as entries:
        for entry in entries:
            yield entry.name


def _judge(fd: int, name: str, uid: int, pid: int, reading: Reading) -> Entry | None:
    """The entry, None when dead, or _Refused."""
    try:
        before = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None  # removed since the listing: its process ended
    # Looked at before opening, so that opening never touches a FIFO or a device.
    _check(before, uid)
    try:
        entry_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
                           | os.O_CLOEXEC, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _Refused(f"cannot be read: {exc.strerror}") from None
    try:
        info = os.fstat(entry_fd)
        if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            raise _Refused("was replaced while being read")
        _check(info, uid)
        content = _content(entry_fd)
        alive = lock_held(entry_fd)
    finally:
        os.close(entry_fd)
    if not alive:
        sequence = content.get("sequence") if isinstance(content, dict) else None
        if _whole(sequence, 0, MAX_SEQUENCE):
            reading.last_sequence = max(reading.last_sequence, sequence)
        if uid == os.geteuid():
            reading.dead.append(name)
        return None
    entry = _entry((info.st_dev, info.st_ino), name, uid, pid, info.st_ctime_ns, content,
                   name.endswith(WAIT))
    reading.last_sequence = max(reading.last_sequence, entry.sequence)
    return entry


def _check(info: os.stat_result, uid: int) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise _Refused("is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise _Refused("is not a regular file")
    if info.st_uid != uid:
        raise _Refused(f"belongs to uid {info.st_uid}, not to uid {uid} its name gives")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _Refused("is writable by others than its owner")
    if info.st_size > MAX_ENTRY_BYTES:
        raise _Refused(f"holds {info.st_size} bytes, more than a claim ({MAX_ENTRY_BYTES})")


def _content(fd: int) -> Any:
    data = os.read(fd, MAX_ENTRY_BYTES + 1)
    if len(data) > MAX_ENTRY_BYTES:
        raise _Refused(f"holds more than {MAX_ENTRY_BYTES} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested past the parser
        return None


def _entry(inode: tuple[int, int], name: str, uid: int, pid: int, ctime_ns: int, content: Any,
           ticket: bool) -> Entry:
    """The entry a live file describes, or _Refused naming what is wrong with it."""
    if not isinstance(content, dict):
        raise _Refused("is not a claim (not a JSON object)")
    devices = content.get("devices", [])
    if (not isinstance(devices, list) or len(devices) > MAX_DEVICES or (not devices and not ticket)
            or not all(isinstance(d, str) and _DEVICE.fullmatch(d) for d in devices)):
        raise _Refused("names no devices, or devices that are not GPU or MIG UUIDs")
    argv = content.get("command")
    if (not isinstance(argv, list) or not 0 < len(argv) <= MAX_COMMAND_ARGS
            or not all(isinstance(a, str) for a in argv) or not argv[0]):
        raise _Refused("has no command")
    sequence = content.get("sequence", 0)
    if not _whole(sequence, 0, MAX_SEQUENCE):
        raise _Refused("has no number in line")
    return Entry(inode, name, uid, pid, ctime_ns, list(devices), list(argv),
                 _request(content.get("request")), sequence)


def _request(value: Any) -> Request:
    if not isinstance(value, dict):
        raise _Refused("says nothing of what it asked for")
    gpus, need, profile, share = (value.get(k) for k in
                                  ("gpus", "need_memory_bytes", "mig_profile", "share"))
    if (not _whole(gpus, 1, MAX_DEVICES) or not (need is None or _whole(need, 1, 2**50))
            or not (profile is None or isinstance(profile, str) and _PROFILE.fullmatch(profile))
            or not isinstance(share, bool)):
        raise _Refused("asks for something no host has")
    return Request(gpus, need, profile, share)


def _whole(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _command(argv: list[str], with_commands: bool) -> tuple[str, str | None]:
    """(program name, whole command line or None): as a GPU process's are shown."""
    return os.path.basename(argv[0]) or argv[0], shlex.join(argv) if with_commands else None


def user_namer() -> Callable[[int], str | None]:
    """uid -> user name (None: no name), each looked up once per reading."""
    known: dict[int, str | None] = {}

    def name(uid: int) -> str | None:
        if uid not in known:
            try:
                known[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                known[uid] = None
        return known[uid]

    return name
