"""Run another program on the simulated NVML: `hwinfo sim run NAME -- COMMAND ...`."""

from __future__ import annotations

import os
import signal
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import hwinfo
from hwinfo.child import StartError, start, wait_forwarding
from hwinfo.sim import ENV_VAR
from hwinfo.sim.live import TooManyProcesses, live_processes

BOOTSTRAP = Path(__file__).parent / "bootstrap"
# Where the bootstrap loads the hwinfo package from (its directory, not its parent).
PACKAGE_VAR = "HWINFO_SIM_PACKAGE"


def child_environment(scenario: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment in which any Python that imports pynvml gets the simulator.

    Only the bootstrap directory goes on PYTHONPATH: an unchanged client keeps its own
    pynvml, psutil and everything else. The bootstrap loads hwinfo by its directory, and
    hwinfo.sim needs nothing but the standard library and the client's own pynvml.
    """
    env = dict(os.environ if base is None else base)
    paths = [str(BOOTSTRAP)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[PACKAGE_VAR] = str(Path(hwinfo.__file__).resolve().parent)
    env[ENV_VAR] = scenario
    # The scripts of hwinfo's own environment (a venv's bin/, where the test extras put
    # gpustat and nvitop) come after the caller's PATH: `.venv/bin/hwinfo sim run NAME --
    # gpustat` works without activating the venv, and a program on PATH still wins.
    scripts = sysconfig.get_path("scripts")
    path = env.get("PATH", os.defpath).split(os.pathsep)
    if scripts and scripts not in path:
        env["PATH"] = os.pathsep.join([*filter(None, path), scripts])
    return env


def run(scenario: str, argv: Sequence[str], live: bool = False) -> int:
    """Run argv with the simulator in place of the driver; its exit status. With `live`, the
    scenario's processes are backed by real placeholder processes (live.py) meanwhile."""
    if live:
        try:
            with live_processes(scenario) as rebound:
                return _call(str(rebound), argv)
        except TooManyProcesses as exc:
            raise RunError(str(exc)) from None
        except OSError as exc:
            raise RunError(f"cannot start placeholder processes: {exc}") from None
    return _call(scenario, argv)


def _call(scenario: str, argv: Sequence[str]) -> int:
    try:
        child = start(argv, child_environment(scenario))
    except StartError as exc:
        raise RunError(str(exc)) from None
    return wait_forwarding(child, _FORWARDED)


# A stop signal sent to `hwinfo sim run` alone goes on to the child: once it has ended, the
# run ends as usual and cleans up (placeholders, their scenario copy). A hang-up goes on as
# SIGTERM: to a daemon (hwinfo serve) SIGHUP means "reload", and the run is ending.
_FORWARDED = {signal.SIGTERM: signal.SIGTERM, signal.SIGINT: signal.SIGINT,
              signal.SIGHUP: signal.SIGTERM}


class RunError(Exception):
    """The command could not be started."""
