"""Shared test helpers: fixture roots, the shared captures, and tools that CI must have."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
FIXTURE_ROOTS = REPO / "tests" / "fixtures" / "roots"
# Real nvidia-smi output from other projects' public test data (telegraf, netdata,
# nvidia_gpu_exporter), which is not ours to redistribute: it lives outside the repository,
# in the directory HWINFO_CAPTURES names, else in ../shared/captures beside the checkout.
CAPTURES = Path(os.environ.get("HWINFO_CAPTURES") or REPO.parent / "shared" / "captures")
XML_CAPTURES = sorted(CAPTURES.glob("*.xml"))  # nvidia-smi -q -x dumps
TEXT_CAPTURES = sorted((CAPTURES / "text").glob("*.txt"))  # whole text capture files
CAPTURE_FILES = [*XML_CAPTURES, *TEXT_CAPTURES]
NO_CAPTURES = (f"no nvidia-smi captures in {CAPTURES}: set HWINFO_CAPTURES=DIR or put them in "
               "../shared/captures")


def require_captures(*paths: Path | None) -> None:
    """Skip (fail under CI=true) unless there are captures and each of paths is one of them
    (None: a kind of capture the directory has none of)."""
    require(bool(CAPTURE_FILES), NO_CAPTURES)
    for path in paths:
        require(path is not None and path.is_file(),
                f"{path or 'no capture of the kind this test reads'} is not in {CAPTURES}")


def needs(paths: Sequence[Path]) -> pytest.MarkDecorator:
    """Marks a test that reads some of paths: it skips (fails under CI=true) without them."""
    return pytest.mark.captures(*([] if paths else [None]))


def each_capture(cases: Sequence[Any], width: int = 1) -> list[Any]:
    """Parameters, one per case (a capture's path or a pytest.param of width values); without
    any, one case that skips (fails under CI=true), not none, which pytest would hide."""
    params = [pytest.param(case, id=case.name) if isinstance(case, Path) else case
              for case in cases]
    return params or [pytest.param(*[None] * width, id="no-captures", marks=needs([]))]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "captures: the test reads the real nvidia-smi captures")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked `captures` skips, or fails under CI=true, before its fixtures run."""
    marker = item.get_closest_marker("captures")
    if marker is not None:
        require_captures(*marker.args)


def imported_capture(capture: Path, directory: Path) -> Path:
    """`hwinfo sim import` of a capture into directory: the scenario file's path."""
    scenario = directory / f"{capture.name}.json"
    subprocess.run([sys.executable, "-m", "hwinfo", "sim", "import", str(capture), "-o",
                    str(scenario)], check=True, capture_output=True, timeout=60)
    return scenario


# No per-example deadline, and no complaint that examples are slow to make: on a loaded
# machine either fails a correct test. A property that must hold in bounded time is
# checked in a process of its own under a generous deadline (tests/fuzz/test_fuzz_linear_time.py).
settings.register_profile("hwinfo", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hwinfo")


def usable_cpus() -> int:
    """The CPUs this process may run on, fewer where a CPU quota of its cgroup (v2) or of one
    above it says so: a container given 2 CPUs of a 64-core host."""
    cpus = len(os.sched_getaffinity(0))
    root = Path("/sys/fs/cgroup")
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines()
                   if line.startswith("0::"))
    except (OSError, StopIteration):
        return cpus
    group = root / own.lstrip("/")
    for directory in (group, *group.parents):
        if not directory.is_relative_to(root):
            break
        try:
            quota, period = (directory / "cpu.max").read_text().split()
            if quota != "max":
                cpus = min(cpus, math.ceil(int(quota) / int(period)))
        except (OSError, ValueError):
            continue  # no such file at the root, or not a quota
    return max(1, cpus)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject.toml): two workers per usable CPU, at most 8 (docs/testing.md).

    Most of a worker's time is spent waiting on processes (an engine's next evaluation, a
    daemon's next sample), so two per CPU overlap those waits, on a busy machine too; the
    CPUs are those this run may use, not the host's.
    """
    return min(8, 2 * usable_cpus())


# Parameters whose tests pytest-xdist runs apart from the rest of their file: each is a lab on
# a second engine (tests/deploy/ledger_stack.py's ENGINES) that takes a minute to fill.
APART = ("victoria-metrics",)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, except that a file's tests on another engine are a unit of their own,
    and the slowest units go first.

    The end-to-end ledger files run every test on Prometheus and on VictoriaMetrics, each
    behind a module-scoped lab. As one unit they were the suite's longest; split, the two labs
    fill on two workers at once. pytest-xdist hands out the files with the most tests first,
    which left the deploy tests (few tests, each waiting a minute on a real engine) to the
    end, one worker finishing a minute after the others.
    """
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    def slowness(scope: str) -> int:
        return 0 if scope.endswith(tuple(f"[{name}]" for name in APART)) else (
            1 if scope.startswith("tests/deploy/") else 2)

    class ByFileAndEngine(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            params = nodeid.partition("[")[2]  # the test's parameter ids, if any
            return next((f"{scope}[{name}]" for name in APART if name in params), scope)

        def _assign_work_unit(self, node: Any) -> None:
            if not getattr(self, "slowest_first", False):
                units = sorted(self.workqueue.items(), key=lambda unit: slowness(unit[0]))
                self.workqueue.clear()
                self.workqueue.update(units)
                self.slowest_first = True
            super()._assign_work_unit(node)

    return ByFileAndEngine(config, log)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(condition: bool, why: str) -> None:
    """Skip when a prerequisite is missing on a developer machine; fail under CI=true."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI=true and {why}")
    pytest.skip(why)


def require_tool(name: str) -> str:
    path = shutil.which(name)
    require(path is not None, f"{name} is not installed (the README's test command installs it)")
    assert path is not None
    return path


@pytest.fixture(scope="session", autouse=True)
def _private_simulated_drivers_of_this_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """Drivers of this worker's own, for what starts before a test's own (below): a
    module-scoped lab's daemons. Else they shared the host's default state directory, and
    a lab started while another run on this host simulated the same scenario joined its
    driver, scenario clock and all: a fault due 20 s in was already due, and a daemon whose
    first sample hung never became ready."""
    environment = pytest.MonkeyPatch()
    environment.setenv("HWINFO_SIM_STATE_DIR", str(tmp_path_factory.mktemp("sim-state-run")))
    yield
    environment.undo()


@pytest.fixture(autouse=True)
def _private_simulated_drivers(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated drivers load anew in each test: no scenario clock shared with other tests or
    with other test runs on this host (hwinfo/sim/driver_load.py)."""
    monkeypatch.setenv("HWINFO_SIM_STATE_DIR", str(tmp_path_factory.mktemp("sim-state")))


@pytest.fixture(autouse=True)
def _no_ledger_configuration(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger commands find no engine but the one a test names: not this machine's
    /etc/hwinfo/ledger.yml, the developer's own file, or their HWINFO_PROMETHEUS
    (hwinfo/ledger/config.py)."""
    nowhere = tmp_path_factory.mktemp("no-ledger-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(nowhere))
    monkeypatch.setenv("HWINFO_LEDGER_SYSTEM_CONFIG", str(nowhere / "system-ledger.yml"))
    monkeypatch.delenv("HWINFO_PROMETHEUS", raising=False)


@dataclass(frozen=True)
class Pki:
    """File names in one directory: a CA, certificates it signed, and a stranger's."""

    dir: Path
    ca: Path
    server_cert: Path  # CN=server-one, for 127.0.0.1 and localhost
    server_key: Path
    other_server_cert: Path  # CN=server-two, the same names: a rotated certificate
    other_server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # a self-signed client certificate the CA never saw
    stranger_key: Path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    openssl = require_tool("openssl")
    where = tmp_path_factory.mktemp("pki")

    def make(name: str, *extra: str) -> tuple[Path, Path]:
        cert, key = where / f"{name}.crt", where / f"{name}.key"
        subprocess.run(
            [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-days", "2", "-subj", f"/CN={name}", "-keyout", key, "-out", cert, *extra],
            check=True, capture_output=True,
        )  # fmt: skip
        return cert, key

    ca, ca_key = make("hwinfo-test-ca")
    signed = [
        "-CA",
        str(ca),
        "-CAkey",
        str(ca_key),
        "-addext",
        "basicConstraints=critical,CA:FALSE",
    ]
    server = [*signed, "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
    client = [*signed, "-addext", "extendedKeyUsage=clientAuth"]
    return Pki(
        where, ca, *make("server-one", *server), *make("server-two", *server),
        *make("client", *client), *make("stranger", "-addext", "extendedKeyUsage=clientAuth"),
    )  # fmt: skip
