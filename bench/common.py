"""Timing helpers shared by the benchmarks: medians of repeated runs, fresh processes."""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def installed_hwinfo(where: Path) -> list[str]:
    """`hwinfo` as users get it: `pip install .` (not editable) into a fresh venv under `where`.

    An editable install, as the tests use, adds ~60 ms of import-hook work to every start.
    """
    repo = Path(__file__).resolve().parents[1]
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(repo)], check=True,
                   stdout=subprocess.DEVNULL)
    return [str(venv / "bin" / "hwinfo")]


def median_wall(argv: Sequence[str], runs: int = 10) -> tuple[float, float, float]:
    """(median, min, max) wall seconds of `argv` as a fresh process, after one warm-up run."""
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def median_call(fn: Callable[[], object], runs: int = 30) -> tuple[float, float, float]:
    """(median, min, max) seconds of an in-process call, after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def row(name: str, result: tuple[float, float, float], target_ms: float) -> str:
    med, lo, hi = (v * 1000 for v in result)
    verdict = "ok" if med <= target_ms else "OVER"
    return f"{name:<48} median {med:7.1f} ms  (min {lo:6.1f}, max {hi:6.1f})  target {target_ms:g} ms  {verdict}"


# Users and commands with quotes, newlines, backslashes and non-ASCII, as labs have them.
NAMES = ['o"brien', "zoë", "ユーザー", "line\nbreak", "back\\slash", "tab\there"]
COMMANDS = ['python -c "print(1)"', "train.py --name 'x y'", "naïve\nnewline", "🚀 launch"]


def churn_processes(rng: random.Random, slots: list[tuple[int, int]] | None,
                    base: int) -> list[dict]:
    """Fresh processes; `slots` are a MIG GPU's (GI, CI) pairs, None outside MIG."""
    if slots == []:
        return []  # MIG on, no instances: nothing can run
    procs = []
    for n in range(rng.randrange(10, 40)):
        proc = {"pid": base + n, "used_memory_mib": rng.randrange(50, 500),
                "user": rng.choice(NAMES), "command": rng.choice(COMMANDS)}
        if slots:
            proc["gpu_instance_id"], proc["compute_instance_id"] = rng.choice(slots)
        procs.append(proc)
    return procs


# MIG layouts for GPU 3 of dgx-a100-mig to cycle through, with their (GI, CI) pairs.
MIG_LAYOUTS = [
    ({"enabled": True, "gpu_instances": []}, []),
    ({"enabled": True, "gpu_instances": [{"profile": "1g.10gb", "id": 7 + n, "start": n}
                                          for n in range(7)]}, [(7 + n, 0) for n in range(7)]),
    ({"enabled": True, "gpu_instances": [{"profile": "3g.40gb", "id": 2, "start": 0},
                                          {"profile": "3g.40gb", "id": 1, "start": 4}]},
     [(1, 0), (2, 0)]),
]
