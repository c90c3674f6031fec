"""`hwinfo check`: a health verdict for cron, Nagios/Icinga or a CI gate.

Exit status as monitoring plugins give it: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. Anything
that keeps the check from running (a bad option, thresholds file, baseline, scenario or
URL) is UNKNOWN with one line, never a traceback, and never click's usage exit 2, which a
monitoring system would read as CRITICAL.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, NoReturn

import click

from hwinfo.cli import stdout
from hwinfo.cli.interrupt import Interrupted
from hwinfo.cli.options import (
    Command,
    nvml_timeout_option,
    root_option,
    simulate_option,
    simulated,
    use_color,
)
from hwinfo.collect.errors import SetupError
from hwinfo.collect.sources import open_source
from hwinfo.health.drift import BaselineError, load_baseline
from hwinfo.health.evaluate import RULE_NAMES, evaluate
from hwinfo.health.findings import Severity, worst
from hwinfo.health.thresholds import ConfigError, Thresholds, load_thresholds
from hwinfo.render.check import render_error, render_json, render_text
from hwinfo.render.text.style import Style


def _fail(message: str, fmt: str) -> NoReturn:
    click.echo(render_error(message, fmt), nl=False)
    sys.exit(Severity.UNKNOWN.exit_code)


class _CheckCommand(Command):
    """Usage errors, signals, unexpected failures and an unwritable standard output end as
    UNKNOWN instead of exit 2 or 1."""

    trouble_exit_code = 3

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        # The UNKNOWN line _fail writes can find standard output gone too.
        with stdout.flushed(self.trouble_exit_code):
            try:
                return super().make_context(info_name, args, parent=parent, **extra)
            except click.UsageError as exc:
                _fail(f"{exc.format_message().rstrip('.')} (see hwinfo check --help)", "text")

    def invoke(self, ctx: click.Context) -> Any:
        # Likewise for the verdict _fail writes here.
        with stdout.flushed(self.trouble_exit_code):
            try:
                return super().invoke(ctx)
            except (click.exceptions.Exit, click.Abort, click.ClickException, stdout.StdoutError):
                raise
            except Interrupted as exc:  # Ctrl-C, or the monitoring system's timeout
                _fail(str(exc), ctx.params.get("fmt", "text"))
            except Exception as exc:  # noqa: BLE001 - a plugin's exit status must stay in 0..3
                # One line, as for any other trouble: a traceback is no verdict a monitoring
                # system can show.
                _fail(f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}",
                      ctx.params.get("fmt", "text"))


@click.command(cls=_CheckCommand)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="A summary line and one line per finding, or JSON for scripts.",
)
@click.option("--no-color", is_flag=True, help="No colour even on a terminal (NO_COLOR works too).")
@click.option("--config", "config_file", metavar="FILE",
              help="Thresholds file (YAML or JSON); every key has a default.")
@click.option("--expect-gpus", type=click.IntRange(0, 4096), metavar="N",
              help="CRITICAL when fewer than N GPUs are present (overrides expect_gpus).")
@click.option("--baseline", "baseline_file", metavar="FILE",
              help="Report hardware changed since this saved `hwinfo report --format json`.")
@click.option(
    "--from", "from_url", metavar="URL",
    help="Check the snapshot of a remote `hwinfo serve` (http[s]://[user:pass@]host:port).",
)
@click.option("--ca-file", metavar="FILE", help="CA certificate to trust for an https --from URL.")
@nvml_timeout_option(10.0, "past it the check is UNKNOWN.")
@simulate_option
@root_option
def check(
    fmt: str,
    no_color: bool,
    config_file: str | None,
    expect_gpus: int | None,
    baseline_file: str | None,
    from_url: str | None,
    ca_file: str | None,
    nvml_timeout: float,
    simulate: str | None,
    root: str,
) -> None:
    """Health verdict of this machine: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."""
    try:
        limits = load_thresholds(config_file, RULE_NAMES) if config_file else Thresholds()
        baseline = load_baseline(baseline_file) if baseline_file else None
    except (ConfigError, BaselineError) as exc:
        _fail(str(exc), fmt)
    if expect_gpus is not None:
        limits = dataclasses.replace(limits, expect_gpus=expect_gpus)
    try:
        collector = open_source(from_url, ca_file, root, simulated(simulate),
                                nvml_timeout=nvml_timeout)
    except SetupError as exc:
        _fail(str(exc), fmt)
    try:
        snapshot = collector.collect()
    except SetupError as exc:  # a remote daemon that stopped answering
        _fail(str(exc), fmt)
    finally:
        collector.close()
    findings = evaluate(snapshot, limits, baseline, now=time.time())
    if fmt == "json":
        click.echo(render_json(findings, snapshot), nl=False)
    else:
        click.echo(render_text(findings, snapshot, Style(color=use_color(no_color))), nl=False)
    sys.exit(worst(findings).exit_code)
