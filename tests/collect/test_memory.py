import re
import subprocess
import sys
from pathlib import Path

from fixtures.machines import MACHINES, write_tree

from hwinfo.collect.memory import MemoryCollector, parse_meminfo
from hwinfo.collect.sysfs import Root

MEMINFO = """\
MemTotal:       16384000 kB
MemFree:         1024000 kB
MemAvailable:    8192000 kB
Buffers:          102400 kB
Cached:          4096000 kB
SReclaimable:     204800 kB
SwapTotal:       2097152 kB
SwapFree:        1048576 kB
HugePages_Total:      16
HugePages_Free:        4
HugePages_Rsvd:        1
HugePages_Surp:        0
Hugepagesize:       2048 kB
"""


def _root(tmp_path: Path, pools: dict[int, tuple[int, int]] | None = None) -> Root:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text(MEMINFO)
    for kb, (total, free) in (pools or {}).items():
        pool = tmp_path / "sys/kernel/mm/hugepages" / f"hugepages-{kb}kB"
        pool.mkdir(parents=True)
        (pool / "nr_hugepages").write_text(f"{total}\n")
        (pool / "free_hugepages").write_text(f"{free}\n")
    return Root(tmp_path)


def test_fields_follow_free_definitions(tmp_path: Path) -> None:
    mem = MemoryCollector(_root(tmp_path)).collect()
    assert mem.total_bytes == 16384000 * 1024
    assert mem.used_bytes == (16384000 - 8192000) * 1024
    assert mem.cached_bytes == (4096000 + 204800) * 1024
    assert mem.swap_used_bytes == 1048576 * 1024
    assert mem.swap_free_bytes == 1048576 * 1024


def test_huge_pages_from_meminfo_when_sysfs_absent(tmp_path: Path) -> None:
    (pool,) = MemoryCollector(_root(tmp_path)).collect().huge_pages
    assert (pool.page_size_bytes, pool.total, pool.free, pool.reserved) == (2 << 20, 16, 4, 1)


def test_huge_pages_from_sysfs_one_pool_per_size(tmp_path: Path) -> None:
    pools = MemoryCollector(_root(tmp_path, {2048: (16, 4), 1048576: (2, 2)})).collect().huge_pages
    assert [(p.page_size_bytes, p.total, p.free) for p in pools] == [(2 << 20, 16, 4), (1 << 30, 2, 2)]
    assert pools[0].reserved is None  # that file was not there: unknown, not 0


def test_missing_meminfo_gives_unknowns_not_zeros(tmp_path: Path) -> None:
    mem = MemoryCollector(Root(tmp_path)).collect()
    assert mem.total_bytes is None and mem.used_bytes is None and mem.huge_pages == []


def test_node_meminfo_lines_parse() -> None:
    assert parse_meminfo("Node 1 MemTotal:  100 kB\nNode 1 HugePages_Total:  3\n") == {
        "MemTotal": 102400,
        "HugePages_Total": 3,
    }


def test_live_total_agrees_with_free() -> None:
    out = subprocess.run(["free", "-b"], capture_output=True, text=True, check=True).stdout
    mem_line = next(line for line in out.splitlines() if line.startswith("Mem:"))
    swap_line = next(line for line in out.splitlines() if line.startswith("Swap:"))
    mem = MemoryCollector(Root("/")).collect()
    assert mem.total_bytes == int(mem_line.split()[1])
    assert mem.swap_total_bytes == int(swap_line.split()[1])


def test_a_meminfo_no_kernel_wrote_is_not_available(tmp_path: Path) -> None:
    # MemTotal 0 kB, and more available than there is: figures the file cannot support.
    root = _root(tmp_path)
    (tmp_path / "proc" / "meminfo").write_text(
        MEMINFO.replace("16384000 kB", "0 kB").replace("SwapFree:        1048576",
                                                      "SwapFree:        9048576"))
    mem = MemoryCollector(root).collect()
    assert (mem.total_bytes, mem.used_bytes, mem.swap_used_bytes) == (None, None, None)
    assert mem.available_bytes == 8192000 * 1024


def test_brief_on_a_machine_whose_memtotal_reads_0(tmp_path: Path) -> None:
    """`report --brief --root` on such a tree: the line says not available, no traceback."""
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path)
    meminfo = root / "proc" / "meminfo"
    meminfo.write_text(re.sub(r"MemTotal: +\d+ kB", "MemTotal:       0 kB", meminfo.read_text()))
    run = subprocess.run([sys.executable, "-m", "hwinfo", "report", "--brief", "--no-gpu",
                          "--root", str(root)], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert "Mem   not available" in run.stdout
