"""Run another program on the simulated NVML: `hwinfo sim run NAME -- COMMAND ...`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import hwinfo
from hwinfo.sim import ENV_VAR

BOOTSTRAP = Path(__file__).parent / "bootstrap"


def child_environment(scenario: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment in which any Python that imports pynvml gets the simulator."""
    env = dict(os.environ if base is None else base)
    # The child may be another interpreter or virtual environment: it must find hwinfo too.
    package_parent = str(Path(hwinfo.__file__).resolve().parent.parent)
    paths = [str(BOOTSTRAP), package_parent]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[ENV_VAR] = scenario
    return env


def run(scenario: str, argv: Sequence[str]) -> int:
    """Run argv with the simulator in place of the driver; its exit status."""
    try:
        return subprocess.call(list(argv), env=child_environment(scenario))
    except FileNotFoundError:
        raise RunError(f"command not found: {argv[0]}") from None
    except PermissionError:
        raise RunError(f"command is not executable: {argv[0]}") from None


class RunError(Exception):
    """The command could not be started."""
