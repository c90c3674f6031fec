"""The only door to NVML: starting it, and calls that turn NVML errors into "not available".

Everything here goes through the `pynvml` module (nvidia-ml-py), so the real driver and
the simulated library below pynvml are used the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from hwinfo.binding import LIBRARY_MISMATCH, function, pynvml, too_old

T = TypeVar("T")


class NvmlUnavailable(Exception):
    """NVML cannot be used at all; `status` is GpuSystem.status, str() the line for a person."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


class GpuLost(Exception):
    """The GPU fell off the bus (NVML_ERROR_GPU_IS_LOST) while it was being read."""


# nvmlInit failures -> (status, the line a person reads).
_INIT_FAILURES: tuple[tuple[type[BaseException], str, str], ...] = (
    (pynvml.NVMLError_LibraryNotFound, "no_library",
     "no NVIDIA driver installed (libnvidia-ml.so.1 not found)"),
    (pynvml.NVMLError_DriverNotLoaded, "no_driver", "the NVIDIA kernel driver is not loaded"),
    (pynvml.NVMLError_LibRmVersionMismatch, "driver_mismatch",
     "NVIDIA driver and library versions differ (driver updated without a reboot or module reload)"),
    (pynvml.NVMLError_NoPermission, "no_permission",
     "no permission to use the NVIDIA driver (device nodes /dev/nvidia* not accessible)"),
)


def start() -> None:
    """nvmlInit, with every failure turned into one NvmlUnavailable line."""
    if (line := too_old()) is not None:
        raise NvmlUnavailable("error", line)
    try:
        function("nvmlInit")()
    except pynvml.NVMLError as exc:
        for cls, status, message in _INIT_FAILURES:
            if isinstance(exc, cls):
                raise NvmlUnavailable(status, message) from None
        raise NvmlUnavailable("error", f"NVML failed to start: {exc}") from None
    except OSError as exc:  # a broken libnvidia-ml.so.1 (wrong architecture, truncated)
        raise NvmlUnavailable("no_library", f"the NVML library cannot be loaded: {exc}") from None


def stop() -> None:
    try:
        function("nvmlShutdown")()
    except pynvml.NVMLError:
        pass


def describe(exc: BaseException) -> str:
    """NVML's own text for an error ("Insufficient Permissions", "Timeout")."""
    if isinstance(exc, LIBRARY_MISMATCH):
        return "function not in this driver"
    return str(exc)


# Errors that mean "this GPU or driver does not have it": shown as "not available", no reason.
_ABSENT = (
    pynvml.NVMLError_NotSupported,
    pynvml.NVMLError_FunctionNotFound,
    # pynvml's unversioned wrappers raise this (not an NVMLError) on drivers that lack
    # the newest symbol.
    *LIBRARY_MISMATCH,
)


class Reader:
    """Calls NVML for one device: failures read as None, and any reason but "not supported" is kept."""

    __slots__ = ("unavailable",)

    def __init__(self) -> None:
        self.unavailable: dict[str, str] = {}

    def __call__(self, key: str, fn: Callable[..., T], *args: Any) -> T | None:
        try:
            return fn(*args)
        except pynvml.NVMLError_GpuIsLost:
            raise GpuLost from None
        except _ABSENT:
            return None
        except pynvml.NVMLError as exc:
            self.unavailable[key] = describe(exc)
            return None
        except UnicodeDecodeError as exc:
            # pynvml decodes a string NVML returns as strict UTF-8; a name the driver holds
            # in another encoding keeps its bytes, as psutil keeps a file name's (escape.py).
            return exc.object.decode("utf-8", "surrogateescape")  # type: ignore[return-value]


def exported_functions(names: Iterable[str]) -> list[str]:
    """Which of these C functions the loaded NVML library exports (NVML must be started)."""
    found = []
    for name in names:
        try:
            pynvml._nvmlGetFunctionPointer(name)
        except pynvml.NVMLError:  # FunctionNotFound; Uninitialized when NVML is not started
            continue
        found.append(name)
    return found
