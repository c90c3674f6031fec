"""`hwinfo usage` and `hwinfo fleet`: the ledger's questions, answered from Prometheus."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from hwinfo.cli.options import Command, Parsed, Seconds, duration, size, use_color

F = TypeVar("F", bound=Callable[..., Any])


def _prometheus_options(fn: F) -> F:
    for option in reversed((
        click.option("--prometheus", "url", metavar="URL",
                     help="Prometheus (or Thanos, Mimir, VictoriaMetrics) query API: "
                          "http[s]://host:port[/prefix]. Else $HWINFO_PROMETHEUS, else the "
                          "url of ~/.config/hwinfo/ledger.yml or /etc/hwinfo/ledger.yml, "
                          "which also hold a CA file and basic auth (docs/ledger-commands.md)."),
        click.option("--ca-file", metavar="FILE",
                     help="CA certificate to trust for an https URL (before ledger.yml's)."),
        click.option("--timeout", type=Seconds(0.1, 600), default=30.0, show_default=True,
                     help="Seconds the whole command may take: asking Prometheus, "
                          "reading its answers and writing the report."),
        click.option("--no-color", is_flag=True, help="No colour in text output."),
    )):
        fn = option(fn)
    return fn


def _fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def _within(timeout: float, work: Callable[[], str]) -> str:
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
    from hwinfo.ledger import config
    from hwinfo.ledger.prometheus import LedgerError, Prometheus

    try:
        return Prometheus(config.resolve(url, ca_file), timeout)
    except config.NoEngine as exc:
        raise click.UsageError(str(exc)) from None
    except (config.ConfigError, LedgerError) as exc:
        _fail(str(exc))


@click.command(cls=Command)
@_prometheus_options
@click.option("--since", "since", type=Parsed("duration", duration), default="7d",
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
    """Who held which GPUs, busy or idle, over a range, with energy and cost."""
    from hwinfo import inputs
    from hwinfo.ledger import render
    from hwinfo.ledger import usage as ledger_usage
    from hwinfo.ledger.prices import load_prices
    from hwinfo.ledger.prometheus import LedgerError
    from hwinfo.ledger.units import unix_time
    from hwinfo.render.text.style import Style

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
@click.option("--need-memory", type=Parsed("size", size), metavar="SIZE",
              help="Where a job needing this much GPU memory fits now (40GiB, 512MiB), "
                   "instead of every GPU.")
@click.option("--model", type=Parsed("regex", _pattern), metavar="REGEX",
              help="Only GPUs whose model matches (case-insensitive, anywhere in the name).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def fleet(url: str | None, ca_file: str | None, timeout: float, no_color: bool,
          need_memory: int | None, model: re.Pattern[str] | None, fmt: str) -> None:
    """Every host's GPUs now and which are free, or where a job of a given size fits."""
    from hwinfo.ledger import fits as ledger_fits
    from hwinfo.ledger import fleet as ledger_fleet
    from hwinfo.ledger import render
    from hwinfo.ledger.prometheus import LedgerError
    from hwinfo.render.text.style import Style

    prometheus = _connect(url, ca_file, timeout)

    def report() -> str:
        try:
            answer = (ledger_fleet.fleet(prometheus, time.time(), model) if need_memory is None
                      else ledger_fits.fits(prometheus, time.time(), need_memory, model))
        except LedgerError as exc:
            _fail(str(exc))
        if fmt == "json":
            return render.fleet_json(answer)
        return render.fleet_text(answer, need_memory, Style(use_color(no_color)))

    click.echo(_within(timeout, report), nl=False)
