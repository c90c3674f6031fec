"""Capture files split into sections, and the facts their -L, mig -lgi and nvlink -s sections
give (hwinfo/sim/importer_capture.py), on hand-written captures."""

from __future__ import annotations

import pytest
from fixtures.smi_dumps import capture_section

from hwinfo.sim.importer_capture import ListedMigDevice, MigPlacement, parse_capture

# Longer than int() converts (4,300 digits): a number no nvidia-smi prints.
HUGE = "9" * 5000


def _section(command: str, *lines: str) -> str:
    return capture_section(f"capabilities :: {command}", f"nvidia-smi {command}", lines)


def _lgi_row(gpu: str, profile_id: str, gi: str, start: str, size: str) -> str:
    return f"|   {gpu}  MIG 1g.10gb          {profile_id}        {gi}          {start}:{size}     |"


@pytest.mark.parametrize("row", [
    _lgi_row(HUGE, "19", "9", "2", "1"),
    _lgi_row("0", HUGE, "9", "2", "1"),
    _lgi_row("0", "19", HUGE, "2", "1"),
    _lgi_row("0", "19", "9", HUGE, "1"),
    _lgi_row("0", "19", "9", "2", HUGE),
    _lgi_row("0", "19", "9", "٣", "1"),  # a digit, but not one nvidia-smi prints
])
def test_a_lgi_row_of_numbers_no_nvidia_smi_prints_is_no_placement(row: str) -> None:
    capture = parse_capture(_section("mig -lgi", _lgi_row("0", "19", "10", "3", "1"), row))
    assert capture.gpu_instance_placements() == {(0, 10): MigPlacement("1g.10gb", 19, 3, 1)}


def test_a_gpu_or_mig_device_index_no_nvidia_smi_prints_lists_nothing() -> None:
    capture = parse_capture(
        _section("-L", f"GPU {HUGE}: NVIDIA H100 80GB HBM3 (UUID: GPU-1)",
                 "  MIG 1g.10gb     Device  0: (UUID: MIG-1)",
                 "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)",
                 f"  MIG 1g.10gb     Device  {HUGE}: (UUID: MIG-2)",
                 "  MIG 3g.40gb     Device  1: (UUID: MIG-3)")
        + _section("nvlink -s", f"GPU {HUGE}: NVIDIA H100 80GB HBM3 (UUID: GPU-1)",
                   "\t Link 0: 26.562 GB/s",
                   "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)", "\t Link 0: 26.562 GB/s"))
    # The huge GPU's lines are nobody's: not GPU 0's, which comes after them.
    assert capture.mig_devices_listed() == {(0, 1): ListedMigDevice("3g.40gb", "MIG-3")}
    assert capture.nvlink_active() == {0: 1}
