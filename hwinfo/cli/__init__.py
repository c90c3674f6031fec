"""The `hwinfo` command line: a group whose subcommands are imported only when run.

Each command's module imports what that command needs at its top, so a fresh `hwinfo report`
never pays for importing the daemon, the ledger or the simulator (docs/architecture.md,
"Imports").
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

import hwinfo
from hwinfo.cli import stdout
from hwinfo.cli.interrupt import Interrupted

# command name -> (module, attribute, one-line help shown by `hwinfo --help`)
COMMANDS = {
    "report": ("hwinfo.cli.report", "report", "What is in this machine and what it does now."),
    "check": ("hwinfo.cli.check", "check",
              "Health verdict for cron, Nagios or CI: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."),
    "sim": ("hwinfo.cli.sim", "sim", "The simulated NVML: GPU machines described by scenario files."),
    "serve": ("hwinfo.cli.serve", "serve", "Serve this machine's state as Prometheus metrics."),
    "export": ("hwinfo.cli.serve", "export",
               "Write the metrics once, atomically, for node_exporter's textfile collector."),
    "usage": ("hwinfo.cli.ledger", "usage",
              "Who held which GPUs, busy or idle, over a range, with energy and cost (Prometheus)."),
    "job": ("hwinfo.cli.job", "job",
            "A Slurm job's GPU efficiency: held GPU-hours, busy share, peak memory, advice (Prometheus)."),
    "run": ("hwinfo.cli.run", "run",
            "Run a command on GPUs that fit, in turn with others on this host (claims)."),
    "fleet": ("hwinfo.cli.ledger", "fleet",
              "Every host's GPUs now: which are free, and where a job fits (Prometheus)."),
    "board": ("hwinfo.cli.board", "board",
              "Serve the lab's page: every host's GPUs, who holds them, where a job fits (Prometheus)."),
}


class LazyGroup(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        stdout.guard()
        # Commands (cli/options.py Command) judge their own output with their own exit
        # status; this is for what is written before or without one (--help, --version).
        with stdout.flushed(1):
            return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        # Commands (cli/options.py Command) raise Interrupted on Ctrl-C and SIGTERM.
        try:
            return super().invoke(ctx)
        except Interrupted as exc:
            sys.exit(exc.exit_code)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing the one-line help from the table keeps `hwinfo --help` from importing all.
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in self.list_commands(ctx)])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(hwinfo.__version__, prog_name="hwinfo")
def main() -> None:
    """Hardware inventory and telemetry for NVIDIA GPU servers."""
