"""What a daemon had judged of NVML's accounting buffers, kept across its restarts.

The driver keeps each GPU's accounting buffer while it stays loaded and accounting stays on,
whoever reads it. A daemon that starts with no record of what it had counted must take the
whole buffer as counted, so a short job that ended while it was down would be lost. With a
state directory (`hwinfo serve --state-dir`, the unit's StateDirectory=), the daemon writes
here, after each sample that changed it, how many entries of each pid it had judged per GPU;
a restarted daemon then counts the entries it never judged that ended after that moment.

Not kept: what the buffer dropped meanwhile (it holds the last `buffer_size` processes, 4,000
by default), and whatever a driver reload cleared (accounting is off after every load). A pid
that a later boot used again for a new short job is taken as judged: undercounted, never
counted twice. The file is hwinfo's own but is read as hostile all the same: a file that
cannot be used is named in one line, and the daemon starts as it would without one.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hwinfo import inputs
from hwinfo.logs import get_logger
from hwinfo.outputs import OutputError, write_atomically

if TYPE_CHECKING:
    from hwinfo.collect.gpu.collector import GpuCollector

log = get_logger("hwinfo.accounting")

FILE_NAME = "accounting.json"
_FORMAT = 1
# 64 GPUs of the largest buffer NVML allows would be more; 4,000 pids a GPU is about 60 KiB.
_LIMIT_BYTES = 8 * 1024 * 1024
_MAX_PID = 1 << 22  # the kernel's PID_MAX_LIMIT


@dataclass(frozen=True)
class Judged:
    """One GPU's accounting buffer as a daemon last judged it."""

    at: float  # Unix time of the sample: every entry that had ended by then was judged
    entries: Mapping[int, int]  # pid -> how many of the buffer's entries of that pid


def state_path(directory: str) -> str:
    return os.path.join(directory, FILE_NAME)


def dumps(gpus: Mapping[str, Judged]) -> bytes:
    document = {"format": _FORMAT, "gpus": {
        uuid: {"at": judged.at, "entries": sorted(judged.entries.items())}
        for uuid, judged in gpus.items()}}
    return json.dumps(document, separators=(",", ":")).encode()


def _judged(value: object, what: str) -> Judged:
    if not isinstance(value, dict) or set(value) != {"at", "entries"}:
        raise inputs.InputError(f"{what}: needs exactly `at` and `entries`")
    at, entries = value["at"], value["entries"]
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not 0 <= at < 1e11:
        raise inputs.InputError(f"{what}: `at` is not a Unix time: {inputs.shown(at)}")
    counts: dict[int, int] = {}
    for entry in entries if isinstance(entries, list) else [entries]:
        if not (isinstance(entry, list) and len(entry) == 2
                and all(type(n) is int and 0 < n <= _MAX_PID for n in entry)):
            raise inputs.InputError(f"{what}: an entry is not [pid, count]: {inputs.shown(entry)}")
        counts[entry[0]] = entry[1]
    return Judged(float(at), counts)


def _read(path: str) -> dict[str, Judged]:
    what = f"accounting state {path}"
    document = inputs.parse_json(inputs.read_bytes(path, what, _LIMIT_BYTES), what)
    if not isinstance(document, dict) or document.get("format") != _FORMAT:
        raise inputs.InputError(f"{what}: not an accounting state of format {_FORMAT}")
    gpus = document.get("gpus")
    if not isinstance(gpus, dict):
        raise inputs.InputError(f"{what}: no `gpus` object")
    return {str(uuid): _judged(value, inputs.member(what, uuid)) for uuid, value in gpus.items()}


def _untrusted(path: str) -> str | None:
    """Why the file may not be the daemon's own, or None. Another user who could write it
    decides what is counted: entries marked judged are never charged, and a file judging
    nothing recounts the whole buffer, charging users again for jobs already counted."""
    try:
        info = os.lstat(path)
    except OSError:
        return None  # no file: said, or not, by the read
    if not stat.S_ISREG(info.st_mode):
        return None  # the read names what it is
    if info.st_uid not in (0, os.geteuid()):
        return f"belongs to uid {info.st_uid}, not to this daemon's user"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by others than its owner"
    return None


def load(directory: str) -> dict[str, Judged]:
    """The GPUs judged by the last daemon; empty where there is no usable file (said once)."""
    path = state_path(directory)
    why = _untrusted(path)
    if why is not None:
        log.warning("accounting state %s %s: not used; short jobs that ended while hwinfo "
                    "was down are not counted", path, why)
        return {}
    try:
        return _read(path)
    except inputs.InputError as exc:
        # No file is the first start in this directory: nothing to say.
        if not isinstance(exc, inputs.NotReadable) or os.path.lexists(path):
            log.warning("%s; short jobs that ended while hwinfo was down are not counted", exc)
        return {}


class StateKeeper:
    """Writes the GPU collector's judged buffers after each sample that changed them.

    Called by the sampler, off the NVML thread: a slow disk never delays a GPU reading.
    """

    def __init__(self, directory: str, gpu: GpuCollector) -> None:
        self.path = state_path(directory)
        self.gpu = gpu
        self._written: Mapping[str, Judged] | None = None
        self._failing = False

    def save(self) -> None:
        judged = self.gpu.accounting_judged
        if judged is None or judged is self._written:
            return
        try:
            write_atomically(self.path, dumps(judged), f"accounting state {self.path}")
        except OutputError as exc:
            if not self._failing:  # once, not every sample
                log.warning("%s; a restart will not count what ended meanwhile", exc)
            self._failing = True
            return
        self._failing = False
        self._written = judged
