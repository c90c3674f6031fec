"""Run another program on the simulated NVML: `hwinfo sim run NAME -- COMMAND ...`."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sysconfig
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
        from hwinfo.sim.live import TooManyProcesses, live_processes

        try:
            with live_processes(scenario) as rebound:
                return _call(str(rebound), argv)
        except TooManyProcesses as exc:
            raise RunError(str(exc)) from None
        except OSError as exc:
            raise RunError(f"cannot start placeholder processes: {exc}") from None
    return _call(scenario, argv)


def _call(scenario: str, argv: Sequence[str]) -> int:
    env = child_environment(scenario)
    # Looked up on the child's PATH, which holds hwinfo's scripts too (Popen would search
    # the caller's).
    program = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env["PATH"])
    if program is None:
        raise RunError(f"command not found: {argv[0]}")
    try:
        child = subprocess.Popen(list(argv), executable=program, env=env)
    except FileNotFoundError:
        raise RunError(f"command not found: {argv[0]}") from None
    except PermissionError:
        raise RunError(f"command is not executable: {argv[0]}") from None
    status = _wait_forwarding(child)
    # A child a signal ended: 128 + the signal, as a shell reports it.
    return 128 - status if status < 0 else status


# A stop signal sent to `hwinfo sim run` alone goes on to the child: once it has ended, the
# run ends as usual and cleans up (placeholders, their scenario copy). A hang-up goes on as
# SIGTERM: to a daemon (hwinfo serve) SIGHUP means "reload", and the run is ending.
_FORWARDED = {signal.SIGTERM: signal.SIGTERM, signal.SIGINT: signal.SIGINT,
              signal.SIGHUP: signal.SIGTERM}
# si_code of a signal the kernel sent: Ctrl-C at a terminal, which reached the child as well
# (its whole process group gets it), unlike a kill(2) aimed at the run (SI_USER).
_SI_KERNEL = 0x80
# Only where a child's end could be missed (it ended before SIGCHLD was blocked) does the
# wait come back on its own.
_RECHECK_SECONDS = 1.0


def _wait_forwarding(child: subprocess.Popen[bytes]) -> int:
    """The child's exit status (negative: the signal that ended it), forwarding stop signals.

    The signals are taken with sigtimedwait, which says who sent each: no handler, so none
    can run between two steps of the wait, and Ctrl-C is not sent to the child twice."""
    waited = {*_FORWARDED, signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        while (status := child.poll()) is None:
            info = signal.sigtimedwait(waited, _RECHECK_SECONDS)
            if info is not None and info.si_signo in _FORWARDED and info.si_code != _SI_KERNEL:
                child.send_signal(_FORWARDED[signal.Signals(info.si_signo)])
        return status
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class RunError(Exception):
    """The command could not be started."""
