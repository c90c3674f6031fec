"""Deadlines and signals of the one-shot commands, on real subprocesses and a hung simulated NVML.

Every command must end soon after Ctrl-C or SIGTERM whatever it waits on (a hung NVML call,
a --watch refresh, a --from fetch), and must not wait on NVML longer than --nvml-timeout.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fixtures.machines import shared_tree
from fixtures.processes import nvml_hangs

from hwinfo import sim

HWINFO = [sys.executable, "-m", "hwinfo"]
SCENARIOS = Path(sim.__file__).parent / "scenarios"
# A hung call below lasts 10 minutes; a command that waited for it would meet the generous
# deadlines of these tests (a minute) first. Nothing here times how fast a command ends:
# its exit status says what ended it (the signal, --nvml-timeout), whatever the machine's load.
HANG_SECONDS = 600
ENDS_WITHIN = 60


def hang_scenario(tmp_path: Path, call: str = "nvmlDeviceGetPowerUsage", after_samples: int = 0) -> str:
    """cloud-t4 with one NVML call that hangs for a minute (from sample after_samples + 1)."""
    doc = json.loads((SCENARIOS / "cloud-t4.json").read_text())
    fault: dict[str, object] = {"call": call, "delay_seconds": HANG_SECONDS}
    if after_samples:
        fault["after_samples"] = after_samples
    doc["faults"] = [fault]
    path = tmp_path / "hang.json"
    path.write_text(json.dumps(doc))
    return str(path)


def fixture_root() -> list[str]:
    return ["--root", str(shared_tree("x86-2s-smt"))]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWINFO, *args], capture_output=True, text=True, timeout=ENDS_WITHIN,
                          check=False)


Ready = Callable[[subprocess.Popen[str], list[str]], bool]


def interrupt(args: list[str], signum: int, ready: Ready) -> subprocess.CompletedProcess[str]:
    """Start the command, send `signum` once ready(process, stdout lines so far) says it is
    where the test wants it; the result."""
    proc = subprocess.Popen([*HWINFO, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + ENDS_WITHIN
        while not ready(proc, lines):
            assert proc.poll() is None, "the command ended before the signal: nothing was tested"
            assert time.monotonic() < deadline, f"{args[0]} never got where the signal was due"
            time.sleep(0.05)
        proc.send_signal(signum)
        proc.wait(timeout=ENDS_WITHIN)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{args[0]} ignored {signal.Signals(signum).name}") from None
    finally:
        proc.kill()  # nothing if it has ended
        proc.wait()
        reader.join(ENDS_WITHIN)
    err = proc.stderr.read() if proc.stderr else ""
    return subprocess.CompletedProcess(proc.args, proc.returncode, "".join(lines), err)


def hung(proc: subprocess.Popen[str], lines: list[str]) -> bool:
    return nvml_hangs(proc.pid)


def watching(proc: subprocess.Popen[str], lines: list[str]) -> bool:
    """--watch has printed a document: past its start-up, in its refresh loop."""
    return bool(lines)


# --- --nvml-timeout ------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["nvmlInit", "nvmlDeviceGetPowerUsage"])
def test_check_is_unknown_when_nvml_does_not_answer(tmp_path: Path, call: str) -> None:
    result = run("check", "--simulate", hang_scenario(tmp_path, call), "--nvml-timeout", "1",
                 *fixture_root())
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout.splitlines()[0].startswith("HWINFO UNKNOWN - ")
    assert "NVML did not answer within 1 s" in result.stdout
    assert result.stderr == ""


def test_report_prints_what_it_has_and_says_nvml_did_not_answer(tmp_path: Path) -> None:
    result = run("report", "--simulate", hang_scenario(tmp_path), "--nvml-timeout", "1.5",
                 *fixture_root())
    assert result.returncode == 1 and result.stderr == ""
    text = result.stdout
    assert "\nCPU\n" in text and "2 sockets" in text and "\nMemory\n" in text
    gpu_section = text.split("\nGPUs\n", 1)[1]
    assert gpu_section.splitlines()[0] == "  not available: NVML did not answer within 1.5 s"
    doc = json.loads(run("report", "--format", "json", "--simulate", hang_scenario(tmp_path),
                         "--nvml-timeout", "1", *fixture_root()).stdout)
    (gpu,) = [s for s in doc["sources"] if s["source"] == "gpu"]
    assert gpu == {"source": "gpu", "state": "failed", "timestamp_seconds": None, "age_seconds": None,
                   "error": "NVML did not answer within 1 s"}
    assert doc["gpu"] is None and doc["cpu"] is not None


def test_export_writes_the_host_metrics_and_fails_when_nvml_does_not_answer(tmp_path: Path) -> None:
    textfile = tmp_path / "hwinfo.prom"
    result = run("export", "--textfile", str(textfile), "--simulate", hang_scenario(tmp_path),
                 "--nvml-timeout", "1", *fixture_root())
    assert result.returncode == 1
    assert result.stderr.strip() == "Error: gpu not read: NVML did not answer within 1 s"
    metrics = textfile.read_text()
    assert "\nhwinfo_memory_total_bytes " in metrics
    assert "\nhwinfo_gpu_temperature_celsius{" not in metrics


# --- signals --------------------------------------------------------------------------------


@pytest.mark.parametrize(("signum", "exit_code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("command", ["report", "export"])
def test_signal_ends_a_command_while_nvml_hangs(
    tmp_path: Path, command: str, signum: int, exit_code: int
) -> None:
    # `timeout 3 hwinfo report --simulate hang.json` must end at 3 s, not when NVML answers.
    extra = ["--textfile", str(tmp_path / "x.prom")] if command == "export" else []
    result = interrupt([command, "--simulate", hang_scenario(tmp_path), *extra], signum, hung)
    assert result.returncode == exit_code
    assert "Traceback" not in result.stderr and "Aborted" not in result.stderr
    assert not (tmp_path / "x.prom").exists()


def test_signal_ends_check_as_unknown(tmp_path: Path) -> None:
    result = interrupt(["check", "--simulate", hang_scenario(tmp_path), *fixture_root()],
                       signal.SIGTERM, hung)
    assert result.returncode == 3
    assert result.stdout == "HWINFO UNKNOWN - interrupted by SIGTERM\n"


def test_signal_ends_watch_during_a_hung_refresh_without_half_a_document(tmp_path: Path) -> None:
    # Refreshes in the first 2 s of scenario time answer; then one hangs in NVML (its deadline
    # is far off) until the signal.
    scenario = hang_scenario(tmp_path, after_samples=2)
    result = interrupt(["report", "--watch", "0.2", "--format", "json", "--simulate", scenario,
                        "--nvml-timeout", "120", *fixture_root()], signal.SIGINT,
                       lambda proc, lines: watching(proc, lines) and hung(proc, lines))
    assert result.returncode == 0 and "Traceback" not in result.stderr
    documents = [json.loads(line) for line in result.stdout.splitlines()]  # every line whole
    # Some refreshes before the hang (0.2 s apart in its first 2 s), none after it began.
    assert 1 <= len(documents) <= 2 / 0.2 + 1


def test_sigterm_ends_watch_with_143_and_ctrl_c_with_0(tmp_path: Path) -> None:
    """As the README says: Ctrl-C is how --watch ends (0); SIGTERM, from a service manager
    or kill, is reported as a shell reports it (143)."""
    for signum, exit_code in ((signal.SIGTERM, 143), (signal.SIGINT, 0)):
        result = interrupt(["report", "--watch", "0.2", "--format", "json",
                            "--simulate", "cloud-t4", *fixture_root()], signum, watching)
        assert result.returncode == exit_code and "Traceback" not in result.stderr


class SilentServer:
    """A TCP port that accepts connections and never answers: a hung daemon."""

    def __init__(self, server: socket.socket) -> None:
        self.server = server
        self.url = f"http://127.0.0.1:{server.getsockname()[1]}"
        self.held: list[socket.socket] = []
        server.setblocking(False)

    def asked(self, proc: subprocess.Popen[str], lines: list[str]) -> bool:
        """Whether a command has connected (and now waits for an answer)."""
        try:
            self.held.append(self.server.accept()[0])
        except BlockingIOError:
            return bool(self.held)
        return True


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        silent = SilentServer(server)
        yield silent
        for sock in silent.held:
            sock.close()


@pytest.mark.parametrize(("command", "flag"), [("report", "--from"), ("check", "--from"),
                                               ("usage", "--prometheus"), ("fleet", "--prometheus")])
def test_signal_ends_a_fetch(silent_server: SilentServer, command: str, flag: str) -> None:
    result = interrupt([command, flag, silent_server.url], signal.SIGTERM, silent_server.asked)
    assert result.returncode == (3 if command == "check" else 143)
    assert "Traceback" not in result.stderr


# Ctrl-C while the command line's modules are still being imported: the signal is sent from
# inside, the moment `click` starts to import, so the test does not race the start-up.
# It starts as a command started from a terminal does, SIGINT at Python's handler and not
# blocked: both are inherited across exec, and under the full suite a worker's child once
# ignored the signal (report ended 0, serve ran on).
_CTRL_C_WHILE_IMPORTING = """
import builtins, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
real_import = builtins.__import__
def importing(name, *args, **kwargs):
    if name == "click":
        os.kill(os.getpid(), signal.SIGINT)
    return real_import(name, *args, **kwargs)
builtins.__import__ = importing
sys.argv = ["hwinfo", *sys.argv[1:]]
from hwinfo.entry import main
main()
"""


@pytest.mark.parametrize("command", [["serve", "--port", "0", "--simulate", "dgx-h100"],
                                     ["report", "--simulate", "dgx-h100"]])
def test_ctrl_c_during_start_up_ends_quietly_with_130(command: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", _CTRL_C_WHILE_IMPORTING, *command],
                          capture_output=True, text=True, timeout=ENDS_WITHIN, check=False)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "Aborted" not in done.stderr, done.stderr
