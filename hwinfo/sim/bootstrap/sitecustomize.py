"""Loaded by `hwinfo sim run` in the child Python: put the simulated NVML under pynvml.

Python imports `sitecustomize` at start-up from the first directory on sys.path that has
one; `hwinfo sim run` puts this directory first on PYTHONPATH. Whatever sitecustomize the
interpreter would otherwise have loaded (Debian ships one) still runs afterwards, whatever
happens here. A Python without a pynvml binding (any program that is not an NVML client) is
left alone, silently: there is nothing to simulate under.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _install() -> None:
    """Load hwinfo from its own directory and put the scenario under the client's pynvml."""
    if importlib.util.find_spec("pynvml") is None:
        return
    # hwinfo is loaded from its own directory, named by `hwinfo sim run`: putting its parent
    # (a site-packages) on the path would hand the client hwinfo's pynvml, psutil and the rest.
    package = os.environ.get("HWINFO_SIM_PACKAGE")
    if package and "hwinfo" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "hwinfo", os.path.join(package, "__init__.py"), submodule_search_locations=[package]
        )
        if spec is not None and spec.loader is not None:
            sys.modules["hwinfo"] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(sys.modules["hwinfo"])

    from hwinfo.sim import install_from_env  # after hwinfo is findable

    install_from_env()


def _chain() -> None:
    """Run the sitecustomize this one shadows, as the interpreter would have."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != here]
    )
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


try:
    _install()
except Exception as exc:  # noqa: BLE001 - a client must start even if the simulator cannot
    # One line, not Python's "Error in sitecustomize" traceback: the client then runs on
    # whatever library it finds.
    print(f"hwinfo sim: simulator not installed in this Python: {exc}", file=sys.stderr)
finally:
    _chain()
