"""What Slurm says of a job, from scontrol and sacct as they print it (stand-ins on PATH here;
the real Slurm answers in tests/deploy/test_job_verdicts.py): and a Slurm that hangs, prints
without end or knows nothing costs one line, never the command."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hwinfo.collect.slurm_job import SlurmUnavailable, duration, pairs, slurm_job

# `scontrol -o show job` of Slurm 22.05 (its key=value fields, one line; a name with a space).
SCONTROL = (
    "JobId=4242 JobName=train resnet UserId=maria(1000) GroupId=maria(1000) MCS_label=N/A "
    "Priority=4294901757 Nice=0 Account=physics QOS=normal JobState=RUNNING Reason=None "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "RunTime=01:02:03 TimeLimit=1-00:00:00 TimeMin=N/A SubmitTime=2026-11-27T10:00:00 "
    "Partition=gpu AllocNode:Sid=login1:4242 NodeList=gpu[01-02] BatchHost=gpu01 NumNodes=2 "
    "NumCPUs=16 NumTasks=2 CPUs/Task=8 ReqB:S:C:T=0:0:*:* ReqTRES=cpu=16,mem=64G,node=2,"
    "billing=16,gres/gpu=8 AllocTRES=cpu=16,mem=64G,node=2,billing=16,gres/gpu=8 "
    "Command=/home/maria/run.sh WorkDir=/home/maria TresPerNode=gres:gpu:4\n")


def _tool(directory: Path, name: str, script: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    return tmp_path


def test_the_controller_s_record(path: Path) -> None:
    (path / "line").write_text(SCONTROL)
    _tool(path, "scontrol", f'cat "{path / "line"}"\n')
    job = slurm_job("4242")
    assert (job.name, job.user, job.account, job.partition, job.state) == (
        "train resnet", "maria", "physics", "gpu", "RUNNING")
    assert (job.elapsed_seconds, job.time_limit_seconds) == (3723.0, 86400.0)
    assert (job.nodes, job.gpus_requested, job.source) == ("gpu[01-02]", 8, "scontrol")


def test_sacct_where_the_controller_has_forgotten_the_job(path: Path) -> None:
    _tool(path, "scontrol", "echo 'slurm_load_jobs error: Invalid job id specified'; exit 1\n")
    _tool(path, "sacct", "echo 'train|maria|physics|gpu|COMPLETED|00:10:00|UNLIMITED|gpu01|"
                         "billing=8,cpu=8,gres/gpu=4,mem=32G,node=1'\n")
    job = slurm_job("4242")
    assert (job.state, job.elapsed_seconds, job.time_limit_seconds, job.gpus_requested,
            job.source) == ("COMPLETED", 600.0, None, 4, "sacct")


def test_neither_answers_in_one_line(path: Path) -> None:
    _tool(path, "scontrol", "echo 'slurm_load_jobs error: Unable to contact slurm controller'; exit 1\n")
    _tool(path, "sacct", "echo 'Slurm accounting storage is disabled'; exit 1\n")
    with pytest.raises(SlurmUnavailable) as caught:
        slurm_job("4242")
    assert str(caught.value) == ("scontrol: slurm_load_jobs error: Unable to contact slurm "
                                 "controller; sacct: Slurm accounting storage is disabled")


def test_a_hung_or_endless_slurm_is_cut_off(path: Path) -> None:
    _tool(path, "scontrol", "exec sleep 60\n")
    _tool(path, "sacct", "exec yes\n")
    with pytest.raises(SlurmUnavailable) as caught:
        slurm_job("4242", timeout=0.5)
    assert str(caught.value) == ("scontrol did not answer within 0.5 s; "
                                 "sacct printed more than 256 KiB")


def test_no_slurm_on_this_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SlurmUnavailable, match="^no scontrol on PATH; no sacct on PATH$"):
        slurm_job("4242")


def test_slurm_s_durations_and_pairs() -> None:
    assert [duration(t) for t in ("1-02:03:04", "02:03:04", "03:04", "UNLIMITED", "INVALID")] == [
        93784.0, 7384.0, 184.0, None, None]
    assert pairs("JobId=1 JobName=a b=c Command=/x y") == {"JobId": "1", "JobName": "a",
                                                          "b": "c", "Command": "/x y"}
