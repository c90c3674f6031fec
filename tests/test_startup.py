"""What a fresh `hwinfo report` imports: each heavy dependency stays with what needs it.

The imports left inside functions (docs/architecture.md, "Imports") are where a command's
heavy dependency is its own: the simulator for --simulate, an HTTP client for --from, PyYAML
for a YAML file, the GPU readers and psutil once NVML has started. Moved to a module's top,
each would cost every report its import; this reads the modules a real report loaded.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

# Runs the installed entry point as the `hwinfo` script does; names every module loaded at exit.
_REPORT = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + repr(sorted(sys.modules)) + "\\n"))
sys.argv = ["hwinfo", *sys.argv[1:]]
from hwinfo.entry import main
main()
"""
# Never a plain report's, driver or not.
NOT_A_REPORT_S = frozenset((
    "hwinfo.sim",  # --simulate
    "hwinfo.collect.remote", "http.client", "ssl",  # --from
    "yaml",  # a YAML file (thresholds, web config, ledger.yml, prices)
    "importlib.metadata",  # naming a pynvml binding too old to use
    "hwinfo.exporter", "prometheus_client", "h11",  # hwinfo serve
    "hwinfo.ledger",  # the ledger commands
))
# A started NVML's own.
NVML_S = frozenset(("hwinfo.collect.gpu.session", "psutil"))


def _none_of(names: frozenset[str], modules: set[str]) -> None:
    loaded = sorted(modules & names)
    assert not loaded, f"imported: {loaded}"


def _modules(*options: str) -> tuple[dict, set[str]]:
    done = subprocess.run([sys.executable, "-c", _REPORT, "report", "--format", "json", *options],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (0, 1), done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    return json.loads(done.stdout), set(ast.literal_eval(line.removeprefix("MODULES ")))


def test_a_report_of_this_machine_imports_none_of_the_other_commands_dependencies() -> None:
    report, modules = _modules()
    _none_of(NOT_A_REPORT_S, modules)
    if Path("/proc/cpuinfo").is_file():  # py-cpuinfo stands in only where there is none
        assert "cpuinfo" not in modules
    if report["gpu"]["status"] != "ok":  # no driver, as on most login nodes
        _none_of(NVML_S, modules)


def test_a_simulated_report_starts_nvml_but_needs_no_more() -> None:
    report, modules = _modules("--simulate", "dgx-a100-mig")
    assert report["gpu"]["status"] == "ok"
    assert NVML_S | {"hwinfo.sim"} <= modules
    _none_of(NOT_A_REPORT_S - {"hwinfo.sim"}, modules)
