"""The `hwinfo` command's entry point.

A command handles Ctrl-C itself once it runs (cli/interrupt.py, the daemon's handlers). Before
that, while the command line's modules are imported, Python's own handler would print a
KeyboardInterrupt traceback, or click's "Aborted!" with status 1: this one ends the process
quietly with 130, as a shell reports a command Ctrl-C ended. Nothing is open yet to close.

The CPU times are read here too, before anything else is imported: a fresh `hwinfo report`'s
CPU utilization window (collect/cpu.py) then spans the whole command, imports included.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

from hwinfo.collect import cpu_load


def _quiet_exit(signum: int, _frame: FrameType | None) -> None:
    os._exit(128 + signum)


def main() -> None:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored (nohup, &)
        signal.signal(signal.SIGINT, _quiet_exit)
    cpu_load.note_start()
    # Imported after both: the command line imports everything the command needs.
    from hwinfo.cli import main as command_line

    command_line()
