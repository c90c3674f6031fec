"""Scrape latency while slow readers and a wrong-password flood attack `hwinfo serve`.

    python bench/auth_flood.py [--runs 3] [--seconds 20] [--reconnect] [--tls] [--addresses N]

Each run starts `hwinfo serve --simulate dgx-a100-mig --process-metrics` with a web config
that has basic auth (bcrypt, cost 10, as `htpasswd -nBC 10` makes), then, from a second
process (asyncio, so the attack costs one core at most; on the daemon's cores, unlike an
attack from other machines: `--attacker-nice N` runs it at that nice value):
- 16 slow readers pipeline /metrics with valid credentials and a 4 KiB receive buffer and
  never read (each reconnects every 5 s);
- 48 clients send wrong passwords on keep-alive connections as fast as they are answered
  (with --reconnect, each attempt on a new connection, which the server cannot slow down);
  with --addresses N, N such clients (48 at least), each from a loopback source address
  of its own (127.2.x.y), so that the server sees N clients.
Meanwhile two scrapers in this process, with valid credentials (cached after the first
request) and gzip, as Prometheus scrapes, time each scrape: one on a keep-alive connection
every 20 ms, one on a new connection each time (its TCP and TLS handshakes included) every
100 ms, as Prometheus does when the server closed an idle connection. Every 2 s a login
the server has not seen (a new user, from a new loopback address) asks once: it must get
200, as a scraper after a restart or a password rotation would.
With --tls everything speaks TLS (an ECDSA P-256 certificate made by openssl).
A run ends with SIGTERM while the attack goes on, and says how long the daemon took to end.
Targets: scrape p99 <= 50 ms for both scrapers, 0 failed scrapes, every new login let in.
The last lines give the medians of the runs. `--hwinfo CMD` serves with another `hwinfo`
command (another install, to compare two versions under the same attack).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import http.client
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import bcrypt
from exporter import start_daemon

USER, PASSWORD = "prometheus", "s3cret-scrape-password"
SLOW_READERS, FLOODERS = 16, 48
SCRAPE_EVERY = 0.020  # seconds between the end of one scrape and the next
FRESH_EVERY = 0.100  # the same, for scrapes on a new connection each
SCRAPE_TIMEOUT = 5.0  # a scrape slower than this counts as failed
TARGET_P99_MS = 50.0
NEWCOMER_EVERY = 2.0  # seconds between logins the server has not seen
MAX_ADDRESSES = 1000  # loopback source addresses at most


class Tls:
    """Client-side TLS for the scraper, the newcomers and the attack (None: plain HTTP)."""

    context: ssl.SSLContext | None = None

    @classmethod
    def trust(cls, cert: str) -> None:
        cls.context = ssl.create_default_context(cafile=cert)

    @classmethod
    def connection(cls, port: int, source: str | None = None) -> http.client.HTTPConnection:
        where = {"timeout": SCRAPE_TIMEOUT,
                 "source_address": (source, 0) if source else None}
        if cls.context is not None:
            return http.client.HTTPSConnection("127.0.0.1", port, context=cls.context, **where)
        return http.client.HTTPConnection("127.0.0.1", port, **where)


def source_addresses(count: int) -> list[str]:
    """`count` loopback addresses for the attack (127.2.0.1 ...); none: the default one."""
    return [f"127.2.{n // 250}.{n % 250 + 1}" for n in range(count)]


def basic(password: str, user: str = USER) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def wait_ready(port: int) -> None:
    """Until /-/ready answers 200 to valid credentials (which caches them)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        connection = Tls.connection(port)
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


def newcomers(port: int, seconds: float, statuses: list[int]) -> None:
    """Every NEWCOMER_EVERY s, one login the server has not seen, from an address of its own."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() + NEWCOMER_EVERY < end:
        time.sleep(NEWCOMER_EVERY)
        connection = Tls.connection(port, f"127.3.0.{n + 1}")
        try:
            connection.request("GET", "/-/ready", headers={"Authorization": basic(
                PASSWORD, f"newcomer-{n}")})
            statuses.append(connection.getresponse().status)
        except (OSError, http.client.HTTPException):
            statuses.append(0)
        finally:
            connection.close()
        n += 1


def scrape_for(port: int, seconds: float, fresh: bool) -> tuple[list[float], int]:
    """(latencies in ms of good scrapes, failed scrapes) over `seconds`, one scrape at a time;
    `fresh`: each on a new connection, its handshakes timed too."""
    headers = {"Authorization": basic(PASSWORD), "Accept-Encoding": "gzip"}
    latencies: list[float] = []
    failed = 0
    connection = Tls.connection(port)
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
        if fresh:
            connection.close()
        time.sleep(FRESH_EVERY if fresh else SCRAPE_EVERY)
    connection.close()
    return latencies, failed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


# The attacker: `python bench/auth_flood.py --attack PORT SECONDS` prints a JSON tally.


def attack_tls() -> ssl.SSLContext:
    """The attack's TLS: any certificate will do (it attacks, it does not trust)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def slow_reader(port: int, end: float, tls: ssl.SSLContext | None) -> None:
    request = (f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: {basic(PASSWORD)}\r\n\r\n"
               ).encode() * 50
    loop = asyncio.get_running_loop()
    while loop.time() < end:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        writer = None
        try:
            await loop.sock_connect(sock, ("127.0.0.1", port))
            if tls is None:
                await loop.sock_sendall(sock, request)
            else:
                _, writer = await asyncio.open_connection(sock=sock, ssl=tls,
                                                          server_hostname="127.0.0.1")
                writer.write(request)
            await asyncio.sleep(min(5.0, max(0.0, end - loop.time())))
        except OSError:
            await asyncio.sleep(0.1)
        finally:
            if writer is not None:
                writer.transport.abort()
            sock.close()


async def flooder(port: int, end: float, n: int, tally: Counter[str], reconnect: bool,
                  tls: ssl.SSLContext | None, source: str | None) -> None:
    loop = asyncio.get_running_loop()
    attempt = 0
    while loop.time() < end:
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, ssl=tls, local_addr=(source, 0) if source else None)
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
            writer.transport.abort()  # no TLS close_notify exchange: an attacker does not wait


async def attack(port: int, seconds: float, reconnect: bool, tls: bool, addresses: int,
                 tally: Counter[str]) -> None:
    end = asyncio.get_running_loop().time() + seconds
    context = attack_tls() if tls else None
    sources = source_addresses(addresses)
    await asyncio.gather(
        *(slow_reader(port, end, context) for _ in range(SLOW_READERS)),
        *(flooder(port, end, n, tally, reconnect, context, sources[n] if sources else None)
          for n in range(max(FLOODERS, addresses))))


def run_attack(port: int, seconds: float, reconnect: bool, tls: bool,
               addresses: int) -> Counter[str]:
    """The attack until its time is up or SIGINT; the answers it got, by status."""
    tally: Counter[str] = Counter()

    async def main() -> None:
        task = asyncio.ensure_future(attack(port, seconds, reconnect, tls, addresses, tally))
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, task.cancel)
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    return tally


def one_run(config: Path, seconds: float, attack_flags: list[str],
            hwinfo: tuple[str, ...]) -> dict[str, float]:
    load = os.getloadavg()[0]
    proc, port = start_daemon("--web-config", str(config), cmd=hwinfo)
    try:
        wait_ready(port)
        attacker = subprocess.Popen(
            [sys.executable, __file__, "--attack", str(port), str(seconds + 2), *attack_flags],
            stdout=subprocess.PIPE, text=True,
        )
        time.sleep(1.0)  # let the attack reach full strength
        logins: list[int] = []
        newcomer = threading.Thread(target=newcomers, args=(port, seconds, logins))
        newcomer.start()
        fresh: list[tuple[list[float], int]] = []
        fresh_scraper = threading.Thread(
            target=lambda: fresh.append(scrape_for(port, seconds, fresh=True)))
        fresh_scraper.start()
        latencies, failed = scrape_for(port, seconds, fresh=False)
        newcomer.join()
        fresh_scraper.join()
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # while the attack goes on
        proc.wait(timeout=30)
        stop_s = time.monotonic() - started
        attacker.send_signal(signal.SIGINT)  # it prints what it got so far and ends
        tally = json.loads(attacker.communicate(timeout=60)[0])
    finally:
        if proc.poll() is None:
            proc.kill()
    result = {"stop_s": stop_s, "logins": len(logins),
              "logins_refused": sum(status != 200 for status in logins)}
    for kind, (times, fails) in (("", (latencies, failed)), ("fresh_", fresh[0])):
        result |= {
            f"{kind}scrapes": len(times) + fails,
            f"{kind}failed": fails,
            f"{kind}median_ms": statistics.median(times) if times else float("nan"),
            f"{kind}p99_ms": percentile(times, 99) if times else float("nan"),
            f"{kind}max_ms": max(times, default=float("nan")),
        }
    answers = {k: v for k, v in sorted(tally.items()) if k.isdigit()}
    for kind, name in (("", "keep-alive"), ("fresh_", "new connection")):
        print(f"  {name} scrapes {result[kind + 'scrapes']}, failed {result[kind + 'failed']}, "
              f"median {result[kind + 'median_ms']:.1f} ms, p99 {result[kind + 'p99_ms']:.1f} ms, "
              f"max {result[kind + 'max_ms']:.1f} ms")
    print(f"  new logins {logins.count(200)} of {len(logins)} let in {dict(Counter(logins))}; "
          f"wrong-password answers {sum(answers.values())} {answers}; stopped {stop_s:.2f} s "
          f"after SIGTERM; load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    return result


def write_config(where: Path, tls: bool) -> Path:
    """A web config with the scraper's user, the newcomers' and, with `tls`, a certificate
    for 127.0.0.1 that the scraper trusts."""
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(10)).decode()
    users = [f"  {USER}: '{hashed}'"] + [
        f"  newcomer-{n}: '{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(10)).decode()}'"
        for n in range(int(60 / NEWCOMER_EVERY))]
    text = "basic_auth_users:\n" + "\n".join(users) + "\n"
    if tls:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-days", "2", "-subj", "/CN=hwinfo-bench", "-addext",
             "subjectAltName=IP:127.0.0.1", "-keyout", str(where / "key.pem"), "-out",
             str(where / "cert.pem")], check=True, capture_output=True)
        text += "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
        Tls.trust(str(where / "cert.pem"))
    config = where / "web-config.yml"
    config.write_text(text)
    return config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="scraping time per run")
    parser.add_argument("--reconnect", action="store_true",
                        help="each wrong-password attempt on a new connection")
    parser.add_argument("--tls", action="store_true", help="serve and attack over TLS")
    parser.add_argument("--addresses", type=int, default=0, metavar="N",
                        help=f"wrong-password clients from N loopback addresses (<= {MAX_ADDRESSES})")
    parser.add_argument("--hwinfo", metavar="CMD", default=f"{sys.executable} -m hwinfo",
                        help="the hwinfo command to serve with (default: this Python's)")
    parser.add_argument("--attacker-nice", type=int, default=0, metavar="N",
                        help="run the attacking process at nice N (0..19; default 0, as the "
                        "daemon): it shares the daemon's cores, which an attack from other "
                        "machines does not")
    parser.add_argument("--attack", nargs=2, metavar=("PORT", "SECONDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if (not 0 <= args.addresses <= MAX_ADDRESSES or not 0 < args.seconds <= 120
            or not 0 <= args.attacker_nice <= 19):
        parser.error(f"--addresses 0..{MAX_ADDRESSES}, --seconds up to 120, --attacker-nice 0..19")
    if args.attack:
        os.nice(args.attacker_nice)
        print(json.dumps(run_attack(int(args.attack[0]), float(args.attack[1]), args.reconnect,
                                    args.tls, args.addresses)))
        return
    flags = [*(["--reconnect"] if args.reconnect else []), *(["--tls"] if args.tls else []),
             "--addresses", str(args.addresses), "--attacker-nice", str(args.attacker_nice)]
    with tempfile.TemporaryDirectory() as where:
        config = write_config(Path(where), args.tls)
        how = "a new connection per attempt" if args.reconnect else "keep-alive"
        clients = max(FLOODERS, args.addresses)
        sources = f"from {args.addresses} addresses" if args.addresses else "from one address"
        print(f"{SLOW_READERS} slow readers and {clients} wrong-password clients {sources} "
              f"({how}{', TLS' if args.tls else ''}); one scraper every "
              f"{SCRAPE_EVERY * 1000:.0f} ms for {args.seconds:g} s, a new login every "
              f"{NEWCOMER_EVERY:g} s; {args.runs} runs; the attacker at nice "
              f"{args.attacker_nice}")
        results = []
        for run in range(args.runs):
            print(f"run {run + 1}:")
            results.append(one_run(config, args.seconds, flags, tuple(args.hwinfo.split())))
    med = {key: statistics.median(r[key] for r in results) for key in results[0]}
    refused = sum(r["logins_refused"] for r in results)
    for kind, name in (("", "keep-alive"), ("fresh_", "new-connection")):
        failed = sum(r[kind + "failed"] for r in results)
        verdict = "ok" if med[kind + "p99_ms"] <= TARGET_P99_MS and failed == 0 else "OVER"
        print(f"medians of {args.runs} runs, {name} scrapes: median "
              f"{med[kind + 'median_ms']:.1f} ms, p99 {med[kind + 'p99_ms']:.1f} ms (target "
              f"{TARGET_P99_MS:g}), failed {failed} in all (target 0)  {verdict}")
    print(f"new logins refused {refused} of {sum(r['logins'] for r in results)} (target 0), "
          f"stop after SIGTERM {med['stop_s']:.2f} s  {'ok' if refused == 0 else 'OVER'}")


if __name__ == "__main__":
    main()
