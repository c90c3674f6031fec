"""The installed pynvml binding, resolved once, for the GPU collector and the simulator.

Two distributions install a module named `pynvml`. NVIDIA's nvidia-ml-py (what hwinfo
requires) installs `pynvml.py`. The deprecated `pynvml` distribution (11.5.x, which older
gpustat and many notebooks pull in) installs a package of that name instead, shadowing it:
its `nvml` submodule is the binding, and its `__init__` copies only the public names, so the
binding's state (the loaded library, reference count, function-pointer cache) lives in the
submodule. `pynvml` here is whichever module holds the binding.

Bindings differ in what they wrap: nvidia-ml-py before 12.550 lacks the Blackwell constant
and the `_v2` process calls, before 12.560 NVMLLibraryMismatchError, the 11.5.x package the
clock-event names. A wrapper a binding lacks is a call it cannot make: `function()` makes it
raise FunctionNotFound, so it reads as "not available", as a driver that lacks the symbol
does; constants hwinfo needs are nvml.h's literal values where they are used. Every NVML call
goes through `function()`, so no binding fails hwinfo at import time. A binding too old for
the core facts (too_old()) is one line naming the package to change.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pynvml as _installed

pynvml: Any = (
    _installed.nvml if hasattr(_installed, "__path__") and hasattr(_installed, "nvml")
    else _installed
)

# Raised by pynvml's unversioned wrappers on drivers that lack the newest symbol (nvidia-ml-py
# 12.560 and later); empty where the binding has no such class.
LIBRARY_MISMATCH: tuple[type[BaseException], ...] = tuple(
    cls for cls in (getattr(pynvml, "NVMLLibraryMismatchError", None),) if cls is not None
)


def function(name: str) -> Callable[..., Any]:
    """pynvml's wrapper of this NVML function; where the binding has none, one that raises
    FunctionNotFound, so a binding that lacks a call reads like a driver that lacks it."""
    wrapper = getattr(pynvml, name, None)
    if wrapper is not None:
        return wrapper  # type: ignore[no-any-return]

    def missing(*_: Any, **__: Any) -> Any:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

    return missing


# What hwinfo cannot do without: start NVML, find the GPUs and name them.
CORE_FUNCTIONS = (
    "nvmlInit", "nvmlShutdown", "nvmlSystemGetDriverVersion", "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetUUID", "nvmlDeviceGetName",
    "nvmlDeviceGetMemoryInfo",
)


def distribution() -> tuple[str, str]:
    """(distribution, version) of the binding imported: the deprecated `pynvml` package or
    nvidia-ml-py's module, read from the directory it was imported from."""
    # A refusal's own: importlib.metadata costs 14 ms, which every start with a binding
    # hwinfo can use would pay for nothing.
    from importlib import metadata

    name = "pynvml" if hasattr(_installed, "__path__") else "nvidia-ml-py"
    where = os.path.dirname(os.path.realpath(_installed.__file__ or "."))
    if name == "pynvml":
        where = os.path.dirname(where)
    for dist in metadata.distributions(path=[where]):
        if (dist.metadata["Name"] or "").lower() == name:
            return name, dist.version
    return name, "of unknown version"


def too_old() -> str | None:
    """The line to show when this binding cannot give hwinfo's core facts; None when it can."""
    # Bindings before nvidia-ml-py 11.515 (and the pynvml package before 11.5) give every
    # name, UUID and version as bytes; convertStrBytes is the helper that came with str.
    if all(hasattr(pynvml, name) for name in CORE_FUNCTIONS) and hasattr(pynvml, "convertStrBytes"):
        return None
    name, version = distribution()
    fix = (
        "pip install 'pynvml==11.5.3', or pip uninstall pynvml (hwinfo needs nvidia-ml-py)"
        if name == "pynvml" else "pip install -U nvidia-ml-py"
    )
    return f"pynvml binding {version} ({name}) is older than hwinfo supports: {fix}"
