"""Files we write for a user: only regular files are replaced, atomically; the rest stay as they were."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hwinfo.outputs import OutputError, check_target, write_atomically


def refused(path: Path | str) -> str:
    with pytest.raises(OutputError) as raised:
        write_atomically(path, b"new\n", f"--textfile {path}")
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_a_regular_file_is_replaced_and_a_new_one_created(tmp_path: Path) -> None:
    old, new = tmp_path / "old.prom", tmp_path / "new.prom"
    old.write_text("old\n")
    os.chmod(old, 0o600)
    write_atomically(old, b"new\n", "x")
    write_atomically(new, b"new\n", "x")
    assert old.read_text() == new.read_text() == "new\n"
    assert stat.S_IMODE(old.stat().st_mode) == 0o644  # node_exporter must be able to read it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.prom", "old.prom"]  # no leftovers


def test_a_fifo_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "hwinfo.prom"
    os.mkfifo(fifo)
    assert "is a FIFO, not a regular file; refusing to replace it" in refused(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_stays_a_symlink_and_its_target_untouched(tmp_path: Path) -> None:
    real, link = tmp_path / "real.prom", tmp_path / "hwinfo.prom"
    real.write_text("kept\n")
    link.symlink_to(real)
    assert "is a symbolic link" in refused(link)
    assert link.is_symlink() and real.read_text() == "kept\n"


def test_a_dangling_symlink_is_not_followed(tmp_path: Path) -> None:
    link = tmp_path / "hwinfo.prom"
    link.symlink_to(tmp_path / "elsewhere.prom")
    assert "is a symbolic link" in refused(link)
    assert not (tmp_path / "elsewhere.prom").exists()


def test_dev_null_is_refused_and_stays_a_device() -> None:
    # check_target only looks; it is what every writer asks first.
    with pytest.raises(OutputError, match="is a character device"):
        check_target("/dev/null", "--textfile /dev/null")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_an_empty_path_is_refused() -> None:
    assert "an empty path names no file" in refused("")


def test_a_directory_and_a_missing_directory(tmp_path: Path) -> None:
    assert "is a directory" in refused(tmp_path)
    assert f"no directory {tmp_path / 'none'}" in refused(tmp_path / "none" / "x.prom")


def test_an_unwritable_directory_is_one_line(tmp_path: Path) -> None:
    # /proc/1 exists and is a directory nobody may create files in, root included.
    assert "cannot write in /proc/1" in refused("/proc/1/hwinfo.prom")
