"""`report --brief`: the whole machine in 24 lines of 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.simulated import simulated_snapshot as _snapshot

from hwinfo.model.sources import SourceError
from hwinfo.render.text.brief import LINES, render_brief
from hwinfo.render.text.style import Style


def _lines(scenario: str | Path) -> list[str]:
    return render_brief(_snapshot(scenario), Style(color=False)).splitlines()


# Host, CPU, memory, disks and network come before the GPUs' line.
GPUS_LINE = 5
# Those, the GPUs' line, the table's heading and 8 rows, and the users' heading.
ABOVE_USERS = GPUS_LINE + 1 + 1 + 8 + 1


def test_eight_gpus_fit_one_screen() -> None:
    for scenario in ("dgx-a100-mig", "dgx-h100", "faults-demo"):
        lines = _lines(scenario)
        assert len(lines) <= LINES and max(len(line) for line in lines) <= 80
    lines = _lines("dgx-a100-mig")
    assert lines[GPUS_LINE].startswith("GPUs  8 · driver 550.54.15")
    assert [lines[3][:6], lines[4][:6]] == ["Disk  ", "Net   "]
    assert [line.split()[0] for line in lines[GPUS_LINE + 2:GPUS_LINE + 10]] == [
        str(i) for i in range(8)]


def test_users_are_totals_across_gpus_busiest_first() -> None:
    lines = _lines("dgx-a100-mig")
    users = lines[lines.index("Users") + 1:]
    assert users[0].split()[:2] == ["dave", "117"]
    assert "on GPUs 1,4,7 · 14 procs" in users[0]


def _crowd(tmp_path: Path) -> Path:
    """Eight A100s, each with the same 30 users' processes: more users than the brief has room."""
    doc = {"format": 1, "gpus": [{"board": "A100-SXM4-80GB", "processes": [
        {"pid": 1000 + i, "used_memory_mib": 100 + i, "user": f"user{i:02d}", "command": "python"}
        for i in range(30)
    ]} for _ in range(8)]}
    scenario = tmp_path / "crowd.json"
    scenario.write_text(json.dumps(doc))
    return scenario


def test_many_users_end_in_a_count(tmp_path: Path) -> None:
    lines = _lines(_crowd(tmp_path))
    assert len(lines) == LINES
    assert lines[-1] == f"  +{30 - (LINES - ABOVE_USERS - 1)} more users"
    assert lines[lines.index("Users") + 1].split()[0] == "user29"


def test_no_driver_is_one_line() -> None:
    lines = _lines("no-driver")
    assert lines[GPUS_LINE] == "GPUs  no NVIDIA driver installed (libnvidia-ml.so.1 not found)"
    assert len(lines) == GPUS_LINE + 1


def test_collection_errors_count_against_the_budget(tmp_path: Path) -> None:
    # The crowded box of the test above, with two sources failing: the error lines stay (they
    # matter more) and the users shrink, so the brief is still 24 lines.
    snapshot = _snapshot(_crowd(tmp_path))
    snapshot.errors = [SourceError("cpu", "cannot read /proc/cpuinfo"),
                       SourceError("memory", "cannot read /proc/meminfo")]
    lines = render_brief(snapshot, Style(color=False)).splitlines()
    assert len(lines) == LINES
    assert lines[-2:] == ["cpu: collection failed: cannot read /proc/cpuinfo",
                          "memory: collection failed: cannot read /proc/meminfo"]
    assert lines[-3] == f"  +{30 - (LINES - ABOVE_USERS - 1 - 2)} more users"


def test_more_errors_than_room_end_in_a_count() -> None:
    snapshot = _snapshot("dgx-h100")
    snapshot.errors = [SourceError(f"source{i}", "failed") for i in range(LINES)]
    lines = render_brief(snapshot, Style(color=False)).splitlines()
    assert len(lines) == LINES
    assert lines[-1].startswith("  +") and lines[-1].endswith(" more collection errors")
    shown = sum(line.endswith(": collection failed: failed") for line in lines)
    assert shown + int(lines[-1].split()[0][1:]) == LINES
