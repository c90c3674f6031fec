"""Loaded by `hwinfo sim run` in the child Python: put the simulated NVML under pynvml.

Python imports `sitecustomize` at start-up from the first directory on sys.path that has
one; `hwinfo sim run` puts this directory first on PYTHONPATH. Whatever sitecustomize the
interpreter would otherwise have loaded (Debian ships one) still runs afterwards.
"""

import importlib.machinery
import importlib.util
import os
import sys

# hwinfo is loaded from its own directory, named by `hwinfo sim run`: putting its parent
# (a site-packages) on the path would hand the client hwinfo's pynvml, psutil and the rest.
_package = os.environ.get("HWINFO_SIM_PACKAGE")
if _package and "hwinfo" not in sys.modules:
    _hwinfo = importlib.util.spec_from_file_location(
        "hwinfo", os.path.join(_package, "__init__.py"), submodule_search_locations=[_package]
    )
    if _hwinfo is not None and _hwinfo.loader is not None:
        sys.modules["hwinfo"] = importlib.util.module_from_spec(_hwinfo)
        _hwinfo.loader.exec_module(sys.modules["hwinfo"])

from hwinfo.sim import install_from_env  # after hwinfo is findable

install_from_env()

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here]
)
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
