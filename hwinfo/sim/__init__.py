"""Simulated NVML: a fake libnvidia-ml.so.1 under the real pynvml module, driven by scenarios.

    machine = hwinfo.sim.install("dgx-a100-mig")   # a built-in NAME or a scenario file path
    pynvml.nvmlInit(); pynvml.nvmlDeviceGetCount() ...
    hwinfo.sim.uninstall()

Scenario files are described in docs/scenario-format.md. A process (or a sitecustomize) can
also call install_from_env(), which installs the scenario named by HWINFO_SIM_SCENARIO.
"""

from __future__ import annotations

import os

from hwinfo.binding import pynvml  # the module holding the binding's state (binding.py)
from hwinfo.sim.machine import Machine
from hwinfo.sim.nvml_lib import FakeLib
from hwinfo.sim.scenario import list_scenarios, load_scenario
from hwinfo.sim.scenario_model import Scenario, ScenarioError

__all__ = [
    "ENV_VAR",
    "FakeLib",
    "Machine",
    "Scenario",
    "ScenarioError",
    "install",
    "install_from_env",
    "list_scenarios",
    "load_scenario",
    "uninstall",
]

ENV_VAR = "HWINFO_SIM_SCENARIO"

# What install() replaced, most recent last: pynvml's previous library.
_installed: list[object] = []


def _detach() -> None:
    """Shut down whatever library pynvml has initialised, and forget its function pointers."""
    with pynvml.libLoadLock:
        lib, refs = pynvml.nvmlLib, pynvml._nvmlLib_refcount
        if lib is not None:
            shutdown = getattr(lib, "nvmlShutdown", None)
            for _ in range(refs if shutdown else 0):
                shutdown()
        pynvml._nvmlLib_refcount = 0
        pynvml._nvmlGetFunctionPointer_cache.clear()


def install(scenario: Scenario | str | os.PathLike[str]) -> Machine:
    """Put a simulated machine under pynvml; returns it (for process_owner and mutations).

    `scenario` is a Scenario, a built-in scenario NAME or a file path. If pynvml was already
    initialised against another library, that library is shut down (as many times as pynvml
    initialised it) and pynvml starts uninitialised on the simulator.
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    machine = Machine(scenario)
    previous = pynvml.nvmlLib
    _detach()
    pynvml.nvmlLib = FakeLib(machine)
    _installed.append(previous)
    return machine


def uninstall() -> None:
    """Undo the last install(): pynvml gets its previous library back, uninitialised."""
    if not _installed:
        return
    previous = _installed.pop()
    _detach()
    pynvml.nvmlLib = previous


def install_from_env() -> Machine | None:
    """install() the scenario named by $HWINFO_SIM_SCENARIO, if it is set and not empty."""
    name = os.environ.get(ENV_VAR)
    return install(name) if name else None
