"""GPU collector tests run the real pynvml module on the simulated NVML."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest

from hwinfo import sim
from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.collect.sources import machine_owners
from hwinfo.model.gpu import GpuSystem
from hwinfo.sim.machine import SAMPLE_SECONDS

SCENARIOS = Path(sim.__file__).parent / "scenarios"
MIB = 1 << 20


def collect_samples(collector: GpuCollector, count: int) -> list[GpuSystem]:
    """Collect once in each of scenario samples 1 .. count (scenario time runs on at once)."""
    systems = []
    for _ in range(count):
        systems.append(collector.collect())
        pynvml.nvmlLib.machine.advance(SAMPLE_SECONDS)
    return systems


def scenario_json(name: str) -> dict[str, Any]:
    """A built-in scenario as written, to check the collector against."""
    return json.loads((SCENARIOS / f"{name}.json").read_text())


@pytest.fixture
def simulate() -> Iterator[Callable[..., GpuCollector]]:
    """Start a GPU collector on a scenario (a built-in name or a file); cleans up after."""
    collectors: list[GpuCollector] = []

    def start(source: str | Path, **options: Any) -> GpuCollector:
        collector = GpuCollector(machine_owners(sim.install(str(source))), **options)
        collectors.append(collector)
        return collector

    yield start
    for collector in collectors:
        collector.close()
    sim.uninstall()


@pytest.fixture
def scenario_file(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    """Write a small scenario of the test's own to a file."""

    def write(doc: dict[str, Any]) -> Path:
        path = tmp_path / "scenario.json"
        path.write_text(json.dumps({"format": 1, **doc}))
        return path

    return write
