"""hwinfo's loggers say nothing on standard error until a command sets logging up."""

from __future__ import annotations

import subprocess
import sys

WARN = "from hwinfo.logs import get_logger; get_logger('hwinfo.nvml').warning('NVML hangs')"


def run(code: str) -> str:
    """Standard error of a fresh interpreter running `code` (the handlers are per process)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stderr


def test_a_warning_is_quiet_without_a_configured_handler() -> None:
    # Python's last-resort handler would print it: report and check say it in their output.
    assert run(WARN) == ""


def test_a_configured_root_logger_gets_every_warning() -> None:
    # What `hwinfo serve` does (cli/serve.py): the records propagate past the NullHandler.
    assert run("import logging; logging.basicConfig(format='%(name)s: %(message)s'); " + WARN
               ) == "hwinfo.nvml: NVML hangs\n"
