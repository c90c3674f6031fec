"""Scrape latency while slow readers and a wrong-password flood attack `hwinfo serve`.

    python bench/auth_flood.py [--runs 3] [--seconds 20] [--reconnect]

Each run starts `hwinfo serve --simulate dgx-a100-mig --process-metrics` with a web config
that has basic auth (bcrypt, cost 10, as `htpasswd -nBC 10` makes), then, from a second
process (asyncio, so the attack costs one core at most):
- 16 slow readers pipeline /metrics with valid credentials and a 4 KiB receive buffer and
  never read (each reconnects every 5 s);
- 48 clients send wrong passwords on keep-alive connections as fast as they are answered
  (with --reconnect, each attempt on a new connection, which the server cannot slow down).
Meanwhile one scraper in this process, with valid credentials (cached after its first
request) and gzip, as Prometheus scrapes, scrapes every 20 ms and times each scrape.
A run ends with SIGTERM while the attack goes on, and says how long the daemon took to end.
Targets: scrape p99 <= 50 ms, 0 failed scrapes. The last line gives the medians of the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import http.client
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import bcrypt
from exporter import start_daemon

USER, PASSWORD = "prometheus", "s3cret-scrape-password"
SLOW_READERS, FLOODERS = 16, 48
SCRAPE_EVERY = 0.020  # seconds between the end of one scrape and the next
SCRAPE_TIMEOUT = 5.0  # a scrape slower than this counts as failed
TARGET_P99_MS = 50.0


def basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"{USER}:{password}".encode()).decode()


def wait_ready(port: int) -> None:
    """Until /-/ready answers 200 to valid credentials (which caches them)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            connection.request("GET", "/-/ready", headers={"Authorization": basic(PASSWORD)})
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.1)
    raise SystemExit("hwinfo serve did not become ready")


def scrape_for(port: int, seconds: float) -> tuple[list[float], int]:
    """(latencies in ms of good scrapes, failed scrapes) over `seconds`, one scrape at a time."""
    headers = {"Authorization": basic(PASSWORD), "Accept-Encoding": "gzip"}
    latencies: list[float] = []
    failed = 0
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=SCRAPE_TIMEOUT)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        try:
            connection.request("GET", "/metrics", headers=headers)
            response = connection.getresponse()
            response.read()
            ok = response.status == 200
        except (OSError, http.client.HTTPException):
            ok = False
            connection.close()  # reconnects on the next request
        took = (time.perf_counter() - started) * 1000
        if ok:
            latencies.append(took)
        else:
            failed += 1
        time.sleep(SCRAPE_EVERY)
    connection.close()
    return latencies, failed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


# The attacker: `python bench/auth_flood.py --attack PORT SECONDS` prints a JSON tally.


async def slow_reader(port: int, end: float) -> None:
    request = (f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: {basic(PASSWORD)}\r\n\r\n"
               ).encode() * 50
    loop = asyncio.get_running_loop()
    while loop.time() < end:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, ("127.0.0.1", port))
            await loop.sock_sendall(sock, request)
            await asyncio.sleep(min(5.0, max(0.0, end - loop.time())))
        except OSError:
            await asyncio.sleep(0.1)
        finally:
            sock.close()


async def flooder(port: int, end: float, n: int, tally: Counter[str], reconnect: bool) -> None:
    loop = asyncio.get_running_loop()
    attempt = 0
    while loop.time() < end:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            tally["connect failed"] += 1
            await asyncio.sleep(0.1)
            continue
        try:
            while loop.time() < end:
                attempt += 1
                writer.write((f"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                              f"Authorization: {basic(f'guess-{n}-{attempt}')}\r\n\r\n").encode())
                head = await reader.readuntil(b"\r\n\r\n")
                tally[head.split(b" ", 2)[1].decode()] += 1
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                if reconnect or b"Connection: close" in head:
                    break
        except (OSError, asyncio.IncompleteReadError):
            tally["connection lost"] += 1
        finally:
            writer.close()


async def attack(port: int, seconds: float, reconnect: bool, tally: Counter[str]) -> None:
    end = asyncio.get_running_loop().time() + seconds
    await asyncio.gather(*(slow_reader(port, end) for _ in range(SLOW_READERS)),
                         *(flooder(port, end, n, tally, reconnect) for n in range(FLOODERS)))


def run_attack(port: int, seconds: float, reconnect: bool) -> Counter[str]:
    """The attack until its time is up or SIGINT; the answers it got, by status."""
    tally: Counter[str] = Counter()

    async def main() -> None:
        task = asyncio.ensure_future(attack(port, seconds, reconnect, tally))
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, task.cancel)
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    return tally


def one_run(config: Path, seconds: float, reconnect: bool) -> dict[str, float]:
    proc, port = start_daemon("--web-config", str(config))
    try:
        wait_ready(port)
        attacker = subprocess.Popen(
            [sys.executable, __file__, "--attack", str(port), str(seconds + 2),
             *(["--reconnect"] if reconnect else [])],
            stdout=subprocess.PIPE, text=True,
        )
        time.sleep(1.0)  # let the attack reach full strength
        latencies, failed = scrape_for(port, seconds)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # while the attack goes on
        proc.wait(timeout=30)
        stop_s = time.monotonic() - started
        attacker.send_signal(signal.SIGINT)  # it prints what it got so far and ends
        tally = json.loads(attacker.communicate(timeout=60)[0])
    finally:
        if proc.poll() is None:
            proc.kill()
    result = {
        "scrapes": len(latencies) + failed,
        "failed": failed,
        "median_ms": statistics.median(latencies) if latencies else float("nan"),
        "p99_ms": percentile(latencies, 99) if latencies else float("nan"),
        "max_ms": max(latencies, default=float("nan")),
        "stop_s": stop_s,
    }
    answers = {k: v for k, v in sorted(tally.items()) if k.isdigit()}
    print(f"  scrapes {result['scrapes']}, failed {failed}, median {result['median_ms']:.1f} ms, "
          f"p99 {result['p99_ms']:.1f} ms, max {result['max_ms']:.1f} ms; wrong-password "
          f"answers {sum(answers.values())} {answers}; stopped {stop_s:.2f} s after SIGTERM")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="scraping time per run")
    parser.add_argument("--reconnect", action="store_true",
                        help="each wrong-password attempt on a new connection")
    parser.add_argument("--attack", nargs=2, metavar=("PORT", "SECONDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attack:
        print(json.dumps(run_attack(int(args.attack[0]), float(args.attack[1]), args.reconnect)))
        return
    with tempfile.TemporaryDirectory() as where:
        config = Path(where) / "web-config.yml"
        hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(10)).decode()
        config.write_text(f"basic_auth_users:\n  {USER}: '{hashed}'\n")
        how = "a new connection per attempt" if args.reconnect else "keep-alive"
        print(f"{SLOW_READERS} slow readers and {FLOODERS} wrong-password clients ({how}); "
              f"one scraper every {SCRAPE_EVERY * 1000:.0f} ms for {args.seconds:g} s; "
              f"{args.runs} runs")
        results = []
        for run in range(args.runs):
            print(f"run {run + 1}:")
            results.append(one_run(config, args.seconds, args.reconnect))
    med = {key: statistics.median(r[key] for r in results) for key in results[0]}
    verdict = "ok" if med["p99_ms"] <= TARGET_P99_MS and max(r["failed"] for r in results) == 0 \
        else "OVER"
    print(f"medians of {args.runs} runs: scrape median {med['median_ms']:.1f} ms, "
          f"p99 {med['p99_ms']:.1f} ms (target {TARGET_P99_MS:g}), failed "
          f"{sum(r['failed'] for r in results)} in all (target 0), stop after SIGTERM "
          f"{med['stop_s']:.2f} s  {verdict}")


if __name__ == "__main__":
    main()
