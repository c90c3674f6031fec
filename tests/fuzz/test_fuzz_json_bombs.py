"""Documents that ask for more than they weigh: refused before they are built, in bounded
memory and time.

A 16 MiB `[{},{},...]` passes the size limit and would be 5.6 million dicts (over a GB)
if parsed first and counted after; as YAML, PyYAML would keep about a KiB per node. Every
document goes through inputs.parse_json or parse_yaml: the in-process cases bound them
there; the commands prove each way in (a file, a daemon, a Prometheus) by the kernel's peak
RSS of the whole process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from fixtures.loopback import serving
from fuzz.mutations import bounded_memory, one_line_or_valid

from hwinfo import inputs
from hwinfo.cli.ledger import _within
from hwinfo.ledger.queries import HELD_RECORD

LIMIT = inputs.DEFAULT_LIMIT_BYTES
BOMB = b"[" + b"{}," * (LIMIT // 3 - 1) + b"{}]"  # just under the size limit
# The most a whole command may take at its peak on any accepted-size input (a bare
# `hwinfo usage` is about 40 MiB).
COMMAND_PEAK_BYTES = 256 << 20


@pytest.mark.parametrize("bomb", [
    BOMB,
    b"[" + b"0," * (LIMIT // 2 - 2) + b"0]",
    b"{" + b",".join(b'"%d":{}' % i for i in range(1_200_000)) + b"}",
])
def test_a_document_of_millions_of_values_is_refused_before_it_is_built(bomb: bytes) -> None:
    assert len(bomb) <= LIMIT
    for text in (bomb, bomb.decode()):  # a file's text, a server's body
        assert one_line_or_valid(lambda t=text: inputs.parse_json(t, "x"), inputs.InputError) is None


@pytest.mark.parametrize("bomb", [
    "[" + "{}," * 1_000_000 + "{}]",
    "- a\n" * 1_000_000,
    "".join(f"k{n}: v\n" for n in range(300_000)),
])
def test_a_yaml_document_of_many_nodes_is_refused_before_it_is_composed(bomb: str) -> None:
    # 300,000 nodes took 311 MiB and 8 s in PyYAML; 16 MiB of them, gigabytes.
    assert one_line_or_valid(lambda: inputs.parse_yaml(bomb, "x"), inputs.InputError) is None


def test_a_document_just_under_the_value_budget_loads_in_bounded_memory() -> None:
    text = b"[" + b'{"a":{}},' * (inputs.MAX_NODES // 2 - 2) + b"{}]"
    with bounded_memory(COMMAND_PEAK_BYTES):
        document = inputs.parse_json(text, "x")
    assert len(document) == inputs.MAX_NODES // 2 - 1


def test_the_check_after_parsing_holds_one_iterator_per_level_not_a_copy() -> None:
    document = [[{}] * 300_000, {"deep": [1.0] * 300_000}]
    with bounded_memory(8 << 20):  # a stack of 600,000 paths took 31 MiB
        inputs.check_document(document, "x")
    document[1]["deep"][123_456] = float("nan")
    with pytest.raises(inputs.InputError, match=r"^x: \[1\]\.deep\[123456\]: nan is not"):
        inputs.check_document(document, "x")


def peak_of(args: list[str]) -> tuple[int, str, int]:
    """Exit status, output and the kernel's peak RSS (bytes) of `hwinfo ARGS`, run alone."""
    process = subprocess.Popen([sys.executable, "-m", "hwinfo", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    output = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, output, usage.ru_maxrss * 1024


def assert_refused_within_bounds(args: list[str], says: str) -> None:
    """One line (an error, or `check`'s UNKNOWN) that says why, and a bounded peak."""
    code, output, peak = peak_of(args)
    lines = output.splitlines()
    assert code != 0 and "Traceback" not in output and len(lines) == 1, output
    assert says in lines[0], lines[0]
    assert peak <= COMMAND_PEAK_BYTES, f"peak RSS {peak >> 20} MiB"


# A slow Prometheus: its answer about the rules comes in half the command's --timeout, its
# answers to queries only once the command has ended (a minute at most).
SLOW_TIMEOUT = 3.0
SLOW_RULES = 1.5
SLOW_ENDED = threading.Event()  # set by the test once the command has ended
SLOW_ASKED: list[str] = []


def _hostile(path: str) -> tuple[int, str, bytes]:
    """A daemon or a Prometheus whose every answer is the bomb; slow ones under /slow."""
    if not path.startswith("/slow"):
        return 200, "application/json", BOMB
    SLOW_ASKED.append(path)
    if "/api/v1/rules" in path:
        time.sleep(SLOW_RULES)
    else:
        SLOW_ENDED.wait(60)
    return 200, "application/json", _slow_answer(path)


def _slow_answer(path: str) -> bytes:
    if "/api/v1/rules" in path:
        data: object = {"groups": [{"name": "ledger", "interval": 60,
                                    "rules": [{"name": HELD_RECORD}]}]}
    else:
        data = {"resultType": "vector", "result": [
            {"metric": {"measure": "gpus", "job": "j", "instance": "i", "gpu": "0"},
             "value": [0, "1"]}]}
    return json.dumps({"status": "success", "data": data}).encode()


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    with serving(_hostile) as url:
        yield url


@pytest.mark.parametrize("command", [["usage", "--advise"], ["fleet"], ["report", "--from"],
                                     ["check", "--from"]])
def test_a_bomb_over_the_network_is_refused_in_bounded_memory(hostile: str, command: list[str]) -> None:
    flag = [] if command[-1] == "--from" else ["--prometheus"]
    assert_refused_within_bounds([*command, *flag, hostile], "values")


@pytest.mark.parametrize("command", [["report", "--simulate"], ["check", "--baseline"],
                                     ["check", "--config"], ["usage", "--prices"]])
def test_a_bomb_in_a_file_is_refused_in_bounded_memory(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "bomb.json"
    # JSON is YAML too; --prices takes 1 MiB at most.
    path.write_bytes(BOMB if command[-1] != "--prices" else BOMB[:(1 << 20) - 3] + b"{}]")
    # The prices are read before Prometheus is asked: none needs to be there.
    more = ["--prometheus", "http://127.0.0.1:1"] if command[0] == "usage" else []
    assert_refused_within_bounds([*command, str(path), *more], "values")


def test_the_timeout_bounds_the_whole_ledger_command(hostile: str) -> None:
    # The rules come within --timeout; the queries are answered only after the command has
    # ended, so it ends by a deadline, and its message says which. The whole command's
    # deadline comes first by the 1.5 s the rules took: a request's own deadline starts
    # when the request is sent, and would end it with the request's own message.
    SLOW_ASKED.clear()
    SLOW_ENDED.clear()
    try:
        code, stderr, _ = peak_of(["usage", "--prometheus", hostile + "/slow",
                                   "--timeout", f"{SLOW_TIMEOUT:g}"])
    finally:
        SLOW_ENDED.set()
    assert code == 1 and stderr.splitlines() == [
        f"Error: no complete answer within {SLOW_TIMEOUT:g} s (--timeout)"], stderr
    assert SLOW_ASKED[0] == "/slow/api/v1/rules?type=record"


def test_a_command_past_its_deadline_leaves_its_work_behind() -> None:
    # The process ends with the command: the work still waiting on Prometheus is on a daemon
    # thread, which the interpreter does not wait for at exit.
    release = threading.Event()
    with pytest.raises(click.ClickException, match=r"^no complete answer within 0\.1 s"):
        _within(0.1, lambda: str(release.wait(60)))
    (work,) = [t for t in threading.enumerate() if t.name == "hwinfo-ledger"]
    assert work.daemon
    release.set()
    work.join(60)
