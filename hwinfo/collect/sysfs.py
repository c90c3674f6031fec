"""Reads procfs and sysfs files below a configurable root, so collectors run on fixture trees."""

from __future__ import annotations

import os

from hwinfo import inputs

# A sysfs attribute holds at most a page: 4 KiB, or 64 KiB on kernels built with 64 KiB pages.
ATTRIBUTE_LIMIT_BYTES = 64 * 1024


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

    def attribute_bytes(self, rel: str) -> bytes | None:
        """A sysfs attribute's bytes; None when it cannot be read. One that no sysfs holds (a
        FIFO or a device below --root, more than a page) is None too: it costs that fact only."""
        path = self.file(rel)
        try:
            return inputs.read_bytes(path, path, ATTRIBUTE_LIMIT_BYTES)
        except inputs.InputError:
            return None

    def attribute(self, rel: str) -> str | None:
        """A sysfs attribute's stripped text, None when unreadable or empty; bytes that are
        not UTF-8 are kept as lone surrogates (escaped by each output, escape.py)."""
        data = self.attribute_bytes(rel)
        if data is None:
            return None
        return data.decode("utf-8", errors="surrogateescape").strip() or None

    def resolve(self, rel: str) -> str | None:
        """Where a path leads once its links are followed, relative to the root
        ("sys/devices/pci0000:00/..."); None when it leads nowhere or out of the root."""
        base = os.path.realpath(self.path)
        real = os.path.realpath(self.file(rel))
        if not os.path.exists(real):  # missing, or a link loop (realpath leaves those as is)
            return None
        inside = os.path.relpath(real, base)
        return None if inside == ".." or inside.startswith("../") else inside

    def link_name(self, rel: str) -> str | None:
        """The last name in a link's target: a device's driver, an interface's master."""
        try:
            target = os.readlink(self.file(rel))
        except OSError:
            return None
        return os.path.basename(target.rstrip("/")) or None

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
