"""Hostile nvidia-smi dumps: the importer answers a scenario or one DumpError line, nothing else."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwinfo.sim.importer import DumpError, import_dump
from hwinfo.sim.scenario import parse_scenario
from hwinfo.sim.scenario_model import ScenarioError

BANNER = "==============NVSMI LOG=============="
LABELS = st.sampled_from(
    [
        "Driver Version",
        "CUDA Version",
        "Attached GPUs",
        "GPU 00000000:01:00.0",
        "Product Name",
        "FB Memory Usage",
        "Total",
        "Used",
        "Free",
        "Reserved",
        "MIG Mode",
        "Current",
        "MIG Device",
        "GPU Instance ID",
        "Compute Instance ID",
        "Multiprocessor count",
        "Shared FB Memory Usage",
        "Processes",
        "GPU instance ID",
        "Process ID",
        "Type",
        "Name",
        "Used GPU Memory",
        "Clocks Event Reasons",
        "Idle",
        "Temperature",
        "GPU Current Temp",
        "GPU Power Readings",
        "Average Power Draw",
        "Performance State",
        "PCI",
        "Bus Id",
        "Device Id",
    ]
)
VALUES = st.one_of(
    st.sampled_from(
        [
            "N/A",
            "40448 MiB",
            "9 MiB",
            "1",
            "0",
            "550.54.15",
            "12.4",
            "P0",
            "C",
            "x",
            "[N/A]",
            "Enabled",
            "Active",
            "71.27 W",
            "42 C",
            "0x233010DE",
            "-8 C",
            "99999999999999999999 MiB",
            "nan W",
            "inf MiB",
        ]
    ),
    st.text(max_size=20),
)
LINE = st.tuples(st.integers(0, 16), LABELS, st.one_of(st.none(), VALUES)).map(
    lambda t: " " * t[0] + t[1] + ("" if t[2] is None else f" : {t[2]}")
)
TEXT_DUMP = st.lists(LINE, max_size=60).map(lambda lines: "\n".join([BANNER, *lines]))
CAPTURE = TEXT_DUMP.map(
    lambda body: "#" * 80 + "\n# load :: query (-q)\n# $ nvidia-smi -q\n" + "#" * 80 + "\n" + body
)
FUZZ = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], database=None)


def _import(text: str) -> None:
    try:
        scenario = import_dump(text, "fuzz.txt")
    except DumpError as err:
        assert "\n" not in str(err) and str(err).startswith("fuzz.txt")
        return
    try:
        parse_scenario(scenario, "fuzz.txt", "fuzz")
    except ScenarioError as err:  # e.g. a utilization over 100 %: refused with one line
        assert "\n" not in str(err)


@FUZZ
@given(TEXT_DUMP)
def test_text_dumps(text: str) -> None:
    _import(text)


@FUZZ
@given(CAPTURE)
def test_capture_files(text: str) -> None:
    _import(text)


@FUZZ
@given(st.text(max_size=400))
def test_any_text(text: str) -> None:
    _import(text)
