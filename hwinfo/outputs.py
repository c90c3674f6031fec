"""Files a user names for us to write: replaced atomically, and only when they are plain files.

`hwinfo export --textfile` and `hwinfo sim import -o` write where a person says, often as
root. Writing to a temporary file beside the target and renaming it over the target means a
reader (node_exporter) never sees half a file, but a rename replaces whatever has the name:
/dev/null, a FIFO another program reads, a symlink. So the target must be a regular file or
not exist yet; anything else is refused in one line and left as it was. `-` is standard
output, as for other Unix tools: never a file named `-`.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


STDOUT = "-"


class OutputError(Exception):
    """The file cannot be written as asked; str() is one line naming it."""


def check_target(path: str | os.PathLike[str], what: str) -> None:
    """Refuse, before any work, a target that is not a regular file or in no directory."""
    if os.fspath(path) == STDOUT:
        return
    if not os.fspath(path):
        raise OutputError(f"{what}: an empty path names no file")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"{what}: {exc.strerror}") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise OutputError(f"{what}: is {kind}, not a regular file; refusing to replace it")
    directory = Path(path).parent
    if not directory.is_dir():
        raise OutputError(f"{what}: no directory {directory}")


def write_atomically(path: str | os.PathLike[str], data: bytes, what: str) -> None:
    """Replace a regular file (or create one) with `data`, so readers see old or new, never half."""
    check_target(path, what)
    target = Path(path)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"{what}: cannot write in {target.parent}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        # rename() replaces a name, never follows it: had the target become a symlink since
        # check_target, the link is replaced, not the file it points to.
        os.replace(temporary, target)
    except BaseException as exc:  # Ctrl-C too: no half-written temporary file is left behind
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"{what}: cannot write: {exc.strerror}") from None
        raise


def write_output(path: str | os.PathLike[str], data: bytes, what: str) -> bool:
    """`data` to standard output for `-`, else atomically to the file; whether it was a file.

    A failed write to standard output is the command line's to report (cli/stdout.py).
    """
    if os.fspath(path) == STDOUT:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return False
    write_atomically(path, data, what)
    return True
