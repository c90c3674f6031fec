"""Where a server of hwinfo's listens, and with what TLS and basic auth: the options
`hwinfo serve` and `hwinfo board` share."""

from __future__ import annotations

from collections.abc import Callable

import click

from hwinfo.cli.options import F
from hwinfo.exporter.webconfig import WebConfig, WebConfigError
from hwinfo.exporter.webconfig import load_web_config as load


def listen_options(default_port: int) -> Callable[[F], F]:
    """--address, --port (default `default_port`) and --web-config."""

    def add(fn: F) -> F:
        for option in reversed((
            click.option("--address", default="::", show_default=True,
                         help="Address to listen on ('::' is every IPv6 and IPv4 address)."),
            click.option("--port", type=click.IntRange(0, 65535), default=default_port,
                         show_default=True, help="Port to listen on; 0 picks a free one (logged)."),
            click.option("--web-config", "web_config_file", metavar="FILE",
                         help="TLS and basic auth, in the exporter-toolkit web-config.yml format."),
        )):
            fn = option(fn)
        return fn

    return add


def load_web_config(path: str | None) -> WebConfig | None:
    """The --web-config file, or None without one; a ClickException naming what is wrong."""
    if path is None:
        return None
    try:
        return load(path)
    except WebConfigError as exc:
        raise click.ClickException(str(exc)) from None
