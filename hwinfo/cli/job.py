"""`hwinfo job JOBID`: one Slurm job's GPU efficiency, answered from Prometheus."""

from __future__ import annotations

import time

import click

from hwinfo.cli.ledger import _connect, _fail, _prometheus_options, _within
from hwinfo.cli.options import Command, Parsed, duration, use_color


def _job_id(text: str) -> str:
    from hwinfo.ledger.job import job_id

    return job_id(text)


@click.command(cls=Command)
@click.argument("jobid", type=Parsed("job id", _job_id))
@_prometheus_options
@click.option("--since", "since", type=Parsed("duration", duration), default="30d",
              show_default=True, help="How far back from --until to look for the job.")
@click.option("--until", "until", default="now", show_default=True,
              help="End of the range: now, Unix seconds, or e.g. 2026-11-01T08:00:00Z (UTC).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def job(jobid: str, url: str | None, ca_file: str | None, timeout: float, no_color: bool, since: float,
        until: str, fmt: str) -> None:
    """A Slurm job's GPUs: held GPU-hours, busy share, utilization, peak memory, energy, advice."""
    from hwinfo.ledger import job as ledger_job
    from hwinfo.ledger.job_render import job_json, job_text
    from hwinfo.ledger.prometheus import LedgerError
    from hwinfo.ledger.units import unix_time
    from hwinfo.render.text.style import Style

    try:
        end = unix_time(until, time.time())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--until'") from None
    prometheus = _connect(url, ca_file, timeout)

    def report() -> str:
        try:
            found = ledger_job.job(prometheus, jobid, end - since, end)
        except LedgerError as exc:
            _fail(str(exc))
        return job_json(found) if fmt == "json" else job_text(found, Style(use_color(no_color)))

    click.echo(_within(timeout, report), nl=False)
