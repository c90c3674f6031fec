"""Standard output that cannot be written (a reader gone, a full disk) ends a command in one line.

`hwinfo check | true` closes the pipe before check writes; `hwinfo report >/dev/full` has
nowhere to put the report. Every command's output goes through sys.stdout (or its fd), so
the one place that knows a failed write was standard output's is standard output itself:
`guard()` puts it behind a raw stream that raises StdoutError, and the command line's entry
point (cli/__init__.py) turns that into one line on standard error (none for a closed pipe,
as other Unix tools end quietly) and the command's exit status for trouble of its own.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn


class StdoutError(OSError):
    """A write to standard output failed; errno and strerror say why."""


class _Raw(io.FileIO):
    """Standard output's file descriptor, whose failed writes say that they were its own."""

    def write(self, data: bytes) -> int | None:  # type: ignore[override]
        try:
            return super().write(data)
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None


def guard() -> None:
    """Route sys.stdout through _Raw, in a real process (a test's captured stdout is left)."""
    stream = sys.stdout
    if stream is None or stream is not sys.__stdout__ or not isinstance(stream, io.TextIOWrapper):
        return
    try:
        fd = stream.fileno()
        stream.flush()
    except (OSError, ValueError):  # no descriptor (closed, or not a file): nothing to guard
        return
    raw = _Raw(fd, "w", closefd=False)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors,
        line_buffering=stream.line_buffering, write_through=stream.write_through,
    )


def write_fd(fd: int, data: memoryview | bytes) -> int:
    """os.write() to standard output's descriptor, failing as StdoutError like sys.stdout."""
    try:
        return os.write(fd, data)
    except OSError as exc:
        raise StdoutError(exc.errno, exc.strerror) from None


def fail(exc: StdoutError, exit_code: int) -> NoReturn:
    """End with `exit_code`: quietly for a closed pipe, else one line on standard error."""
    # Output still buffered would fail again when the interpreter flushes it at exit, with
    # a traceback-like "Exception ignored" message: send it, and what follows, nowhere.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        os.close(devnull)
    except (OSError, ValueError):
        pass
    if exc.errno != errno.EPIPE:
        try:
            sys.stderr.write(f"Error: standard output: cannot write: {exc.strerror or exc}\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # standard error is gone too: the status says it
            pass
    sys.exit(exit_code)


@contextmanager
def flushed(exit_code: int) -> Iterator[None]:
    """Inside, a failed write to standard output ends the command (fail()); buffered output
    is flushed on leaving, so that a write the buffer held back is judged here too."""
    try:
        try:
            yield
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()
    except StdoutError as exc:
        fail(exc, exit_code)
