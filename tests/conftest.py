"""Shared test helpers: fixture roots, the shared captures, and tools that CI must have."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURE_ROOTS = REPO / "tests" / "fixtures" / "roots"
# Real nvidia-smi dumps live beside the checkout, never inside it.
CAPTURES = REPO.parent / "shared" / "captures"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(condition: bool, why: str) -> None:
    """Skip when a prerequisite is missing on a developer machine; fail under CI=true."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI=true and {why}")
    pytest.skip(why)


def require_tool(name: str) -> str:
    path = shutil.which(name)
    require(path is not None, f"{name} is not installed (the README's test command installs it)")
    assert path is not None
    return path


@pytest.fixture(autouse=True)
def _private_simulated_drivers(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated drivers load anew in each test: no scenario clock shared with other tests or
    with other test runs on this host (hwinfo/sim/driver_load.py)."""
    monkeypatch.setenv("HWINFO_SIM_STATE_DIR", str(tmp_path_factory.mktemp("sim-state")))
