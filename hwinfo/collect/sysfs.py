"""Reads procfs and sysfs files below a configurable root, so collectors run on fixture trees."""

from __future__ import annotations

import os

from hwinfo import inputs


class RootError(Exception):
    """The procfs/sysfs root cannot be used: not a directory, or a file in it that no procfs
    or sysfs holds (a FIFO, a device, one of endless size); str() is one line naming it."""


class Root:
    """A machine's filesystem seen from `path`; a missing or unreadable file reads as None.

    Files are read as hostile input (inputs.read_bytes): a --root tree can hold a FIFO that
    would block a read forever or a link to /dev/zero that never ends. Real procfs and sysfs
    files are regular and small, so such a file is refused with RootError, not read.
    """

    def __init__(self, path: str | os.PathLike[str] = "/") -> None:
        # A string, not a pathlib.Path: importing pathlib (and the urllib.parse and ipaddress
        # it imports) would be 3 ms of a fresh report before its CPU window opens (cpu.py).
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            raise RootError(f"procfs root {self.path!r} is not a readable directory")
        if not os.access(self.path, os.R_OK | os.X_OK):
            raise RootError(f"procfs root {self.path!r} is not readable")

    def file(self, rel: str) -> str:
        return os.path.join(self.path, rel.lstrip("/"))

    def read_text(self, rel: str, limit: int = inputs.DEFAULT_LIMIT_BYTES) -> str | None:
        """The file's text (undecodable bytes replaced), None when it cannot be read."""
        path = self.file(rel)
        try:
            # The default limit (16 MiB) is ten times /proc/cpuinfo of a 512-thread machine.
            data = inputs.read_bytes(path, path, limit)
        except inputs.NotReadable:
            return None
        except inputs.InputError as exc:
            raise RootError(str(exc)) from None
        return data.decode("utf-8", errors="replace")

    def read_value(self, rel: str) -> str | None:
        """The stripped content of a one-value file such as /sys/.../size, or None."""
        text = self.read_text(rel)
        if text is None:
            return None
        return text.strip() or None

    def read_int(self, rel: str, base: int = 10) -> int | None:
        value = self.read_value(rel)
        if value is None:
            return None
        try:
            return int(value, base)
        except ValueError:
            return None

    def listdir(self, rel: str) -> list[str]:
        """Sorted names in a directory; empty when it does not exist."""
        try:
            return sorted(os.listdir(self.file(rel)))
        except OSError:
            return []

    def exists(self, rel: str) -> bool:
        return os.path.exists(self.file(rel))


def is_live(root: Root) -> bool:
    """Whether the root is this machine's own filesystem, not a fixture tree or a chroot."""
    return os.path.realpath(root.path) == "/"
