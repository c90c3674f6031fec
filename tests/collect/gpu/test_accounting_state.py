"""What a daemon keeps of NVML's accounting buffers across restarts: the file, read as hostile,
and a real `hwinfo serve --state-dir` that writes it and resumes from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from hwinfo.collect.gpu import accounting_state
from hwinfo.collect.gpu.accounting_state import Judged
from tests.exporter.serving import serving

UUID = "GPU-12345678-1234-1234-1234-123456789abc"


def _state(tmp_path: Path, content: bytes | str) -> Path:
    path = tmp_path / accounting_state.FILE_NAME
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_what_is_written_is_read_back(tmp_path: Path) -> None:
    kept = {UUID: Judged(1_700_000_000.5, {10: 1, 4_000_000: 3})}
    _state(tmp_path, accounting_state.dumps(kept))
    assert accounting_state.load(str(tmp_path)) == kept


@pytest.mark.parametrize(("content", "says"), [
    (b"\x00\xff\xfe", "not UTF-8"),
    ("", "accounting state"),
    ("[]", "not an accounting state of format 1"),
    ('{"format": 2, "gpus": {}}', "format 1"),
    ('{"format": 1, "gpus": []}', "no `gpus` object"),
    ('{"format": 1, "gpus": {"g": {"at": NaN, "entries": []}}}', "NaN"),
    ('{"format": 1, "gpus": {"g": {"at": 1e300, "entries": []}}}', "not a Unix time"),
    ('{"format": 1, "gpus": {"g": {"at": 1, "entries": [[1, -2]]}}}', "not [pid, count]"),
    ('{"format": 1, "gpus": {"g": {"at": 1, "entries": [[1.5, 2]]}}}', "not [pid, count]"),
    ('{"format": 1, "gpus": {"g": {"at": 1, "entries": [[true, 2]]}}}', "not [pid, count]"),
    ('{"format": 1, "gpus": {"g": {"at": 1}}}', "exactly `at` and `entries`"),
    ("[" * 100_000, "accounting state"),
])
def test_a_file_that_cannot_be_used_is_said_once_and_ignored(
    tmp_path: Path, content: bytes | str, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    _state(tmp_path, content)
    assert accounting_state.load(str(tmp_path)) == {}
    (record,) = caplog.records
    assert says in record.getMessage() and "\n" not in record.getMessage()


@pytest.mark.parametrize(("owner", "mode", "says"), [
    (65534, 0o644, "belongs to uid 65534"),
    (None, 0o666, "writable by others than its owner"),
    (None, 0o664, "writable by others than its owner"),
])
def test_a_file_another_user_could_have_written_is_not_used(
    tmp_path: Path, owner: int | None, mode: int, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Whoever can write it decides what is counted: `at` 0 and no entries recounted every
    job the buffer holds (charged twice), entries marked judged were never charged."""
    path = _state(tmp_path, accounting_state.dumps({UUID: Judged(0, {})}))
    path.chmod(mode)
    if owner is not None:
        os.chown(path, owner, -1)
    assert accounting_state.load(str(tmp_path)) == {}
    (record,) = caplog.records
    assert says in record.getMessage() and "not used" in record.getMessage()


def test_a_fifo_is_refused_without_waiting_for_a_writer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.mkfifo(tmp_path / accounting_state.FILE_NAME)
    assert accounting_state.load(str(tmp_path)) == {}
    assert "a FIFO" in caplog.records[0].getMessage()


def test_no_file_is_a_first_start_and_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert accounting_state.load(str(tmp_path)) == {}
    assert caplog.records == []


def _scenario(tmp_path: Path) -> Path:
    """A GPU whose accounting buffer holds a 3 s job that ended as the driver loaded."""
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"format": 1, "description": "a short job", "gpus": [
        {"board": "RTX-A5000", "uuid": UUID, "accounting": {"enabled": True, "processes": [
            {"pid": 4100, "run_ms": 3000, "gpu_util_percent": 50}]}}]}))
    return path


def _accounted(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=60) as answer:
        return next((line for line in answer.read().decode().splitlines()
                     if line.startswith("hwinfo_gpu_user_accounted_seconds_total{")), "")


def _wait(what: str, ready: object) -> None:
    deadline = time.monotonic() + 60
    while not ready():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"no {what} within 60 s"
        time.sleep(0.1)


def test_serve_resumes_from_its_state_dir_and_keeps_it(tmp_path: Path) -> None:
    """The last daemon's word, an hour before the driver loaded, judged nothing of this GPU:
    the job in the buffer ended after it, unseen, so the resumed daemon counts it."""
    state = tmp_path / "state"
    state.mkdir()
    _state(state, accounting_state.dumps({UUID: Judged(time.time() - 3600, {})}))
    # As systemd's StateDirectory= hands it over (systemd/hwinfo.service).
    with serving("--simulate", str(_scenario(tmp_path)), "--interval", "0.2",
                 env={**os.environ, "STATE_DIRECTORY": str(state)}) as url:
        _wait("accounted job", lambda: _accounted(url).endswith(" 3.0"))
        assert 'user="(unknown)"' in _accounted(url)
        _wait("state written", lambda: accounting_state.load(str(state))[UUID].entries == {4100: 1})


def test_serve_without_a_state_dir_takes_the_buffer_as_counted(tmp_path: Path) -> None:
    with serving("--simulate", str(_scenario(tmp_path)), "--interval", "0.2",
                 env={**os.environ, "STATE_DIRECTORY": ""}) as url:
        samples = int(_count(url, "hwinfo_samples_total"))
        _wait("two more samples", lambda: _count(url, "hwinfo_samples_total") >= samples + 2)
        assert _accounted(url).endswith(" 0.0")


def _count(url: str, name: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=60) as answer:
        line = next(line for line in answer.read().decode().splitlines()
                    if line.startswith(name + " "))
    return float(line.split()[-1])


def test_serve_refuses_a_state_dir_that_is_not_a_directory(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hwinfo", "serve", "--simulate", "cloud-t4", "--port", "0",
         "--state-dir", str(tmp_path / "missing")],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("missing: not a directory")
