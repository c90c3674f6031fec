"""Who holds a GPU process (ProcessOwner), and the owners of a simulated machine's processes
found below a --root tree. This machine's own are asked of its process table with psutil
(processes.py local_owner), which only a started NVML needs."""

from __future__ import annotations

import ntpath
import os
import pwd
from collections.abc import Callable
from typing import NamedTuple

from hwinfo import inputs
from hwinfo.collect.cgroup import read_attribution
from hwinfo.collect.sysfs import Root, RootError
from hwinfo.model.attribution import Attribution


class ProcessOwner(NamedTuple):
    user: str | None
    command: str | None  # full command line
    # What NVML names the process (a simulated scenario's `name`): on Windows the executable's
    # path, spaces and all (`C:\Program Files\...\NVIDIA Overlay.exe`), on Linux the whole
    # command line (`/opt/microsoft/msedge/msedge --type=gpu-process ...`); None: `command`.
    executable: str | None = None
    started_at: float | None = None  # Unix time
    cpu_seconds: float | None = None  # user + system
    resident_bytes: int | None = None
    attribution: Attribution | None = None  # None: its cgroup was not read

    @property
    def name(self) -> str | None:
        """The command name, as ps shows it: the program's base name, without arguments."""
        named = self.executable or self.command or ""
        # A Windows path (a dump from a Windows host) has no arguments but may have spaces.
        if "\\" in named:
            return ntpath.basename(named)
        # Unknown: a Linux program whose path has spaces (NVML joins the arguments with them).
        program = next(iter(named.split()), None)
        return os.path.basename(program) if program else None


OwnerLookup = Callable[[int], ProcessOwner | None]


# A kernel's /proc/PID/status is about 1.5 KiB; a command line is bounded by ARG_MAX (2 MiB
# by default) but a GPU job's is rarely past a few KiB. A tree's larger file is not a
# process's: it costs that process its owner, read once per process, not 16 MiB each.
STATUS_MAX_BYTES = 64 * 1024
CMDLINE_MAX_BYTES = 256 * 1024


def tree_owners(root: Root, fallback: OwnerLookup) -> OwnerLookup:
    """Owners looked up below root/proc/PID/ (status, cmdline, cgroup), for a simulated
    machine whose GPU processes a fixture tree (or this machine) holds; `fallback` (the
    scenario's owners) where root/proc/PID/ is not there."""

    def owner_of(pid: int) -> ProcessOwner | None:
        try:
            status = root.read_text(f"proc/{pid}/status", STATUS_MAX_BYTES)
            cmdline = root.read_text(f"proc/{pid}/cmdline", CMDLINE_MAX_BYTES) or ""
        except RootError:  # a FIFO or device in the tree: not a process the kernel shows
            status = None
        if status is None:
            return fallback(pid)
        command = " ".join(cmdline.split("\x00")).strip() or _status_field(status, "Name")
        real = next(iter((_status_field(status, "Uid") or "").split()), "")
        user = _user_name(root, real) if real.isdigit() else None
        return ProcessOwner(user, command,
                            attribution=read_attribution(root, pid, inputs.decimal(real)))

    return owner_of


def _status_field(status: str, name: str) -> str | None:
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == name:
            return value.strip() or None
    return None


def _user_name(root: Root, uid: str) -> str:
    """The account's name from the tree's /etc/passwd, else this machine's; else the number
    (as ps and psutil show a uid without a name). A tree's unreadable passwd (a FIFO, a
    directory) or a uid only Unicode calls a digit ('²') costs this name, never the GPUs."""
    try:
        passwd = root.read_text("etc/passwd") or ""
    except RootError:
        passwd = ""
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) > 2 and fields[2] == uid and fields[0]:
            return fields[0]
    try:
        return pwd.getpwuid(int(uid[:10])).pw_name
    except (KeyError, OverflowError, ValueError):
        return uid
