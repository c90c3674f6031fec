"""Names that are not UTF-8 (a real process on this machine, a scenario's) reach every
output escaped as it needs: report text and JSON, `serve`, `export --textfile`, `check`."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hwinfo.escape import printable, to_json, unicode
from hwinfo.sim.run import child_environment
from tests.exporter.serving import get, serving

HWINFO = [sys.executable, "-m", "hwinfo"]
# What a Latin-1 and an EUC-KR file name hold: "é" and "한" not in UTF-8.
LATIN1, EUC_KR = b"\xe9", b"\xc7\xd1"
# A driver's name in Latin-1, with an escape sequence that would set a terminal's title.
GPU_NAME = "Tesla T4 \udce9 \x1b]0;pwned\x07"


def test_control_characters_are_escaped() -> None:
    assert printable("python -c 'x\ny'\t\r") == "python -c 'x\\ny'\\t\\r"
    assert printable("\x1b]0;pwned\x07\x1b[2J\x9b") == "\\x1b]0;pwned\\x07\\x1b[2J\\x9b"


def test_bidirectional_formatting_is_escaped_and_other_scripts_are_not() -> None:
    # U+202E would show "ann" and the columns after it right to left (Trojan Source).
    assert printable("ann\u202e 4 GPUs") == "ann\\u202e 4 GPUs"
    assert printable("\u2066x\u2069\u200f\u061c", keep_colour=True) == "\\u2066x\\u2069\\u200f\\u061c"
    assert printable("مستخدم עברית") == "مستخدم עברית"


def test_invisible_characters_and_line_separators_are_escaped() -> None:
    # "ali\u200bce" would look like "alice" in a table: two rows alike, one user seemingly.
    assert printable("ali\u200bce") == "ali\\u200bce"
    assert printable("a\u2028b\u2029c\u2060d\ufeff") == "a\\u2028b\\u2029c\\u2060d\\ufeff"


def test_colour_is_kept_only_when_asked() -> None:
    red = "\x1b[31;1mLOST\x1b[0m"
    assert printable(red, keep_colour=True) == red
    assert printable(red) == "\\x1b[31;1mLOST\\x1b[0m"
    assert printable("zoë ユーザー") == "zoë ユーザー"


def test_bytes_that_were_not_utf8_are_shown_as_bytes() -> None:
    name = os.fsdecode(b"caf" + LATIN1 + b" " + EUC_KR)
    assert printable(name) == "caf\\xe9 \\xc7\\xd1"
    assert unicode(name) == "caf\\xe9 \\xc7\\xd1"
    assert unicode("zoë") == "zoë"
    # A lone surrogate a JSON document spelled: not a byte, still not encodable.
    assert printable("\ud800") == unicode("\ud800") == "\\ud800"


def test_json_escapes_surrogates_and_reads_back_the_same() -> None:
    document = {"name": os.fsdecode(b"caf" + LATIN1), "zoë": [1.5, None]}
    text = to_json(document)
    text.encode()  # UTF-8 can hold it
    assert '"caf\\udce9"' in text and "zoë" in text
    assert json.loads(text) == document


def test_json_has_no_infinity_or_nan() -> None:
    text = to_json({"a": float("inf"), "b": [float("nan"), 2.0]}, indent=None)
    assert text == '{"a": null, "b": [null, 2.0]}'


@pytest.fixture
def foreign_process(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real process of ours named in Latin-1 (its executable's file name) whose command
    line is in EUC-KR, as a Korean or European lab's files are."""
    program = os.path.join(os.fsencode(tmp_path), b"sl" + LATIN1 + b"ep")
    shutil.copy(shutil.which("sleep") or "/bin/sleep", program)
    proc = subprocess.Popen([EUC_KR + b"-train", b"600"], executable=program)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _gpu_scenario(tmp_path: Path, process: dict[str, object]) -> str:
    path = tmp_path / "foreign.json"
    path.write_text(json.dumps({"format": 1, "gpus": [
        {"board": "T4", "name": GPU_NAME, "processes": [{"used_memory_mib": 512, **process}]}]}))
    return str(path)


def _check_outputs(env: dict[str, str] | None, name: str, user: str, *args: str) -> None:
    """report (text, JSON), export --textfile --process-metrics and check, one run each."""

    def run(*command: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([*HWINFO, *command, *args], capture_output=True, env=env,
                              check=False, timeout=60)

    text = run("report")
    assert text.returncode == 0, text.stderr
    assert printable(name).encode() in text.stdout and printable(user).encode() in text.stdout
    assert b"Tesla T4 \\xe9 \\x1b]0;pwned\\x07" in text.stdout
    document = run("report", "--format", "json")
    assert document.returncode == 0, document.stderr
    (proc,) = json.loads(document.stdout)["gpu"]["gpus"][0]["processes"]
    assert (proc["name"], proc["user"]) == (name, user)
    assert json.loads(document.stdout)["gpu"]["gpus"][0]["name"] == GPU_NAME
    export = run("export", "--process-metrics", "--textfile", "-")
    assert export.returncode == 0, export.stderr
    (sample,) = [s for f in text_string_to_metric_families(export.stdout.decode())
                 for s in f.samples if s.name == "hwinfo_gpu_process_memory_used_bytes"]
    assert (sample.labels["command"], sample.labels["user"]) == (unicode(name), unicode(user))
    (info,) = [s for f in text_string_to_metric_families(export.stdout.decode())
               for s in f.samples if s.name == "hwinfo_gpu_info"]
    assert info.labels["name"] == unicode(GPU_NAME)
    check = run("check")
    assert check.returncode == 0 and check.stdout.startswith(b"HWINFO OK"), check


def _check_serving(env: dict[str, str] | None, name: str, *args: str) -> None:
    """/-/ready, /api/v1/snapshot and /metrics, with and without --process-metrics."""
    for extra in ((), ("--process-metrics",)):
        with serving(*args, "--interval", "1", *extra, env=env) as url:
            assert get(url + "/-/ready")[0] == 200
            status, _, body = get(url + "/api/v1/snapshot")
            assert status == 200
            (proc,) = json.loads(body)["gpu"]["gpus"][0]["processes"]
            assert proc["name"] == name
            status, _, body = get(url + "/metrics")
            assert status == 200
            families = {f.name: f for f in text_string_to_metric_families(body.decode())}
            assert families["hwinfo_gpu_memory_used_bytes"].samples
            if extra:
                (sample,) = families["hwinfo_gpu_process_memory_used_bytes"].samples
                assert sample.labels["command"] == unicode(name)
        assert not any("Traceback" in line for line in url.log)


def test_a_real_process_named_in_latin1_reaches_every_output(
        tmp_path: Path, foreign_process: subprocess.Popen[bytes]) -> None:
    # The simulated GPU lists our process; its name, command line and user come from this
    # machine's process table (psutil), as on a real GPU host.
    env = child_environment(_gpu_scenario(tmp_path, {"pid": foreign_process.pid}))
    name = os.fsdecode(EUC_KR + b"-train")  # ps's name: its command line's first word
    user = pwd.getpwuid(os.getuid()).pw_name
    _check_outputs(env, name, user)
    _check_serving(env, name)
    # A recording of the machine keeps the bytes, and replays them.
    recorded = subprocess.run([*HWINFO, "sim", "record", "--full-command"], capture_output=True,
                              env=env, timeout=60, check=False)
    assert recorded.returncode == 0, recorded.stderr
    scenario = tmp_path / "recorded.json"
    scenario.write_bytes(recorded.stdout)
    replayed = subprocess.run([*HWINFO, "report", "--format", "json", "--full-command",
                               "--simulate", str(scenario)], capture_output=True, timeout=60,
                              check=False)
    (proc,) = json.loads(replayed.stdout)["gpu"]["gpus"][0]["processes"]
    assert proc["command"] == os.fsdecode(EUC_KR + b"-train 600")


def test_a_scenarios_foreign_names_reach_every_output(tmp_path: Path) -> None:
    # JSON spells the undecodable bytes as the surrogates psutil would have given.
    scenario = _gpu_scenario(tmp_path, {"pid": 4242, "name": "caf\udce9",
                                        "command": "/opt/caf\udce9/train --lang=\udcc7\udcd1",
                                        "user": "us\udce9r"})
    _check_outputs(None, "caf\udce9", "us\udce9r", "--simulate", scenario)
    _check_serving(None, "caf\udce9", "--simulate", scenario)
