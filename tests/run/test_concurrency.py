"""`hwinfo run` for real: many at once on a simulated 8-GPU host, a `kill -9`, a waiter giving
up, MIG devices by profile. The simulated GPUs' processes do not change while commands run
(a scenario is static): what makes a GPU free here is the claims, as it is on a real host
between one command and the next.

Each command (holder.py) locks its devices' files itself: one it cannot lock was handed to two
at once. Every step is awaited as an event (a file a command writes, a ticket in line)."""

from __future__ import annotations

import json
import os
import random
import signal
from collections.abc import Iterator

import pytest

from hwinfo.collect.claims import MAX_SEQUENCE
from tests.run.host import Host, a100_in_mig_mode, eight_idle_h100s, simulated_host, wait_for


@pytest.fixture
def host() -> Iterator[Host]:
    with simulated_host(eight_idle_h100s()) as made:
        yield made


def _gpus(host: Host) -> list[str]:
    """The scenario's GPU UUIDs, as `hwinfo report` reads them."""
    import subprocess
    import sys

    report = subprocess.run([sys.executable, "-m", "hwinfo", "report", "--simulate",
                             str(host.scenario), "--format", "json"], capture_output=True,
                            env=host.env, check=True, timeout=300)
    return [g["uuid"] for g in json.loads(report.stdout)["gpu"]["gpus"]]


def test_twenty_runs_on_eight_gpus_one_at_a_time_each_and_in_the_order_they_came(
        host: Host) -> None:
    rng = random.Random(31)
    holders = [host.run(f"h{n}") for n in range(8)]
    taken = [host.started(f"h{n}")["devices"] for n in range(8)]
    assert sorted(d for devices in taken for d in devices) == sorted(_gpus(host))
    # Twelve more come one after the other, each in line before the next comes.
    waiters = []
    for n in range(12):
        waiters.append(host.run(f"w{n}", hold=f"{rng.uniform(0.1, 1.5):.2f}"))
        wait_for(f"w{n} in line", lambda: host.in_line(waiters[-1]))
    assert not any(host.has_started(f"w{n}") for n in range(12))
    # The holders end in a random order, at random moments.
    for n in rng.sample(range(8), 8):
        host.release(f"h{n}")
        if rng.random() < 0.5:
            wait_for(f"h{n} to end", lambda n=n: holders[n].poll() is not None)
    assert [host.ended(p) for p in holders + waiters] == [0] * 20
    assert host.violations() == ""
    started = [host.started(f"w{n}") for n in range(12)]
    # Claimed in the order they came (each claim's number is taken under the directory's lock).
    assert [s["id"] for s in sorted(started, key=lambda s: s["sequence"])] == \
        [f"w{n}" for n in range(12)]
    assert list(host.claims.iterdir()) == []


def test_a_kill_9_of_run_frees_its_gpu_at_once_and_takes_its_command_along(host: Host) -> None:
    holders = [host.run(f"h{n}") for n in range(8)]
    held = {n: host.started(f"h{n}") for n in range(8)}
    waiter = host.run("waiter")
    wait_for("the waiter in line", lambda: host.in_line(waiter))
    holders[5].send_signal(signal.SIGKILL)
    assert host.started("waiter")["devices"] == held[5]["devices"]
    # The killed run's command went with it (the kernel's parent-death signal).
    wait_for("the orphaned command to end", lambda: _gone(held[5]["pid"]))
    assert host.violations() == ""
    for n in range(8):
        host.release(f"h{n}")
    host.release("waiter")
    assert host.ended(waiter) == 0


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"  # ended, not yet reaped
    except FileNotFoundError:
        return True


def test_a_file_holding_the_last_number_in_line_hides_no_later_claim(host: Host) -> None:
    """Anyone may leave a file whose number in line is the largest a reader takes: the next
    claim took one more, every reader refused it, and its GPU was handed out again."""
    dead = host.claims / "65534.1.0123456789abcdef.claim"
    dead.write_text(json.dumps({"devices": ["GPU-x"], "command": ["x"], "sequence": MAX_SEQUENCE,
                                "request": {"gpus": 1, "need_memory_bytes": None,
                                            "mig_profile": None, "share": False}}))
    os.chown(dead, 65534, -1)
    every = host.run("every", "--gpus", "8")
    host.started("every")
    now = host.run("now", wait=None, hold="0")
    assert host.ended(now) == 75
    assert not host.has_started("now") and host.violations() == ""
    host.release("every")
    assert host.ended(every) == 0


def test_a_waiter_gives_up_at_its_wait_with_75_and_one_line(host: Host) -> None:
    for n in range(8):
        host.run(f"h{n}")
        host.started(f"h{n}")
    late = host.run("late", wait="1s")
    assert host.ended(late) == 75
    (line,) = host.log("late").splitlines()[-1:]
    assert line.startswith("hwinfo run: nothing fit 1 GPU within 1 s (--wait); 1st of 1 in line")
    assert not host.has_started("late") and not host.in_line(late)
    now = host.run("now", wait=None)
    assert host.ended(now) == 75
    assert host.log("now").splitlines() == [
        ("hwinfo run: nothing fits 1 GPU now (8 of the 8 that fit are claimed); "
         "--wait DURATION waits in line")]
    for n in range(8):
        host.release(f"h{n}")


def test_mig_devices_are_handed_out_by_profile() -> None:
    with simulated_host(a100_in_mig_mode()) as host:
        small, got = [], []
        for n in range(4):
            small.append(host.run(f"s{n}", "--mig-profile", "1g.10gb"))
            got.append(host.started(f"s{n}")["devices"])
        small.append(host.run("s4", "--mig-profile", "1g.10gb"))
        assert all(len(d) == 1 and d[0].startswith("MIG-") for d in got)
        assert len({d[0] for d in got}) == 4
        wait_for("the fifth in line", lambda: host.in_line(small[4]))
        # Someone waiting for a 1g.10gb does not hold back the 3g.40gb.
        large = host.run("large", "--mig-profile", "3g.40gb")
        (device,) = host.started("large")["devices"]
        assert device.startswith("MIG-") and device not in {d[0] for d in got}
        host.release("s2")
        assert host.started("s4")["devices"] == got[2]
        for ident in ("s0", "s1", "s3", "s4", "large"):
            host.release(ident)
        assert [host.ended(p) for p in [*small, large]] == [0] * 6
        assert host.violations() == ""


def test_the_signals_a_run_gets_reach_its_command_and_its_status_is_the_commands(
        host: Host) -> None:
    run = host.run("h0")
    host.started("h0")
    run.send_signal(signal.SIGTERM)
    assert host.ended(run) == 128 + signal.SIGTERM  # holder.py does not catch it
    assert list(host.claims.iterdir()) == []
    quick = host.run("quick", hold="0")
    assert host.ended(quick) == 0
    assert os.listdir(host.claims) == []
