"""Hostile inputs are refused in one line, within bounded time and memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hwinfo import inputs
from hwinfo.inputs import InputError


def _refused(fn, *args) -> str:
    with pytest.raises(InputError) as raised:
        fn(*args)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{"a": [1, 2.5]}')
    assert inputs.parse_json(inputs.read_text(path, "a"), "a") == {"a": [1, 2.5]}


@pytest.mark.parametrize("special, kind", [
    ("/dev/zero", "character device"), ("/dev/null", "character device"),
])
def test_devices_are_refused_without_reading(special: str, kind: str) -> None:
    assert kind in _refused(inputs.read_bytes, special, "--web-config /dev/zero")


def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "FIFO" in _refused(inputs.read_bytes, fifo, "scenario fifo")


def test_directory_and_missing_file(tmp_path: Path) -> None:
    assert "directory" in _refused(inputs.read_bytes, tmp_path, "x")
    assert "No such file" in _refused(inputs.read_bytes, tmp_path / "none", "x")


def test_not_there_is_told_from_refused(tmp_path: Path) -> None:
    # A procfs reader takes a file that cannot be opened as "not available", and only that.
    with pytest.raises(inputs.NotReadable):
        inputs.read_bytes(tmp_path / "none", "x")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError) as raised:
        inputs.read_bytes(tmp_path / "fifo", "x")
    assert not isinstance(raised.value, inputs.NotReadable)


def test_a_file_whose_size_says_zero_is_read_to_its_end() -> None:
    # procfs: st_size 0, content nonetheless; the bound is the bytes read.
    assert os.stat("/proc/self/status").st_size == 0
    assert "VmRSS:" in inputs.read_text("/proc/self/status", "status")
    with pytest.raises(InputError, match="larger than 100 bytes"):
        inputs.read_bytes("/proc/self/status", "status", 100)


def test_symlink_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("ok")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert inputs.read_text(tmp_path / "link", "x") == "ok"


def test_size_limit_reads_no_further(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 2000)
    assert "larger than 1000 bytes" in _refused(inputs.read_bytes, path, "x", 1000)
    assert len(inputs.read_bytes(path, "x", 2000)) == 2000


def test_binary_and_nul_are_not_text() -> None:
    assert "not UTF-8" in _refused(inputs.decode_text, b"\xff\xfe\x00", "f")
    assert "NUL" in _refused(inputs.decode_text, b"a\x00b", "f")


@pytest.mark.parametrize("parse", [inputs.parse_json, inputs.parse_yaml])
def test_deep_nesting_is_refused(parse) -> None:
    assert "nested" in _refused(parse, "[" * 100_000, "doc")
    assert "deeper than 64 levels" in _refused(parse, "[" * 100 + "]" * 100, "doc")


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "1e400"])
def test_json_non_finite_numbers(text: str) -> None:
    message = _refused(inputs.parse_json, text, "doc")
    assert "doc" in message


@pytest.mark.parametrize("text", [".nan", "a: .inf", "a: [-.inf]"])
def test_yaml_non_finite_numbers(text: str) -> None:
    assert "finite" in _refused(inputs.parse_yaml, text, "doc")


def test_yaml_alias_bomb_is_stopped_by_the_node_budget() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    assert "more than" in _refused(inputs.parse_yaml, "\n".join(lines), "doc")


def test_yaml_error_is_one_line() -> None:
    assert "line 2" in _refused(inputs.parse_yaml, "a: 1\n b: [", "doc")


def test_finite() -> None:
    assert inputs.finite(1.5, "x") == 1.5
    assert "--interval" in _refused(inputs.finite, float("nan"), "--interval")


@pytest.mark.parametrize(("parse", "text", "says"), [
    (inputs.parse_yaml, "a: 2001-13-45", "month must be in 1..12"),
    (inputs.parse_yaml, "a: !!int abc", "invalid literal for int()"),
    (inputs.parse_yaml, "a: !!float x", "could not convert string to float"),
    (inputs.parse_yaml, "a: " + "9" * 5000, "a number of more than 4300 digits"),
    (inputs.parse_json, "[" + "9" * 5000 + "]", "a number of more than 4300 digits"),
])
def test_parser_value_errors_are_input_errors(parse, text: str, says: str) -> None:
    # PyYAML's constructors and json's int() raise ValueError, not their own error types.
    assert says in _refused(parse, text, "doc")


def test_shown_cuts_long_values_and_survives_huge_integers() -> None:
    assert inputs.shown("x" * 100) == "'" + "x" * 56 + "..."
    assert inputs.shown(1 << 20000) == "an integer of 20001 bits"
    assert inputs.shown([1 << 20000]) == "a list holding a huge integer"
    assert inputs.shown("a\nb") == "'a\\nb'"
