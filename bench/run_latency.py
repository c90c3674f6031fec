"""How soon a waiting `hwinfo run` starts once the GPU it waits for is free:
`python bench/run_latency.py [--rounds 20]`.

A simulated host with one idle GPU. Each round, the command holding it is told to end while
the next `hwinfo run` waits in line; the GPU is free the moment the holder's claim leaves the
claims directory (watched every millisecond), and the waiter has started when its command (a
shell writing the time) has run. The figure is the time between: the waiter's next look (it
looks every wait.POLL_SECONDS, give or take wait.JITTER), its decision, and starting the
command. The runs use the installed `hwinfo` in a fresh venv, as users get it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from common import installed_hwinfo

T = TypeVar("T")

# The one GPU of the host, and a command that says when it started, then holds until told.
SCENARIO = {"format": 1, "description": "one idle H100",
            "gpus": [{"board": "H100-SXM5-80GB", "processes": []}]}
COMMAND = 'date +%s.%N > "$0/started-$1"; while [ ! -e "$0/release-$1" ]; do sleep 0.01; done'
TARGET_SECONDS = 1.0


def _wait(what: str, check: Callable[[], T], patience: float = 120.0) -> T:
    give_up = time.monotonic() + patience
    while not (found := check()):
        if time.monotonic() > give_up:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.001)
    return found


def rounds(hwinfo: list[str], where: Path, count: int) -> list[float]:
    claims, work = where / "claims", where / "work"
    claims.mkdir(mode=0o1777)
    work.mkdir()
    scenario = where / "scenario.json"
    scenario.write_text(json.dumps(SCENARIO))
    env = {**os.environ, "HWINFO_CLAIMS_DIR": str(claims),
           "HWINFO_SIM_STATE_DIR": str(where / "sim")}

    def start(n: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen([*hwinfo, "run", "--simulate", str(scenario), "--wait", "10m",
                                 "--", "sh", "-c", COMMAND, str(work), str(n)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    runs = [start(0)]
    _wait("the first run to start", lambda: (work / "started-0").exists())
    found = []
    for n in range(1, count + 1):
        runs.append(start(n))
        found.append(_handover(claims, work, n, str(runs[-1].pid)))
        runs[n - 1].wait(timeout=120)
    (work / f"release-{count}").touch()
    runs[-1].wait(timeout=120)
    return found


def _handover(claims: Path, work: Path, n: int, pid: str) -> float:
    """Seconds from run n - 1's claim leaving to run n's command starting, run n in line."""
    _wait(f"run {n} in line", lambda: any(p.name.split(".")[1] == pid and p.name.endswith(".wait")
                                           for p in claims.iterdir()))
    (claim,) = [p for p in claims.iterdir() if p.name.endswith(".claim")]
    (work / f"release-{n - 1}").touch()
    _wait("the GPU to be free", lambda: not claim.exists())
    freed = time.time()
    started = work / f"started-{n}"
    _wait(f"run {n} to start", lambda: started.exists() and started.read_text().strip())
    return float(started.read_text()) - freed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    where = Path(tempfile.mkdtemp(prefix="hwinfo-bench-run-"))
    try:
        hwinfo = installed_hwinfo(where)
        found = rounds(hwinfo, where, args.rounds)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    median = statistics.median(found)
    print(f"hwinfo run: GPU free to the next waiter's command started, {args.rounds} rounds on "
          f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"  median {median * 1000:.0f} ms (min {min(found) * 1000:.0f}, "
          f"max {max(found) * 1000:.0f}; 90th percentile "
          f"{statistics.quantiles(found, n=10)[-1] * 1000:.0f})  target "
          f"{TARGET_SECONDS * 1000:.0f} ms  {'ok' if median <= TARGET_SECONDS else 'OVER'}")


if __name__ == "__main__":
    main()
