import os
import tracemalloc
from pathlib import Path

import pytest

from hwinfo.collect.sysfs import Root, RootError, is_live
from hwinfo.inputs import DEFAULT_LIMIT_BYTES


def test_is_live(tmp_path: Path) -> None:
    assert is_live(Root("/"))
    assert not is_live(Root(tmp_path))


def test_missing_and_malformed_files_read_as_none(tmp_path: Path) -> None:
    (tmp_path / "size").write_text("  \n")
    (tmp_path / "count").write_text("twelve\n")
    root = Root(tmp_path)
    assert root.read_value("size") is None and root.read_int("count") is None
    assert root.read_text("nope") is None and root.listdir("nope") == []


def test_a_fifo_is_refused_at_once_naming_it(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    os.mkfifo(tmp_path / "proc" / "meminfo")  # no writer: a plain open() would wait forever
    with pytest.raises(RootError) as raised:
        Root(tmp_path).read_text("proc/meminfo")
    assert str(raised.value) == f"{tmp_path}/proc/meminfo: not a regular file (a FIFO)"


def test_an_endless_file_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").symlink_to("/dev/zero")
    (tmp_path / "proc" / "cpuinfo").write_bytes(b"")
    os.truncate(tmp_path / "proc" / "cpuinfo", DEFAULT_LIMIT_BYTES + 1)  # sparse: no disk used
    root = Root(tmp_path)
    with pytest.raises(RootError, match=r"/proc/meminfo: not a regular file \(a character device\)"):
        root.read_text("proc/meminfo")
    tracemalloc.start()
    try:
        with pytest.raises(RootError, match=r"/proc/cpuinfo: larger than 16 MiB, the most accepted"):
            root.read_text("proc/cpuinfo")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * DEFAULT_LIMIT_BYTES + (8 << 20)


def test_real_procfs_files_are_read_whole() -> None:
    # procfs says st_size 0: the bound is on bytes read, so a real file is read to its end.
    text = Root("/").read_text("proc/cpuinfo")
    assert text is not None and text.count("processor") == os.cpu_count()
