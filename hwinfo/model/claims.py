"""Claims of `hwinfo run`: which GPUs and MIG devices people hold for a command, and who waits.

A claim lives as long as the `hwinfo run` that made it: the kernel holds its lock, so a claim
whose process is gone (ended, killed) is not one, and is not listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwinfo.model.unixtime import UnixTime


@dataclass
class Request:
    """What a `hwinfo run` asked for."""

    gpus: int  # how many devices
    need_memory_bytes: int | None  # free memory each must have; None: any
    mig_profile: str | None  # only MIG devices of this profile ("1g.10gb")
    share: bool  # other users' processes on a device do not keep it from being handed out


@dataclass
class Claim:
    """Devices held for one command by one `hwinfo run`, for the command's lifetime."""

    # UUIDs as CUDA_VISIBLE_DEVICES takes them: GPU-… for whole GPUs, MIG-… for MIG devices.
    devices: list[str]
    # The owner of the claim, by name (the claim file's owner: what it says is not taken for
    # it); None where the uid has no name here.
    user: str | None
    uid: int
    pid: int  # of the `hwinfo run` that holds it, in its PID namespace
    since_seconds: UnixTime  # Unix time the claim was made
    name: str  # the command's program name
    command: str | None  # its whole command line, only when asked for (it can hold secrets)
    request: Request


@dataclass
class Waiter:
    """A `hwinfo run` waiting in line for devices."""

    position: int  # 1: the next in line
    user: str | None
    uid: int
    pid: int
    since_seconds: UnixTime  # Unix time it joined the line
    name: str
    command: str | None
    request: Request


@dataclass
class Claims:
    """The claims directory as read: live claims, the line of waiters, and what was refused."""

    directory: str
    present: bool  # False: no such directory (`hwinfo run` is not set up on this host)
    claims: list[Claim] = field(default_factory=list)
    waiters: list[Waiter] = field(default_factory=list)
    # Entries that are not claims, or not to be trusted (a link, another user's file under
    # a name not theirs, garbage): one line each, ignored.
    ignored: list[str] = field(default_factory=list)

    def holder_of(self, uuid: str | None) -> Claim | None:
        """The claim on a device, by its UUID; None: not claimed."""
        return next((c for c in self.claims if uuid is not None and uuid in c.devices), None)
