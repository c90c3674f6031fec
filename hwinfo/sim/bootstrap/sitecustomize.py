"""Loaded by `hwinfo sim run` in the child Python: put the simulated NVML under pynvml.

Python imports `sitecustomize` at start-up from the first directory on sys.path that has
one; `hwinfo sim run` puts this directory first on PYTHONPATH. Whatever sitecustomize the
interpreter would otherwise have loaded (Debian ships one) still runs afterwards.
"""

import importlib.machinery
import importlib.util
import os
import sys

from hwinfo.sim import install_from_env

install_from_env()

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here]
)
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
