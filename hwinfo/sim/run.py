"""Run another program on the simulated NVML: `hwinfo sim run NAME -- COMMAND ...`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import hwinfo
from hwinfo.sim import ENV_VAR

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
    return env


def run(scenario: str, argv: Sequence[str], live: bool = False) -> int:
    """Run argv with the simulator in place of the driver; its exit status. With `live`, the
    scenario's processes are backed by real placeholder processes (live.py) meanwhile."""
    if live:
        from hwinfo.sim.live import live_processes

        try:
            with live_processes(scenario) as rebound:
                return _call(str(rebound), argv)
        except OSError as exc:
            raise RunError(f"cannot start placeholder processes: {exc}") from None
    return _call(scenario, argv)


def _call(scenario: str, argv: Sequence[str]) -> int:
    try:
        return subprocess.call(list(argv), env=child_environment(scenario))
    except FileNotFoundError:
        raise RunError(f"command not found: {argv[0]}") from None
    except PermissionError:
        raise RunError(f"command is not executable: {argv[0]}") from None


class RunError(Exception):
    """The command could not be started."""
