"""`hwinfo sim run --live-processes`: a real placeholder process for each scenario process.

Clients built on psutil (gpustat, nvitop) drop GPU processes whose PIDs do not exist on the
host. Here each visible scenario process gets a sleeping placeholder named after its
command's executable (`python` for "python train.py", as far as the host allows: the rest
of the command line is not reproduced), run as the scenario's user where we are root and
that user exists; the child then runs on a copy of the scenario whose PIDs are the
placeholders'. The placeholders end with the run, and die with `hwinfo sim run` itself
(PR_SET_PDEATHSIG) if it is killed.
"""

from __future__ import annotations

import ctypes
import json
import os
import pwd
import re
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
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]")


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _executable_name(proc: dict[str, Any]) -> str:
    """The name a process table shows: the command's first word's basename."""
    words = str(proc.get("name") or proc.get("command") or "process").split()
    name = _SAFE_NAME.sub("_", os.path.basename(words[0]) if words else "process")
    return name[:15] or "process"  # the kernel keeps 15 characters of a command name


def _user(name: object) -> pwd.struct_passwd | None:
    if not isinstance(name, str) or os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


@contextmanager
def live_processes(scenario: str) -> Iterator[Path]:
    """Start the placeholders; yields the rebound scenario's path; stops them after."""
    doc, _, name = read_document(scenario)
    sleep = shutil.which("sleep")
    if sleep is None:
        raise OSError("no `sleep` command to stand in for the scenario's processes")
    workdir = Path(tempfile.mkdtemp(prefix="hwinfo-live-"))
    workdir.chmod(0o755)  # placeholders of other users run the links in it
    placeholders: dict[int, subprocess.Popen[bytes]] = {}
    unknown_users: set[str] = set()
    try:
        for gpu in doc.get("gpus", []):
            for proc in gpu.get("processes", []):
                if proc.get("visible", True) is False:
                    continue  # not in our PID namespace: clients cannot see it either
                if proc["pid"] not in placeholders:
                    placeholders[proc["pid"]] = _start(workdir, sleep, proc, unknown_users)
                proc["pid"] = placeholders[proc["pid"]].pid
        if unknown_users:
            print(f"hwinfo sim run: placeholder processes of {', '.join(sorted(unknown_users))} "
                  f"run as {pwd.getpwuid(os.geteuid()).pw_name} (no such user here, or not root)",
                  file=sys.stderr)
        # Its file name seeds the GPUs' UUIDs: the copy keeps the scenario's.
        rebound = workdir / f"{name}.json"
        rebound.write_text(json.dumps(doc))
        yield rebound
    finally:
        for placeholder in placeholders.values():
            placeholder.kill()
        for placeholder in placeholders.values():
            placeholder.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def _start(workdir: Path, sleep: str, proc: dict[str, Any],
           unknown_users: set[str]) -> subprocess.Popen[bytes]:
    """A sleeping process whose name (what ps and psutil show) is the command's."""
    name = _executable_name(proc)
    link = workdir / "bin" / name
    if not link.exists():
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(sleep)  # the kernel names a process after the path it was run by
    user = _user(proc.get("user"))
    if user is None and proc.get("user"):
        unknown_users.add(str(proc["user"]))
    return subprocess.Popen(
        [str(link), "infinity"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads yet
        user=None if user is None else user.pw_uid, group=None if user is None else user.pw_gid,
    )
