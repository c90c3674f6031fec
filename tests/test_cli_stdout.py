"""Standard output that cannot be written, in a real process: a closed pipe, a full device.

A closed pipe (`hwinfo check | true`) ends quietly, as other Unix tools do; a full disk
(`>/dev/full`) is one line on standard error naming standard output. Either way the exit
status is the command's own for trouble (1, `check` 3) and there is no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CAPTURES, require_captures

HWINFO = [sys.executable, "-m", "hwinfo"]
# https://github.com/influxdata/telegraf/blob/58ff61d01be05ec0d4c2f57c8c89031e026fa0b9/plugins/inputs/nvidia_smi/testdata/3090-v13.xml
DUMP = CAPTURES / "rtx-3090-driver590-v13.xml"

COMMANDS = [
    (("report", "--simulate", "cloud-t4"), 1),
    (("report", "--simulate", "cloud-t4", "--format", "json"), 1),
    (("check", "--simulate", "cloud-t4"), 3),
    (("check", "--simulate", "cloud-t4", "--format", "json"), 3),
    (("export", "--simulate", "cloud-t4", "--textfile", "-"), 1),
    (("sim", "import", str(DUMP), "-o", "-"), 1),
    (("sim", "import", str(DUMP)), 1),
    (("sim", "list"), 1),
    (("--help",), 1),
    (("check", "--help"), 3),
    (("check", "--bogus"), 3),  # the UNKNOWN line of a usage error, written to nowhere
]


def _run(args: tuple[str, ...], stdout: int) -> subprocess.CompletedProcess[str]:
    if "import" in args:
        require_captures(DUMP)
    return subprocess.run([*HWINFO, *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=60, check=False)


@pytest.mark.parametrize(("args", "exit_code"), COMMANDS)
def test_a_closed_pipe_ends_quietly(args: tuple[str, ...], exit_code: int) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: EPIPE, every time
    try:
        result = _run(args, write_end)
    finally:
        os.close(write_end)
    assert result.stderr == ""
    assert result.returncode == exit_code


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize(("args", "exit_code"), COMMANDS)
def test_a_full_device_is_one_line_naming_standard_output(
    args: tuple[str, ...], exit_code: int
) -> None:
    with open("/dev/full", "wb") as full:
        result = _run(args, full.fileno())
    assert result.returncode == exit_code, result.stderr
    assert result.stderr.splitlines() == [
        "Error: standard output: cannot write: No space left on device"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_watch_whose_reader_has_had_enough_ends_quietly_with_0(fmt: str) -> None:
    """`hwinfo report --watch | head`: the reader takes the first refresh and goes; the watch
    ends at its next write, as Ctrl-C ends one on a terminal (0), with nothing on stderr."""
    watch = subprocess.Popen([*HWINFO, "report", "--simulate", "cloud-t4", "--watch", "0.1",
                              "--format", fmt], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert watch.stdout is not None and watch.stdout.readline()  # the first refresh came
        watch.stdout.close()  # as head does once it has its lines
        _, stderr = watch.communicate(timeout=60)
    finally:
        watch.kill()
        watch.wait()
    assert (watch.returncode, stderr) == (0, b"")
