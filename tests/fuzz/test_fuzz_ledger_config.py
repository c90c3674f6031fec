"""ledger.yml (hwinfo/ledger/config.py): an engine, or one ConfigError line."""

from __future__ import annotations

import yaml
from fuzz.mutations import JSON_VALUES, fuzz_settings, mutated, one_line_or_valid, scratch_dir
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.ledger.config import ConfigError, Engine, resolve

WORKDIR = scratch_dir("hwinfo-fuzz-ledger-config-")
(WORKDIR / "password").write_text("s3cret\n")
(WORKDIR / "password").chmod(0o600)
VALID = {"url": "https://prometheus.lab:9090/prefix", "tls_config": {"ca_file": "ca.pem"},
         "basic_auth": {"username": "ledger", "password_file": "password"}}


def loads(content: bytes) -> Engine | None:
    path = WORKDIR / "ledger.yml"
    path.write_bytes(content)
    path.chmod(0o600)
    return one_line_or_valid(lambda: resolve(environ={}, candidates=[str(path)]), ConfigError)


def test_the_example_loads() -> None:
    engine = loads(yaml.safe_dump(VALID).encode())
    assert engine is not None and engine.target.authorization is not None
    assert engine.ca_file == str(WORKDIR / "ca.pem")


@fuzz_settings(150)
@given(st.one_of(mutated(VALID), JSON_VALUES))
def test_any_document_is_an_engine_or_one_line(document: object) -> None:
    loads(yaml.safe_dump(document, allow_unicode=True).encode())


@fuzz_settings(100)
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_any_content_is_an_engine_or_one_line(content: bytes) -> None:
    loads(content)
