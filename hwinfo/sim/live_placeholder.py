"""The placeholder process host of `hwinfo sim run --live-processes` (live.py), run as a script.

It reads the placeholders to start as one JSON line on stdin: [[argv, comm, uid, gid], ...];
forks one sleeping child per entry, writes their PIDs as one JSON line, and ends them all
when stdin closes. Each child rewrites its own command line (what /proc/PID/cmdline, ps and
psutil show) to the scenario's: its argument area (this script's long argv, inherited on
fork) is overwritten with the command, in the form setproctitle(3) uses, and its name is set
with prctl. Only the standard library is used: this runs in a bare interpreter.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1  # prctl options (linux/prctl.h)
_PR_SET_NAME = 15
_COMM_BYTES = 15  # the kernel keeps 15 bytes of a process name
# Fields 48 and 49 of /proc/PID/stat (Linux 3.5 and later): the argument area's bounds.
_ARG_START_FIELD = 48


def _argument_area() -> tuple[int, int]:
    with open("/proc/self/stat", "rb") as stat:
        # The name in parentheses may hold spaces; fields after it start at field 3.
        fields = stat.read().rsplit(b")", 1)[1].split()
    start = _ARG_START_FIELD - 3
    return int(fields[start]), int(fields[start + 1])


def _retitle(libc: ctypes.CDLL, argv: list[str], comm: str) -> None:
    """Show argv as this process's command line and comm as its name."""
    start, end = _argument_area()
    size = end - start
    # setproctitle's form: the words joined by spaces, a NUL, and a last byte that is not NUL,
    # which tells the kernel to show the area up to the first NUL (a title longer than the
    # area is cut). psutil splits such a title at spaces back into the words.
    # A scenario spells bytes that are not UTF-8 as lone surrogates (\udce9): those bytes.
    title = " ".join(argv).encode(errors="surrogateescape")[: size - 2]
    area = title + b"\0" + b" " * (size - len(title) - 1)
    ctypes.memmove(start, area, size)
    libc.prctl(_PR_SET_NAME, comm.encode(errors="surrogateescape")[:_COMM_BYTES], 0, 0, 0)


def _child(libc: ctypes.CDLL, argv: list[str], comm: str, uid: int | None,
           gid: int | None) -> None:
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the host
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    if gid is not None and uid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    _retitle(libc, argv, comm)
    while True:
        signal.pause()


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    entries = json.loads(sys.stdin.readline())
    children = []
    for argv, comm, uid, gid in entries:
        pid = os.fork()
        if pid == 0:
            try:
                _child(libc, argv, comm, uid, gid)
            finally:
                os._exit(1)
        children.append(pid)
    print(json.dumps(children), flush=True)
    sys.stdin.read()  # until `hwinfo sim run` is done with them (or gone)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    for pid in children:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
