"""Who is behind a process beyond its Unix user: a Slurm job, a container, a pod, a unit."""

from __future__ import annotations

from dataclasses import dataclass, field

# What a process's cgroup says it belongs to, most specific first. "none": its cgroup was
# read and names nothing hwinfo knows (never a guess); an attribution not read is None.
KINDS = ("slurm", "pod", "container", "service", "session", "none")
# Jobs, pods and containers a host exports at once (attributed GPU memory, their cgroups'
# resources): eight GPUs shared by eight jobs each, or 56 MIG devices of one job each, fit.
ATTRIBUTED_LIMIT = 64
# Attribution.cgroups' key for the cgroup v2 (unified) hierarchy.
UNIFIED = "unified"


@dataclass
class Attribution:
    kind: str  # one of KINDS
    slurm_job: str | None = None  # the job id in the cgroup path: an array task's own id
    slurm_step: str | None = None  # "0", "batch", "extern", "interactive"
    # "1234_7" (SLURM_ARRAY_JOB_ID _ SLURM_ARRAY_TASK_ID), only where the process's
    # environment is readable to hwinfo (its own user's, or root's daemon)
    slurm_array_task: str | None = None
    container_id: str | None = None  # the full 64-hex id
    container_runtime: str | None = None  # docker, containerd, cri-o, podman; None: not named
    pod_uid: str | None = None
    pod_qos: str | None = None  # guaranteed, burstable, besteffort
    # From the kubelet's log links (/var/log/containers), where the host has them.
    pod_namespace: str | None = None
    pod_name: str | None = None
    container_name: str | None = None
    unit: str | None = None  # "cron.service", "session-3.scope"
    # A container in the subtree systemd delegates to the process's own user (rootless
    # Podman or Docker): that user may name cgroups there as they like, so its id is their
    # own word for it, shown but never charged to or exported as a container.
    rootless: bool = False
    # The job's, pod's or container's own cgroup (a Slurm job's, not its step's) in each
    # hierarchy that has it: a v1 controller's name, or UNIFIED, -> its path from the top
    # of that hierarchy. Where its CPU, memory and I/O are kept (collect/job_resources.py);
    # empty for a unit or none.
    cgroups: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """One short word for a table: slurm:1234.0, docker:5dace3de0735, pod:0125ec2f…"""
        if self.kind == "slurm":
            job = self.slurm_array_task or self.slurm_job or "?"
            return f"slurm:{job}" + (f".{self.slurm_step}" if self.slurm_step else "")
        if self.kind == "pod":
            if self.pod_name:
                return f"pod:{self.pod_namespace}/{self.pod_name}"
            return f"pod:{(self.pod_uid or '?')[:8]}"
        if self.kind == "container":
            named = f"{self.container_runtime or 'container'}:{(self.container_id or '?')[:12]}"
            return named + (" (rootless)" if self.rootless else "")
        if self.kind in ("service", "session"):
            return self.unit or self.kind
        return "-"

    @property
    def known(self) -> bool:
        """A job, pod or container: a unit of its own that time can be charged to (a
        rootless container is its user's, and its user's alone)."""
        return self.kind in ("slurm", "pod", "container") and not self.rootless


def charged_user(user: str | None, attribution: Attribution | None) -> str | None:
    """Whom a process's GPU time is charged to: its Unix user, except root inside a known
    container or pod (Docker's and CRI runtimes' processes run as root), which is charged to
    the container ("docker:5dace3de0735", "pod:<uid>"). A ':' is in no Unix user name, so
    the two never meet."""
    if user != "root" or attribution is None or not attribution.known:
        return user
    if attribution.kind == "container":
        return f"{attribution.container_runtime or 'container'}:{(attribution.container_id or '?')[:12]}"
    if attribution.kind == "pod":
        return f"pod:{attribution.pod_uid}"
    return user
