"""Who is behind a process: its cgroup (/proc/PID/cgroup, v1 and v2) read as a Slurm job,
a container, a Kubernetes pod, a systemd service or a login session.

Any user may read another's /proc/PID/cgroup, so this needs no privilege and no script in a
prolog. But a user may also name cgroups: systemd delegates each user's user@UID.service
subtree to that user, and any scope a user starts with Delegate=yes
(https://systemd.io/CGROUP_DELEGATION/), where they can create a directory of any name and
the kernel writes it into /proc/PID/cgroup. A name alone proves nothing, so a job, pod or
container counts only where its runtime puts it, at the top of the tree or under
system.slice, where only root creates cgroups, and where the process's owner agrees:

- Slurm, cgroup v1 (https://slurm.schedmd.com/cgroups.html): /slurm/uid_U/job_J/step_S/...
  at the root of a controller's hierarchy (/slurm_<node>/ where one host runs several slurmd),
  U being the process's own uid. Slurm creates uid_U and job_J as root (it hands the user
  step_S and below): a user cannot make a job of another user's uid, nor of another id.
- Slurm, cgroup v2 (https://slurm.schedmd.com/cgroup_v2.html):
  /system.slice/[<node>_]slurmstepd.scope/job_J/step_S/{user,slurm}/..., all made by root.
- Kubernetes (the kubelet's cgroup drivers, https://kubernetes.io/docs/concepts/architecture/cgroups/):
  /kubepods.slice/[kubepods-<qos>.slice/]kubepods[-<qos>]-pod<uid>.slice/<runtime>-<id>.scope
  (systemd; kind runs the kubelet in kubelet.slice, whose pods are kubelet-kubepods*),
  /kubepods/[<qos>/]pod<uid>/<id> (cgroupfs), and containerd's v1 form of a systemd path,
  <pod slice>:cri-containerd:<id>, at the top or under system.slice/containerd.service.
- Containers (https://docs.docker.com/engine/containers/runmetrics/,
  https://docs.podman.io/en/latest/markdown/podman-run.1.html, --cgroup-parent):
  /docker/<id> (cgroupfs), /system.slice/{docker,cri-containerd,crio}-<id>.scope (systemd),
  /machine.slice/libpod-<id>.scope and /libpod_parent/libpod-<id> (rootful Podman). In a
  user's own user@U.service (U the process's uid) a libpod- or docker- scope under user.slice
  or machine.slice is a rootless container: shown as the user's, never charged to a
  container (its name is the user's own word); in root's (U = 0) it is root's container.

Job ids are compared as Slurm writes them (job_%u): job_004242 is no job, never job 4242.
On cgroup v1 (and hybrid hosts), where lines disagree, the controllers' lines decide: systemd
hands a user its own named hierarchy (name=systemd) and the unified one, never a controller's
(CGROUP_DELEGATION: "It won't pass ownership of the legacy controller hierarchies"), so only
those a user cannot write name a job, pod or container; the kernel lists every mounted
hierarchy, so a v1 file always has them. Services and sessions only label a process, from any
line. A file that passes none of this is "none" (or a unit): its process is charged to its
Unix user. The file is hostile input like any other: a file no kernel writes (too large, too
many lines, a path deeper than any runtime makes) reads as not available.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from hwinfo import inputs
from hwinfo.collect.sysfs import Root
from hwinfo.model.attribution import KINDS, UNIFIED, Attribution

# A real file has a line per hierarchy (about 15 on cgroup v1) of a path below PATH_MAX.
_MAX_BYTES = 64 * 1024
_MAX_LINES = 64
_MAX_LINE = 4096 + 64
# Deeper than any layout here (a rootless Podman container in a pod is 7 levels).
_MAX_SEGMENTS = 64

_HEX64 = r"[0-9a-f]{64}"
_UUID = r"[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32}"
_ID = r"0|[1-9][0-9]{0,9}"  # an unsigned int as printf's %u writes it (Slurm's ids, uids)
_SLURM_ROOT = re.compile(r"slurm(?:_[^/]+)?", re.ASCII)  # v1: slurm, slurm_<node>
_SLURM_SCOPE = re.compile(r"(?:[^/]+_)?slurmstepd\.scope", re.ASCII)  # v2
_UID = re.compile(rf"uid_({_ID})", re.ASCII)
_JOB = re.compile(r"job_([1-9][0-9]{0,9})", re.ASCII)
# A heterogeneous job's step is "<step>+<component>" (Slurm's log_build_step_id_str).
_STEP = re.compile(rf"step_((?:{_ID})(?:\+(?:{_ID}))?|batch|extern|interactive)", re.ASCII)
# Under a v2 step: the job's processes (user/task_N) and slurmstepd's own (slurm).
_V2_STEP_CHILDREN = ("user", "slurm")

_SCOPE = re.compile(rf"(docker|libpod|cri-containerd|crio)-({_HEX64})(?:\.scope)?", re.ASCII)
_BARE = re.compile(_HEX64, re.ASCII)
_RUNTIME = {"docker": "docker", "libpod": "podman", "cri-containerd": "containerd",
            "crio": "cri-o"}
# Where each runtime's scopes are made: the parent cgroup -> the runtimes that put them there.
_SCOPES_UNDER = {"system.slice": ("docker", "cri-containerd", "crio"), "machine.slice": ("libpod",),
                 "libpod_parent": ("libpod",)}
# A user manager's slices that rootless Podman and Docker place containers in.
_ROOTLESS_UNDER = {"user.slice": ("libpod", "docker"), "machine.slice": ("libpod", "docker")}

_QOS = ("burstable", "besteffort")  # Guaranteed pods sit straight under kubepods
# The kubelet's pod cgroups: "<prefix>[-<qos>]-pod<uid, _ for ->.slice" (systemd), where the
# prefix is kubepods, or kubelet-kubepods with the kubelet in kubelet.slice; "pod<uid>" (cgroupfs).
_POD_SLICE = re.compile(rf"((?:kubelet-)?kubepods)(?:-(burstable|besteffort))?-pod({_UUID})\.slice",
                        re.ASCII)
_POD_DIR = re.compile(rf"pod({_UUID})", re.ASCII)
_KUBEPODS_SYSTEMD = ((("kubepods.slice",), "kubepods"),
                     (("kubelet.slice", "kubelet-kubepods.slice"), "kubelet-kubepods"))
# containerd's v1 form of a systemd path that was not turned into a scope.
_CRI_V1 = re.compile(rf"(?:kubelet-)?kubepods(?:-(burstable|besteffort))?-pod({_UUID})\.slice"
                     rf":(docker|cri-containerd|crio):({_HEX64})", re.ASCII)
_CRI_V1_UNDER = ((), ("system.slice", "containerd.service"))

_SERVICE = re.compile(r"[A-Za-z0-9:_.\\@-]{1,255}\.service", re.ASCII)
_SESSION = re.compile(r"session-[A-Za-z0-9]{1,32}\.scope", re.ASCII)

_NONE = Attribution("none")


class _Line(NamedTuple):
    controller: bool  # a v1 controller's hierarchy: neither systemd's named one nor v2's
    segments: list[str]
    # Where the line's path is: its v1 controllers, or UNIFIED (cgroup v2); none for a named
    # hierarchy, which holds no resource figures.
    hierarchies: tuple[str, ...]


# The place a layout found, before parse() names the hierarchies of its line.
_HERE = ""


def _cgroup(segments: list[str], depth: int) -> dict[str, str]:
    """The cgroup `depth` segments down (the job's, pod's or container's own), as a layout
    found it on one line."""
    return {_HERE: "/" + "/".join(segments[:depth])}


def parse(text: str, uid: int | None = None) -> Attribution:
    """What a /proc/PID/cgroup text says the process belongs to, for a process of real uid
    `uid` (None: not known, and then no layout that needs the owner's word passes)."""
    lines = [line for line in map(_line, text.splitlines()[:_MAX_LINES]) if line is not None]
    deciding = [line for line in lines if line.controller] or lines
    placed = [found for line in deciding if (found := _placed(line.segments, uid))]
    units = [found for line in lines if (found := _unit(line.segments))]
    # Most specific first: a job beats a container beats a unit.
    chosen = min(placed or units or [_NONE], key=lambda found: KINDS.index(found.kind))
    if placed:
        chosen.cgroups = _cgroups(chosen, lines, uid)
    return chosen


def _cgroups(chosen: Attribution, lines: list[_Line], uid: int | None) -> dict[str, str]:
    """Where the chosen job, pod or container has a cgroup of its own, per hierarchy: each
    line that places that same unit at the place its runtime makes it (v1 runtimes make it
    only in the controllers they use; containerd's v1 form sits under containerd.service in
    some). The unified line of a hybrid host counts where it places the same unit too: a user
    can move a process only into a cgroup they may write, never into root's job or scope."""
    found: dict[str, str] = {}
    for line in lines:
        here = _placed(line.segments, uid) if line.hierarchies else None
        if here is not None and _identity(here) == _identity(chosen):
            found.update(dict.fromkeys(line.hierarchies, here.cgroups[_HERE]))
    return found


def _identity(found: Attribution) -> tuple[str | None, ...]:
    return found.kind, found.slurm_job, found.pod_uid, found.container_id, str(found.rootless)


def _line(line: str) -> _Line | None:
    if len(line) > _MAX_LINE or "\x00" in line:
        return None
    parts = line.split(":", 2)  # hierarchy-ID:controllers:path; the path may hold ":"
    if len(parts) != 3 or not parts[2].startswith("/"):
        return None
    segments = [s for s in parts[2].split("/", _MAX_SEGMENTS + 1) if s]
    if len(segments) > _MAX_SEGMENTS:
        return None
    hierarchy, controllers = parts[0], parts[1]
    controller = hierarchy != "0" and controllers != "" and not controllers.startswith("name=")
    if controller:
        hierarchies = tuple(controllers.split(",")[:_MAX_SEGMENTS])
    else:
        hierarchies = (UNIFIED,) if hierarchy == "0" and controllers == "" else ()
    return _Line(controller, segments, hierarchies)


def _placed(segments: list[str], uid: int | None) -> Attribution | None:
    """A job, pod or container at the place its runtime makes it, or None."""
    return _slurm(segments, uid) or _pod(segments) or _container(segments, uid)


def _slurm(segments: list[str], uid: int | None) -> Attribution | None:
    if len(segments) >= 4 and _SLURM_ROOT.fullmatch(segments[0]):
        owner = _UID.fullmatch(segments[1])
        if owner is None or uid is None or int(owner.group(1)) != uid:
            return None  # another uid's job tree: a process root put there, not that job's
    elif not (len(segments) >= 5 and segments[0] == "system.slice"
              and _SLURM_SCOPE.fullmatch(segments[1]) and segments[4] in _V2_STEP_CHILDREN):
        return None
    job, step = _JOB.fullmatch(segments[2]), _STEP.fullmatch(segments[3])
    if job is None or step is None:
        return None
    return Attribution("slurm", slurm_job=job.group(1), slurm_step=step.group(1),
                       cgroups=_cgroup(segments, 3))


def _pod(segments: list[str]) -> Attribution | None:
    return _pod_systemd(segments) or _pod_cgroupfs(segments) or _pod_cri_v1(segments)


def _pod_systemd(segments: list[str]) -> Attribution | None:
    for top, prefix in _KUBEPODS_SYSTEMD:
        if tuple(segments[:len(top)]) != top:
            continue
        rest, qos = segments[len(top):], None
        if rest and rest[0] in (f"{prefix}-{q}.slice" for q in _QOS):
            qos, rest = rest[0][len(prefix) + 1:-len(".slice")], rest[1:]
        match = _POD_SLICE.fullmatch(rest[0]) if rest else None
        if match is None or match.group(1) != prefix or match.group(2) != qos:
            return None  # a pod slice outside its QoS class's slice is none the kubelet made
        scope = _SCOPE.fullmatch(rest[1]) if len(rest) > 1 else None
        depth = len(segments) - len(rest) + (2 if scope else 1)
        return _pod_of(match.group(3), qos, scope and (scope.group(1), scope.group(2)),
                       _cgroup(segments, depth))
    return None


def _pod_cgroupfs(segments: list[str]) -> Attribution | None:
    if segments[:1] != ["kubepods"]:
        return None
    rest, qos = segments[1:], None
    if rest and rest[0] in _QOS:
        qos, rest = rest[0], rest[1:]
    match = _POD_DIR.fullmatch(rest[0]) if rest else None
    if match is None:
        return None
    # The runtime is not in a cgroupfs path: the container is a bare id.
    container = rest[1] if len(rest) > 1 and _BARE.fullmatch(rest[1]) else None
    depth = len(segments) - len(rest) + (2 if container else 1)
    return _pod_of(match.group(1), qos, container and (None, container), _cgroup(segments, depth))


def _pod_cri_v1(segments: list[str]) -> Attribution | None:
    for parents in _CRI_V1_UNDER:
        if len(segments) > len(parents) and tuple(segments[:len(parents)]) == parents:
            match = _CRI_V1.fullmatch(segments[len(parents)])
            if match:
                return _pod_of(match.group(2), match.group(1), (match.group(3), match.group(4)),
                               _cgroup(segments, len(parents) + 1))
    return None


def _pod_of(uid: str, qos: str | None, container: tuple[str | None, str] | None,
            cgroups: dict[str, str]) -> Attribution:
    runtime, cid = container or (None, None)
    return Attribution("pod", pod_uid=uid.replace("_", "-"), pod_qos=qos or "guaranteed",
                       container_id=cid, container_runtime=runtime and _RUNTIME[runtime],
                       cgroups=cgroups)


def _container(segments: list[str], uid: int | None) -> Attribution | None:
    if len(segments) >= 2 and segments[0] == "docker" and _BARE.fullmatch(segments[1]):
        return Attribution("container", container_id=segments[1], container_runtime="docker",
                           cgroups=_cgroup(segments, 2))
    if len(segments) >= 2 and segments[0] in _SCOPES_UNDER:
        return _scope(segments, 1, _SCOPES_UNDER[segments[0]])
    if len(segments) >= 5 and segments[0] == "user.slice" and segments[3] in _ROOTLESS_UNDER:
        owner = re.fullmatch(rf"user-({_ID})\.slice", segments[1], re.ASCII)
        if owner is None or segments[2] != f"user@{owner.group(1)}.service":
            return None
        manager = int(owner.group(1))
        if manager != 0 and manager != uid:
            return None  # in another user's subtree: put there by root, not that user's
        found = _scope(segments, 4, _ROOTLESS_UNDER[segments[3]])
        if found is not None:
            found.rootless = manager != 0  # root's own user manager is root's
        return found
    return None


def _scope(segments: list[str], at: int, runtimes: tuple[str, ...]) -> Attribution | None:
    """The container whose scope is segments[at], made by one of `runtimes`."""
    match = _SCOPE.fullmatch(segments[at])
    if match is None or match.group(1) not in runtimes:
        return None
    return Attribution("container", container_id=match.group(2),
                       container_runtime=_RUNTIME[match.group(1)], cgroups=_cgroup(segments, at + 1))


def _unit(segments: list[str]) -> Attribution | None:
    """The innermost service or session scope: a user's own service beats user@UID.service."""
    for segment in reversed(segments):
        if _SERVICE.fullmatch(segment):
            return Attribution("service", unit=segment)
        if _SESSION.fullmatch(segment):
            return Attribution("session", unit=segment)
    return None


def read_attribution(root: Root, pid: int, uid: int | None) -> Attribution | None:
    """The attribution of `pid`, a process of real uid `uid`, from root/proc/PID/cgroup;
    None when it cannot be read (gone, another PID namespace, or not a file the kernel
    would write)."""
    path = root.file(f"proc/{pid}/cgroup")
    try:
        data = inputs.read_bytes(path, path, _MAX_BYTES)
    except inputs.InputError:  # NotReadable (gone, hidepid) too
        return None
    return parse(data.decode("utf-8", errors="replace"), uid)
