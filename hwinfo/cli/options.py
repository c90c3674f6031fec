"""Options that several commands share, spelled the same everywhere."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def simulate_option(fn: F) -> F:
    return click.option(
        "--simulate",
        metavar="NAME|FILE",
        help="Read GPUs from the simulated NVML with this scenario (`hwinfo sim list`).",
    )(fn)


def root_option(fn: F) -> F:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=str),
        default="/",
        show_default=True,
        help="Read procfs/sysfs below this directory (a fixture tree or a chroot).",
    )(fn)


def use_color(no_color: bool) -> bool:
    """Colour only on a terminal, and never with --no-color or NO_COLOR (no-color.org)."""
    return not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()
