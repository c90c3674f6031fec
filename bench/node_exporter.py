"""Scrape latency of `hwinfo serve` beside node_exporter's, under the same load on this machine.

    python bench/node_exporter.py [--rounds 3] [--seconds 10] [--hwinfo CMD]...

Each round starts, one after the other, each `hwinfo` command given (default: this Python's;
give two to compare versions) serving dgx-a100-mig with per-process series, and Debian's
prometheus-node-exporter with its default collectors, each on a loopback port, and drives
it with wrk as Prometheus scrapes (keep-alive, gzip): one connection, then 20 with no
pause. Taking turns within each round means a load from elsewhere on the machine weighs on
all of them alike. A failed hwinfo scrape ends the run; node_exporter's timeouts under load
count as the latency wrk gives them. Prints each round, then the medians of the rounds and how many times
faster than node_exporter each hwinfo is at the median and at p99. Needs wrk and
prometheus-node-exporter (apt-get install -y wrk prometheus-node-exporter).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from exporter import start_daemon, wait_ready, wrk_latency

CONNECTIONS = (1, 20)


def node_exporter() -> tuple[subprocess.Popen[bytes], int]:
    """Debian's node_exporter on a free loopback port, once it answers."""
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if binary is None:
        raise SystemExit("needs node_exporter: apt-get install -y prometheus-node-exporter")
    with socket.socket() as probe:  # a port free a moment ago: node_exporter does not say
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2):
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("node_exporter did not answer")


def measure(name: str, start: tuple[subprocess.Popen, int], seconds: int,
            results: dict[tuple[str, int], list[tuple[float, float]]]) -> None:
    proc, port = start
    try:
        time.sleep(1)  # a first sample in, the process settled
        for connections in CONNECTIONS:
            # node_exporter timing out on a loaded machine is a figure, not our failure.
            median, p99, requests = wrk_latency(port, connections, seconds,
                                                strict=name != "node_exporter")
            results.setdefault((name, connections), []).append((median, p99))
            print(f"  {name:<40} {connections:2d} conn: median {median:7.2f} ms, "
                  f"p99 {p99:7.2f} ms ({requests} scrapes)", flush=True)
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10, help="wrk time per measurement")
    parser.add_argument("--hwinfo", metavar="CMD", action="append",
                        help="an hwinfo command to serve with; repeat to compare")
    args = parser.parse_args()
    commands = args.hwinfo or [f"{sys.executable} -m hwinfo"]
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for number in range(args.rounds):
        print(f"round {number + 1}, load average {os.getloadavg()[0]:.1f}:", flush=True)
        for command in commands:
            proc, port = start_daemon("--interval", "5", cmd=tuple(command.split()))
            wait_ready(port)
            measure(command, (proc, port), args.seconds, results)
        measure("node_exporter", node_exporter(), args.seconds, results)
    print(f"medians of {args.rounds} rounds:")
    for connections in CONNECTIONS:
        node = [statistics.median(v) for v in zip(*results["node_exporter", connections])]
        for name in [*commands, "node_exporter"]:
            median, p99 = (statistics.median(v) for v in zip(*results[name, connections]))
            faster = "" if name == "node_exporter" else \
                f"  ({node[0] / median:.1f}x faster at the median, {node[1] / p99:.1f}x at p99)"
            print(f"  {name:<40} {connections:2d} conn: median {median:7.2f} ms, "
                  f"p99 {p99:7.2f} ms{faster}")


if __name__ == "__main__":
    main()
