"""Run another program on the simulated NVML: `hwinfo sim run NAME -- COMMAND ...`."""

from __future__ import annotations

import os
import signal
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
        child = subprocess.Popen(list(argv), env=child_environment(scenario))
    except FileNotFoundError:
        raise RunError(f"command not found: {argv[0]}") from None
    except PermissionError:
        raise RunError(f"command is not executable: {argv[0]}") from None
    # A SIGTERM sent to `hwinfo sim run` alone goes on to the child: once it has ended, the
    # run ends as usual and cleans up (placeholders, their scenario copy). Ctrl-C reaches
    # the child through the terminal already.
    previous = signal.signal(signal.SIGTERM, lambda signum, _: child.send_signal(signum))
    try:
        status = child.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
    # A child a signal ended: 128 + the signal, as a shell reports it.
    return 128 - status if status < 0 else status


class RunError(Exception):
    """The command could not be started."""
