"""`hwinfo report`: what is in this machine and what it does now."""

from __future__ import annotations

import signal
import sys
import threading

import click

from hwinfo.cli.options import root_option, simulate_option, use_color

# ANSI: cursor home, clear screen; what `watch` does between refreshes.
_CLEAR = "\x1b[H\x1b[2J"
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}



@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Readable text, or JSON for scripts (schema in the README).",
)
@click.option("--no-color", is_flag=True, help="No colour even on a terminal (NO_COLOR works too).")
@click.option("--no-processes", is_flag=True, help="Leave out GPU processes and the user rollup.")
@click.option(
    "--full-command",
    is_flag=True,
    help="Show each GPU process's full command line (it may hold secrets), not just its name.",
)
@click.option("--no-gpu", is_flag=True, help="Do not touch NVML at all.")
@click.option(
    "--watch",
    type=click.FloatRange(min=0.1),
    is_flag=False,
    flag_value=2.0,
    default=None,
    metavar="[SECONDS]",
    help="Refresh in place every SECONDS (default 2) until Ctrl-C, like `watch nvidia-smi`.",
)
@click.option(
    "--from", "from_url", metavar="URL",
    help="Render the snapshot of a remote `hwinfo serve` (http[s]://[user:pass@]host:port).",
)
@click.option("--ca-file", type=click.Path(exists=True, dir_okay=False),
              help="CA certificate to trust for an https --from URL.")
@simulate_option
@root_option
def report(
    fmt: str,
    no_color: bool,
    no_processes: bool,
    full_command: bool,
    no_gpu: bool,
    watch: float | None,
    from_url: str | None,
    ca_file: str | None,
    simulate: str | None,
    root: str,
) -> None:
    """What is in this machine and what it does now."""
    from hwinfo.collect.sources import SetupError, open_source

    try:
        collector = open_source(
            from_url, ca_file, root, simulate, gpus=not no_gpu,
            with_processes=not no_processes, with_commands=full_command,
        )
    except SetupError as exc:
        raise click.ClickException(str(exc)) from None
    # Imported after the collectors start, so the import overlaps the CPU sampling window.
    from hwinfo.render.json import render_json
    from hwinfo.render.text.report import render_text
    from hwinfo.render.text.style import Style

    style = Style(color=use_color(no_color))

    def show() -> None:
        try:
            snapshot = collector.collect()
        except SetupError as exc:  # a remote daemon that stopped answering
            raise click.ClickException(str(exc)) from None
        if fmt == "json":
            # One document per line when watching, so a pipe reads it as JSON Lines.
            output = render_json(snapshot, indent=None if watch else 2) + "\n"
        else:
            text = render_text(snapshot, style, show_processes=not no_processes)
            output = (_CLEAR if watch and sys.stdout.isatty() else "") + text
        # Ctrl-C (or SIGTERM) ends --watch between refreshes, never inside one: a reader of
        # the JSON lines must not get half a document. So the signals wait while we write
        # (a slow reader can hold a write for long), and arrive during the pause.
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            click.echo(output, nl=False)
            sys.stdout.flush()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)

    stop = threading.Event()
    for signum in _STOP_SIGNALS:
        signal.signal(signum, lambda *_: stop.set())
    try:
        show()
        while watch and not stop.wait(watch):
            show()
    finally:
        collector.close()

