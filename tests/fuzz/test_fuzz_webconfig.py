"""Web configuration files (`serve --web-config`): a WebConfig, or one WebConfigError line."""

from __future__ import annotations

import yaml
from fuzz.mutations import JSON_VALUES, fuzz_settings, one_line_or_valid, scratch_dir
from hypothesis import example, given
from hypothesis import strategies as st

from hwinfo.exporter.webconfig import (
    CIPHER_SUITES,
    CURVES,
    WebConfig,
    WebConfigError,
    load_web_config,
)

WORKDIR = scratch_dir("hwinfo-fuzz-webconfig-")
NAMES = st.sampled_from([*CIPHER_SUITES, *CURVES, "TLS_AES_128_GCM_SHA256", "TLS12", "TLS13",
                         "NoClientCert", "RequireAndVerifyClientCert", "/dev/zero", "x.crt"])
VALUES = st.one_of(JSON_VALUES, NAMES, st.lists(NAMES, max_size=3))
TLS = st.dictionaries(st.sampled_from([
    "cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version",
    "cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "cert"]), VALUES, max_size=6)
DOCUMENTS = st.fixed_dictionaries({}, optional={
    "tls_server_config": st.one_of(TLS, JSON_VALUES),
    "http_server_config": st.dictionaries(st.sampled_from(["headers", "http2"]), VALUES),
    "basic_auth_users": st.dictionaries(st.text(max_size=8), VALUES, max_size=3),
    "rate_limit": VALUES,
})
TRICKY = st.sampled_from([
    "basic_auth_users: {a: x, a: y}\n", "tls_server_config:\n", "[" * 50_000, "a: &a [*a]\n",
    "tls_server_config: {cert_file: /dev/zero, key_file: /dev/zero}\n",
    "tls_server_config: {min_version: !!binary '@@'}\n", "\ufeff{}\n", "? [a]\n: 1\n",
])


def loads(content: bytes) -> WebConfig | None:
    path = WORKDIR / "web.yml"
    path.write_bytes(content)
    return one_line_or_valid(lambda: load_web_config(path), WebConfigError)


@fuzz_settings(150)
@given(DOCUMENTS)
@example({"tls_server_config": {"\n": None}})  # a key with a newline once made a two-line error
@example({"basic_auth_users": {"a\u2028b": "x"}})
def test_any_document_is_a_config_or_one_line(document: dict[str, object]) -> None:
    loads(yaml.safe_dump(document, allow_unicode=True).encode())


@fuzz_settings(100)
@given(st.one_of(TRICKY.map(str.encode), st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_any_file_content_is_a_config_or_one_line(content: bytes) -> None:
    loads(content)
