"""`hwinfo report`: what is in this machine and what it does now."""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import textwrap
import time

import click

from hwinfo.cli.interrupt import Interrupted, held
from hwinfo.cli.options import (
    Command,
    Seconds,
    nvml_timeout_option,
    root_given,
    root_option,
    simulate_option,
    simulated,
    use_color,
)
from hwinfo.cli.stdout import StdoutError, fail, write_fd
from hwinfo.collect.errors import SetupError
from hwinfo.collect.sources import open_source
from hwinfo.model.select import SelectionError, parse_selectors, select_gpus
from hwinfo.render.json import render_json, render_topology_json
from hwinfo.render.text.brief import LINES, render_brief
from hwinfo.render.text.report import fit_screen, render_text
from hwinfo.render.text.style import Style
from hwinfo.render.text.topology import render_topology

# ANSI: cursor home, clear screen; what `watch` does between refreshes.
_CLEAR = "\x1b[H\x1b[2J"
# A stop signal waits this long for a document being written to a reader that does not
# read; after it the command ends anyway (the reader then has half a document at EOF).
_WRITE_GRACE_SECONDS = 0.5
# Writes of at most PIPE_BUF bytes into a pipe that select() calls writable do not block.
_CHUNK = 4096


def _terminal_size() -> tuple[int, int]:
    """The terminal's (rows, columns) now, asked of the terminal itself at every refresh, so a
    resize is followed: LINES and COLUMNS in the environment (what shutil prefers) do not
    follow one."""
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except OSError:
        return 24, 80
    return size.lines or 24, size.columns or 80


def write_whole(text: str) -> None:
    """`text` to standard output, whole: a stop signal that comes meanwhile waits for its end."""
    sys.stdout.flush()
    data = memoryview(text.encode(sys.stdout.encoding or "utf-8", errors="replace"))
    fd = sys.stdout.fileno()
    with held() as signal_came:
        while data:
            if signal_came.waited() > _WRITE_GRACE_SECONDS:
                assert signal_came.signum is not None
                raise Interrupted(signal_came.signum)
            _, writable, _ = select.select([], [fd], [], 0.1)
            if writable:  # a reader gone (`| head`) or a full disk: cli/stdout.py ends it
                data = data[write_fd(fd, data[:_CHUNK]):]


@click.command(cls=Command)
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
@click.option("--brief", is_flag=True,
              help="The whole machine on one screen: host, CPU, memory, a line per GPU, users.")
@click.option("--topology", is_flag=True,
              help="How GPUs, RDMA NICs and NVMe drives connect, in nvidia-smi topo -m's words "
                   "(NV#, PIX, PXB, PHB, NODE, SYS), with CPU and NUMA affinity and GPU P2P.")
@click.option("--gpu", "gpu_selectors", multiple=True, metavar="INDEX|UUID|PCI-BUS-ID",
              help="Only these GPUs (repeatable, or a comma list), as nvidia-smi -i takes them.")
@click.option(
    "--watch",
    type=Seconds(0.1),
    is_flag=False,
    flag_value=2.0,
    default=None,
    metavar="[SECONDS]",
    help="Refresh in place every SECONDS (default 2, at most a day) until Ctrl-C, like "
         "`watch nvidia-smi`.",
)
@click.option(
    "--from", "from_url", metavar="URL",
    help="Render the snapshot of a remote `hwinfo serve` (http[s]://[user:pass@]host:port).",
)
@click.option("--ca-file", metavar="FILE", help="CA certificate to trust for an https --from URL.")
@nvml_timeout_option(10.0, "past it the GPU section says so and the exit status is 1.")
@simulate_option
@root_option
def report(
    fmt: str,
    no_color: bool,
    no_processes: bool,
    full_command: bool,
    no_gpu: bool,
    brief: bool,
    topology: bool,
    gpu_selectors: tuple[str, ...],
    watch: float | None,
    from_url: str | None,
    ca_file: str | None,
    nvml_timeout: float,
    simulate: str | None,
    root: str,
) -> None:
    """What is in this machine and what it does now.

    Exit status 0, or 1 when a source could not be read (the report says which).
    """
    try:
        selectors = parse_selectors(gpu_selectors) if gpu_selectors else None
    except SelectionError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        collector = open_source(
            from_url, ca_file, root, simulated(simulate), gpus=not no_gpu,
            with_processes=not no_processes, with_commands=full_command, nvml_timeout=nvml_timeout,
            processes_below_root=root_given(), topology=topology,
        )
    except SetupError as exc:
        raise click.ClickException(str(exc)) from None
    style = Style(color=use_color(no_color))
    on_screen = bool(watch) and sys.stdout.isatty()

    def show() -> bool:
        """Print one snapshot; whether every source was read."""
        rows, columns = _terminal_size() if on_screen else (LINES, 80)
        try:
            snapshot = collector.collect()
            if selectors is not None:
                snapshot = select_gpus(snapshot, selectors)
        except SetupError as exc:  # a remote daemon that stopped answering
            if not watch:
                raise click.ClickException(str(exc)) from None
            # Watching: say so and keep trying, so a daemon restart does not end the watch.
            said = f"{time.strftime('%H:%M:%S')} {exc}; trying again"
            if not on_screen:  # a log: one line per try
                write_whole(style.warn(said) + "\n")
                return False
            # On screen, broken between words within the width: a line the terminal wraps
            # itself splits words and is cut wherever the terminal is narrower.
            write_whole(_CLEAR + "".join(style.warn(line) + "\n"
                                         for line in textwrap.wrap(said, columns)))
            return False
        except SelectionError as exc:
            raise click.ClickException(str(exc)) from None
        if fmt == "json":
            # One document per line when watching, so a pipe reads it as JSON Lines.
            render = render_topology_json if topology else render_json
            output = render(snapshot, indent=None if watch else 2) + "\n"
        elif topology:
            output = render_topology(snapshot, style)
        elif brief:
            output = render_brief(snapshot, style, rows)
        else:
            output = render_text(snapshot, style, show_processes=not no_processes,
                                 now=time.time(), summary_first=on_screen)
        if on_screen:
            output = _CLEAR + fit_screen(output, rows)
        # Ctrl-C (or SIGTERM) never cuts a document in half: a reader of the JSON lines
        # must not get half of one.
        write_whole(output)
        return not snapshot.errors

    try:
        complete = show()
        while watch:
            time.sleep(watch)  # a stop signal raises out of the pause at once
            show()
    except Interrupted as exc:
        if not watch or exc.signum != signal.SIGINT:
            raise  # SIGTERM (a service manager, kill) ends --watch with 143 too
        return  # Ctrl-C is how --watch ends: 0
    except StdoutError as exc:
        if not watch or exc.errno != errno.EPIPE:
            raise  # one report not read whole, or a full disk: trouble (cli/stdout.py)
        # A reader that has had enough (`--watch | head`) ends a piped watch as Ctrl-C ends
        # one on a terminal: quietly, with 0.
        fail(exc, 0)
    finally:
        collector.close()
    if not complete:
        sys.exit(1)
