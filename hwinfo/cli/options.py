"""Options that several commands share, spelled the same everywhere, and the rules between them.

Exit statuses of every command but `check`: 2 when the command line is wrong in itself (an
unknown option, a value of the wrong type or out of range, NaN or infinity, an empty value,
options that contradict each other); 1 when it is well-formed but what it names cannot be
used (no such file or directory, a file of the wrong kind or content, an unreachable URL,
a port in use, NVML not answering in time) or standard output cannot be written (a full
disk, a reader gone: cli/stdout.py; a reader gone ends `report --watch` with 0). `check`
exits 3 (UNKNOWN) for all of these.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from hwinfo.cli import stdout
from hwinfo.cli.interrupt import raising
from hwinfo.collect.errors import SetupError
from hwinfo.escape import printable

if TYPE_CHECKING:
    from hwinfo.sim import Machine

F = TypeVar("F", bound=Callable[..., Any])

DAY_SECONDS = 86400.0

# Options that make no sense together: with --from the snapshot is the remote daemon's,
# so nothing about the local collection applies.
CONFLICTS: tuple[tuple[str, str], ...] = (
    *(
        ("from_url", local)
        for local in ("simulate", "root", "no_gpu", "full_command", "no_processes", "nvml_timeout",
                      "topology")  # a daemon's snapshot holds no topology
    ),
    # --brief is text for people: one line per GPU, no command lines.
    *(("brief", other) for other in ("fmt", "full_command", "topology")),
    # --no-gpu leaves NVML alone: no scenario to read GPUs from, no NVML call to time.
    *(("no_gpu", other) for other in ("simulate", "nvml_timeout")),
    # Command lines are those of GPU processes, which --no-processes leaves out.
    ("no_processes", "full_command"),
)
# Options that only mean something with another one.
REQUIRES: tuple[tuple[str, str], ...] = (
    ("ca_file", "from_url"),
    # `fleet --wait` waits for a place of a given size.
    ("fits_wait", "need_memory"),
    ("poll", "fits_wait"),
)


class Seconds(click.ParamType):
    """A finite number of seconds within bounds: NaN and infinity are refused."""

    name = "seconds"

    def __init__(self, low: float, high: float = DAY_SECONDS) -> None:
        self.low, self.high = low, high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if not self.low <= number <= self.high:
            self.fail(f"{number:g} is not between {self.low:g} and {self.high:g} seconds", param, ctx)
        return number

    def get_metavar(self, param: click.Parameter, *args: Any, **kwargs: Any) -> str:
        # click 8.2 passes ctx as a keyword; earlier versions pass only param.
        return "SECONDS"


class Parsed(click.ParamType):
    """A value read by a parser that raises ValueError (ledger/units.py), refused in one line."""

    def __init__(self, name: str, parse: Callable[[str], Any]) -> None:
        self.name, self.parse = name, parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        # Checked here, not with the other options' (options.py): what those see is parsed,
        # and an empty pattern parses, matching every model.
        if not value.strip():
            self.fail("needs a value, not an empty string", param, ctx)
        try:
            return self.parse(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _param(ctx: click.Context, name: str) -> click.Parameter:
    return next(p for p in ctx.command.params if p.name == name)


def _label(ctx: click.Context, name: str) -> str:
    """How the user wrote it: --option, or an argument's metavar (SCENARIO)."""
    param = _param(ctx, name)
    if isinstance(param, click.Argument):
        return param.human_readable_name
    return param.opts[0] if param.opts else name


def _empty(param: click.Parameter, value: Any) -> bool:
    """Whether a value given is empty: a blank string, or a blank one among several."""
    if isinstance(value, str):
        return not value.strip()
    if not isinstance(value, tuple):
        return False
    # Arguments handed on verbatim (sim run's COMMAND) may be empty, all but the program.
    items = value[:1] if param.type is click.UNPROCESSED else value
    return any(isinstance(item, str) and not item.strip() for item in items)


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)


def refuse_bad_combinations(ctx: click.Context) -> None:
    """Empty values, contradicting options and options missing their partner: a UsageError."""
    for name, value in ctx.params.items():
        if _given(ctx, name) and _empty(_param(ctx, name), value):
            raise click.UsageError(f"{_label(ctx, name)} needs a value, not an empty string", ctx)
    for first, second in CONFLICTS:
        if _given(ctx, first) and _given(ctx, second):
            raise click.UsageError(
                f"{_label(ctx, first)} cannot be used with {_label(ctx, second)}", ctx)
    for option, needs in REQUIRES:
        if needs in ctx.params and _given(ctx, option) and not _given(ctx, needs):
            raise click.UsageError(f"{_label(ctx, option)} needs {_label(ctx, needs)}", ctx)


class Command(click.Command):
    """A command whose options are checked against each other (refuse_bad_combinations),
    which Ctrl-C and SIGTERM end at once (cli/interrupt.py) while it runs, and which ends
    with `trouble_exit_code` and one line when its standard output cannot be written."""

    trouble_exit_code = 1

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        with stdout.flushed(self.trouble_exit_code):  # --help is output too
            return super().make_context(info_name, args, parent=parent, **extra)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        refuse_bad_combinations(ctx)
        return rest

    def invoke(self, ctx: click.Context) -> Any:
        with stdout.flushed(self.trouble_exit_code), raising():
            try:
                return super().invoke(ctx)
            except click.ClickException as exc:
                # A message may quote a server or a file: it stays one line on a terminal.
                exc.message = printable(exc.message)
                raise


def simulate_option(fn: F) -> F:
    return click.option(
        "--simulate",
        metavar="NAME|FILE",
        help="Read GPUs from the simulated NVML with this scenario (`hwinfo sim list`).",
    )(fn)


def simulated(simulate: str | None) -> Machine | None:
    """The simulated machine --simulate names, installed under pynvml; None without the option.
    SetupError when its scenario cannot be used."""
    if not simulate:
        return None
    # --simulate's own (25 ms): a command on this machine's NVML never imports the simulator.
    from hwinfo import sim

    try:
        return sim.install(sim.load_scenario(simulate))
    except sim.ScenarioError as exc:
        raise SetupError(str(exc)) from None


def root_option(fn: F) -> F:
    # A plain string: whether it is a readable directory is decided when it is read (exit 1).
    return click.option(
        "--root",
        metavar="DIR",
        default="/",
        show_default=True,
        help="Read procfs/sysfs below this directory (a fixture tree or a chroot).",
    )(fn)


def root_given() -> bool:
    """Whether --root was given, even as /: a simulated machine's processes are then looked
    up below it (a fixture tree's, or real processes a scenario names by their PIDs)."""
    source = click.get_current_context().get_parameter_source("root")
    return source not in (None, ParameterSource.DEFAULT)


def nvml_timeout_option(default: float, meaning: str) -> Callable[[F], F]:
    return click.option(
        "--nvml-timeout", type=Seconds(0.1, 3600), default=default, show_default=True,
        help=f"Seconds NVML may take to answer; {meaning}",
    )


def use_color(no_color: bool) -> bool:
    """Colour only on a terminal, and never with --no-color or NO_COLOR (no-color.org)."""
    return not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()
