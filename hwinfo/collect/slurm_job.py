"""What Slurm says of one job: `scontrol show job` while the controller remembers it (running,
or ended less than MinJobAge ago), else `sacct` where accounting is kept. Never required:
each command runs with a deadline and a bound on what it may print, and where neither
answers, the caller is told why in one line.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import time

from hwinfo.model.slurm import SlurmJob

# A job's record is under a KiB; a controller that prints more is not answering this.
_MAX_OUTPUT = 256 * 1024
# `scontrol -o` writes Key=Value pairs on one line; a value (JobName, Command) may hold spaces.
_PAIR = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9:/_]*)=")
_SACCT_FIELDS = ("JobName", "User", "Account", "Partition", "State", "Elapsed", "Timelimit",
                 "NodeList", "ReqTRES")
_DURATION = re.compile(r"(?:(\d{1,5})-)?(?:(\d{1,2}):)?(\d{1,2}):(\d{1,2})", re.ASCII)
_GPUS = re.compile(r"gres/gpu(?::[^=,]*)?=(\d{1,6})", re.ASCII)
_PER_NODE = re.compile(r"gres[:/]gpu(?::[^:,=]+)?[:=](\d{1,6})", re.ASCII)


class SlurmUnavailable(Exception):
    """Slurm could not be asked, or does not know the job; str() is one line."""


def slurm_job(job_id: str, timeout: float = 5.0) -> SlurmJob:
    """The job as the controller, else the accounting database, describes it."""
    reasons = []
    for ask in (_scontrol, _sacct):
        try:
            found = ask(job_id, timeout)
        except SlurmUnavailable as exc:
            reasons.append(str(exc))
            continue
        if found is not None:
            return found
    raise SlurmUnavailable("; ".join(reasons))


def _scontrol(job_id: str, timeout: float) -> SlurmJob | None:
    text = _run(["scontrol", "-o", "show", "job", job_id], timeout)
    line = next((line for line in text.splitlines() if line.startswith(f"JobId={job_id} ")), None)
    if line is None:
        return None
    fields = pairs(line)
    user = fields.get("UserId", "").split("(")[0] or None
    per_node = _PER_NODE.search(fields.get("TresPerNode", ""))
    nodes = _number(fields.get("NumNodes", "").split("-")[0])
    requested = _GPUS.search(fields.get("ReqTRES", "")) or _GPUS.search(fields.get("TresPerJob", ""))
    gpus = (int(requested.group(1)) if requested else
            int(per_node.group(1)) * (nodes or 1) if per_node else None)
    return SlurmJob(job_id, fields.get("JobName"), user, _text(fields.get("Account")),
                    _text(fields.get("Partition")), _text(fields.get("JobState")),
                    duration(fields.get("RunTime", "")), duration(fields.get("TimeLimit", "")),
                    _text(fields.get("NodeList")), gpus, "scontrol")


def _sacct(job_id: str, timeout: float) -> SlurmJob | None:
    text = _run(["sacct", "-j", job_id, "-X", "-n", "-P", "-o", ",".join(_SACCT_FIELDS)], timeout)
    row = next((line.split("|") for line in text.splitlines()
                if line.count("|") == len(_SACCT_FIELDS) - 1), None)
    if row is None:
        return None
    fields = dict(zip(_SACCT_FIELDS, row))
    requested = _GPUS.search(fields["ReqTRES"])
    return SlurmJob(job_id, _text(fields["JobName"]), _text(fields["User"]),
                    _text(fields["Account"]), _text(fields["Partition"]), _text(fields["State"]),
                    duration(fields["Elapsed"]), duration(fields["Timelimit"]),
                    _text(fields["NodeList"]), int(requested.group(1)) if requested else None,
                    "sacct")


def pairs(line: str) -> dict[str, str]:
    """`scontrol -o`'s Key=Value pairs; a value runs to the next key."""
    found = list(_PAIR.finditer(line))
    return {m.group(1): line[m.end():(found[i + 1].start() if i + 1 < len(found) else None)].strip()
            for i, m in enumerate(found)}


def duration(text: str) -> float | None:
    """Slurm's [D-][HH:]MM:SS; None for UNLIMITED, Partition_Limit, INVALID or anything else."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60.0 + seconds


def _text(value: str | None) -> str | None:
    return value if value and value not in ("(null)", "None") else None


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) < 7 else None


def _run(argv: list[str], timeout: float) -> str:
    """The command's output, at most _MAX_OUTPUT bytes, within `timeout` seconds."""
    program = shutil.which(argv[0])
    if program is None:
        raise SlurmUnavailable(f"no {argv[0]} on PATH")
    deadline = time.monotonic() + timeout
    proc = subprocess.Popen([program, *argv[1:]], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out, size = [], 0
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SlurmUnavailable(f"{argv[0]} did not answer within {timeout:g} s")
            if not select.select([proc.stdout], [], [], left)[0]:
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > _MAX_OUTPUT:
                raise SlurmUnavailable(f"{argv[0]} printed more than {_MAX_OUTPUT // 1024} KiB")
            out.append(chunk)
        code = proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(f"{argv[0]} did not answer within {timeout:g} s") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    text = b"".join(out).decode("utf-8", errors="replace")
    if code != 0:
        first = next((line.strip() for line in text.splitlines() if line.strip()), f"exit {code}")
        raise SlurmUnavailable(f"{argv[0]}: {first[:200]}")
    return text
