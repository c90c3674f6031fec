"""Prices files (`usage --prices`): Prices, or one InputError line."""

from __future__ import annotations

import yaml
from fuzz.mutations import JSON_VALUES, fuzz_settings, mutated, one_line_or_valid, scratch_dir
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.inputs import InputError
from hwinfo.ledger.prices import Prices, load_prices

WORKDIR = scratch_dir("hwinfo-fuzz-prices-")
VALID = {"currency": "EUR", "gpu_hour": {"NVIDIA A100-SXM4-80GB": 2.5, "default": 1.0}, "kwh": 0.3}


def loads(content: bytes) -> Prices | None:
    path = WORKDIR / "prices.yml"
    path.write_bytes(content)
    prices = one_line_or_valid(lambda: load_prices(str(path)), InputError)
    if prices is not None:
        assert all(0 <= p <= 1e6 for p in prices.gpu_hour.values())
    return prices


def test_the_example_loads() -> None:
    assert loads(yaml.safe_dump(VALID).encode()) == Prices(VALID["gpu_hour"], 0.3, "EUR")


@fuzz_settings(150)
@given(st.one_of(mutated(VALID), JSON_VALUES))
def test_any_document_is_prices_or_one_line(document: object) -> None:
    loads(yaml.safe_dump(document, allow_unicode=True).encode())


@fuzz_settings(100)
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_any_content_is_prices_or_one_line(content: bytes) -> None:
    loads(content)
