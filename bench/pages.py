"""What hwinfo's pages cost, and whether looking at them slows a scrape: `python bench/pages.py`.

- rendering the machine page of the 8-GPU A100 MIG box (110 processes), in-process;
- rendering the board's page of a 100-host lab (800 GPUs), in-process;
- `hwinfo serve`: a scraper's latency (wrk) alone, while 50 page views a second come (250
  people with the page open, each refreshing every 5 s), alone again, and while wrk asks for
  `/` with 8 connections and no pause (a flood, far past any lab), with what the pages took.
Needs wrk (apt-get install -y wrk), as bench/exporter.py does; about a minute and a half.
"""

from __future__ import annotations

import http.client
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

from common import median_call, row
from exporter import cpu_seconds, report_latency, start_daemon, wait_ready, wrk_latency


def _render_machine() -> None:
    from hwinfo import sim
    from hwinfo.collect.sources import open_collector
    from hwinfo.render.html.machine import Reading, render_machine

    collector = open_collector("/", "dgx-a100-mig")
    snapshot = collector.collect()
    collector.close()
    sim.uninstall()
    reading = Reading(snapshot.timestamp_seconds + 1, 5, 20, "bench")
    print(row("machine page, 8x A100 MIG (in-process render)",
              median_call(lambda: render_machine(snapshot, reading)), 50))


def _lab(hosts: int) -> object:
    """A lab of `hosts` hosts of 8 GPUs: a third free, a third held by one of 40 users, a
    third idle-held; one host in 20 down."""
    from hwinfo.ledger.board import Board, IdleHold
    from hwinfo.ledger.fleet import Fleet, Gpu, Host

    listed, idle = [], []
    for h in range(hosts):
        host = Host("hwinfo", f"gpu{h:04d}.lab.example:9110", "down" if h % 20 == 19 else "up")
        for g in range(8):
            user = f"user{(h * 8 + g) % 40:02d}"
            held = (h + g) % 3 != 0
            host.gpus.append(Gpu(str(g), f"GPU-{h:04d}-{g}", "NVIDIA H100 80GB HBM3", 80 * 2**30,
                                 40 * 2**30 if held else 0, 40 * 2**30 if held else 80 * 2**30,
                                 1 if held else 0, holders={user: 40 * 2**30} if held else {}))
            if held and (h + g) % 3 == 2:
                idle.append(IdleHold("hwinfo", host.instance, str(g), "", "", user,
                                     time.time() - 3600 * (h % 24)))
        listed.append(host)
    return Board(Fleet(time.time(), listed), idle, True)


def _render_board(hosts: int = 100) -> None:
    from hwinfo.ledger.board_cache import Answer
    from hwinfo.ledger.board_page import FitBox, View, render_board

    lab = Answer(_lab(hosts), time.time())
    view = View("GPU lab", time.time(), 10, "bench")
    print(row(f"board page, {hosts} hosts x 8 GPUs (in-process render)",
              median_call(lambda: render_board(view, lab, FitBox()), runs=10), 500))  # type: ignore[arg-type]


def _page_load(port: int, seconds: int) -> subprocess.Popen[str]:
    """wrk asking for `/` with 8 connections, no pause, for `seconds`."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("bench/pages.py needs wrk: apt-get install -y wrk")
    return subprocess.Popen([wrk, "-t1", "-c8", f"-d{seconds}s", "--latency", "-H",
                             "Accept-Encoding: gzip", f"http://127.0.0.1:{port}/"],
                            stdout=subprocess.PIPE, text=True)


def _paced_views(port: int, per_second: float, stop: threading.Event, took: list[float]) -> None:
    """Page views at a steady pace, each on a new connection as a browser's refresh may be."""
    due = time.monotonic()
    while not stop.is_set():
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/", headers={"Accept-Encoding": "gzip"})
        conn.getresponse().read()
        conn.close()
        took.append(time.monotonic() - started)
        due += 1 / per_second
        stop.wait(max(0.0, due - time.monotonic()))


def _scrapes_while_looked_at() -> None:
    proc, port = start_daemon("--interval", "5")
    try:
        wait_ready(port)
        time.sleep(1)
        report_latency("scrape, 1 scraper, no page asked", wrk_latency(port, 1))
        stop, took = threading.Event(), []
        viewers = threading.Thread(target=_paced_views, args=(port, 50, stop, took))
        viewers.start()
        report_latency("scrape, 1 scraper, 50 page views a second", wrk_latency(port, 1))
        stop.set()
        viewers.join()
        took.sort()
        print(f"{'page views meanwhile (new connection each)':<48} {len(took)}, median "
              f"{statistics.median(took) * 1000:.2f} ms, p99 {took[len(took) * 99 // 100] * 1000:.2f} ms")
        report_latency("scrape, 1 scraper, no page asked (again)", wrk_latency(port, 1))
        looking = _page_load(port, 14)
        time.sleep(2)
        before, began = cpu_seconds(proc.pid), time.monotonic()
        report_latency("scrape, 1 scraper, pages flooded (8 conns)", wrk_latency(port, 1))
        spent = (cpu_seconds(proc.pid) - before) / (time.monotonic() - began)
        out, _ = looking.communicate(timeout=60)
        pages = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
        latency = re.search(r"50%\s+(\S+)\s+75%.*?99%\s+(\S+)", out, re.DOTALL)
        print(f"{'pages asked for (8 connections, no pause)':<48} {pages} in 14 s, "
              f"median {latency.group(1)}, p99 {latency.group(2)}; "  # type: ignore[union-attr]
              f"daemon CPU {spent * 100:.0f}% of a core meanwhile")
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    _render_machine()
    _render_board()
    _scrapes_while_looked_at()


if __name__ == "__main__":
    sys.exit(main())
