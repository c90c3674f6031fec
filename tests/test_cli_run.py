"""`hwinfo run` given what a user can get wrong, and what it shows of itself: each mistake is
one line and an exit status; a claim shows in `report` while its command runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.run.host import Host, eight_idle_h100s, nameless_uid, simulated_host, wait_for


@pytest.fixture
def host() -> Iterator[Host]:
    with simulated_host(eight_idle_h100s()) as made:
        yield made


def hwinfo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


@pytest.mark.parametrize(("args", "expected"), [
    (["--gpus", "2", "--mig-profile", "1g.10gb", "--", "true"],
     "--mig-profile takes one MIG device: CUDA makes only one visible to a process"),
    (["--gpus", "0", "--", "true"], "0 is not in the range 1<=x<=64"),
    (["--need-memory", "lots", "--", "true"], "'lots' is not a size"),
    (["--wait", "forever", "--", "true"], "'forever' is not a duration"),
    (["--mig-profile", "", "--", "true"], "needs a value"),
    ([], "Missing argument 'COMMAND...'"),
])
def test_bad_requests_are_usage_errors(host: Host, args: list[str], expected: str) -> None:
    done = hwinfo("run", "--simulate", str(host.scenario), *args, env=host.env)
    assert done.returncode == 2 and expected in done.stderr, done.stderr


def test_what_no_wait_can_serve_is_said_at_once(host: Host) -> None:
    done = hwinfo("run", "--simulate", str(host.scenario), "--gpus", "9", "--wait", "1h",
                  "--", "true", env=host.env)
    assert (done.returncode, done.stderr) == (
        1, "Error: nothing here can ever fit 9 GPUs: this host has 8 GPUs, not 9\n")


def test_a_command_that_cannot_start_gives_the_shells_status_and_its_claim_back(
        host: Host) -> None:
    done = hwinfo("run", "--simulate", str(host.scenario), "--", "no-such-command-here",
                  env=host.env)
    assert (done.returncode, done.stderr) == (
        127, "hwinfo run: command not found: no-such-command-here\n")
    assert list(host.claims.iterdir()) == []


def test_a_user_without_a_name_does_not_take_a_gpu_whose_processes_owner_is_unknown(
        tmp_path: Path) -> None:
    """A user without an account name was None, as is the owner of a process hwinfo cannot
    name (another container's): that process counted as theirs, and its GPU was handed out."""
    nameless = nameless_uid()
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"format": 1, "description": "a GPU of another container",
                                    "gpus": [{"board": "A100-SXM4-80GB", "processes": [
                                        {"pid": 4242, "used_memory_mib": 1024, "user": "x",
                                         "command": "python", "visible": False}]}]}))
    claims = tmp_path / "claims"
    claims.mkdir(mode=0o1777)
    claims.chmod(0o1777)
    as_nameless = f"import os; os.geteuid = lambda: {nameless}; from hwinfo.entry import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", as_nameless, "run", "--simulate", str(scenario), "--", "true"],
        capture_output=True, text=True, env={**os.environ, "HWINFO_CLAIMS_DIR": str(claims)},
        timeout=300, check=False)
    assert done.returncode == 75, done.stderr
    assert "0 fit now; the others are short of free memory or hold other users' processes" in (
        done.stderr)


def test_a_claims_directory_anyone_could_tamper_with_is_refused(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    env = {**os.environ, "HWINFO_CLAIMS_DIR": str(loose)}
    done = hwinfo("run", "--simulate", "dgx-h100", "--share", "--", "true", env=env)
    assert done.returncode == 1
    assert done.stderr == (f"Error: claims directory {loose} is writable by others without the "
                           "sticky bit: anyone could remove a claim; refused\n")
    missing = {**os.environ, "HWINFO_CLAIMS_DIR": str(tmp_path / "none")}
    done = hwinfo("run", "--simulate", "dgx-h100", "--", "true", env=missing)
    assert (done.returncode, done.stderr) == (
        1, (f"Error: claims directory {tmp_path / 'none'} does not exist: make it with: "
           f"install -d -m 1777 {tmp_path / 'none'}\n"))


def test_a_claim_shows_in_the_report_while_its_command_runs(host: Host) -> None:
    host.run("job", "--need-memory", "40GiB")
    (uuid,) = host.started("job")["devices"]
    report = json.loads(hwinfo("report", "--simulate", str(host.scenario), "--format", "json",
                               env=host.env).stdout)
    (claim,) = report["claims"]["claims"]
    assert (claim["devices"], claim["user"], claim["pid"], claim["name"]) == (
        [uuid], "root", host.runs["job"].pid, Path(sys.executable).name)
    assert claim["request"] == {"gpus": 1, "need_memory_bytes": 40 * 2**30,
                                "mig_profile": None, "share": False}
    index = next(g["index"] for g in report["gpu"]["gpus"] if g["uuid"] == uuid)
    text = hwinfo("report", "--simulate", str(host.scenario), env=host.env).stdout
    section = text[text.index("Claims (hwinfo run)"):].splitlines()
    assert section[1].split() == ["Device", "User", "Since", "Command"]
    assert section[2].split()[:4] == ["GPU", str(index), "root", claim_day(claim)]
    host.release("job")
    assert host.ended(host.runs["job"]) == 0


def claim_day(claim: dict) -> str:
    import time

    return time.strftime("%Y-%m-%d", time.localtime(claim["since_seconds"]))


def test_ctrl_c_ends_a_wait_at_once_and_leaves_the_line(host: Host) -> None:
    for n in range(8):
        host.run(f"h{n}")
        host.started(f"h{n}")
    waiter = host.run("waiter")
    wait_for("the waiter in line", lambda: host.in_line(waiter))
    waiter.send_signal(signal.SIGINT)
    assert host.ended(waiter) == 128 + signal.SIGINT
    assert not host.in_line(waiter) and not host.has_started("waiter")
    for n in range(8):
        host.release(f"h{n}")


def test_on_a_terminal_a_waiter_shows_where_it_stands_in_place(host: Host) -> None:
    import pty
    import select

    for n in range(8):
        host.run(f"h{n}")
        host.started(f"h{n}")
    terminal, its_end = pty.openpty()
    waiter = subprocess.Popen(
        [sys.executable, "-m", "hwinfo", "run", "--simulate", str(host.scenario), "--wait", "10m",
         "--", "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=its_end,
        env=host.env)
    os.close(its_end)
    seen = b""

    def read_some() -> bytes:
        nonlocal seen
        if select.select([terminal], [], [], 0.1)[0]:
            try:
                seen += os.read(terminal, 4096)
            except OSError:  # the other end closed: the run has ended
                return b"ended"
        return seen

    try:
        wait_for("the waiter's standing", lambda: b"8 of the 8 that fit are claimed" in read_some())
        assert seen.startswith(b"\r\x1b[Khwinfo run: 1 of 1 in line; ")
        host.release("h3")
        assert host.ended(waiter) == 0
        wait_for("the terminal to close", lambda: read_some() == b"ended")
    finally:
        os.close(terminal)
    assert seen.endswith(b"\r\x1b[Khwinfo run: GPU " + str(_index_of_h3(host)).encode() + b"\r\n")
    for n in range(8):
        host.release(f"h{n}")


def _index_of_h3(host: Host) -> int:
    (uuid,) = host.started("h3")["devices"]
    report = json.loads(hwinfo("report", "--simulate", str(host.scenario), "--format", "json",
                               env=host.env).stdout)
    return next(g["index"] for g in report["gpu"]["gpus"] if g["uuid"] == uuid)
