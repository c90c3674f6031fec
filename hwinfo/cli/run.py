"""`hwinfo run`: a GPU or MIG device for a command, in turn with the others on this host."""

from __future__ import annotations

import os
import pwd
import signal
import sys

import click

from hwinfo.child import StartError, start, wait_forwarding
from hwinfo.cli.options import Command, Parsed, nvml_timeout_option, simulate_option, simulated
from hwinfo.collect.claims import ClaimsError, directory_path
from hwinfo.collect.deadline import GuardedGpu, Stalled
from hwinfo.collect.errors import SetupError, StaleGpu
from hwinfo.collect.sources import open_gpu
from hwinfo.escape import printable
from hwinfo.ledger.units import duration_seconds, size_bytes
from hwinfo.model.claims import Request
from hwinfo.model.gpu import GpuSystem
from hwinfo.run.choose import Asker
from hwinfo.run.claimdir import Directory, Held
from hwinfo.run.wait import NeverFits, NoFit, Standing, obtain

# Exit status when nothing fits within --wait: sysexits.h's EX_TEMPFAIL, "try again later".
NO_FIT_EXIT = 75
# Signals sent to `hwinfo run` alone that go on to the command, as themselves. (Ctrl-C and
# the like reach the command from the terminal directly: child.py does not send them twice.)
FORWARDED = {s: s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                            signal.SIGUSR1, signal.SIGUSR2)}
CLAIM_VAR = "HWINFO_CLAIM"


@click.command(cls=Command, context_settings={"allow_interspersed_args": False,
                                              "ignore_unknown_options": True})
@click.option("--gpus", type=click.IntRange(1, 64), default=1, show_default=True,
              help="How many GPUs (or MIG devices) the command needs.")
@click.option("--need-memory", type=Parsed("size", size_bytes), metavar="SIZE",
              help="Free GPU memory each must have (40GiB, 512MiB); with --gpus 1 a MIG "
                   "device large enough will do too.")
@click.option("--mig-profile", metavar="NAME",
              help="A MIG device of this profile (1g.10gb, 3g.40gb); CUDA shows a process one.")
@click.option("--share", is_flag=True,
              help="Take devices other users' processes are on (never one another run claimed).")
@click.option("--wait", "wait", type=Parsed("duration", duration_seconds), default=None,
              metavar="DURATION",
              help="Wait in line this long (30s, 2h) when nothing fits now; default: not at all.")
@nvml_timeout_option(10.0, "past it, run gives up (exit status 1).")
@simulate_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(gpus: int, need_memory: int | None, mig_profile: str | None, share: bool,
        wait: float | None, nvml_timeout: float, simulate: str | None,
        command: tuple[str, ...]) -> None:
    """Run COMMAND on GPUs that fit now (or in turn) with CUDA_VISIBLE_DEVICES set to them.

    The devices stay claimed until the command ends; other `hwinfo run`s do not get them.
    Exit status: the command's; 75 when nothing fit within --wait; 1 when nothing here ever
    can; 126 or 127 when the command cannot be started.

    Example: hwinfo run --need-memory 40GiB --wait 2h -- python train.py
    """
    if mig_profile is not None and gpus > 1:
        raise click.UsageError("--mig-profile takes one MIG device: CUDA makes only one "
                               "visible to a process")
    request = Request(gpus, need_memory, mig_profile, share)
    try:
        directory = Directory(directory_path())
        gpu = open_gpu(simulated(simulate), nvml_timeout=nvml_timeout)
    except (ClaimsError, SetupError) as exc:
        raise click.ClickException(str(exc)) from None
    status = _Status()
    try:
        claim, got = obtain(directory, lambda: _read(gpu), Asker(request, _me()), command,
                            wait or 0.0, status.show)
    except NoFit as exc:
        status.done()
        click.echo(f"hwinfo run: {exc}", err=True)
        sys.exit(NO_FIT_EXIT)
    except (NeverFits, ClaimsError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        gpu.close()  # NVML's thread ends before the command is started
    status.done(", ".join(d.label for d in got))
    sys.exit(_start(command, simulate, [d.uuid for d in got],
                    os.path.join(directory.path, claim.name), claim))


def _read(gpu: GuardedGpu) -> GpuSystem:
    """A GPU snapshot; one saying why where NVML does not answer in time."""
    try:
        return gpu.collect()
    except (Stalled, StaleGpu) as exc:
        return GpuSystem("error", str(exc), None, None, None)


def _me() -> str:
    """This user as processes' owners are named: the account's name, else the number. Never
    None, which stands for an owner not known: a user without a name took devices whose
    processes' owners could not be named (another container's) for their own."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _start(command: tuple[str, ...], simulate: str | None, uuids: list[str], where: str,
           claim: Held) -> int:
    """The command's exit status, run with the devices and for as long as the claim is held."""
    if simulate:  # the command's own NVML clients see the same simulated machine
        # --simulate's own, as the machine it installed (options.simulated).
        from hwinfo.sim.run import child_environment

        env = child_environment(simulate)
    else:
        env = dict(os.environ)
    env.update(CUDA_VISIBLE_DEVICES=",".join(uuids), NVIDIA_VISIBLE_DEVICES=",".join(uuids))
    env[CLAIM_VAR] = where
    try:
        try:
            child = start(command, env, die_with_caller=True)
        except StartError as exc:
            click.echo(f"hwinfo run: {exc}", err=True)
            return exc.status
        return wait_forwarding(child, FORWARDED)
    finally:
        claim.release()


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns or 80
    except OSError:
        return 80


class _Status:
    """Where a waiter stands, on a terminal: one line, rewritten in place; elsewhere (a log)
    a line when it joins the line and one when its devices come."""

    def __init__(self) -> None:
        self.terminal = sys.stderr.isatty()
        self.shown = False

    def show(self, standing: Standing) -> None:
        line = (f"hwinfo run: {standing.position} of {standing.waiting} in line; "
                f"{standing.hindrance}")
        if self.terminal:  # within the width, or the next \r would not go back far enough
            sys.stderr.write("\r\x1b[K" + printable(line)[:_columns() - 1])
        elif not self.shown:
            sys.stderr.write(printable(line) + "\n")
        sys.stderr.flush()
        self.shown = True

    def done(self, got: str | None = None) -> None:
        if self.terminal and self.shown:
            sys.stderr.write("\r\x1b[K")
        if got is not None and (self.terminal or self.shown):
            sys.stderr.write(f"hwinfo run: {got}\n")
        sys.stderr.flush()
