"""`hwinfo sim run`: a third-party pynvml client (gpustat) runs unchanged on the simulator."""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import CAPTURE_FILES, each_capture, imported_capture, require

from hwinfo import sim

MIB = 1 << 20
HWINFO = [sys.executable, "-m", "hwinfo"]


def _builtin(name: str) -> dict[str, Any]:
    return json.loads((Path(sim.__file__).parent / "scenarios" / f"{name}.json").read_text())


def _both(scenario: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """gpustat's JSON and hwinfo's report, read in one `sim run --live-processes`: the
    same placeholder PIDs, which gpustat (a psutil client) needs to list processes."""
    require(importlib.util.find_spec("gpustat") is not None, "gpustat is not installed (test extra)")
    script = (f"{sys.executable} -m gpustat --json; echo '#'; "
              f"{sys.executable} -m hwinfo report --format json")
    run = subprocess.run([*HWINFO, "sim", "run", "--live-processes", scenario, "--", "sh", "-c",
                          script], capture_output=True, text=True, check=True, timeout=120)
    theirs, ours = run.stdout.split("\n#\n")
    assert run.stderr == ""
    return json.loads(theirs), json.loads(ours)["gpu"]


def _processes(gpu: dict[str, Any]) -> dict[int, int | None]:
    procs = list(gpu["processes"])
    if gpu["mig"]:
        procs += [p for dev in gpu["mig"]["devices"] for p in dev["processes"]]
    # A process outside our PID namespace has no placeholder: psutil clients drop it.
    return {p["pid"]: p["used_memory_bytes"] for p in procs if p["visible"]}


@pytest.mark.parametrize("name", ["dgx-a100-mig", "workstation-geforce", "cloud-t4"])
def test_gpustat_sees_what_hwinfo_reports(name: str) -> None:
    theirs, ours = _both(name)
    assert theirs["driver_version"] == ours["driver_version"]
    assert len(theirs["gpus"]) == len(ours["gpus"]) > 0
    for their, our in zip(theirs["gpus"], ours["gpus"]):
        assert (their["index"], their["name"], their["uuid"]) == (our["index"], our["name"], our["uuid"])
        assert their["memory.total"] == our["memory_total_bytes"] // MIB
        assert their["memory.used"] == our["memory_used_bytes"] // MIB
        util = our["utilization_gpu_ratio"]
        assert their["utilization.gpu"] == (None if util is None else round(util * 100))
        expected = {pid: None if mem is None else mem // MIB for pid, mem in _processes(our).items()}
        got = {p["pid"]: p["gpu_memory_usage"] for p in their["processes"]}
        assert got == expected


def _gpustat(scenario: str, *options: str) -> subprocess.CompletedProcess[str]:
    """gpustat through `sim run --live-processes`, bounded in time."""
    require(importlib.util.find_spec("gpustat") is not None, "gpustat is not installed (test extra)")
    return subprocess.run([*HWINFO, "sim", "run", "--live-processes", scenario, "--",
                           sys.executable, "-m", "gpustat", *options],
                          capture_output=True, text=True, check=False, timeout=60)


@pytest.mark.parametrize("name", [n for n, _ in sim.list_scenarios() if n != "no-driver"])
def test_gpustat_screen_prints_no_error(name: str) -> None:
    """gpustat's plain screen (what a user runs), not only --json: one line per GPU."""
    run = _gpustat(name)
    assert (run.returncode, run.stderr) == (0, "")
    gpus = _builtin(name)["gpus"]
    assert len(run.stdout.splitlines()) >= 1 + len(gpus)


@pytest.mark.parametrize("capture", each_capture(CAPTURE_FILES))
def test_gpustat_on_every_imported_capture(capture: Path, tmp_path: Path) -> None:
    scenario = str(imported_capture(capture, tmp_path))
    for options in ((), ("--json",)):
        run = _gpustat(scenario, *options)
        assert (run.returncode, run.stderr) == (0, ""), options
    assert json.loads(run.stdout)["gpus"]


def test_the_readme_s_gpustat_runs_from_the_venv_without_it_on_path(tmp_path: Path) -> None:
    """`.venv/bin/hwinfo sim run dgx-a100-mig -- gpustat`, as the README has it after its test
    command: gpustat is in the venv's bin/, which is not on PATH."""
    require(importlib.util.find_spec("gpustat") is not None, "gpustat is not installed (test extra)")
    scripts = Path(sysconfig.get_path("scripts"))
    hwinfo = scripts / "hwinfo"
    assert (scripts / "gpustat").is_file() and hwinfo.is_file()
    path = os.pathsep.join(d for d in ("/usr/local/bin", "/usr/bin", "/bin")
                           if not (Path(d) / "gpustat").exists())
    run = subprocess.run([str(hwinfo), "sim", "run", "dgx-a100-mig", "--", "gpustat", "--json"],
                         capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
                         env={**os.environ, "PATH": path})
    assert (run.returncode, run.stderr) == (0, "")
    assert len(json.loads(run.stdout)["gpus"]) == len(_builtin("dgx-a100-mig")["gpus"])


def test_bad_scenario_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": 1, "gpus": [{"board": "A100-SXM4-81GB"}]}')
    result = subprocess.run([*HWINFO, "sim", "run", str(broken), "--", "true"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "A100-SXM4-81GB" in result.stderr


def test_missing_command_is_one_line() -> None:
    result = subprocess.run([*HWINFO, "sim", "run", "cloud-t4", "--", "no-such-command-here"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == "Error: command not found: no-such-command-here"


def test_exit_status_is_the_childs() -> None:
    result = subprocess.run(
        [*HWINFO, "sim", "run", "cloud-t4", "--", sys.executable, "-c",
         "import pynvml, sys; pynvml.nvmlInit(); sys.exit(pynvml.nvmlDeviceGetCount() + 40)"],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 41, result.stderr


def test_the_child_keeps_its_own_packages(tmp_path: Path) -> None:
    """Only the bootstrap goes on the child's path: another interpreter with another
    nvidia-ml-py imports its own, and sees none of hwinfo's site-packages."""
    from test_bindings import _installed

    binding = _installed("floor")
    base = sys._base_executable  # the interpreter under this venv, without its site-packages
    code = ("import importlib.util, pynvml; pynvml.nvmlInit(); "
            "print(pynvml.__file__, pynvml.nvmlDeviceGetCount(), "
            "importlib.util.find_spec('psutil') is not None)")
    run = subprocess.run(
        [sys.executable, "-m", "hwinfo", "sim", "run", "cloud-t4", "--", base, "-c", code],
        check=False, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(binding)},
    )
    assert run.returncode == 0, run.stderr
    pynvml_file, count, psutil_seen = run.stdout.split()
    assert pynvml_file.startswith(str(binding)) and count == "1"
    alone = subprocess.run([base, "-c", ("import importlib.util; "
                            "print(importlib.util.find_spec('psutil') is not None)")],
                           check=True, capture_output=True, text=True).stdout.strip()
    assert psutil_seen == alone  # hwinfo's own site-packages (with psutil) stayed out


def test_a_python_without_pynvml_runs_silently_and_keeps_its_sitecustomize(
        tmp_path: Path) -> None:
    """A child that is no NVML client gets no "Error in sitecustomize", and the sitecustomize
    the bootstrap shadows (Debian ships one) still runs."""
    base = sys._base_executable  # without this venv's site-packages
    has_pynvml = subprocess.run([base, "-c", "import pynvml"], capture_output=True, check=False)
    require(has_pynvml.returncode != 0, f"{base} has a pynvml of its own")
    # Printed in the child only (hwinfo itself also starts with this PYTHONPATH).
    (tmp_path / "sitecustomize.py").write_text(
        "import os\nif os.environ.get('HWINFO_SIM_SCENARIO'):\n"
        "    print('shadowed sitecustomize ran')\n")
    run = subprocess.run([*HWINFO, "sim", "run", "cloud-t4", "--", base, "-c", "print(1)"],
                         capture_output=True, text=True, check=False, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.splitlines() == ["shadowed sitecustomize ran", "1"]


LIST_PROCESSES = (
    "import json, psutil, pynvml; pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0); "
    "pids = [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]; "
    "print(json.dumps({p: [psutil.Process(p).name(), psutil.Process(p).cmdline()] "
    "for p in pids}))"
)


def test_placeholders_show_the_scenario_s_command_and_end_with_the_run() -> None:
    run = subprocess.run([*HWINFO, "sim", "run", "--live-processes", "cloud-t4", "--",
                          sys.executable, "-c", LIST_PROCESSES],
                         capture_output=True, text=True, check=True, timeout=60)
    assert run.stderr == ""  # no notes about users: placeholders run as us unless we are root
    shown = {int(pid): (name, tuple(argv)) for pid, (name, argv) in json.loads(run.stdout).items()}
    commands = [p["command"] for p in _builtin("cloud-t4")["gpus"][0]["processes"]]
    assert sorted(shown.values()) == sorted(
        (Path(c.split()[0]).name[:15], tuple(c.split())) for c in commands
    )
    assert not any(psutil.pid_exists(pid) for pid in shown)


def test_placeholders_show_names_that_are_not_utf8_as_their_bytes(tmp_path: Path) -> None:
    """A scenario spells a Latin-1 or EUC-KR name's bytes as lone surrogates; the placeholder
    shows those bytes, as a process of a Korean or European lab would."""
    scenario = tmp_path / "foreign.json"
    scenario.write_text(json.dumps({"format": 1, "gpus": [{"board": "T4", "processes": [
        {"pid": 1, "used_memory_mib": 64, "command": "/opt/caf\udce9/\udcc7\udcd1 --x"}]}]}))
    run = subprocess.run([*HWINFO, "sim", "run", "--live-processes", str(scenario), "--",
                          sys.executable, "-c", LIST_PROCESSES],
                         capture_output=True, check=True, timeout=60)
    ((name, argv),) = json.loads(run.stdout).values()
    assert (name, argv) == ("\udcc7\udcd1", ["/opt/caf\udce9/\udcc7\udcd1", "--x"])


def test_more_processes_than_placeholders_are_refused_in_one_line(tmp_path: Path) -> None:
    """The scenario reader takes 50,000 processes; --live-processes starts at most
    MAX_LIVE_PROCESSES, and refuses more before it starts anything."""
    from hwinfo.sim.live import MAX_LIVE_PROCESSES

    scenario = tmp_path / "crowded.json"
    scenario.write_text(json.dumps({"format": 1, "gpus": [{"board": "T4", "processes": [
        {"pid": 1000 + n, "used_memory_mib": 1} for n in range(MAX_LIVE_PROCESSES + 1)]}]}))
    ran = tmp_path / "ran"
    run = subprocess.run([*HWINFO, "sim", "run", "--live-processes", str(scenario), "--",
                          "touch", str(ran)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TMPDIR": str(tmp_path)}, check=False)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.strip().count("\n") == 0
    assert f"{MAX_LIVE_PROCESSES + 1} visible processes" in run.stderr
    assert f"at most {MAX_LIVE_PROCESSES}" in run.stderr
    assert not ran.exists() and list(tmp_path.glob("hwinfo-live-*")) == []


def test_placeholders_die_with_a_killed_run() -> None:
    parent = subprocess.Popen([*HWINFO, "sim", "run", "--live-processes", "cloud-t4", "--",
                               "sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        placeholders: list[psutil.Process] = []
        while time.monotonic() < deadline and not placeholders:
            hosts = [c for c in psutil.Process(parent.pid).children()
                     if "hwinfo-live-placeholders" in c.cmdline()]
            placeholders = [*hosts, *(c for h in hosts for c in h.children())]
            time.sleep(0.05)
        assert placeholders, "no placeholder process started"
        parent.kill()  # SIGKILL: no cleanup code runs in hwinfo sim run
        parent.wait()
        _, alive = psutil.wait_procs(placeholders, timeout=60)
        assert alive == []
    finally:
        if parent.poll() is None:
            parent.kill()


@pytest.mark.parametrize(("signum", "exit_code"), [
    (signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGINT, 128 + signal.SIGINT),
    (signal.SIGHUP, 128 + signal.SIGTERM),  # sent on as SIGTERM: to a daemon SIGHUP is reload
])
def test_a_stop_signal_ends_the_child_then_cleans_up(tmp_path: Path, signum: int,
                                                     exit_code: int) -> None:
    """A stop signal sent to `hwinfo sim run` alone (kill, not Ctrl-C at a terminal) reaches
    the child, and the run then removes its placeholders and their scenario copy, as after
    a normal end."""
    parent = subprocess.Popen([*HWINFO, "sim", "run", "--live-processes", "cloud-t4", "--",
                               "sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env={**os.environ, "TMPDIR": str(tmp_path)}, text=True)
    try:
        deadline = time.monotonic() + 60
        children: list[psutil.Process] = []
        while time.monotonic() < deadline and not children:
            children = [c for c in psutil.Process(parent.pid).children() if c.name() == "sleep"]
            time.sleep(0.05)
        assert children and list(tmp_path.glob("hwinfo-live-*")), "no placeholder run started"
        parent.send_signal(signum)
        assert parent.wait(timeout=60) == exit_code  # the child's end, as a shell says it
        assert not children[0].is_running()
        assert list(tmp_path.glob("hwinfo-live-*")) == []
        assert "Traceback" not in (parent.stderr.read() if parent.stderr else "")
    finally:
        if parent.poll() is None:
            parent.kill()


# Counts the SIGINTs it gets until a SIGTERM comes. The test has the SIGTERM sent on by the
# run after the terminal's SIGINT reached both: the run takes its signals in order (the
# lower number first) and sends them on in that order, so a SIGINT it sent on comes first.
_COUNT_SIGINTS = """
import signal, sys
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
def end(*_):
    print("SIGINTs", len(got), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, end)
print("ready", flush=True)
while not got:
    signal.pause()
print("interrupted", flush=True)
while True:
    signal.pause()
"""


def test_ctrl_c_at_a_terminal_reaches_the_child_once() -> None:
    """The terminal sends Ctrl-C's SIGINT to the run and its child alike: the run must not
    send the child a second one (a second Ctrl-C can mean "stop cleaning up" to it)."""
    import fcntl
    import termios

    master, slave = os.openpty()

    def own_terminal() -> None:  # a session whose controlling terminal is the pty
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    run = subprocess.Popen([*HWINFO, "sim", "run", "cloud-t4", "--", sys.executable, "-c",
                            _COUNT_SIGINTS], stdin=slave, stdout=slave, stderr=slave,
                           preexec_fn=own_terminal)  # noqa: PLW1509 - no threads here
    os.close(slave)

    def read_until(marker: bytes, output: bytes) -> bytes:
        deadline = time.monotonic() + 30
        while marker not in output and select.select([master], [], [],
                                                     max(0, deadline - time.monotonic()))[0]:
            output += os.read(master, 4096)
        return output

    try:
        assert b"ready" in read_until(b"ready", b"")
        os.write(master, b"\x03")  # Ctrl-C
        assert b"interrupted" in read_until(b"interrupted", b"")
        run.send_signal(signal.SIGTERM)  # to the run alone, which sends it on
        output = read_until(b"SIGINTs", b"")
        output = read_until(b"\n", output[output.index(b"SIGINTs"):])  # the whole line
        assert run.wait(timeout=60) == 0
        assert b"SIGINTs 1" in output, output
    finally:
        if run.poll() is None:
            run.kill()
        os.close(master)
