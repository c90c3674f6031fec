"""A command run as a child that stands in for its caller (`hwinfo sim run`, `hwinfo run`): stop
signals sent to the caller go on to it, and its exit status becomes the caller's."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence

# si_code of a signal the kernel sent: Ctrl-C at a terminal, which reached the child as well
# (its whole process group gets it), unlike a kill(2) aimed at the caller (SI_USER).
_SI_KERNEL = 0x80
# Only where a child's end could be missed (it ended before SIGCHLD was blocked) does the
# wait come back on its own.
_RECHECK_SECONDS = 1.0
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class StartError(Exception):
    """The command could not be started; one line for a person, and the exit status a shell
    gives for it (127: not found, 126: not executable)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def start(argv: Sequence[str], env: Mapping[str, str],
          die_with_caller: bool = False) -> subprocess.Popen[bytes]:
    """The command started, looked up on the child's own PATH. `die_with_caller`: the kernel
    kills it when the caller dies, however (prctl PR_SET_PDEATHSIG), so that nothing keeps
    running on what the caller held for it."""
    program = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
    if program is None:
        raise StartError(f"command not found: {argv[0]}", 127)
    # A hook between fork and exec can deadlock on a lock another thread held at the fork;
    # this one calls only prctl, getppid and kill, and `hwinfo run` has closed NVML first, so
    # its one other thread has nothing left to do but end.
    hook = _dying_with(os.getpid()) if die_with_caller else None
    try:
        return subprocess.Popen(list(argv), executable=program, env=dict(env),
                                preexec_fn=hook)  # noqa: PLW1509
    except FileNotFoundError:
        raise StartError(f"command not found: {argv[0]}", 127) from None
    except PermissionError:
        raise StartError(f"command is not executable: {argv[0]}", 126) from None


def _dying_with(caller: int) -> Callable[[], None]:
    """What the child runs before exec: ask for SIGKILL when its parent dies; die now if it
    already has (it was then adopted before the request). The C library is loaded here, in
    the caller, so that the child only calls it."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def setup() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != caller:
            os.kill(os.getpid(), signal.SIGKILL)

    return setup


def wait_forwarding(child: subprocess.Popen[bytes],
                    forwarded: Mapping[signal.Signals, signal.Signals]) -> int:
    """The child's exit status as a shell reports it (128 + the signal that ended it), passing
    each signal of `forwarded` sent to the caller on to the child, as the signal it maps to.

    The signals are taken with sigtimedwait, which says who sent each: no handler, so none
    can run between two steps of the wait, and Ctrl-C is not sent to the child twice."""
    waited = {*forwarded, signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        while (status := child.poll()) is None:
            info = signal.sigtimedwait(waited, _RECHECK_SECONDS)
            if info is not None and info.si_signo in forwarded and info.si_code != _SI_KERNEL:
                child.send_signal(forwarded[signal.Signals(info.si_signo)])
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    return 128 - status if status < 0 else status
