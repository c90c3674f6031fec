"""hwinfo's loggers, quiet unless a command sets logging up (`hwinfo serve` does).

With no handler anywhere, Python writes a library's warnings to standard error by itself.
The other commands say everything in their output and exit status, so the package's logger
holds a NullHandler; a configured root logger (serve's) still gets every record, as they
propagate past it. Set up here, by the modules that log, rather than by the command line:
a `hwinfo report` on a machine without a driver then never imports logging (5 ms).
"""

from __future__ import annotations

import logging

logging.getLogger("hwinfo").addHandler(logging.NullHandler())


def get_logger(name: str) -> logging.Logger:
    """The logger `name`, below the package's quiet one."""
    return logging.getLogger(name)
