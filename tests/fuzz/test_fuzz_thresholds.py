"""Thresholds files (`check --config`): Thresholds, or one ConfigError line; NaN and inf never pass."""

from __future__ import annotations

import math

import yaml
from fuzz.mutations import JSON_VALUES, NUMBERS, fuzz_settings, one_line_or_valid, scratch_dir
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.health.evaluate import RULE_NAMES
from hwinfo.health.thresholds import KEYS, ConfigError, Thresholds, load_thresholds

WORKDIR = scratch_dir("hwinfo-fuzz-thresholds-")
VALUES = st.one_of(NUMBERS, JSON_VALUES, st.lists(NUMBERS, max_size=4),
                   st.lists(st.sampled_from(sorted(RULE_NAMES)), max_size=3))
DOCUMENTS = st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=10)), VALUES, max_size=5)
# YAML that PyYAML's constructors mishandle: bad dates, bad tags, long numbers, aliases.
TRICKY = st.sampled_from([
    "expect_gpus: 2001-13-45\n", "expect_gpus: !!int abc\n", "expect_gpus: !!float x\n",
    "expect_gpus: " + "9" * 5000 + "\n", "a: &a [*a]\n", "xid_ignore: !!set {1, 2}\n",
    "expect_gpus: !!binary '@@'\n", "? [a, b]\n: 1\n", "temperature_margin_celsius: .nan\n",
    "temperature_margin_celsius: -.inf\n", "expect_gpus: [" * 20_000, "%YAML 9.9\n---\na: 1\n",
    "a: !!python/object/apply:os.system ['true']\n", "\ufeffexpect_gpus: 2\n",
])


def loads(content: bytes) -> Thresholds | None:
    path = WORKDIR / "check.yml"
    path.write_bytes(content)
    limits = one_line_or_valid(lambda: load_thresholds(str(path), RULE_NAMES), ConfigError)
    if limits is not None:
        for name in KEYS:
            value = getattr(limits, name)
            assert not isinstance(value, float) or math.isfinite(value), (name, value)
    return limits


@fuzz_settings(200)
@given(DOCUMENTS)
def test_any_mapping_of_keys_is_thresholds_or_one_line(document: dict[str, object]) -> None:
    loads(yaml.safe_dump(document, allow_unicode=True).encode())


@fuzz_settings(100)
@given(st.one_of(TRICKY.map(str.encode), st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_any_file_content_is_thresholds_or_one_line(content: bytes) -> None:
    loads(content)
