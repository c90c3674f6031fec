"""Scenario loading and validation: typed model, board defaults, and one-line errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import hwinfo.sim
from hwinfo.sim import ScenarioError, list_scenarios, load_scenario
from hwinfo.sim.boards import BOARDS
from hwinfo.sim.scenario import parse_scenario

FIXTURES = Path(__file__).parent / "fixtures"


def write(tmp_path: Path, data: Any, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def parse(data: dict[str, Any]) -> Any:
    return parse_scenario({"format": 1, **data}, "t.json", "t")


def error(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        parse(data)
    text = str(info.value)
    assert "\n" not in text and text.startswith("scenario t.json: ")
    return text


A100 = {"board": "A100-SXM4-80GB"}


def mig(*gpu_instances: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**A100, "mig": {"enabled": True, "gpu_instances": list(gpu_instances)}, **extra}


# --- loading -----------------------------------------------------------------------------


def test_load_fixture_by_path_and_builtin_by_name() -> None:
    s = load_scenario(FIXTURES / "mig-a100-40gb.json")
    assert (s.name, s.source) == ("mig-a100-40gb", str(FIXTURES / "mig-a100-40gb.json"))
    assert len(s.gpus) == 2
    builtin = load_scenario("dgx-a100-mig")
    assert builtin.source == "dgx-a100-mig" and len(builtin.gpus) == 8


def test_missing_file_names_the_builtins(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"^scenario nope: no such file.*dgx-a100-mig"):
        load_scenario("nope")


def test_bad_json_gives_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"format": 1,\n  "gpus": [}\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == f"scenario {path}: line 2, column 12: invalid JSON: Expecting value"


def test_list_scenarios_has_names_and_descriptions() -> None:
    listed = dict(list_scenarios())
    assert "dgx-a100-mig" in listed and listed["dgx-a100-mig"].startswith("DGX A100")
    assert all(isinstance(d, str) and d for d in listed.values())


def test_exports() -> None:
    assert hwinfo.sim.ScenarioError is ScenarioError
    assert callable(hwinfo.sim.install) and callable(hwinfo.sim.uninstall)


# --- defaults ------------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(BOARDS))
def test_every_board_loads_with_defaults(key: str) -> None:
    (gpu,) = parse({"gpus": [{"board": key}]}).gpus
    assert gpu.board.key == key and gpu.name == BOARDS[key].defaults["name"]
    assert gpu.memory_total_mib > 0 and gpu.uuid.startswith("GPU-")
    assert (gpu.mig is not None) == (BOARDS[key].mig is not None)


def test_board_catalogue_names() -> None:
    assert set(BOARDS) == {
        "A100-SXM4-40GB", "A100-SXM4-80GB", "A100-PCIE-40GB", "A100-PCIE-80GB", "A30",
        "H100-SXM5-80GB", "H100-SXM5-94GB", "H100-PCIE", "H100-NVL", "H800-SXM5-80GB", "H800-PCIE", "H800-NVL",
        "H20", "GH200-96GB", "GH200-144GB", "H200-SXM-141GB", "H200-NVL", "B200", "GB200",
        "RTX-PRO-6000-BLACKWELL-SERVER", "RTX-PRO-6000-BLACKWELL-WORKSTATION",
        "RTX-PRO-6000-BLACKWELL-MAX-Q", "RTX-PRO-5000-BLACKWELL", "RTX-PRO-4500-BLACKWELL",
        "RTX-4090", "RTX-3090", "RTX-A5000", "T4", "GRID-P4-1Q",
    }  # fmt: skip
    assert BOARDS["H100-SXM5-80GB"].defaults["name"] == "NVIDIA H100 80GB HBM3"
    assert BOARDS["A100-SXM4-80GB"].defaults["pci_device_id"] == 0x20B210DE


def test_gpu_fields_override_and_merge_with_the_board() -> None:
    gpu = parse(
        {"gpus": [{**A100, "clocks_mhz": {"graphics": 300}, "fan_percent": 40, "ecc": None}]}
    ).gpus[0]
    assert (gpu.clocks_mhz.graphics, gpu.clocks_mhz.memory) == (300, 1593)  # merged key by key
    assert gpu.fan_percent == 40 and gpu.ecc is None
    assert gpu.remapped_rows is not None and gpu.retired_pages is None


def test_identity_defaults_are_stable_and_distinct() -> None:
    a = parse({"gpus": [A100, A100]}).gpus
    b = parse({"gpus": [A100, A100]}).gpus
    assert [g.uuid for g in a] == [g.uuid for g in b] and a[0].uuid != a[1].uuid
    assert [g.pci_bus_id for g in a] == ["00000000:01:00.0", "00000000:02:00.0"]
    assert [g.minor_number for g in a] == [0, 1]
    assert a[0].serial and a[0].serial.isdigit() and len(a[0].serial) == 13
    assert parse({"gpus": [{"board": "RTX-4090"}]}).gpus[0].serial is None


def test_board_less_gpu_supports_only_what_it_gives() -> None:
    (gpu,) = parse(
        {"gpus": [{"name": "GRID P4-1Q", "memory_total_mib": 1024, "temperature_c": 0}]}
    ).gpus
    assert gpu.board is None and gpu.temperature_c == 0
    assert gpu.power_draw_w is None and gpu.clocks_mhz is None and gpu.mig is None


def test_driver_defaults_follow_the_branch() -> None:
    assert parse({}).driver.cuda_version == 12040
    old = parse({"driver": {"version": "470.82.01"}}).driver
    assert (old.version_tuple, old.cuda_version, old.nvml_version) == (
        (470, 82, 1),
        11040,
        "11.470.82.01",
    )


def test_mig_ids_placements_and_compute_instances() -> None:
    two_cis = {"profile": "2g.20gb", "compute_instances": [{"slices": 1}, {"slices": 1}]}
    (gpu,) = parse({"gpus": [mig({"profile": "1g.10gb"}, {"profile": "4g.40gb"}, two_cis)]}).gpus
    gis = gpu.mig.gpu_instances
    # The 4g only fits at slot 0 and the 2g then at 4, so the 1g ends at 6 (greedy: at 0).
    assert [(gi.profile.name, gi.start, gi.id) for gi in gis] == [
        ("1g.10gb", 6, 13),
        ("4g.40gb", 0, 1),
        ("2g.20gb", 4, 5),
    ]
    assert [(ci.id, ci.start, ci.profile.name) for ci in gis[2].compute_instances] == [
        (0, 0, "1c.2g.20gb"),
        (1, 1, "1c.2g.20gb"),
    ]
    assert [ci.profile.name for ci in gis[1].compute_instances] == ["4g.40gb"]  # default: one CI


def test_explicit_ids_and_split_3g() -> None:
    (gpu,) = parse(
        {
            "gpus": [
                mig(
                    {
                        "profile": "3g.40gb",
                        "start": 4,
                        "id": 2,
                        "compute_instances": [{"slices": 1}, {"slices": 2}],
                    }
                )
            ]
        }
    ).gpus
    (gi,) = gpu.mig.gpu_instances
    assert (gi.start, gi.id) == (4, 2)
    # 2c.3g only sits at compute slice 0, so the 1-slice CI takes slice 2.
    assert [(ci.id, ci.start, ci.profile.slice_count) for ci in gi.compute_instances] == [
        (0, 2, 1),
        (1, 0, 2),
    ]


def test_mig_board_on_a_pre_mig_driver_has_no_mig() -> None:
    (gpu,) = parse({"driver": {"version": "440.33"}, "gpus": [A100]}).gpus
    assert gpu.mig is None


def test_lost_and_windows() -> None:
    gpus = parse(
        {
            "gpus": [
                {**A100, "lost": True},
                {**A100, "lost": {"after_samples": 3, "for_samples": 2}},
                A100,
            ]
        }
    ).gpus
    assert [g.lost.active(0) for g in gpus[:2]] == [True, False]
    assert [gpus[1].lost.active(s) for s in range(7)] == [
        False,
        False,
        False,
        False,
        True,
        True,
        False,
    ]
    assert gpus[2].lost is None


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"gpu": []}, "gpu: unknown key"),
        ({"gpus": {}}, "gpus: expected a list, got an object"),
        ({"gpus": [{**A100, "temprature_c": 40}]}, "gpus[0].temprature_c: unknown key"),
        (
            {"gpus": [{"board": "A100"}]},
            "gpus[0].board: unknown value 'A100' (known: A100-SXM4-40GB",
        ),
        ({"gpus": [{"memory_total_mib": 10}]}, "gpus[0].name: required when no board is given"),
        (
            {"gpus": [{**A100, "memory_total_mib": "80GB"}]},
            "gpus[0].memory_total_mib: expected an integer, got a string",
        ),
        (
            {"gpus": [{**A100, "temperature_c": "hot"}]},
            "gpus[0].temperature_c: expected an integer, got a string",
        ),
        (
            {"gpus": [{**A100, "temperature_c": True}]},
            "gpus[0].temperature_c: expected an integer, got a boolean",
        ),
        ({"gpus": [{**A100, "fan_percent": 120}]}, "gpus[0].fan_percent: must be at most 100"),
        ({"gpus": [{**A100, "power_draw_w": -1}]}, "gpus[0].power_draw_w: must not be negative"),
        ({"gpus": [{**A100, "pci_bus_id": "7:0"}]}, "gpus[0].pci_bus_id: expected a PCI bus id"),
        ({"gpus": [{**A100, "cpu_affinity": "3-1"}]}, "gpus[0].cpu_affinity: expected a CPU list"),
        (
            {"gpus": [{**A100, "clock_event_reasons": ["hot"]}]},
            "gpus[0].clock_event_reasons[0]: unknown value 'hot'",
        ),
        ({"gpus": [{**A100, "pcie": {"gen": 4, "lanes": 16}}]}, "gpus[0].pcie.lanes: unknown key"),
        (
            {"gpus": [{**A100, "nvlink_links": 13}]},
            "gpus[0].nvlink_links: this board has 12 NVLink links",
        ),
        (
            {
                "gpus": [
                    {**A100, "pci_bus_id": "07:00.0"},
                    {**A100, "pci_bus_id": "00000000:07:00.0"},
                ]
            },
            "gpus[1].pci_bus_id: same as gpus[0]",
        ),
        (
            {"gpus": [A100, {**A100, "uuid": "GPU-x"}, {**A100, "uuid": "GPU-X"}]},
            "gpus[2].uuid: same as gpus[1]",
        ),
        (
            {"gpus": [mig({"profile": "3g.41gb"})]},
            (
                "gpus[0].mig.gpu_instances[0].profile: unknown profile '3g.41gb' for board A100-SXM4-80GB "
                "(known: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)"
            ),
        ),
        (
            {
                "gpus": [
                    {
                        "board": "A100-SXM4-40GB",
                        "mig": {
                            "enabled": True,
                            "gpu_instances": [{"profile": "1g.10gb"}, {"profile": "3g.40gb"}],
                        },
                    }
                ]
            },
            "gpus[0].mig.gpu_instances[1].profile: unknown profile '3g.40gb' for board A100-SXM4-40GB",
        ),
        (
            {"gpus": [{"board": "RTX-4090", "mig": {"enabled": False}}]},
            "gpus[0].mig: board RTX-4090 has no MIG support",
        ),
        (
            {"driver": {"version": "440.33"}, "gpus": [{**A100, "mig": {"enabled": False}}]},
            "gpus[0].mig: MIG needs driver 450 or later",
        ),
        (
            {"gpus": [{**A100, "mig": {"enabled": "yes"}}]},
            "gpus[0].mig.enabled: expected true or false, got a string",
        ),
        (
            {
                "gpus": [
                    {**A100, "mig": {"enabled": False, "gpu_instances": [{"profile": "7g.80gb"}]}}
                ]
            },
            "gpus[0].mig.gpu_instances: GPU instances need MIG enabled",
        ),
        (
            {"gpus": [mig({"profile": "3g.40gb", "start": 0}, {"profile": "4g.40gb", "start": 0})]},
            "gpus[0].mig.gpu_instances[1].start: placement 0:4 overlaps gpus[0].mig.gpu_instances[0] (0:4) on the memory slices",
        ),
        (
            {"gpus": [mig({"profile": "3g.40gb", "start": 2})]},
            "gpus[0].mig.gpu_instances[0].start: 3g.40gb can start at {0,4}, not 2",
        ),
        (
            {"gpus": [mig(*[{"profile": "1g.10gb"}] * 8)]},
            "gpus[0].mig.gpu_instances[7]: at most 7 instance(s) of 1g.10gb fit on a GPU",
        ),
        (
            {"gpus": [mig({"profile": "4g.40gb"}, {"profile": "3g.40gb"}, {"profile": "1g.10gb"})]},
            "gpus[0].mig.gpu_instances: these GPU instances do not fit on the GPU's 8 memory slices together",
        ),
        (
            {"gpus": [mig({"profile": "1g.10gb", "id": 3}, {"profile": "2g.20gb", "start": 0})]},
            "gpus[0].mig.gpu_instances[1].id: GPU instance id 3 is also used by gpus[0].mig.gpu_instances[0]",
        ),
        (
            {"gpus": [mig({"profile": "3g.40gb", "compute_instances": [{"slices": 4}]})]},
            (
                "gpus[0].mig.gpu_instances[0].compute_instances[0].slices: a 3g.40gb GPU instance offers compute "
                "instances of {1,2,3} slices, not 4"
            ),
        ),
        (
            {
                "gpus": [
                    mig({"profile": "3g.40gb", "compute_instances": [{"slices": 2}, {"slices": 2}]})
                ]
            },
            "gpus[0].mig.gpu_instances[0].compute_instances[1]: at most 1 compute instance(s) of 2c.3g.40gb fit",
        ),
        (
            {
                "gpus": [
                    mig({"profile": "3g.40gb", "compute_instances": [{"slices": 3}, {"slices": 1}]})
                ]
            },
            "gpus[0].mig.gpu_instances[0].compute_instances: these compute instances do not fit in the 3 slices of 3g.40gb",
        ),
        (
            {"gpus": [mig({"profile": "3g.40gb"}, processes=[{"pid": 5}])]},
            "gpus[0].processes[0].gpu_instance_id: required on a GPU with MIG enabled",
        ),
        (
            {
                "gpus": [
                    mig(
                        {"profile": "3g.40gb"},
                        processes=[{"pid": 5, "gpu_instance_id": 2, "compute_instance_id": 0}],
                    )
                ]
            },
            "gpus[0].processes[0].gpu_instance_id: no GPU instance 2 on this GPU (existing: 1)",
        ),
        (
            {
                "gpus": [
                    mig(
                        {"profile": "3g.40gb"},
                        processes=[{"pid": 5, "gpu_instance_id": 1, "compute_instance_id": 1}],
                    )
                ]
            },
            "gpus[0].processes[0].compute_instance_id: no compute instance 1 in GPU instance 1",
        ),
        (
            {
                "gpus": [
                    {
                        **A100,
                        "processes": [{"pid": 5, "gpu_instance_id": 1, "compute_instance_id": 0}],
                    }
                ]
            },
            "gpus[0].processes[0].gpu_instance_id: only allowed on a GPU with MIG enabled",
        ),
        (
            {"gpus": [{**A100, "processes": [{"pid": 5}, {"pid": 5}]}]},
            "gpus[0].processes[1].pid: pid 5 is listed twice",
        ),
        (
            {"gpus": [{**A100, "processes": [{"pid": 5, "type": "cuda"}]}]},
            "gpus[0].processes[0].type: unknown value 'cuda'",
        ),
        (
            {"gpus": [{**A100, "xid_events": [{"after_samples": 0, "xid": 79}]}]},
            "gpus[0].xid_events[0].after_samples: must be at least 1",
        ),
        ({"gpus": [{**A100, "lost": "yes"}]}, "gpus[0].lost: expected true or false, got a string"),
        (
            {"faults": [{"call": "nvmlDeviceGetPowerUsag", "error": "Unknown"}]},
            "faults[0].call: unknown or unsimulated NVML function 'nvmlDeviceGetPowerUsag'",
        ),
        (
            {"faults": [{"call": "nvmlDeviceGetPowerUsage", "error": "Broken"}]},
            "faults[0].error: unknown value 'Broken'",
        ),
        (
            {"faults": [{"call": "nvmlDeviceGetPowerUsage"}]},
            "faults[0]: a fault needs an error or a delay_seconds",
        ),
        (
            {
                "gpus": [A100],
                "faults": [{"call": "nvmlDeviceGetPowerUsage", "gpu": 1, "error": "Unknown"}],
            },
            "faults[0].gpu: must be at most 0, got 1",
        ),
        ({"init_error_attempts": 2}, "init_error_attempts: only meaningful with init_error"),
        ({"init_error": "Broken"}, "init_error: unknown value 'Broken'"),
        (
            {"driver": {"version": "r550"}},
            "driver.version: expected a version such as '550.54.15', got 'r550'",
        ),
        ({"library": "absent"}, "library: unknown value 'absent' (known: present, missing)"),
    ],
)
def test_validation_errors(data: dict[str, Any], expected: str) -> None:
    assert expected in error(data)


def test_format_is_required_and_checked() -> None:
    with pytest.raises(ScenarioError, match=r"^scenario t.json: format: required$"):
        parse_scenario({}, "t.json", "t")
    with pytest.raises(ScenarioError, match="format: unsupported format 2"):
        parse({"format": 2})
    with pytest.raises(ScenarioError, match=r"\(top level\): expected an object, got a list"):
        parse_scenario([], "t.json", "t")


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, {"format": 1, "gpus": [{"board": "B300"}]})
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"scenario {path}: gpus[0].board: unknown value 'B300'")


def test_input_is_not_modified() -> None:
    data = {"format": 1, "gpus": [mig({"profile": "7g.80gb"})]}
    before = copy.deepcopy(data)
    parse_scenario(data, "t.json", "t")
    assert data == before


# --- bounds: every number in a scenario has a sane range, named in one line ----------------


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        ({"temperature_c": 256}, "gpus[0].temperature_c: must be at most 255, got 256"),
        ({"temperature_slowdown_c": 10**30}, "gpus[0].temperature_slowdown_c: must be at most 255"),
        ({"temperature_c": 1e30}, "gpus[0].temperature_c: expected an integer, got float"),
        ({"power_draw_w": 1e30}, "gpus[0].power_draw_w: must be at most 4000, got 1e+30"),
        ({"power_limit_w": float("nan")}, "gpus[0].power_limit_w: nan is not a finite number"),
        ({"energy_j": float("inf")}, "gpus[0].energy_j: inf is not a finite number"),
        ({"memory_total_mib": 1 << 40}, "gpus[0].memory_total_mib: must be at most 16777216"),
        ({"bar1_used_mib": -1}, "gpus[0].bar1_used_mib: must be at least 0, got -1"),
        ({"utilization_gpu_percent": 101}, "gpus[0].utilization_gpu_percent: must be at most 100"),
        ({"clocks_mhz": {"graphics": 10**6}}, "gpus[0].clocks_mhz.graphics: must be at most 100000"),
        ({"pcie": {"width": 64}}, "gpus[0].pcie.width: must be at most 32, got 64"),
        ({"pcie": {"replay_counter": 1 << 32}}, "gpus[0].pcie.replay_counter: must be at most 4294967295"),
        ({"ecc": {"enabled": True, "volatile": {"corrected": 1 << 64}}},
         "gpus[0].ecc.volatile.corrected: must be at most 4294967295"),
        ({"numa_node": 4096}, "gpus[0].numa_node: must be at most 1023"),
        ({"minor_number": 255}, "gpus[0].minor_number: must be at most 254"),
        ({"cuda_compute_capability": [8, 1000]}, "gpus[0].cuda_compute_capability[1]: must be at most 99"),
        ({"cpu_affinity": "0-99999999"},
         "gpus[0].cpu_affinity: expected a CPU list such as '0-23,48-71': CPU 99999999 is beyond"),
        ({"cpu_affinity": "0-65535," * 2}, ("gpus[0].cpu_affinity: expected a CPU list such as "
                                           "'0-23,48-71': more than 65536 CPUs listed")),
        ({"pci_device_id": "0x1" + "0" * 40}, ("gpus[0].pci_device_id: expected an integer or a hex "
                                              "string of 32 bits, got '0x1000000000000000")),
        ({"processes": [{"pid": 7, "used_memory_mib": 1 << 30}]},
         "gpus[0].processes[0].used_memory_mib: must be at most 16777216"),
        ({"xid_events": [{"after_samples": 1, "xid": 1 << 40}]},
         "gpus[0].xid_events[0].xid: must be at most 4294967295"),
        ({"x" * 10_000: 1}, "x...]: unknown key (known: "),
        ({"a\nb": 1}, "gpus[0]['a\\nb']: unknown key"),  # a newline in a key stays on one line
        ({"name": "A100", "board": "z" * 10_000}, "gpus[0].board: longer than 4,096 bytes"),
        ({"name": "A100", "board": "z" * 4000}, "gpus[0].board: unknown value 'zzzzzzzz"),
        ({"name": "N" * 96}, "gpus[0].name: longer than 95 bytes"),
        # Attribution and the ledger take ':' and lines as separators.
        ({"processes": [{"pid": 7, "user": "root:x"}]},
         "gpus[0].processes[0].user: 'root:x' is not a user name"),
        ({"processes": [{"pid": 7, "user": ""}]}, "gpus[0].processes[0].user: '' is not a user"),
        ({"processes": [{"pid": 7, "user": "u" * 257}]},
         "gpus[0].processes[0].user: longer than 256 bytes"),
    ],
)
def test_numbers_past_their_bounds_are_refused(gpu: dict[str, Any], expected: str) -> None:
    message = error({"gpus": [{**A100, **gpu}]})
    assert expected in message and len(message) < 1200  # the known keys, not the input


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"gpus": [A100] * 256}, "gpus: at most 255 GPUs, got 256"),
        ({"driver": {"version": "5" * 5000 + ".1"}}, "driver.version: longer than 4,096 bytes"),
        ({"driver": {"version": "5" * 4000 + ".1"}}, "driver.version: expected a version such as"),
        ({"driver": {"version": "٥٥٠.54.15"}}, "driver.version: expected a version such as"),
        ({"driver": {"cuda_version": 10**9}}, "driver.cuda_version: must be at most 99990"),
        ({"init_error": "Unknown", "init_error_attempts": 1 << 33}, "init_error_attempts: must be at most"),
        ({"faults": [{"call": "nvmlInit", "delay_seconds": 1e300}]},
         "faults[0].delay_seconds: must be at most 86400, got 1e+300"),
        ({"faults": [{"call": "nvmlInit", "error": "Unknown", "for_samples": 1 << 40}]},
         "faults[0].for_samples: must be at most 4294967295"),
    ],
)
def test_top_level_numbers_past_their_bounds_are_refused(data: dict[str, Any], expected: str) -> None:
    assert expected in error(data)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\x00\x01\x02\xff", "not UTF-8 text (binary?) at byte 3"),
        (b"[" * 100_000, "nested too deeply"),
        (b'{"format": 1, "gpus": [{"board": "T4", "power_draw_w": Infinity}]}',
         "Infinity is not a number JSON allows"),
        (b'{"format": 1, "description": ' + b"9" * 5000 + b"}", "a number of more than 4300 digits"),
    ],
)
def test_unreadable_files_are_one_line(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(content)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"scenario {path}: ") and expected in str(info.value)
    assert "\n" not in str(info.value)


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(ScenarioError, match=r"not a regular file \(a FIFO\)"):
        load_scenario(tmp_path / "fifo.json")
    with pytest.raises(ScenarioError, match=r"not a regular file \(a character device\)"):
        load_scenario("/dev/zero")


def test_a_command_of_blanks_names_no_process() -> None:
    from hwinfo.sim import install, uninstall

    scenario = parse_scenario({"format": 1, "gpus": [{"board": "T4", "processes": [
        {"pid": 7, "used_memory_mib": 1, "command": "   "}]}]}, "b.json", "b")
    try:
        machine = install(scenario)
        assert machine.process_name(7) is None and machine.process_owner(7) == (None, "   ")
    finally:
        uninstall()
