"""`hwinfo sim run --live-processes`: a real placeholder process for each scenario process.

Clients built on psutil (gpustat, nvitop) drop GPU processes whose PIDs do not exist on the
host. Here each visible scenario process gets a sleeping placeholder whose command line is
the scenario's (`command`, else the process `name`: what /proc/PID/cmdline, ps and psutil
show; arguments with spaces come back split at them) and whose name is the command's
executable's, run as the scenario's user where we are root and that user exists (elsewhere
as ours: a user cannot start another user's processes); the child then runs on a copy of the
scenario whose PIDs are the placeholders'. The placeholders are forked by one host process
(live_placeholder.py), end with the run, and die with `hwinfo sim run` itself
(PR_SET_PDEATHSIG) if it is killed.
"""

from __future__ import annotations

import ctypes
import json
import ntpath
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hwinfo.sim.scenario import read_document

_PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h)
_COMM_BYTES = 15  # the kernel keeps 15 bytes of a process name
_HOST = Path(__file__).with_name("live_placeholder.py")
# Each placeholder is a forked interpreter of about 0.75 MB of its own (2,000 took 1.5 GB);
# the busiest built-in scenario has 110 processes, a DGX full of MIG jobs a few hundred.
MAX_LIVE_PROCESSES = 256


class TooManyProcesses(OSError):
    """The scenario has more visible processes than placeholders are started for."""


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _argv(proc: dict[str, Any]) -> list[str]:
    """The scenario's command line: `command` split into words, else the whole `name`."""
    command = proc.get("command")
    if isinstance(command, str) and command.split():
        return command.split()
    return [str(proc.get("name") or "process")]


def _executable_name(argv: list[str]) -> str:
    """The name a process table shows: the executable's basename (a Windows path's too)."""
    first = argv[0]
    name = ntpath.basename(first) if "\\" in first else os.path.basename(first)
    return name[:_COMM_BYTES] or "process"


def _user(name: object) -> pwd.struct_passwd | None:
    if not isinstance(name, str) or os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _entry(proc: dict[str, Any]) -> list[Any]:
    """What the host needs to start one placeholder: argv, name, uid, gid."""
    argv = _argv(proc)
    user = _user(proc.get("user"))
    return [argv, _executable_name(argv), None if user is None else user.pw_uid,
            None if user is None else user.pw_gid]


@contextmanager
def live_processes(scenario: str) -> Iterator[Path]:
    """Start the placeholders; yields the rebound scenario's path; stops them after."""
    doc, label, name = read_document(scenario)
    seen: dict[int, list[Any]] = {}
    for gpu in doc.get("gpus", []):
        for proc in gpu.get("processes", []):
            # A process outside our PID namespace: clients cannot see it either.
            if proc.get("visible", True) is not False:
                seen.setdefault(proc["pid"], _entry(proc))
    if len(seen) > MAX_LIVE_PROCESSES:
        raise TooManyProcesses(f"scenario {label} has {len(seen):,} visible processes; --live-processes "
                               f"starts at most {MAX_LIVE_PROCESSES}")
    workdir = Path(tempfile.mkdtemp(prefix="hwinfo-live-"))
    try:
        host = _start_host(list(seen.values()))
        try:
            line = host.stdout.readline() if host.stdout is not None else ""
            try:
                pids = dict(zip(seen, json.loads(line)))
            except ValueError:
                raise OSError("the placeholder host did not start") from None
            for gpu in doc.get("gpus", []):
                for proc in gpu.get("processes", []):
                    proc["pid"] = pids.get(proc["pid"], proc["pid"])
            # Its file name seeds the GPUs' UUIDs: the copy keeps the scenario's.
            rebound = workdir / f"{name}.json"
            rebound.write_text(json.dumps(doc))
            yield rebound
        finally:
            _stop_host(host)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _start_host(entries: list[list[Any]]) -> subprocess.Popen[str]:
    """The host process; its argument area, inherited by the placeholders it forks, is
    padded to hold the longest command line they will show."""
    longest = max((len(" ".join(argv).encode(errors="surrogateescape")) for argv, *_ in entries),
                  default=0)
    host = subprocess.Popen(
        [sys.executable, "-I", str(_HOST), "hwinfo-live-placeholders", "-" * (longest + 2)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads yet
    )
    assert host.stdin is not None
    host.stdin.write(json.dumps(entries) + "\n")
    host.stdin.flush()
    return host


def _stop_host(host: subprocess.Popen[str]) -> None:
    """Close its stdin: it kills and reaps the placeholders, then ends."""
    try:
        if host.stdin is not None:
            host.stdin.close()
        host.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        host.kill()
        host.wait()
