"""Snapshot documents of earlier hwinfo 0.1.0 still load: as baselines and from older daemons.

The README promises that schema_version changes only when a field is renamed or removed.
tests/fixtures/old_snapshots holds documents earlier commits wrote (its README says which).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.loopback import serving

from hwinfo.model.gpu import PeakThroughput, XidErrors
from hwinfo.model.serialize import SchemaError, from_dict, snapshot_from_document

OLD = Path(__file__).parents[1] / "fixtures" / "old_snapshots"
DOCUMENTS = sorted(OLD.glob("*.json"))
HWINFO = [sys.executable, "-m", "hwinfo"]


def _scenario(path: Path) -> str:
    """The scenario the document was written from: built-in, or kept beside it."""
    name = path.stem.split("-", 1)[1]
    kept = OLD / "scenarios" / f"{name}.json"
    return str(kept) if kept.exists() else name


def test_there_are_old_documents() -> None:
    assert len(DOCUMENTS) >= 4


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_an_old_document_loads_with_what_it_says(path: Path) -> None:
    document = json.loads(path.read_text())
    snapshot = snapshot_from_document(document, path.name)
    assert snapshot.host.hostname == document["host"]["hostname"]
    gpus = (document.get("gpu") or {}).get("gpus") or []
    assert [(g.uuid, g.name, g.memory_total_bytes) for g in
            (snapshot.gpu.gpus if snapshot.gpu else [])] == [
        (g["uuid"], g["name"], g["memory_total_bytes"]) for g in gpus]
    for gpu, raw in zip(snapshot.gpu.gpus if snapshot.gpu else [], gpus):
        # What the old producer did not write is not available, never invented.
        if gpu.peak is not None and "clock_hertz" not in raw["peak"]:
            assert (gpu.peak.clock_hertz, gpu.peak.clock_source) == (None, None)


def test_only_fields_that_can_be_none_may_be_missing() -> None:
    assert from_dict(PeakThroughput, {}) == PeakThroughput(*[None] * 10)
    with pytest.raises(SchemaError, match="missing field 'xid'"):
        from_dict(XidErrors, {"count": 1, "last_timestamp_seconds": 0.0})
    with pytest.raises(SchemaError, match="missing field"):
        snapshot_from_document({"schema_version": 1}, "x")


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_an_old_baseline_is_checked_against(path: Path) -> None:
    run = subprocess.run([*HWINFO, "check", "--baseline", str(path), "--simulate",
                          _scenario(path)], capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode != 3, run.stdout  # UNKNOWN: the baseline was not used
    assert "missing field" not in run.stdout and run.stderr == ""


@pytest.fixture
def old_daemon() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A loopback server that answers /api/v1/snapshot as a daemon of an earlier commit: with
    the body the test puts under "body"."""
    said = {"body": b""}
    with serving(lambda path: (200, "application/json", said["body"])) as url:
        yield url, said


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_an_old_daemon_is_read(path: Path, old_daemon: tuple[str, dict[str, bytes]]) -> None:
    url, said = old_daemon
    said["body"] = path.read_bytes()
    report = subprocess.run([*HWINFO, "report", "--from", url], capture_output=True, text=True,
                            timeout=60, check=False)
    assert report.returncode == 0 and report.stderr == "", report.stderr
    assert json.loads(path.read_text())["host"]["hostname"] in report.stdout
    check = subprocess.run([*HWINFO, "check", "--from", url], capture_output=True, text=True,
                           timeout=60, check=False)
    assert check.returncode != 3, check.stdout


def _with_xid(document: dict[str, Any], when: float) -> dict[str, Any]:
    document["gpu"]["gpus"][0]["xid_errors"] = [
        {"xid": 79, "count": 1, "last_timestamp_seconds": when}]
    return document


@pytest.mark.parametrize("when", [1e18, 1e300, -1.0])
@pytest.mark.parametrize("field", ["timestamp_seconds", "xid", "host.boot_time_seconds"])
def test_a_time_no_clock_can_say_is_refused_in_one_line(
        when: float, field: str, old_daemon: tuple[str, dict[str, bytes]]) -> None:
    document = json.loads((OLD / "69ba130-cloud-t4.json").read_text())
    if field == "xid":
        _with_xid(document, when)
    elif field == "host.boot_time_seconds":
        document["host"]["boot_time_seconds"] = when
    else:
        document[field] = when
    url, said = old_daemon
    said["body"] = json.dumps(document).encode()
    for args in (["report"], ["report", "--brief"], ["report", "--format", "json"]):
        run = subprocess.run([*HWINFO, *args, "--from", url], capture_output=True, text=True,
                             timeout=60, check=False)
        assert run.returncode == 1 and run.stdout == "", run.stdout
        (line,) = run.stderr.splitlines()
        assert f"{when:g} is not a Unix time between 1970 and 2242" in line


def test_a_plausible_xid_time_loads() -> None:
    document = _with_xid(json.loads((OLD / "69ba130-cloud-t4.json").read_text()), 1.7e9)
    snapshot = snapshot_from_document(document, "x")
    assert snapshot.gpu.gpus[0].xid_errors[0].last_timestamp_seconds == 1.7e9


def test_a_small_document_that_builds_millions_of_values_is_refused_in_one_line(
        old_daemon: tuple[str, dict[str, bytes]]) -> None:
    # 40,000 GPUs of two values each are 120,000 values to the parse, well inside its bound;
    # each GPU's other fields default to "not available", some 2.3 million values built (and
    # 150,000 such GPUs were a 1.7 GB report).
    document = json.loads((OLD / "69ba130-cloud-t4.json").read_text())
    document["gpu"]["gpus"] = [{"index": i, "lost": False} for i in range(40_000)]
    url, said = old_daemon
    said["body"] = json.dumps(document).encode()
    for command, status in (("report", 1), ("check", 3)):
        run = subprocess.run([*HWINFO, command, "--from", url], capture_output=True, text=True,
                             timeout=120, check=False)
        assert run.returncode == status, run.stdout
        (line,) = (run.stdout + run.stderr).splitlines()
        assert "Snapshot.gpu.gpus[" in line and "more than 1,000,000 values" in line
