"""Critical XID events, heard on a thread of their own and tallied per GPU and code.

NVML has no history of XIDs: an event reaches only event sets registered before it
happens, so the daemon registers every GPU as soon as it sees it and listens for as long
as it runs. (nvml.h: events are registered on the physical GPU, not on MIG devices; the
event says which GPU/compute instance it was, or 0xFFFFFFFF when it cannot tell.)
"""

from __future__ import annotations

import ctypes
import threading
import time
from typing import Any

from hwinfo.binding import function, pynvml
from hwinfo.logs import get_logger
from hwinfo.model.gpu import XidErrors

# nvmlEventTypeXidCriticalError (nvml.h), literal: not every binding names it.
XID_CRITICAL_ERROR = 0x8

log = get_logger("hwinfo.xid")

_UNATTRIBUTED = 0xFFFFFFFF
_WAIT_MS = 500  # how long one wait blocks: also how soon close() takes effect


def _handle_key(handle: Any) -> int | None:
    """The opaque handle value, to map an event's device back to the GPU it came from."""
    return ctypes.cast(handle, ctypes.c_void_p).value


def _instance(value: int) -> int | None:
    return None if value == _UNATTRIBUTED else value


class XidListener:
    """One event set for every GPU; a thread waits on it and counts what arrives."""

    def __init__(self) -> None:
        self._set = function("nvmlEventSetCreate")()
        self._uuid_of: dict[int, str] = {}  # handle value -> GPU UUID
        self._tally: dict[str, dict[int, XidErrors]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hwinfo-xid", daemon=True)
        self._thread.start()

    def register(self, uuid: str, handle: Any) -> None:
        """Listen to this GPU too (once per GPU; a GPU that cannot be registered is retried)."""
        key = _handle_key(handle)
        if key is None or self._uuid_of.get(key) == uuid:
            return
        try:
            function("nvmlDeviceRegisterEvents")(handle, XID_CRITICAL_ERROR, self._set)
        except pynvml.NVMLError as exc:
            # NotSupported on some boards and vGPU guests; others are worth a line in the log.
            if not isinstance(exc, pynvml.NVMLError_NotSupported):
                log.warning("cannot listen for XID events on %s: %s", uuid, exc)
            return
        with self._lock:
            self._uuid_of[key] = uuid

    def errors(self, uuid: str) -> list[XidErrors]:
        """The XIDs counted for a GPU so far, by code (copies: the tally keeps changing)."""
        with self._lock:
            return [
                XidErrors(e.xid, e.count, e.last_timestamp_seconds, e.gpu_instance_id,
                          e.compute_instance_id)
                for e in sorted(self._tally.get(uuid, {}).values(), key=lambda e: e.xid)
            ]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=_WAIT_MS / 1000 * 4)
        if not self._thread.is_alive():
            try:
                function("nvmlEventSetFree")(self._set)
            except pynvml.NVMLError:
                pass

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = function("nvmlEventSetWait")(self._set, _WAIT_MS)
            except pynvml.NVMLError_Timeout:
                continue
            except pynvml.NVMLError as exc:
                # A lost GPU or a driver in trouble: keep listening, without spinning.
                log.debug("XID wait: %s", exc)
                self._stop.wait(1.0)
                continue
            if data.eventType & XID_CRITICAL_ERROR:
                self._count(data)

    def _count(self, data: Any) -> None:
        with self._lock:
            uuid = self._uuid_of.get(_handle_key(data.device))
            if uuid is None:
                return
            xid = int(data.eventData)
            known = self._tally.setdefault(uuid, {}).get(xid)
            now = time.time()
            gi, ci = _instance(data.gpuInstanceId), _instance(data.computeInstanceId)
            if known is None:
                self._tally[uuid][xid] = XidErrors(xid, 1, now, gi, ci)
            else:
                known.count += 1
                known.last_timestamp_seconds = now
                known.gpu_instance_id, known.compute_instance_id = gi, ci
        log.warning("XID %d on GPU %s", xid, uuid)
