"""The `hwinfo` command as a user runs it: a fresh process, real output, real exit codes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

import hwinfo

HWINFO = [sys.executable, "-m", "hwinfo"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWINFO, *args], capture_output=True, text=True, env=env, timeout=60, check=False)


def run_in_pty(*args: str, extra_env: dict[str, str] | None = None) -> str:
    """Output of the command on a real terminal (where colour is allowed)."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | (extra_env or {})
    main, child = pty.openpty()
    proc = subprocess.Popen([*HWINFO, *args], stdout=child, stderr=child, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode()


def test_version() -> None:
    assert run("--version").stdout.strip() == f"hwinfo, version {hwinfo.__version__}"


def test_json_report_of_this_machine() -> None:
    result = run("report", "--format", "json", "--no-gpu")
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    assert doc["cpu"]["logical_cpus"] == os.cpu_count()
    assert doc["gpu"] is None and doc["errors"] == []


def test_text_report_has_every_section_on_the_simulator() -> None:
    text = run("report", "--simulate", "dgx-a100-mig").stdout
    for heading in ("CPU", "Memory", "GPUs (8)", "GPU 7  NVIDIA A100-SXM4-80GB", "GPU users"):
        assert f"\n{heading}\n" in text
    assert "\x1b[" not in text  # a pipe never gets colour


def test_no_processes_leaves_out_processes_and_users() -> None:
    full = run("report", "--simulate", "dgx-a100-mig")
    bare = run("report", "--simulate", "dgx-a100-mig", "--no-processes")
    assert (full.returncode, bare.returncode) == (0, 0), bare.stderr
    assert "\nGPU users\n" in full.stdout and "Processes" in full.stdout
    assert "Processes" not in bare.stdout and "GPU users" not in bare.stdout
    assert "\nGPU 7  NVIDIA A100-SXM4-80GB\n" in bare.stdout  # the rest of the report is there


def test_full_command_only_on_request() -> None:
    plain = json.loads(run("report", "--format", "json", "--simulate", "cloud-t4").stdout)
    full = json.loads(run("report", "--format", "json", "--simulate", "cloud-t4", "--full-command").stdout)
    assert plain["gpu"]["gpus"][0]["processes"][0]["command"] is None
    assert " " in full["gpu"]["gpus"][0]["processes"][0]["command"]


def test_colour_on_a_terminal_unless_told_not_to() -> None:
    assert "\x1b[1m" in run_in_pty("report", "--no-gpu")
    assert "\x1b[" not in run_in_pty("report", "--no-gpu", "--no-color")
    assert "\x1b[" not in run_in_pty("report", "--no-gpu", extra_env={"NO_COLOR": "1"})


def test_fixture_root_report() -> None:
    # tests/fixtures/machines.py writes the tree; the CLI reads it like a chroot.
    sys.path.insert(0, str(Path(__file__).parent))
    from fixtures.machines import shared_tree

    text = run("report", "--no-gpu", "--root", str(shared_tree("x86-2s-smt"))).stdout
    assert "2 sockets" in text and "AMX-TILE" in text


# Exit statuses (hwinfo/cli/options.py): 2 when the command line is wrong in itself, 1 when
# it is well-formed but what it names cannot be used.
USAGE, RUNTIME = 2, 1
NOT_A_DIR = str(Path(__file__))  # a file where a directory is wanted
URL = "http://127.0.0.1:1"


@pytest.mark.parametrize(
    ("args", "exit_code", "says"),
    [
        (("report", "--format", "xml"), USAGE, "'xml' is not one of 'text', 'json'"),
        (("report", "--bogus"), USAGE, "No such option '--bogus'"),
        (("report", "--watch", "0"), USAGE, "--watch"),
        (("report", "--watch", "nan"), USAGE, "'nan' is not a finite number"),
        (("report", "--watch", "inf"), USAGE, "'inf' is not a finite number"),
        (("report", "--nvml-timeout=-inf"), USAGE, "'-inf' is not a finite number"),
        (("report", "--watch", "1e9"), USAGE, "1e+09 is not between 0.1 and 86400 seconds"),
        (("report", "--watch", "soon"), USAGE, "'soon' is not a number of seconds"),
        (("report", "--nvml-timeout", "nan"), USAGE, "--nvml-timeout"),
        (("report", "--nvml-timeout", "inf"), USAGE, "'inf' is not a finite number"),
        (("report", "--nvml-timeout", "0"), USAGE, "0 is not between 0.1 and 3600 seconds"),
        (("report", "--simulate", ""), USAGE, "--simulate needs a value, not an empty string"),
        (("report", "--from", ""), USAGE, "--from needs a value, not an empty string"),
        (("report", "--root", ""), USAGE, "--root needs a value, not an empty string"),
        (("report", "--root", " "), USAGE, "--root needs a value, not an empty string"),
        (("report", "--from", URL, "--simulate", "cloud-t4"), USAGE, "--from cannot be used with --simulate"),
        (("report", "--from", URL, "--root", "/"), USAGE, "--from cannot be used with --root"),
        (("report", "--from", URL, "--no-gpu"), USAGE, "--from cannot be used with --no-gpu"),
        (("report", "--from", URL, "--full-command"), USAGE, "--from cannot be used with --full-command"),
        (("report", "--from", URL, "--no-processes"), USAGE, "--from cannot be used with --no-processes"),
        (("report", "--from", URL, "--nvml-timeout", "3"), USAGE, "--from cannot be used with --nvml-timeout"),
        (("report", "--ca-file", NOT_A_DIR), USAGE, "--ca-file needs --from"),
        (("report", "--simulate", "cloud-t4", "--no-gpu"), USAGE, "--no-gpu cannot be used with --simulate"),
        (("report", "--no-gpu", "--nvml-timeout", "3"), USAGE, "--no-gpu cannot be used with --nvml-timeout"),
        (("report", "--no-processes", "--full-command"), USAGE,
         "--no-processes cannot be used with --full-command"),
        (("report", "--root", "/no/such/root"), RUNTIME, "procfs root '/no/such/root' is not a readable directory"),
        (("report", "--root", NOT_A_DIR), RUNTIME, f"procfs root '{NOT_A_DIR}' is not a readable directory"),
        (("report", "--simulate", "no-such-scenario"), RUNTIME, "no-such-scenario"),
        (("report", "--from", URL), RUNTIME, f"{URL}/api/v1/snapshot: "),
        (("report", "--from", "https://127.0.0.1:1", "--ca-file", "/no/such/ca.pem"), RUNTIME, "--ca-file"),
        (("export", "--textfile", "x.prom", "--nvml-timeout", "inf"), USAGE, "'inf' is not a finite number"),
        (("export", "--textfile", "x.prom", "--simulate", ""), USAGE, "--simulate needs a value"),
        (("export", "--textfile", "x.prom", "--root", NOT_A_DIR), RUNTIME, "is not a readable directory"),
        (("export", "--textfile", "x.prom", "--root", "/no/such/root"), RUNTIME, "is not a readable directory"),
        (("serve", "--interval", "nan"), USAGE, "'nan' is not a finite number"),
        (("serve", "--interval", "inf"), USAGE, "'inf' is not a finite number"),
        (("serve", "--interval", "0"), USAGE, "0 is not between 0.1 and 86400 seconds"),
        (("serve", "--interval", "86401"), USAGE, "86401 is not between 0.1 and 86400 seconds"),
        (("serve", "--nvml-timeout", "nan"), USAGE, "'nan' is not a finite number"),
        (("serve", "--nvml-timeout", "-1"), USAGE, "-1 is not between 0.1 and 3600 seconds"),
        (("serve", "--simulate", ""), USAGE, "--simulate needs a value"),
        (("serve", "--root", ""), USAGE, "--root needs a value"),
        (("serve", "--root", NOT_A_DIR), RUNTIME, "is not a readable directory"),
        (("serve", "--root", "/no/such/root"), RUNTIME, "is not a readable directory"),
        (("serve", "--web-config", "/no/such/web.yml"), RUNTIME, "/no/such/web.yml: No such file"),
        (("serve", "--web-config", str(Path(__file__).parent)), RUNTIME, str(Path(__file__).parent)),
        (("serve", "--web-config", ""), USAGE, "--web-config needs a value"),
    ],
)
def test_bad_input_is_one_clear_line(
    args: tuple[str, ...], exit_code: int, says: str, tmp_path: Path
) -> None:
    result = subprocess.run([*HWINFO, *args], capture_output=True, text=True, timeout=60, check=False,
                            cwd=tmp_path)
    assert result.returncode == exit_code, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("Error:")
    assert not (tmp_path / "x.prom").exists()


def test_broken_scenario_file_names_the_field(tmp_path: Path) -> None:
    broken = tmp_path / "lab.json"
    broken.write_text('{"format": 1, "gpus": [{"board": "T4", "temperature_c": "hot"}]}')
    result = run("report", "--simulate", str(broken))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "gpus[0].temperature_c" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_scenario_that_is_not_json(tmp_path: Path) -> None:
    broken = tmp_path / "lab.json"
    broken.write_text('{"format": 1,\n "gpus": [}')
    result = run("report", "--simulate", str(broken))
    assert result.returncode == 1 and "line 2" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_watch_refreshes_until_interrupted() -> None:
    import queue
    import signal
    import threading

    proc = subprocess.Popen(
        [*HWINFO, "report", "--watch", "0.2", "--format", "json", "--simulate", "cloud-t4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    reader.start()
    try:
        first = [lines.get(timeout=60) for _ in range(3)]  # three refreshes, then Ctrl-C
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    reader.join(timeout=60)
    err = proc.stderr.read()
    documents = [json.loads(line) for line in [*first, *lines.queue]]  # JSON Lines while watching
    assert proc.returncode == 0 and "Traceback" not in err
    assert len(documents) >= 3
    assert len({d["timestamp_seconds"] for d in documents}) == len(documents)


def test_nothing_read_is_said_not_guessed(tmp_path: Path) -> None:
    # An empty --root: no fact can be read, so none is shown as "none" or 0, and the status says so.
    result = run("report", "--no-gpu", "--root", str(tmp_path))
    assert result.returncode == 1 and result.stderr == ""
    assert "none" not in result.stdout and " 0 " not in result.stdout
    assert f"memory: collection failed: nothing could be read below {tmp_path}" in result.stdout
    doc = json.loads(run("report", "--no-gpu", "--root", str(tmp_path), "--format", "json").stdout)
    assert {s["source"]: s["state"] for s in doc["sources"]} == {
        "host": "ok", "memory": "failed", "storage": "failed", "network": "failed",
        "gpu": "not_collected", "claims": "ok", "cpu": "failed"}
    # No claims directory below the root: no claims, which is a fact, not a failure.
    assert doc["claims"] == {"directory": f"{tmp_path}/run/hwinfo/claims", "present": False,
                             "claims": [], "waiters": [], "ignored": []}
    assert doc["memory"] is None and doc["cpu"] is None


def test_a_fifo_in_the_root_is_said_not_waited_for(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    os.mkfifo(tmp_path / "proc" / "meminfo")  # no writer: reading it would wait for ever
    result = run("report", "--no-gpu", "--root", str(tmp_path))  # run() has a deadline
    assert result.returncode == 1 and result.stderr == ""
    assert (f"memory: collection failed: {tmp_path}/proc/meminfo: not a regular file (a FIFO)"
            in result.stdout.splitlines())


@pytest.mark.parametrize("command", ["report", "check", "export", "serve"])
def test_help_names_the_shared_options(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "--nvml-timeout SECONDS" in result.stdout


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--gpu", "9"], 1, "--gpu 9: no such GPU (indices: 0, 1, 2, 3, 4, 5, 6, 7)"),
    (["--gpu", ""], 2, "--gpu needs a value, not an empty string"),
    (["--gpu", "zero"], 2, "--gpu 'zero': expected an index, a GPU UUID (GPU-...) or a PCI bus id"),
    (["--brief", "--format", "json"], 2, "--brief cannot be used with --format"),
    (["--brief", "--full-command"], 2, "--brief cannot be used with --full-command"),
])
def test_brief_and_gpu_refusals_are_one_line(args: list[str], code: int, message: str) -> None:
    result = run("report", "--simulate", "dgx-a100-mig", *args)
    assert result.returncode == code, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"Error: {message}"


def test_gpu_selects_in_text_and_json() -> None:
    text = run("report", "--simulate", "dgx-a100-mig", "--gpu", "1,3", "--no-color").stdout
    assert "GPUs (2)" in text and "GPU 1  NVIDIA" in text and "GPU 0  NVIDIA" not in text
    document = json.loads(run("report", "--simulate", "dgx-a100-mig", "--gpu", "3",
                              "--format", "json").stdout)
    assert [g["index"] for g in document["gpu"]["gpus"]] == [3]


def test_brief_is_one_screen() -> None:
    result = run("report", "--simulate", "dgx-h100", "--brief", "--no-color")
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and len(lines) <= 24 and max(map(len, lines)) <= 80
    assert [line[:6] for line in lines[3:5]] == ["Disk  ", "Net   "]
    assert lines[5].startswith("GPUs  8 · driver")
