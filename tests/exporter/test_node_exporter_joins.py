"""docs/metrics.md's queries joining node_exporter's series with hwinfo's storage and network
series, run by Prometheus's own engine (promtool) on what `hwinfo export` writes for the
fixture GPU node and on node_exporter series of the names and labels node_exporter uses."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import require_tool
from fixtures.machines import shared_tree

METRICS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
HOST = 'host="gpu01"'
# Rates of whole powers of two: rate()'s extrapolation then has no rounding to compare.
GIB_PER_SECOND = 1 << 30
# node_exporter's series, as its filesystem, diskstats and infiniband collectors label them.
NODE = [
    {"series": f'node_filesystem_avail_bytes{{{HOST}, job="node", device="/dev/md127", '
               f'mountpoint="/raid", fstype="xfs"}}', "values": "1000000000000x10"},
    {"series": f'node_filesystem_avail_bytes{{{HOST}, job="node", device="/dev/nvme0n1p2", '
               f'mountpoint="/", fstype="ext4"}}', "values": "5000000000x10"},
    {"series": f'node_disk_read_bytes_total{{{HOST}, job="node", device="nvme0n1"}}',
     "values": f"0+{GIB_PER_SECOND * 60}x10"},
    {"series": f'node_disk_read_bytes_total{{{HOST}, job="node", device="sda"}}',
     "values": "0+6000000000x10"},
    {"series": f'node_infiniband_port_data_received_bytes_total{{{HOST}, job="node", '
               f'device="mlx5_0", port="1"}}', "values": f"0+{2 * GIB_PER_SECOND * 60}x10"},
]


def _hwinfo_series() -> list[dict[str, str]]:
    """The exporter's series for the fixture node, as promtool input (one host label added)."""
    done = subprocess.run([sys.executable, "-m", "hwinfo", "export", "--no-collector", "gpu", "--root",
                           str(shared_tree("x86-2s-smt")), "--textfile", "-"],
                          capture_output=True, text=True, timeout=120, check=True)
    found = []
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"(hwinfo_(?:disk|filesystem|rdma_port)_info)\{(.*)\} 1\.0", line)
        if match:
            found.append({"series": f'{match[1]}{{{match[2]}, {HOST}, job="hwinfo"}}',
                          "values": "1x10"})
    return found


def _documented_queries() -> list[str]:
    block = re.search(r"```promql\n(.*?)```", METRICS_PAGE.read_text(), re.DOTALL)
    assert block, "docs/metrics.md has no promql block"
    queries = re.split(r"\n\s*\n", block[1].strip())
    return [" ".join(line for line in q.splitlines() if not line.startswith("#")) for q in queries]


def test_the_documented_joins_answer_what_they_say(tmp_path: Path) -> None:
    queries = _documented_queries()
    expected = [
        [((f'{{{HOST}, job="node", device="/dev/md127", mountpoint="/raid", fstype="xfs", '
          'disks="sda,sdb", kind="hdd"}'), 1e12)],
        [((f'{{{HOST}, job="node", device="nvme0n1", model="INTEL SSDPE2MX012T7", '
          'numa_node="0"}'), GIB_PER_SECOND)],
        [((f'{{{HOST}, job="node", device="mlx5_0", port="1", netdev="ibp26s0", '
          'numa_node="0"}'), 2 * GIB_PER_SECOND)],
    ]
    assert len(queries) == len(expected)
    tests = tmp_path / "joins.test.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [], "tests": [{
        "interval": "1m", "input_series": NODE + _hwinfo_series(),
        "promql_expr_test": [{"expr": query, "eval_time": "9m",
                              "exp_samples": [{"labels": labels, "value": value}
                                              for labels, value in samples]}
                             for query, samples in zip(queries, expected)]}]}))
    done = subprocess.run([require_tool("promtool"), "test", "rules", str(tests)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
