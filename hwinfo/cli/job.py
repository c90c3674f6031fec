"""`hwinfo job JOBID`: one Slurm job's GPU efficiency, answered from Prometheus."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from hwinfo.cli.ledger import _connect, _fail, _prometheus_options, _within
from hwinfo.cli.options import Command, Parsed, use_color
from hwinfo.collect.slurm_job import SlurmUnavailable, slurm_job
from hwinfo.ledger import job as ledger_job
from hwinfo.ledger.job_diagnosis import diagnose
from hwinfo.ledger.job_render import job_json, job_text
from hwinfo.ledger.prometheus import LedgerError
from hwinfo.ledger.units import duration_seconds, unix_time
from hwinfo.render.text.style import Style

if TYPE_CHECKING:
    from hwinfo.model.slurm import SlurmJob

# How long each of Slurm's commands (scontrol, then sacct) may take.
SLURM_TIMEOUT = 5.0


@click.command(cls=Command)
@click.argument("jobid", type=Parsed("job id", ledger_job.job_id))
@_prometheus_options
@click.option("--since", "since", type=Parsed("duration", duration_seconds), default="30d",
              show_default=True, help="How far back from --until to look for the job.")
@click.option("--until", "until", default="now", show_default=True,
              help="End of the range: now, Unix seconds, or e.g. 2026-11-01T08:00:00Z (UTC).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--slurm/--no-slurm", "ask_slurm", default=True, show_default=True,
              help="Ask Slurm (scontrol, else sacct) for the job's name, user, limits and GPUs "
                   "requested, where it answers within 5 s.")
def job(jobid: str, url: str | None, ca_file: str | None, timeout: float, no_color: bool, since: float,
        until: str, fmt: str, ask_slurm: bool) -> None:
    """A Slurm job's GPUs and why it does not draw them: held GPU-hours, busy share, peak
    memory, its own CPU efficiency, host memory and I/O, a verdict, and Slurm's record."""
    try:
        end = unix_time(until, time.time())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--until'") from None
    prometheus = _connect(url, ca_file, timeout)

    def report() -> str:
        try:
            found = ledger_job.job(prometheus, jobid, end - since, end)
            diagnosis = diagnose(prometheus, found)
        except LedgerError as exc:
            _fail(str(exc))
        diagnosis.slurm, diagnosis.slurm_note = _slurm(jobid, ask_slurm)
        if fmt == "json":
            return job_json(found, diagnosis)
        return job_text(found, Style(use_color(no_color)), diagnosis)

    click.echo(_within(timeout, report), nl=False)


def _slurm(jobid: str, ask: bool) -> tuple[SlurmJob | None, str | None]:
    """What Slurm says of the job, or why it says nothing."""
    if not ask:
        return None, "not asked (--no-slurm)"
    try:
        return slurm_job(jobid, SLURM_TIMEOUT), None
    except SlurmUnavailable as exc:
        return None, f"cannot be asked here: {exc}"
