"""nvmlDeviceGetFieldValues through the real pynvml: per-field answers, units and NotSupported."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from typing import Any

import pynvml as N
import pytest

import hwinfo.sim
from hwinfo.sim import Machine
from hwinfo.sim.scenario import parse_scenario

Simulate = Callable[..., Machine]
H100 = {"board": "H100-SXM5-80GB", "energy_j": 1000, "power_draw_w": 512.5}


@pytest.fixture
def simulate() -> Iterator[Simulate]:
    def make(gpus: list[dict[str, Any]], driver: str = "550.54.15") -> Machine:
        doc = {"format": 1, "driver": {"version": driver}, "gpus": gpus}
        machine = hwinfo.sim.install(parse_scenario(doc, "t.json", "t"))
        N.nvmlInit()
        return machine

    yield make
    hwinfo.sim.uninstall()


def fields(gpu: Any, *ids: int | tuple[int, int]) -> list[tuple[int, int, int]]:
    """(return code, value type, value) per field, the value read as its type says."""
    out = []
    for v in N.nvmlDeviceGetFieldValues(gpu, list(ids)):
        value = (
            v.value.ullVal
            if v.valueType == N.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            else (v.value.uiVal)
        )
        out.append((v.nvmlReturn, v.valueType, value if v.nvmlReturn == N.NVML_SUCCESS else 0))
    return out


UINT, ULL, OK, NS = (
    N.NVML_VALUE_TYPE_UNSIGNED_INT,
    N.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
    N.NVML_SUCCESS,
    N.NVML_ERROR_NOT_SUPPORTED,
)


def test_nvlink_fields_agree_with_nvlink_state(simulate: Simulate) -> None:
    simulate([{**H100, "nvlink_links": 16}])
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    ((rc, kind, links),) = fields(gpu, N.NVML_FI_DEV_NVLINK_LINK_COUNT)
    assert (rc, kind, links) == (OK, UINT, 18)
    states = [N.nvmlDeviceGetNvLinkState(gpu, link) for link in range(links)]
    by_field = fields(gpu, *[(N.NVML_FI_DEV_NVLINK_GET_STATE, link) for link in range(links)])
    assert [value for _, _, value in by_field] == states == [1] * 16 + [0] * 2
    tx = fields(gpu, *[(N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, link) for link in range(links)])
    assert tx == [(OK, ULL, 0)] * links  # KiB counters; scenarios carry no NVLink traffic
    ((rc, _, _),) = fields(gpu, (N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, 18))
    assert rc == N.NVML_ERROR_INVALID_ARGUMENT  # past the board's links


def test_power_and_energy_in_real_units(simulate: Simulate) -> None:
    machine = simulate([H100])
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    got = fields(
        gpu,
        N.NVML_FI_DEV_POWER_INSTANT,
        N.NVML_FI_DEV_POWER_AVERAGE,
        (N.NVML_FI_DEV_POWER_INSTANT, N.NVML_POWER_SCOPE_MODULE),
        N.NVML_FI_DEV_POWER_CURRENT_LIMIT,
        N.NVML_FI_DEV_POWER_MIN_LIMIT,
    )
    assert got == [
        (OK, UINT, 512_500),
        (OK, UINT, 512_500),
        (NS, UINT, 0),
        (OK, UINT, 700_000),
        (OK, UINT, 200_000),
    ]
    assert N.nvmlDeviceGetPowerUsage(gpu) == 512_500
    machine.advance(2)
    ((rc, kind, energy),) = fields(gpu, N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION)
    plain = N.nvmlDeviceGetTotalEnergyConsumption(gpu)
    assert (rc, kind) == (OK, ULL)
    assert 1_000_000 + 1_025_000 <= energy <= plain < energy + 512_500  # mJ, one counter


def test_power_fields_arrive_with_r535(simulate: Simulate) -> None:
    simulate([H100], driver="530.30.02")
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    assert fields(gpu, N.NVML_FI_DEV_POWER_INSTANT)[0][0] == NS
    assert fields(gpu, N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION)[0][0] == OK


def test_ecc_and_row_remap_fields_match_their_calls(simulate: Simulate) -> None:
    simulate(
        [
            {
                **H100,
                "ecc": {
                    "enabled": True,
                    "pending": False,
                    "volatile": {"corrected": 3, "uncorrected": 1},
                    "aggregate": {"corrected": 40, "uncorrected": 2},
                },
                "remapped_rows": {
                    "correctable": 5,
                    "uncorrectable": 1,
                    "pending": True,
                    "failure": False,
                },
            }
        ]
    )
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    got = [value for _, _, value in fields(gpu, *range(1, 7))]
    assert got == [1, 0, 3, 1, 40, 2]  # ECC current, pending, SBE/DBE volatile, aggregate
    assert N.nvmlDeviceGetTotalEccErrors(gpu, 0, 1) == 40
    remap = fields(
        gpu,
        N.NVML_FI_DEV_REMAPPED_COR,
        N.NVML_FI_DEV_REMAPPED_UNC,
        N.NVML_FI_DEV_REMAPPED_PENDING,
        N.NVML_FI_DEV_REMAPPED_FAILURE,
    )
    assert (
        [value for _, _, value in remap] == list(N.nvmlDeviceGetRemappedRows(gpu)) == [5, 1, 1, 0]
    )


def test_fields_the_board_lacks_are_not_supported_one_by_one(simulate: Simulate) -> None:
    simulate([{"board": "RTX-4090"}, {"board": "T4"}])
    geforce, t4 = (N.nvmlDeviceGetHandleByIndex(i) for i in range(2))
    got = fields(
        geforce,
        N.NVML_FI_DEV_ECC_CURRENT,
        N.NVML_FI_DEV_REMAPPED_COR,
        N.NVML_FI_DEV_RETIRED_SBE,
        N.NVML_FI_DEV_NVLINK_LINK_COUNT,
        N.NVML_FI_DEV_MEMORY_TEMP,
        N.NVML_FI_DEV_POWER_INSTANT,
    )
    assert [rc for rc, _, _ in got] == [NS, NS, NS, OK, NS, OK]
    assert got[3][2] == 0  # no NVLink on a GeForce: zero links, as GetNvLinkState says
    got = fields(t4, N.NVML_FI_DEV_RETIRED_SBE, N.NVML_FI_DEV_REMAPPED_COR)
    assert [rc for rc, _, _ in got] == [OK, NS]  # Turing retires pages, remaps no rows


def test_mig_device_handles_and_lost_gpus(simulate: Simulate) -> None:
    mig = {"enabled": True, "gpu_instances": [{"profile": "7g.80gb"}]}
    machine = simulate([{**H100, "mig": mig}, {**H100, "lost": True}])
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    dev = N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0)
    assert fields(dev, N.NVML_FI_DEV_NVLINK_LINK_COUNT)[0][0] == NS
    # Volatile ECC counts are not readable in MIG mode, aggregate ones are (as the call).
    assert [rc for rc, _, _ in fields(gpu, 3, 5)] == [NS, OK]
    lost = ctypes.cast(ctypes.c_void_p(machine.gpus[1].handle), type(gpu))
    with pytest.raises(N.NVMLError_GpuIsLost):  # the whole call fails, as every call on it
        N.nvmlDeviceGetFieldValues(lost, [N.NVML_FI_DEV_NVLINK_LINK_COUNT])
