import dataclasses
from pathlib import Path

import pytest
from fixtures.lscpu import lscpu_caches, lscpu_summary, summary_cache
from fixtures.machines import MACHINES, CacheSpec, shared_tree, write_tree

from hwinfo.collect.cpu_caches import (
    CacheInstance,
    cache_instances,
    parse_cache_size,
    read_caches,
    summarize_caches,
)
from hwinfo.collect.cpu_info import parse_cpuinfo
from hwinfo.collect.cpu_topology import Topology, online_cpus, read_topology
from hwinfo.collect.sysfs import Root
from hwinfo.model.cpu import Cache

KiB, MiB = 1 << 10, 1 << 20


def _caches(root: Root) -> list[Cache]:
    blocks = parse_cpuinfo(root.read_text("proc/cpuinfo") or "")
    cpus = online_cpus(root, blocks)
    return read_caches(root, cpus, read_topology(root, cpus, blocks))


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("48K", 48 * KiB),
        ("2048K", 2 * MiB),
        ("36M", 36 * MiB),
        ("512", 512),
        ("", None),
        ("xK", None),
    ],
)
def test_parse_cache_size(text: str, size: int | None) -> None:
    assert parse_cache_size(text) == size


def test_two_socket_smt_caches() -> None:
    assert _caches(Root(shared_tree("x86-2s-smt"))) == [
        Cache(1, "data", 48 * KiB, instances=16, shared_by_cpus=2, scope="core"),
        Cache(1, "instruction", 32 * KiB, instances=16, shared_by_cpus=2, scope="core"),
        Cache(2, "unified", 2 * MiB, instances=16, shared_by_cpus=2, scope="core"),
        Cache(3, "unified", 23040 * KiB, instances=2, shared_by_cpus=16, scope="socket"),
    ]


def test_lscpu_style_totals() -> None:
    caches = _caches(Root(shared_tree("x86-2s-smt")))
    assert [(c.name, c.total_bytes) for c in caches] == [
        ("L1d", 768 * KiB),
        ("L1i", 512 * KiB),
        ("L2", 32 * MiB),
        ("L3", 45 * MiB),
    ]


def test_arm_caches() -> None:
    assert _caches(Root(shared_tree("arm64-server"))) == [
        Cache(1, "data", 64 * KiB, instances=8, shared_by_cpus=1, scope="core"),
        Cache(1, "instruction", 64 * KiB, instances=8, shared_by_cpus=1, scope="core"),
        Cache(2, "unified", 2 * MiB, instances=8, shared_by_cpus=1, scope="core"),
        Cache(3, "unified", 36 * MiB, instances=1, shared_by_cpus=8, scope="socket"),
    ]


def test_cache_shared_by_some_cores_of_a_socket_is_per_cluster(tmp_path: Path) -> None:
    # Like an AMD CCX: one L3 per group of 4 cores, two groups in the socket.
    machine = dataclasses.replace(
        MACHINES["arm64-server"], caches=(CacheSpec(3, "Unified", "16384K", cores_per_instance=4),)
    )
    assert _caches(Root(write_tree(machine, tmp_path))) == [
        Cache(3, "unified", 16 * MiB, instances=2, shared_by_cpus=4, scope="cluster")
    ]


def test_each_cache_instance_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    root = Root(shared_tree("x86-2s-smt"))
    reads: list[str] = []
    original = Root.read_value

    def counting(self: Root, rel: str) -> str | None:
        reads.append(rel)
        return original(self, rel)

    monkeypatch.setattr(Root, "read_value", counting)
    instances = cache_instances(root, list(range(32)))
    assert len(instances) == 16 * 3 + 2
    assert sum(rel.endswith("/shared_cpu_list") for rel in reads) == len(instances)


def test_instances_that_differ_give_no_single_size() -> None:
    # A hybrid part: P-cores with 2 MiB L2 each, E-cores sharing 4 MiB per module of four.
    topology = Topology(cores=[frozenset({c}) for c in range(6)], packages=[frozenset(range(6))])
    instances = [
        CacheInstance(2, "unified", 2 * MiB, frozenset({0})),
        CacheInstance(2, "unified", 2 * MiB, frozenset({1})),
        CacheInstance(2, "unified", 4 * MiB, frozenset({2, 3, 4, 5})),
    ]
    (l2,) = summarize_caches(instances, topology, list(range(6)))
    assert (l2.size_bytes, l2.instances, l2.shared_by_cpus, l2.scope) == (None, 3, None, None)
    assert l2.total_bytes is None


def test_an_index_without_a_level_is_left_out(tmp_path: Path) -> None:
    root = write_tree(MACHINES["arm64-server"], tmp_path)
    for level_file in root.glob("sys/devices/system/cpu/cpu*/cache/index3/level"):
        level_file.unlink()
    assert [c.name for c in _caches(Root(root))] == ["L1d", "L1i", "L2"]


def test_no_cache_directories(tmp_path: Path) -> None:
    assert _caches(Root(tmp_path)) == []


def test_live_caches_match_lscpu() -> None:
    caches = {c.name: c for c in _caches(Root("/"))}
    reference = lscpu_caches()
    assert sorted(caches) == sorted(entry["name"] for entry in reference)
    for entry in reference:
        cache = caches[entry["name"]]
        assert cache.size_bytes == int(entry["one-size"])
        assert cache.total_bytes == int(entry["all-size"])


def test_live_instances_match_lscpu_summary() -> None:
    summary = lscpu_summary()
    caches = _caches(Root("/"))
    assert caches
    for cache in caches:
        total, instances = summary_cache(summary, cache.name)
        assert cache.instances == instances
        assert cache.total_bytes == pytest.approx(total, rel=0.01)  # lscpu rounds for display
