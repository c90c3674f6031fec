"""The snapshot collector: one source that cannot be read never sinks the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwinfo.collect import cpu
from hwinfo.collect.snapshot import SnapshotCollector
from hwinfo.collect.sysfs import Root
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.sources import SourceError


def _collect(tmp_path: Path, meminfo: str) -> Snapshot:
    """A snapshot of a root holding one CPU, no disk or NIC, and the given /proc/meminfo."""
    for empty in ("sys/block", "sys/class/net"):
        (tmp_path / empty).mkdir(parents=True)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text(meminfo)
    (tmp_path / "proc" / "cpuinfo").write_text("processor\t: 0\n")
    return SnapshotCollector(Root(str(tmp_path))).collect()


def _states(snapshot: Snapshot) -> dict[str, str]:
    return {source.source: source.state for source in snapshot.sources}


def test_an_inventory_that_cannot_be_built_fails_its_section_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No kernel file we know of breaks the CPU inventory any more (hostile ones are read as
    # "not available"), so the fault is a bug in one of its readers.
    def broken(*args: object) -> None:
        raise ValueError("unexpected topology")

    monkeypatch.setattr(cpu, "read_topology", broken)
    snapshot = _collect(tmp_path, "MemTotal:       1024 kB\nMemFree:  512 kB\n")
    assert snapshot.cpu is None
    assert snapshot.errors == [SourceError("cpu", "ValueError: unexpected topology")]
    assert _states(snapshot) == {"host": "ok", "memory": "ok", "storage": "ok", "network": "ok",
                                 "gpu": "not_collected", "cpu": "failed"}
    assert snapshot.memory is not None and snapshot.memory.total_bytes == 1024 * 1024


def test_a_source_that_reads_nothing_fails_its_section_only(tmp_path: Path) -> None:
    snapshot = _collect(tmp_path, "not a meminfo line\n\x00\x01\n")
    assert snapshot.memory is None
    assert snapshot.errors == [
        SourceError("memory", f"nothing could be read below {tmp_path}")]
    assert _states(snapshot)["memory"] == "failed" and _states(snapshot)["cpu"] == "ok"
    assert snapshot.cpu is not None and snapshot.cpu.logical_cpus == 1
