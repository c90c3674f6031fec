"""The kernel's cgroup files as numbers: their documented formats, and what no kernel writes."""

from __future__ import annotations

import pytest

from hwinfo.collect import cgroup_files as files
from hwinfo.model.jobs import MAX_DEVICES
from tests.fixtures.job_cgroups import DISKSTATS


def test_limits_and_quotas() -> None:
    assert files.memory_limit("max\n") == (True, None)
    assert files.memory_limit("68719476736\n") == (True, 64 * 2**30)
    # v1's unlimited is PAGE_COUNTER_MAX pages in bytes: 4 KiB and 64 KiB pages.
    assert files.memory_limit("9223372036854771712\n") == (True, None)
    assert files.memory_limit("9223372036854710272\n") == (True, None)
    assert files.memory_limit("-1\n") == (False, None)
    assert files.cpu_max("max 100000\n") == (True, None)
    assert files.cpu_max("250000 100000\n") == (True, 2.5)
    assert files.cpu_max("250000 0\n") == (False, None)
    assert files.cfs_quota("-1\n", "100000\n") == (True, None)
    assert files.cfs_quota("50000\n", "100000\n") == (True, 0.5)
    assert files.cfs_quota("50000\n", None) == (False, None)


def test_cpusets() -> None:
    assert files.cpuset("0-3,32-33\n") == [0, 1, 2, 3, 32, 33]
    assert files.cpuset("\n") is None  # v2: empty means the parent's
    assert files.cpuset("0-99999999") is None  # past any kernel's NR_CPUS


def test_pressure_as_psi_rst_writes_it() -> None:
    found = files.pressure("some avg10=0.22 avg60=0.17 avg300=1.11 total=58761459\n"
                           "full avg10=0.23 avg60=0.16 avg300=1.08 total=58464525\n")
    assert found is not None and (found.some_seconds, found.full_seconds) == (58.761459, 58.464525)
    # cpu.pressure before 5.13 has no full line.
    older = files.pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n")
    assert older is not None and older.full_seconds is None
    assert files.pressure("garbage\n") is None


def test_blkio_lines_sum_per_device() -> None:
    text = ("8:0 Read 10\n8:0 Write 20\n8:0 Sync 30\n8:0 Total 30\n"
            "8:16 Read 5\n8:16 Write 0\nTotal 35\n")
    assert files.blkio(text) == {"8:0": (10, 20), "8:16": (5, 0)}
    assert files.blkio("") == {}
    assert files.blkio(None) is None


def test_at_most_max_devices_the_lowest_numbers() -> None:
    text = "".join(f"259:{n} rbytes={n} wbytes=0\n" for n in range(100, 0, -1))
    found = files.io_stat(text)
    assert found is not None and list(found) == [f"259:{n}" for n in range(1, MAX_DEVICES + 1)]


def test_diskstats_and_mountinfo() -> None:
    stats = files.diskstats(DISKSTATS + "garbage line\n")
    assert stats["8:0"] == ("sda", (176622 + 583984) * 512, 12.0)
    assert set(stats) == {"8:0", "8:1", "8:16"}
    mounts = files.cgroup_mounts(
        "30 24 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        "31 24 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
        "32 24 0:28 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "33 24 0:29 / /sys/fs/cgroup/my\\040unified rw - cgroup2 cgroup2 rw,nsdelegate\n")
    # A mount of a subtree (a container's own view) is not the hierarchy's top: left out.
    assert mounts == {"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
                      "unified": "/sys/fs/cgroup/my unified"}


@pytest.mark.parametrize("text", ["", "\x00\xff" * 50, "usage_usec 1e9\n", "usage_usec -1\n",
                                  "usage_usec " + "9" * 30 + "\n"])
def test_what_no_kernel_writes_reads_as_nothing(text: str) -> None:
    assert "usage_usec" not in files.keyed(text)
    assert files.one_number(text) is None
