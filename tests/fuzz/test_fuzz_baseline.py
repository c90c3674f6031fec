"""Baseline files (`check --baseline`): a Snapshot that drift rules can compare, or one line."""

from __future__ import annotations

import json

from fuzz.mutations import fuzz_settings, mutated, one_line_or_valid, real_report, scratch_dir
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.health.drift import BaselineError, load_baseline
from hwinfo.health.evaluate import evaluate
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.serialize import snapshot_from_document

WORKDIR = scratch_dir("hwinfo-fuzz-baseline-")
SAVED = real_report("dgx-a100-mig")
CURRENT = snapshot_from_document(SAVED, "current")


def compares(content: bytes) -> None:
    path = WORKDIR / "baseline.json"
    path.write_bytes(content)
    baseline = one_line_or_valid(lambda: load_baseline(str(path)), BaselineError)
    if baseline is not None:
        evaluate(CURRENT, Thresholds(), baseline)


@fuzz_settings(100)
@given(mutated(SAVED).map(lambda document: json.dumps(document).encode()))
def test_a_mutated_baseline_compares_or_is_one_line(content: bytes) -> None:
    compares(content)


@fuzz_settings(100)
@given(st.one_of(
    st.binary(max_size=300),
    st.integers(1, 50_000).map(lambda depth: b'{"gpu": ' * depth),
    st.sampled_from([b'{"schema_version": 1e999}', b'{"schema_version": -Infinity}', b"9" * 5000,
                     b"\xef\xbb\xbf{}", b'"\\ud800"', b"{}" * 1000]),
    st.integers(0, 10**9).map(lambda cut: json.dumps(SAVED).encode()[: cut % 4000]),
))
def test_any_file_content_is_one_line(content: bytes) -> None:
    compares(content)
