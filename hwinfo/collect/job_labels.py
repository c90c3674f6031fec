"""What names a job or a pod beyond its cgroup: a Slurm array task from the process's
environment, a pod's namespace and name from the kubelet's log links.

Neither decides anything (whom a figure is charged to comes from the cgroup alone, see
cgroup.py), and either can be large: a job's environment is whatever its user gave it, up to
ARG_MAX (2 MiB), and the log directory holds a link per container on the node. So each is
read once per process (its pid and start time), a bounded prefix of the environment and at
most one scan of the directory per sample (none while it is unchanged), and only after NVML's
sample: never inside its deadline, where a user's 2 MiB environment would cost everyone's
GPU series.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable
from typing import NamedTuple

from hwinfo import inputs
from hwinfo.collect.sysfs import Root, RootError
from hwinfo.model.gpu import GpuProcess

# Slurm appends its variables to the environment the job was given: a job's SLURM_* are in
# the first few KiB unless its user exported a huge environment, whose array task is then
# not shown (the job's own id always is).
ENVIRON_PREFIX_BYTES = 64 * 1024
_ENV = {name: re.compile(rb"(?:^|\x00)" + name + rb"=([0-9]{1,10})\x00")
        for name in (b"SLURM_JOB_ID", b"SLURM_ARRAY_JOB_ID", b"SLURM_ARRAY_TASK_ID")}
_CANONICAL = re.compile(rb"0|[1-9][0-9]*")

# The kubelet links each container's log as <pod>_<namespace>_<container>-<id>.log here,
# readable by any user: the one place a pod's name is, without the API server.
_KUBELET_LOGS = "var/log/containers"
MAX_LOG_LINKS = 10_000
_LOG_LINK = re.compile(r"([a-z0-9.-]{1,253})_([a-z0-9-]{1,63})_([a-z0-9-]{1,63})-([0-9a-f]{64})\.log",
                       re.ASCII)
# /proc/PID/stat's 22nd field: when the process started, in clock ticks since boot.
_STAT_BYTES = 4096
_STARTTIME_FIELD = 22


class _PodName(NamedTuple):
    name: str
    namespace: str
    container: str


# One process as the labels know it: pid, start time, and the job or container it is in.
_Key = tuple[int, str | None, str | None, str | None]


class JobLabels:
    """The array tasks and pod names of GPU processes, kept from sample to sample."""

    def __init__(self) -> None:
        self._tasks: dict[_Key, str | None] = {}
        self._pods: dict[_Key, _PodName | None] = {}
        self._links: dict[str, _PodName] = {}  # container id -> names, of the last scan
        self._links_seen: int | None = None  # the directory's mtime at the last scan

    def apply(self, root: Root, processes: Iterable[GpuProcess]) -> None:
        """Fill in the array task of each Slurm process and the names of each pod's, from
        root/proc/PID/environ and root/var/log/containers."""
        tasks: dict[_Key, str | None] = {}
        pods: dict[_Key, _PodName | None] = {}
        for proc in processes:
            who = proc.attribution
            if who is None or not who.known or who.kind not in ("slurm", "pod"):
                continue
            key = (proc.pid, _started(root, proc.pid), who.slurm_job, who.container_id)
            if who.kind == "slurm":
                if key not in tasks:
                    tasks[key] = (self._tasks[key] if key in self._tasks
                                  else array_task(root, proc.pid, who.slurm_job))
                who.slurm_array_task = tasks[key]
            elif who.container_id:
                pods[key] = self._pods.get(key) or self._pod_name(root, who.container_id)
                if pods[key] is not None:
                    who.pod_name, who.pod_namespace, who.container_name = pods[key]
        # Only the processes of this sample are kept: the tables hold what runs now.
        self._tasks, self._pods = tasks, pods

    def _pod_name(self, root: Root, container: str) -> _PodName | None:
        """The names of a container's pod; the directory is scanned again only once it has
        changed (a container started or ended), so a pod without a link costs one stat."""
        if container not in self._links:
            try:
                changed = os.stat(root.file(_KUBELET_LOGS)).st_mtime_ns
            except OSError:
                return None
            if changed != self._links_seen:
                self._links, self._links_seen = scan_log_links(root), changed
        return self._links.get(container)


def _started(root: Root, pid: int) -> str | None:
    """The process's start time (/proc/PID/stat field 22), which tells a reused pid apart."""
    try:
        stat = root.read_text(f"proc/{pid}/stat", _STAT_BYTES) or ""
    except RootError:
        return None
    # The name in parentheses may hold spaces and ")": fields after its last ")" start at 3.
    fields = stat.rpartition(")")[2].split()
    index = _STARTTIME_FIELD - 3
    return fields[index] if len(fields) > index else None


def array_task(root: Root, pid: int, job: str | None) -> str | None:
    """`1234_7` from the first ENVIRON_PREFIX_BYTES of the process's environment where hwinfo
    may read it (its own processes, or all of them as root): the cgroup names an array task by
    its own job id only. The environment is the user's to write, so it only labels: it must
    name the job the kernel names, and an array no later than that job."""
    path = root.file(f"proc/{pid}/environ")
    try:
        head = inputs.read_bytes(path, path, ENVIRON_PREFIX_BYTES, prefix=True)
    except inputs.InputError:
        return None
    found = {name: match.group(1) for name, pattern in _ENV.items()
             if (match := pattern.search(head)) and _CANONICAL.fullmatch(match.group(1))}
    array, task = found.get(b"SLURM_ARRAY_JOB_ID"), found.get(b"SLURM_ARRAY_TASK_ID")
    own = found.get(b"SLURM_JOB_ID")
    if own is None or own.decode() != job or array is None or task is None:
        return None  # not the job the kernel names (an environment inherited from elsewhere)
    # Slurm numbers an array's tasks from the array's own id up.
    if int(array) > int(own):
        return None
    return f"{array.decode()}_{task.decode()}"


def scan_log_links(root: Root) -> dict[str, _PodName]:
    """Container id -> its pod's names, from the first MAX_LOG_LINKS entries of the kubelet's
    log directory (a local directory: no sample waits on a runtime or the API server)."""
    links: dict[str, _PodName] = {}
    try:
        with os.scandir(root.file(_KUBELET_LOGS)) as entries:
            for entry in itertools.islice(entries, MAX_LOG_LINKS):
                match = _LOG_LINK.fullmatch(entry.name)
                if match:
                    links[match.group(4)] = _PodName(*match.group(1, 2, 3))
    except OSError:
        pass
    return links
