"""Who is behind a process: its cgroup (/proc/PID/cgroup, v1 and v2) read as a Slurm job,
a container, a Kubernetes pod, a systemd service or a login session.

Any user may read another's /proc/PID/cgroup, so this needs no privilege and no script in a
prolog. Only layouts the runtimes document are recognised (tests/fixtures/cgroups.py holds
a real file of each, with its source); any other path is "none", never a guess. The
file is hostile input like any other: a file no kernel writes (too large, too many lines,
a path deeper than any runtime makes) reads as not available, and the process keeps its user.
"""

from __future__ import annotations

import itertools
import os
import re

from hwinfo import inputs
from hwinfo.collect.sysfs import Root
from hwinfo.model.attribution import KINDS, Attribution

# A real file has a line per hierarchy (about 15 on cgroup v1) of a path below PATH_MAX.
_MAX_BYTES = 64 * 1024
_MAX_LINES = 64
_MAX_LINE = 4096 + 64
# Deeper than any layout here (a rootless Podman container in a pod is 7 levels).
_MAX_SEGMENTS = 64
# Environments are bounded by ARG_MAX (2 MiB by default); a job's is far smaller.
_MAX_ENVIRON_BYTES = 2 * 1024 * 1024

_HEX64 = r"[0-9a-f]{64}"
_UUID = r"[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32}"
_SLURM_ROOT = re.compile(r"slurm(?:_[^/]+)?", re.ASCII)  # v1: slurm, slurm_<node>
_SLURM_SCOPE = re.compile(r"(?:[^/]+_)?slurmstepd\.scope", re.ASCII)  # v2
_UID = re.compile(r"uid_\d{1,10}", re.ASCII)
_JOB = re.compile(r"job_(\d{1,12})", re.ASCII)
_STEP = re.compile(r"step_(\d{1,10}(?:\.\d{1,10})?|batch|extern|interactive)", re.ASCII)
# Runtime scopes (systemd driver), their cgroupfs directories, and containerd's v1 form
# "<slice>:cri-containerd:<id>" (a systemd driver path that was not turned into a scope).
_PREFIXED = re.compile(rf"(docker|libpod|cri-containerd|crio)-({_HEX64})(?:\.scope)?", re.ASCII)
_COLON = re.compile(rf".*:(docker|cri-containerd|crio):({_HEX64})", re.ASCII)
_BARE = re.compile(_HEX64, re.ASCII)
_RUNTIME = {"docker": "docker", "libpod": "podman", "cri-containerd": "containerd",
            "crio": "cri-o"}
# Pods: "pod<uid>" (cgroupfs) or "kubepods[-<qos>]-pod<uid, _ for ->.slice" (systemd, with
# kubelet- in front where kubelet runs in its own slice, as kind does).
_POD = re.compile(rf"(?:(?:kubelet-)?kubepods(?:-(burstable|besteffort))?-)?pod({_UUID})"
                  r"(?:\.slice)?(?::.*)?", re.ASCII)
_KUBEPODS = re.compile(r"(?:kubelet-)?kubepods(?:\.slice)?", re.ASCII)
_QOS_SEGMENT = re.compile(r"(?:(?:kubelet-)?kubepods-)?(burstable|besteffort)(?:\.slice)?",
                          re.ASCII)
_SERVICE = re.compile(r"[A-Za-z0-9:_.\\@-]{1,255}\.service", re.ASCII)
_SESSION = re.compile(r"session-[A-Za-z0-9]{1,32}\.scope", re.ASCII)

# The kubelet links each container's log as <pod>_<namespace>_<container>-<id>.log here,
# readable by any user: the one place a pod's name is, without the API server.
_KUBELET_LOGS = "var/log/containers"
_MAX_LOG_LINKS = 10_000
_LOG_LINK = re.compile(rf"([a-z0-9.-]{{1,253}})_([a-z0-9-]{{1,63}})_([a-z0-9-]{{1,63}})-({_HEX64})\.log",
                       re.ASCII)

_NONE = Attribution("none")


def parse(text: str) -> Attribution:
    """The most specific attribution any line of a /proc/PID/cgroup text names (a Slurm job
    beats the slurmd.service a name=systemd line shows; a container beats containerd.service)."""
    best = _NONE
    for line in text.splitlines()[:_MAX_LINES]:
        found = _line(line)
        if KINDS.index(found.kind) < KINDS.index(best.kind):
            best = found
    return best


def _line(line: str) -> Attribution:
    if len(line) > _MAX_LINE or "\x00" in line:
        return _NONE
    parts = line.split(":", 2)  # hierarchy-ID:controllers:path; the path may hold ":"
    if len(parts) != 3 or not parts[2].startswith("/"):
        return _NONE
    segments = [s for s in parts[2].split("/", _MAX_SEGMENTS + 1) if s]
    if len(segments) > _MAX_SEGMENTS:
        return _NONE
    return _slurm(segments) or _pod(segments) or _container(segments) or _unit(segments) or _NONE


def _slurm(segments: list[str]) -> Attribution | None:
    """v1 /slurm[_<node>]/uid_U/job_J/step_S/..., v2 /system.slice/[<node>_]slurmstepd.scope/job_J/step_S/..."""
    for i, segment in enumerate(segments):
        if _SLURM_ROOT.fullmatch(segment) and i + 1 < len(segments) and _UID.fullmatch(segments[i + 1]):
            rest = segments[i + 2:]
        elif _SLURM_SCOPE.fullmatch(segment):
            rest = segments[i + 1:]
        else:
            continue
        job = _JOB.fullmatch(rest[0]) if rest else None
        if job is None:
            return None  # slurmstepd itself, or a cgroup of the plugin's own
        step = _STEP.fullmatch(rest[1]) if len(rest) > 1 else None
        return Attribution("slurm", slurm_job=job.group(1), slurm_step=step and step.group(1))
    return None


def _pod(segments: list[str]) -> Attribution | None:
    for i, segment in enumerate(segments):
        match = _POD.fullmatch(segment)
        if match is None or not _under_kubepods(segments[:i], segment):
            continue
        qos = match.group(1) or _qos(segments[:i])
        container = _container_id(segment) or (
            _container_id(segments[i + 1], bare=True) if i + 1 < len(segments) else None)
        runtime, cid = container or (None, None)
        return Attribution("pod", pod_uid=match.group(2).replace("_", "-"), pod_qos=qos,
                           container_id=cid, container_runtime=runtime)
    return None


def _under_kubepods(parents: list[str], segment: str) -> bool:
    return segment.startswith(("kubepods-", "kubelet-kubepods-")) or any(
        _KUBEPODS.fullmatch(p) for p in parents)


def _qos(parents: list[str]) -> str:
    """Kubelet puts Burstable and BestEffort pods in a cgroup of their class, and Guaranteed
    pods straight under kubepods."""
    for parent in parents:
        match = _QOS_SEGMENT.fullmatch(parent)
        if match:
            return match.group(1)
    return "guaranteed"


def _container(segments: list[str]) -> Attribution | None:
    for i, segment in enumerate(segments):
        after_parent = i > 0 and segments[i - 1] in ("docker", "libpod_parent")
        found = _container_id(segment, bare=after_parent)
        if found is not None:
            runtime, cid = found
            if runtime is None and after_parent:
                runtime = "docker"  # cgroupfs driver: /docker/<id>
            return Attribution("container", container_id=cid, container_runtime=runtime)
    return None


def _container_id(segment: str, bare: bool = False) -> tuple[str | None, str] | None:
    """(runtime, id) of a container's cgroup name; a bare id only where its parent says whose."""
    match = _PREFIXED.fullmatch(segment) or _COLON.fullmatch(segment)
    if match:
        return _RUNTIME[match.group(1)], match.group(2)
    if bare and _BARE.fullmatch(segment):
        return None, segment
    return None


def _unit(segments: list[str]) -> Attribution | None:
    """The innermost service or session scope: a user's own service beats user@UID.service."""
    for segment in reversed(segments):
        if _SERVICE.fullmatch(segment):
            return Attribution("service", unit=segment)
        if _SESSION.fullmatch(segment):
            return Attribution("session", unit=segment)
    return None


def read_attribution(root: Root, pid: int) -> Attribution | None:
    """The attribution of `pid` from root/proc/PID/cgroup; None when it cannot be read (gone,
    another PID namespace, or not a file the kernel would write)."""
    path = root.file(f"proc/{pid}/cgroup")
    try:
        data = inputs.read_bytes(path, path, _MAX_BYTES)
    except inputs.InputError:  # NotReadable (gone, hidepid) too
        return None
    found = parse(data.decode("utf-8", errors="replace"))
    if found.kind == "slurm":
        found.slurm_array_task = _array_task(root, pid, found.slurm_job)
    if found.kind == "pod" and found.container_id:
        _name_pod(root, found)
    return found


def _name_pod(root: Root, found: Attribution) -> None:
    """Pod namespace and name, container name, from the kubelet's log link of the container
    (the first _MAX_LOG_LINKS entries; a local directory, so no sample waits on a runtime)."""
    try:
        with os.scandir(root.file(_KUBELET_LOGS)) as entries:
            for entry in itertools.islice(entries, _MAX_LOG_LINKS):
                match = _LOG_LINK.fullmatch(entry.name)
                if match and match.group(4) == found.container_id:
                    found.pod_name, found.pod_namespace, found.container_name = match.group(1, 2, 3)
                    return
    except OSError:
        return


def _array_task(root: Root, pid: int, job: str | None) -> str | None:
    """`1234_7` from the process's environment where hwinfo may read it (its own processes,
    or all of them as root): the cgroup names an array task by its own job id only."""
    path = root.file(f"proc/{pid}/environ")
    try:
        data = inputs.read_bytes(path, path, _MAX_ENVIRON_BYTES)
    except inputs.InputError:
        return None
    env = dict(item.split(b"=", 1) for item in data.split(b"\x00") if b"=" in item
               and item.startswith(b"SLURM_"))
    array, task = env.get(b"SLURM_ARRAY_JOB_ID", b""), env.get(b"SLURM_ARRAY_TASK_ID", b"")
    if env.get(b"SLURM_JOB_ID", b"").decode("ascii", "replace") != job:
        return None  # not the job the kernel names: an environment inherited from elsewhere
    if array.isdigit() and task.isdigit() and len(array) <= 12 and len(task) <= 10:
        return f"{array.decode()}_{task.decode()}"
    return None
