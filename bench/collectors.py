"""What the storage and network sources cost the sampler: `python bench/collectors.py`.

Medians over 200 samples, in-process, after the first (which reads the inventory: models,
drivers, PCI placement), on three machines: this one (`/`), the fixture GPU node of the tests
(4 disks, md, LVM, 5 filesystems, 5 interfaces, 3 RDMA ports), and that node as a container
host and JBOD: with 200 veth interfaces in a bridge and 60 more SATA disks. A fixture tree's
filesystems are not measured by statfs (not this machine's mounts); this machine's are.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from hwinfo.collect.network import NetworkCollector
from hwinfo.collect.storage import StorageCollector
from hwinfo.collect.sysfs import Root
from tests.fixtures.machines import MACHINES, write_tree
from tests.fixtures.machines_devices import gpu_node

SAMPLES = 200


def crowded(directory: Path) -> Path:
    """The fixture GPU node with 200 veths in a bridge and 60 more SATA disks."""
    root = write_tree(MACHINES["x86-2s-smt"], directory)
    more = gpu_node()
    more.files.clear()
    more.links.clear()
    ahci = more.pci("sys/devices/pci0000:00/0000:00:11.5", 0, None, "ahci")
    for n in range(60):
        more.ata_disk(f"sd{chr(99 + n // 26) if n >= 26 else ''}{chr(97 + n % 26)}x", ahci,
                      3 + n, ("ST4000NM000A-2HZ100", f"WS{n:06d}", "TN03"), f"65:{n * 16}",
                      7814037168)
    bridge = more.netdev("docker0", "sys/devices/virtual/net/docker0", "02:42:00:00:00:01",
                         1500, "up", None, devtype="bridge")
    names = []
    for n in range(200):
        name = f"veth{n:05x}"
        more.netdev(name, f"sys/devices/virtual/net/{name}", f"02:42:00:00:{n // 256:02x}:"
                    f"{n % 256:02x}", 1500, "up", 10000)
        more.link(f"{bridge}/brif/{name}", f"sys/devices/virtual/net/{name}/brport")
        names.append(name)
    more.enslave("docker0", tuple(names))
    more.write(root)
    return root


def per_sample(collect: Callable[[], object]) -> tuple[float, float]:
    """(first sample, median of the next SAMPLES) in milliseconds."""
    start = time.perf_counter()
    collect()
    first = time.perf_counter() - start
    times = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        collect()
        times.append(time.perf_counter() - start)
    return first * 1000, statistics.median(times) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as where:
        machines = {
            "this machine": Path("/"),
            "fixture GPU node": write_tree(MACHINES["x86-2s-smt"], Path(where) / "node"),
            "GPU node, 200 veths, 64 disks": crowded(Path(where) / "crowded"),
        }
        print(f"{'machine':<32}{'source':<10}{'first ms':>10}{'per sample ms':>15}")
        for name, path in machines.items():
            root = Root(path)
            for source, collector in (("storage", StorageCollector(root)),
                                      ("network", NetworkCollector(root))):
                first, median = per_sample(collector.collect)
                print(f"{name:<32}{source:<10}{first:>10.2f}{median:>15.3f}")


if __name__ == "__main__":
    main()
