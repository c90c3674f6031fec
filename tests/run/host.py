"""A simulated host for `hwinfo run` tests: a scenario, a claims directory, and runs of
tests/run/holder.py whose every step the test waits on as an event (a file, a ticket)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HOLDER = Path(__file__).with_name("holder.py")
# Only against hangs: every wait ends on its event long before on a loaded machine.
PATIENCE = 300.0


def eight_idle_h100s() -> dict[str, Any]:
    return {"format": 1, "description": "8 idle H100s",
            "gpus": [{"board": "H100-SXM5-80GB", "pci_bus_id": f"00000000:{0x18 + i:02X}:00.0",
                      "processes": []} for i in range(8)]}


def a100_in_mig_mode() -> dict[str, Any]:
    """One A100 cut into a 3g.40gb and four 1g.10gb, nobody on them."""
    instances = [{"profile": "3g.40gb", "start": 4, "id": 1}] + [
        {"profile": "1g.10gb", "start": n, "id": 9 + n} for n in range(4)]
    return {"format": 1, "description": "an idle A100 in MIG mode",
            "gpus": [{"board": "A100-SXM4-80GB", "pci_bus_id": "00000000:07:00.0",
                      "mig": {"enabled": True, "gpu_instances": instances},
                      "processes": []}]}


def nameless_uid() -> int:
    """A uid no account has: its processes and files are named by the number alone."""
    for uid in range(54321, 65534):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise AssertionError("every uid from 54321 has an account")


def wait_for(what: str, check: Callable[[], Any], patience: float = PATIENCE) -> Any:
    give_up = time.monotonic() + patience
    while not (found := check()):
        if time.monotonic() > give_up:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


class Host:
    """The directories of one simulated host, readable by every user (the two-user test)."""

    def __init__(self, root: Path, scenario: dict[str, Any]) -> None:
        self.root = root
        self.claims = root / "claims"
        self.work = root / "work"
        self.scenario = root / "scenario.json"
        self.scenario.write_text(json.dumps(scenario))
        self.claims.mkdir()
        for path in (self.claims, self.work, self.work / "locks", self.work / "started",
                     self.work / "release", self.work / "logs"):
            path.mkdir(exist_ok=True)
            path.chmod(0o1777)
        # Not sticky: there, fs.protected_regular keeps O_CREAT off another user's lock file.
        (self.work / "locks").chmod(0o777)
        self.runs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "HWINFO_CLAIMS_DIR": str(self.claims)}

    def run(self, ident: str, *options: str, hold: str = "release", wait: str | None = "10m",
            prefix: Sequence[str] = (), env: dict[str, str] | None = None,
            python: str = sys.executable) -> subprocess.Popen[bytes]:
        """`hwinfo run` of holder.py (run by `python`) as ID, started now; its output in
        work/logs/ID."""
        waiting = ["--wait", wait] if wait else []
        with (self.work / "logs" / ident).open("wb") as log:
            proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "hwinfo", "run", "--simulate", str(self.scenario),
                 *waiting, *options, "--", python, str(HOLDER), str(self.work), ident,
                 hold], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env or self.env)
        self.runs[ident] = proc
        return proc

    def log(self, ident: str) -> str:
        return (self.work / "logs" / ident).read_text()

    def started(self, ident: str) -> dict[str, Any]:
        """What holder.py ID wrote when it started, once it has."""
        path = self.work / "started" / ident
        proc = self.runs[ident]

        def begun() -> bool:
            if path.exists():
                return True
            if proc.poll() is not None and not path.exists():
                raise AssertionError(f"{ident} ended with {proc.returncode} before starting: "
                                     f"{self.log(ident)}")
            return False

        wait_for(f"{ident} to start", begun)
        return json.loads(path.read_text())

    def has_started(self, ident: str) -> bool:
        return (self.work / "started" / ident).exists()

    def release(self, ident: str) -> None:
        (self.work / "release" / ident).touch()

    def in_line(self, proc: subprocess.Popen[bytes]) -> bool:
        """Whether this run's ticket is in the claims directory."""
        return any(p.name.split(".")[1] == str(proc.pid) and p.name.endswith(".wait")
                   for p in self.claims.iterdir())

    def ended(self, proc: subprocess.Popen[bytes]) -> int:
        return proc.wait(timeout=PATIENCE)

    def violations(self) -> str:
        path = self.work / "violations"
        return path.read_text() if path.exists() else ""

    def stop_all(self) -> None:
        """Every run still going, ended by its PID."""
        for proc in self.runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=PATIENCE)


@contextmanager
def simulated_host(scenario: dict[str, Any]) -> Iterator[Host]:
    """A host in a fresh directory under /tmp that any user can reach (a test's tmp_path is
    private to root)."""
    root = Path(tempfile.mkdtemp(prefix="hwinfo-run-"))
    root.chmod(0o755)
    host = Host(root, scenario)
    try:
        yield host
    finally:
        host.stop_all()
        shutil.rmtree(root, ignore_errors=True)
