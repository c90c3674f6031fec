"""Timing helpers shared by the benchmarks: medians of repeated runs, fresh processes."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def hwinfo_command() -> list[str]:
    """The installed `hwinfo` console script beside this Python (as a user runs it)."""
    script = shutil.which("hwinfo", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "hwinfo"]


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

