from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hwinfo.health.evaluate import RULE_NAMES
from hwinfo.health.thresholds import KEYS, ConfigError, Thresholds, load_thresholds


def load(tmp_path: Path, text: str, name: str = "check.yml") -> Thresholds:
    path = tmp_path / name
    path.write_text(text)
    return load_thresholds(str(path), RULE_NAMES)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"config {tmp_path / 'check.yml'}: ")
    return message.split(": ", 1)[1]


def test_every_key_has_a_default() -> None:
    limits = Thresholds()
    assert [f.name for f in dataclasses.fields(limits)] == list(KEYS)
    assert limits.expect_gpus is None and limits.temperature_margin_celsius == 5
    assert 79 in limits.xid_critical and 13 not in limits.xid_critical
    assert limits.disable == ()


@pytest.mark.parametrize("text", ["", "# nothing set\n", "{}"])
def test_empty_file_means_defaults(tmp_path: Path, text: str) -> None:
    assert load(tmp_path, text) == Thresholds()


def test_yaml_overrides_only_what_it_names(tmp_path: Path) -> None:
    limits = load(tmp_path, """\
expect_gpus: 8
temperature_margin_celsius: 8.5
idle_gpu_memory_mib: 2048
xid_ignore: [13, 43]
disable: [power_throttling]
""")
    assert limits == dataclasses.replace(
        Thresholds(), expect_gpus=8, temperature_margin_celsius=8.5, idle_gpu_memory_mib=2048,
        xid_ignore=(13, 43), disable=("power_throttling",),
    )


def test_json_is_read_too(tmp_path: Path) -> None:
    limits = load(tmp_path, '{"swap_used_warning_percent": 20, "xid_critical": [79]}', "check.json")
    assert limits.swap_used_warning_percent == 20 and limits.xid_critical == (79,)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("temprature_margin_celsius: 5\n", "unknown key 'temprature_margin_celsius' (known: expect_gpus, "),
        ("temperature_margin_celsius: hot\n",
         "temperature_margin_celsius: expected a number, got 'hot'"),
        ("temperature_margin_celsius: -1\n",
         "temperature_margin_celsius: expected a number from 0 to 200, got -1"),
        ("temperature_margin_celsius: .nan\n", "temperature_margin_celsius: nan is not a finite number"),
        ("temperature_margin_celsius: 1.0e+300\n",
         "temperature_margin_celsius: expected a number from 0 to 200, got 1e+300"),
        ("memory_available_warning_percent: 150\n",
         "memory_available_warning_percent: expected a number from 0 to 100, got 150"),
        ("swap_used_warning_percent: true\n", "swap_used_warning_percent: expected a number, got True"),
        ("expect_gpus: 2.5\n", "expect_gpus: expected a whole number from 0 to 255 or null, got 2.5"),
        ("idle_gpu_memory_mib: 1GiB\n", "idle_gpu_memory_mib: expected a whole number of MiB from 0 to 16777216, got '1GiB'"),
        ("xid_ignore: [-1]\n", "xid_ignore: expected a list of XID numbers, got [-1]"),
        ("expect_gpus: [" * 100_000, "nested too deeply"),
        ("xid_critical: 79\n", "xid_critical: expected a list of XID numbers, got 79"),
        ("xid_ignore: [13, x]\n", "xid_ignore: expected a list of XID numbers, got [13, 'x']"),
        ("disable: power_throttling\n", "disable: expected a list of rule names, got 'power_throttling'"),
        ("disable: [power_throttle]\n", "disable: unknown rule 'power_throttle' (rules: "),
        ("- expect_gpus: 8\n", "expected a mapping of threshold keys, got list"),
        ("memory_available_warning_percent: 5\nmemory_available_critical_percent: 10\n",
         "memory_available_critical_percent (10) is above memory_available_warning_percent (5)"),
        ("swap_used_warning_percent: 95\n",
         "swap_used_critical_percent (90) is below swap_used_warning_percent (95)"),
        ("expect_gpus: [8\n", "line 2, column 1: expected ',' or ']', but got '<stream end>'"),
        ("a: b: c\n", "line 1, column 5: mapping values are not allowed here"),
    ],
)
def test_broken_file_is_one_line_naming_the_key(tmp_path: Path, text: str, says: str) -> None:
    assert error(tmp_path, text).startswith(says)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match=r"^config /no/such/check\.yml: No such file or directory$"):
        load_thresholds("/no/such/check.yml", RULE_NAMES)


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file \\(a directory\\)"):
        load_thresholds(str(tmp_path), RULE_NAMES)


def test_binary_file(tmp_path: Path) -> None:
    (tmp_path / "check.yml").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError) as caught:
        load_thresholds(str(tmp_path / "check.yml"), RULE_NAMES)
    assert "\n" not in str(caught.value)
