"""Timing helpers shared by the benchmarks: medians of repeated runs, fresh processes."""

from __future__ import annotations

import random
import resource
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


def in_turns(commands: dict[str, Sequence[str]], runs: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each command as a fresh process, `runs` times, taking turns (one
    of each, then again), after one warm-up run each: on a shared machine whose load comes and
    goes, each command then meets the same load."""
    for argv in commands.values():
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            times[name].append((wall, cpu))
    return times


def median_call(fn: Callable[[], object], runs: int = 30) -> tuple[float, float, float]:
    """(median, min, max) seconds of an in-process call, after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def row(name: str, result: tuple[float, float, float], target_ms: float | None = None) -> str:
    med, lo, hi = (v * 1000 for v in result)
    line = f"{name:<48} median {med:7.1f} ms  (min {lo:6.1f}, max {hi:6.1f})"
    if target_ms is None:
        return line
    return f"{line}  target {target_ms:g} ms  {'ok' if med <= target_ms else 'OVER'}"


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
