"""`hwinfo board`: the lab's page, served from the ledger's engine."""

from __future__ import annotations

import logging
import sys

import click

import hwinfo
from hwinfo.cli.ledger import _connect, _engine_options
from hwinfo.cli.listen import listen_options, load_web_config
from hwinfo.cli.options import Command, Seconds
from hwinfo.exporter.http import Server, ServerError
from hwinfo.exporter.signals import serve_until_stopped
from hwinfo.ledger.board_server import BoardPage, routes
from hwinfo.logs import get_logger

# Beside `hwinfo serve`'s 9110. A page for people, not an exporter: Prometheus's port
# allocations (all of 9100-9999 are taken) do not apply, and --port picks another.
DEFAULT_PORT = 9111


@click.command(cls=Command)
@_engine_options
@listen_options(DEFAULT_PORT)
@click.option("--refresh", type=Seconds(2, 3600), default=10.0, show_default=True,
              help="Seconds between the page's reloads; the engine's answers are reused for "
                   "this long, however many people look.")
@click.option("--timeout", type=Seconds(0.1, 600), default=10.0, show_default=True,
              help="Seconds the engine may take to answer one round of the page's queries.")
@click.option("--title", default="GPU lab", show_default=True, help="The page's heading.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="info", show_default=True)
def board(url: str | None, ca_file: str | None, address: str, port: int,
          web_config_file: str | None, refresh: float, timeout: float, title: str,
          log_level: str) -> None:
    """Serve the lab's page: every host's GPUs, who holds them, where a job fits."""
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    web_config = load_web_config(web_config_file)
    page = BoardPage(_connect(url, ca_file, timeout), title, round(refresh), hwinfo.__version__)
    try:
        server = Server((address, port), routes(page), web_config)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from None
    stopped_by = serve_until_stopped(server, get_logger("hwinfo.board"))
    if stopped_by is not None:  # as a shell reports a command a signal ended: 143, 130
        sys.exit(128 + stopped_by)
