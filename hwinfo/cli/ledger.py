"""`hwinfo usage` and `hwinfo fleet`: the ledger's questions, answered from Prometheus."""

from __future__ import annotations

import random
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from hwinfo import inputs
from hwinfo.cli.options import Command, Parsed, Seconds, use_color
from hwinfo.ledger import config, render
from hwinfo.ledger import fits as ledger_fits
from hwinfo.ledger import fleet as ledger_fleet
from hwinfo.ledger import usage as ledger_usage
from hwinfo.ledger.prices import load_prices
from hwinfo.ledger.prometheus import LedgerError, Prometheus
from hwinfo.ledger.units import duration_seconds, size_bytes, unix_time
from hwinfo.ledger.usage_efficiency import EFFICIENCY_BY, add_efficiency
from hwinfo.render.text.style import Style
from hwinfo.units import duration as format_duration
from hwinfo.units import size as format_size

if TYPE_CHECKING:
    from hwinfo.ledger.fleet import Fleet

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
# Exit status of `fleet --wait` when nothing fit in time: sysexits.h's EX_TEMPFAIL.
NO_FIT_EXIT = 75
# `fleet --wait` looks again this much sooner or later than --poll says, at random, so that
# waiters started together (a script's loop) do not ask the engine in step.
POLL_JITTER = 0.2


def _engine_options(fn: F) -> F:
    """--prometheus and --ca-file: where the engine is (ledger/config.py)."""
    for option in reversed((
        click.option("--prometheus", "url", metavar="URL",
                     help="Prometheus (or Thanos, Mimir, VictoriaMetrics) query API: "
                          "http[s]://host:port[/prefix]. Else $HWINFO_PROMETHEUS, else the "
                          "url of ~/.config/hwinfo/ledger.yml or /etc/hwinfo/ledger.yml, "
                          "which also hold a CA file and basic auth (docs/ledger-commands.md)."),
        click.option("--ca-file", metavar="FILE",
                     help="CA certificate to trust for an https URL (before ledger.yml's)."),
    )):
        fn = option(fn)
    return fn


def _prometheus_options(fn: F) -> F:
    for option in reversed((
        _engine_options,
        click.option("--timeout", type=Seconds(0.1, 600), default=30.0, show_default=True,
                     help="Seconds the whole command may take: asking Prometheus, "
                          "reading its answers and writing the report."),
        click.option("--no-color", is_flag=True, help="No colour in text output."),
    )):
        fn = option(fn)
    return fn


def _fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def _within(timeout: float, work: Callable[[], T]) -> T:
    """What `work` returns, or a one-line failure once `timeout` s have passed: a hostile
    Prometheus's answer can cost time after it arrived (parsing, the advice), not only on
    the way. The thread is left behind: the command ends, and the process with it."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # noqa: BLE001 - raised again below, in the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=run, name="hwinfo-ledger", daemon=True)
    thread.start()
    thread.join(timeout)  # interruptible: Ctrl-C ends the wait at once
    if not outcome:
        _fail(f"no complete answer within {timeout:g} s (--timeout)")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _connect(url: str | None, ca_file: str | None, timeout: float) -> Any:
    """Prometheus where the options, the environment or ledger.yml say (ledger/config.py)."""
    try:
        return Prometheus(config.resolve(url, ca_file), timeout)
    except config.NoEngine as exc:
        raise click.UsageError(str(exc)) from None
    except (config.ConfigError, LedgerError) as exc:
        _fail(str(exc))


@click.command(cls=Command)
@_prometheus_options
@click.option("--since", "since", type=Parsed("duration", duration_seconds), default="7d",
              show_default=True, help="How far back from --until: 30s, 12h, 7d, 1h30m.")
@click.option("--until", "until", default="now", show_default=True,
              help="End of the range: now, Unix seconds, or e.g. 2026-11-01T08:00:00Z (UTC).")
@click.option("--by", type=click.Choice(["user", "host", "model", "job", "pod", "container"]),
              default="user", show_default=True,
              help="One row per user, host, GPU model, Slurm job, Kubernetes pod or container.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text",
              show_default=True)
@click.option("--prices", metavar="FILE", help="YAML of prices per GPU-hour and per kWh: adds a cost.")
@click.option("--advise", is_flag=True,
              help="Which users on whole GPUs a smaller MIG profile would do for, and what it frees.")
def usage(url: str | None, ca_file: str | None, timeout: float, no_color: bool, since: float,
          until: str, by: str, fmt: str, prices: str | None, advise: bool) -> None:
    """Who held which GPUs, busy or idle, over a range, with energy and cost; by job or user,
    their jobs' CPU efficiency and why their GPUs are (not) drawn."""
    try:
        end = unix_time(until, time.time())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--until'") from None
    try:
        price_list = None if prices is None else load_prices(prices)
    except inputs.InputError as exc:
        _fail(f"--prices {exc}")
    prometheus = _connect(url, ca_file, timeout)

    def report() -> str:
        try:
            ledger = ledger_usage.usage(prometheus, end - since, end, by, price_list, advise)
            if by in EFFICIENCY_BY:
                add_efficiency(prometheus, ledger)
        except ledger_usage.WindowError as exc:
            raise click.BadParameter(str(exc), param_hint="'--since'/'--until'") from None
        except LedgerError as exc:
            _fail(str(exc))
        currency = None if price_list is None else price_list.currency
        if fmt == "json":
            return render.usage_json(ledger, currency)
        if fmt == "csv":
            return render.usage_csv(ledger, currency)
        return render.usage_text(ledger, currency, Style(use_color(no_color)))

    click.echo(_within(timeout, report), nl=False)


def _pattern(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"{text!r} is not a regular expression: {exc}") from None


@click.command(cls=Command)
@_prometheus_options
@click.option("--need-memory", type=Parsed("size", size_bytes), metavar="SIZE",
              help="Where a job needing this much GPU memory fits now (40GiB, 512MiB), "
                   "instead of every GPU.")
@click.option("--model", type=Parsed("regex", _pattern), metavar="REGEX",
              help="Only GPUs whose model matches (case-insensitive, anywhere in the name).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--wait", "fits_wait", type=Parsed("duration", duration_seconds), metavar="DURATION",
              help="With --need-memory: until a place fits, at most this long (30m, 2h); "
                   "exit status 75 when none did.")
@click.option("--poll", type=Seconds(1, 3600), default=15.0, show_default=True,
              help="With --wait: seconds between looks, each 20% sooner or later at random "
                   "(15 s: Prometheus's usual scrape interval, so each look can see news).")
def fleet(url: str | None, ca_file: str | None, timeout: float, no_color: bool,
          need_memory: int | None, model: re.Pattern[str] | None, fmt: str,
          fits_wait: float | None, poll: float) -> None:
    """Every host's GPUs now and which are free, or where a job of a given size fits.

    With --wait, --timeout bounds each look, and Ctrl-C ends the wait at once.
    """
    prometheus = _connect(url, ca_file, timeout)

    def look() -> Fleet:
        try:
            return (ledger_fleet.fleet(prometheus, time.time(), model) if need_memory is None
                    else ledger_fits.fits(prometheus, time.time(), need_memory, model))
        except LedgerError as exc:
            _fail(str(exc))

    give_up = time.monotonic() + (fits_wait or 0.0)
    answer = _within(timeout, look)
    while fits_wait and not answer.fits:
        left = give_up - time.monotonic()
        if left <= 0:
            assert need_memory is not None  # --wait requires it (options.py)
            click.echo(f"hwinfo fleet: nothing fit {format_size(need_memory)} within "
                       f"{format_duration(fits_wait)} (--wait)", err=True)
            sys.exit(NO_FIT_EXIT)
        time.sleep(min(left, poll * random.uniform(1 - POLL_JITTER, 1 + POLL_JITTER)))
        answer = _within(timeout, look)
    if fmt == "json":
        click.echo(render.fleet_json(answer), nl=False)
    else:
        click.echo(render.fleet_text(answer, need_memory, Style(use_color(no_color))), nl=False)
