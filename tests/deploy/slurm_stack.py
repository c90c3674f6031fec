"""A real Slurm on loopback for the attribution tests: Debian's munge, slurmctld and slurmd
(22.05), proctrack/cgroup and one node with a gres GPU entry, all in a temporary directory
and stopped after. The node's GPU is a name only (File=/dev/null): the GPU itself is
simulated, and the job's process becomes a scenario's GPU process by its real PID."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from conftest import require, require_tool

from tests.deploy.prometheus_stack import free_ports, wait_for

_GPU_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/urandom")


@dataclass
class Slurm:
    conf: Path
    log_dir: Path
    # The node's name, its own: a cluster's cgroups are /slurm_<node>/uid_U/job_J on cgroup
    # v1 (<node>_slurmstepd.scope on v2), and every cluster numbers its jobs from 1, so
    # clusters that tests run at once on this host must not share it.
    node: str

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str) -> str:
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, f"{' '.join(args)}: {done.stderr.strip()}\n{self.logs()}"
        return done.stdout

    def logs(self) -> str:
        tails = []
        for log in sorted(self.log_dir.glob("*.log")):
            tails.append(f"--- {log.name} ---\n" + "\n".join(
                log.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(tails)

    def job_cgroup(self, controller: str, job: str) -> Path:
        """A job's cgroup in a v1 controller's hierarchy."""
        return Path("/sys/fs/cgroup", controller, f"slurm_{self.node}", "uid_0", f"job_{job}")

    def job_process(self, job: str, command: str) -> int:
        """The PID of the job's process running `command` (its executable's name), once it runs."""
        def found() -> int | None:
            for line in self.run("scontrol", "listpids", job, self.node).splitlines()[1:]:
                pid = line.split()[0]
                if pid.isdigit() and Path(f"/proc/{pid}/comm").read_text().strip() == command:
                    return int(pid)
            return None

        return wait_for(f"job {job}'s {command}", found, timeout=120)


def _daemon(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _remove_cgroups(node: str) -> None:
    """The empty cgroups the node's slurmd left behind (slurm_<node> in each v1 hierarchy),
    deepest first: with a new node name per cluster, they would pile up run after run."""
    for top in Path("/sys/fs/cgroup").glob(f"*/slurm_{node}"):
        for where, _, _ in sorted(os.walk(top), key=lambda entry: -len(entry[0])):
            try:
                os.rmdir(where)
            except OSError:
                pass  # still in use (a process another test started): the kernel keeps it


@contextmanager
def slurm(workdir: Path, confined: bool = False) -> Iterator[Slurm]:
    """munged, slurmctld and slurmd running, the node idle. `confined`: jobs are confined as
    a GPU cluster confines them (task/cgroup: a cpuset of their CPUs, their memory; and
    jobacct_gather/cgroup, which gives each job its cpuacct cgroup), with four GPU names and
    jobs allowed to share the node's two CPUs (--oversubscribe)."""
    munged, slurmctld, slurmd = (require_tool(t) for t in ("munged", "slurmctld", "slurmd"))
    require(os.geteuid() == 0, "a Slurm node's daemons run as root")
    require(Path("/sys/fs/cgroup").is_dir(), "no cgroup filesystem for proctrack/cgroup")
    for sub in ("munge", "state", "spool", "log"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    (workdir / "munge").chmod(0o700)
    key = workdir / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    socket_path = workdir / "munge" / "munge.sock"
    host = socket.gethostname().split(".")[0]
    gpus = 4 if confined else 1
    node = f"hwinfo-{secrets.token_hex(4)}"
    ctld_port, slurmd_port = free_ports(2)
    conf = workdir / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=hwinfo",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={socket_path}",
        f"StateSaveLocation={workdir / 'state'}",
        f"SlurmdSpoolDir={workdir / 'spool'}",
        f"SlurmctldPidFile={workdir / 'slurmctld.pid'}",
        f"SlurmdPidFile={workdir / 'slurmd.pid'}",
        f"SlurmctldLogFile={workdir / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={workdir / 'log' / 'slurmd.log'}",
        "ProctrackType=proctrack/cgroup",
        f"TaskPlugin={'task/cgroup' if confined else 'task/none'}",
        "GresTypes=gpu",
        "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres",
        "MpiDefault=none",
        "ReturnToService=2",
        "SlurmdParameters=config_overrides",  # two CPUs, whatever the host has
        "DefMemPerCPU=10",  # else a job takes all the node's memory and the next one waits
        f"JobAcctGatherType={'jobacct_gather/cgroup' if confined else 'jobacct_gather/none'}",
        "AccountingStorageType=accounting_storage/none",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs=2 RealMemory=100 Gres=gpu:{gpus} State=UNKNOWN",
        f"PartitionName=gpu Nodes={node} Default=YES MaxTime=INFINITE State=UP"
        + (" OverSubscribe=YES" if confined else ""),
        "",
    ]))
    # A GPU is a name only: each its own character device nothing opens.
    (workdir / "gres.conf").write_text("".join(f"NodeName={node} Name=gpu File={device}\n"
                                               for device in _GPU_FILES[:gpus]))
    (workdir / "cgroup.conf").write_text("CgroupPlugin=autodetect\nIgnoreSystemd=yes\n" + (
        "ConstrainCores=yes\nConstrainRAMSpace=yes\n" if confined else ""))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    stack = Slurm(conf, workdir / "log", node)
    with ExitStack() as running:
        running.callback(_remove_cgroups, node)  # last, once the daemons have stopped
        for args, name in (
            ([munged, "-F", "-f", f"--socket={socket_path}", f"--key-file={key}",
              f"--pid-file={workdir / 'munge' / 'munged.pid'}", f"--seed-file={workdir / 'munge' / 'seed'}",
              f"--log-file={workdir / 'log' / 'munged.log'}"], "munged"),
            ([slurmctld, "-D", "-i"], "slurmctld"),
            ([slurmd, "-D", "-N", node], "slurmd"),
        ):
            proc = _daemon(args, workdir / "log" / f"{name}.out", env)
            running.callback(_stop, proc)
            if name == "munged":
                wait_for("munged's socket", socket_path.exists)
            if name == "slurmctld":
                wait_for("slurmctld", lambda: subprocess.run(
                    ["scontrol", "ping"], env=env, capture_output=True, timeout=10,
                    check=False).returncode == 0)
        try:
            wait_for(f"node {node} idle", lambda: "idle" in stack.run(
                "sinfo", "-h", "-n", node, "-o", "%T"), timeout=120)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{stack.logs()}") from None
        yield stack
