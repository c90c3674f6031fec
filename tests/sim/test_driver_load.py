"""The simulated driver loads once for every process simulating a scenario (driver_load.py):
real subprocesses see one continuous energy counter and one scenario clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hwinfo.sim import Machine, load_scenario
from hwinfo.sim.driver_load import STATE_DIR_VAR, DriverLoad, scenario_key

SCENARIO = {
    "format": 1,
    "gpus": [{"board": "A100-SXM4-40GB", "energy_j": 5000, "power_draw_w": 250}],
}
# A second process: the load moment it sees, and its GPU 0 energy counter through pynvml.
PEEK = """
import json, sys, pynvml, hwinfo.sim
machine = hwinfo.sim.install(sys.argv[1])
pynvml.nvmlInit()
energy = pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(0))
print(json.dumps({"loaded_at": machine.load.loaded_at, "energy_mj": energy}))
"""


def peek(path: Path | str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", PEEK, str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def scenario_path(tmp_path: Path) -> Path:
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(SCENARIO))
    return path


def energy(machine: Machine) -> int:
    return machine.energy_now_mj(machine.gpus[0])


def test_two_processes_see_one_continuous_energy_counter(scenario_path: Path) -> None:
    machine = Machine(load_scenario(scenario_path))
    assert machine.load.shared
    before = energy(machine)
    other = peek(scenario_path)
    after = energy(machine)
    assert other["loaded_at"] == machine.load.loaded_at
    assert before <= other["energy_mj"] <= after
    assert before >= 5_000_000  # counted from the scenario's value at the load


def test_another_path_to_the_same_scenario_shares_the_driver(
    scenario_path: Path, tmp_path: Path
) -> None:
    machine = Machine(load_scenario(scenario_path))
    assert peek(f"{scenario_path.parent}/./{scenario_path.name}")["loaded_at"] == (
        machine.load.loaded_at
    )
    (tmp_path / "copy").mkdir()
    copy = tmp_path / "copy" / scenario_path.name  # same name, same content: the same machine
    copy.write_text(scenario_path.read_text())
    assert peek(copy)["loaded_at"] == machine.load.loaded_at
    # The file name seeds the GPUs' UUIDs: another name is another machine.
    renamed = tmp_path / "renamed.json"
    renamed.write_text(scenario_path.read_text())
    assert peek(renamed)["loaded_at"] > machine.load.loaded_at


def test_the_driver_loads_anew_once_every_client_has_gone(scenario_path: Path) -> None:
    first = peek(scenario_path)  # that process has ended: nobody holds the driver
    machine = Machine(load_scenario(scenario_path))
    assert machine.load.loaded_at > first["loaded_at"]
    loaded_at = machine.load.loaded_at
    machine.load.release()
    assert peek(scenario_path)["loaded_at"] > loaded_at


def test_garbage_in_the_state_file_is_replaced(scenario_path: Path) -> None:
    scenario = load_scenario(scenario_path)
    state = Path(os.environ[STATE_DIR_VAR]) / f"{scenario_key(scenario)}.load"
    for junk in (b"", b"not a number\n", b"1e300\n", b"\xff" * 100_000, b"nan\n", b"-1\n"):
        state.write_bytes(junk)
        alone = DriverLoad(scenario)  # the first client writes its own moment anyway
        assert alone.shared and float(state.read_text()) == alone.loaded_at
        state.write_bytes(junk)
        second = DriverLoad(scenario)  # a later client cannot use the junk: a moment of its own
        assert second.shared and second.loaded_at >= alone.loaded_at
        assert float(state.read_text()) == second.loaded_at
        alone.release()
        second.release()


@pytest.mark.parametrize("problem", ["group_writable", "a_file", "a_symlink"])
def test_an_unsafe_state_directory_means_a_driver_of_our_own(
    problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = tmp_path / "state"
    if problem == "group_writable":
        place.mkdir(mode=0o700)
        place.chmod(0o770)
    elif problem == "a_file":
        place.write_text("")
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        place.symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv(STATE_DIR_VAR, str(place))
    load = DriverLoad(load_scenario("cloud-t4"))
    assert not load.shared
    assert not any(p.name.endswith(".load") for p in tmp_path.rglob("*"))
