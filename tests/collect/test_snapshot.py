"""The snapshot collector: one source that cannot be read never sinks the others."""

from __future__ import annotations

from pathlib import Path

from hwinfo.collect.snapshot import SnapshotCollector
from hwinfo.collect.sysfs import Root


def test_an_inventory_that_cannot_be_parsed_fails_its_section_only(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal:       1024 kB\nMemFree:  512 kB\n")
    (tmp_path / "proc" / "cpuinfo").write_text("processor\t: 0\n")
    # Read once, when the collectors are built: a NUMA node directory listing it cannot use.
    node = tmp_path / "sys" / "devices" / "system" / "node" / "node0"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("0-\n")
    snapshot = SnapshotCollector(Root(str(tmp_path))).collect()
    assert snapshot.memory is not None and snapshot.memory.total_bytes == 1024 * 1024
    assert all("\n" not in error.message for error in snapshot.errors)
