import os
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import bcrypt
import pytest
from conftest import Pki, require_tool

from hwinfo.exporter import webconfig
from hwinfo.exporter.http import Response
from hwinfo.exporter.webconfig import WebConfigError, load_web_config

from .conftest import ServeFactory

# A fixed salt: the hash appears in test ids, which parallel workers must all collect alike.
HASH_2B = bcrypt.hashpw(b"secret", b"$2b$04$" + b"hwinfo.test.salt.fixe.").decode()


def write(where: Path, text: str) -> Path:
    path = where / "web-config.yml"
    path.write_text(text)
    return path


def tls_dir(tmp_path: Path, pki: Pki) -> Path:
    """A config directory holding copies of the PKI files, to be named by relative paths."""
    for name in ("server-one.crt", "server-one.key", "server-two.key", "hwinfo-test-ca.crt"):
        shutil.copy(pki.dir / name, tmp_path / name)
    return tmp_path


def test_an_empty_file_means_plain_http_without_auth(tmp_path: Path) -> None:
    config = load_web_config(write(tmp_path, ""))
    assert config.tls is None and config.ssl_context is None
    assert config.users == {} and config.headers == {} and config.notes == ()


def test_a_full_config_resolves_paths_against_its_directory(tmp_path: Path, pki: Pki) -> None:
    where = tls_dir(tmp_path, pki)
    path = write(
        where,
        f"""
tls_server_config:
  cert_file: server-one.crt
  key_file: {where}/server-one.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: hwinfo-test-ca.crt
  min_version: TLS13
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]
  curve_preferences: [X25519]
  prefer_server_cipher_suites: true
http_server_config:
  http2: true
  headers:
    x-frame-options: deny
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  alice: {HASH_2B}
""",
    )
    config = load_web_config(path)
    assert config.tls is not None and config.ssl_context is not None
    assert config.tls.cert_file == str(where / "server-one.crt")
    assert config.tls.client_ca_file == str(where / "hwinfo-test-ca.crt")
    assert config.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert config.ssl_context.minimum_version == ssl.TLSVersion.TLSv1_3
    assert config.ssl_context.maximum_version == ssl.TLSVersion.TLSv1_3
    assert config.headers == {
        "X-Frame-Options": "deny",
        "Strict-Transport-Security": "max-age=31536000",
    }
    assert config.users == {"alice": HASH_2B.encode()}
    assert config.watched_files() == (
        str(path),
        str(where / "server-one.crt"),
        str(where / "server-one.key"),
        str(where / "hwinfo-test-ca.crt"),
    )
    assert config.tls.ciphers == {"ECDHE-ECDSA-AES256-GCM-SHA384"}
    assert config.tls.curve == "X25519"
    assert config.ssl_context.options & ssl.OP_CIPHER_SERVER_PREFERENCE
    # Only http2 is accepted without being applied: every TLS setting is enforced.
    assert config.notes == (
        f"{path}: http_server_config.http2: ignored: hwinfo serves HTTP/1.1 only",
    )


@pytest.mark.parametrize(
    ("auth", "mode"),
    [
        ("NoClientCert", ssl.CERT_NONE),
        ("RequestClientCert", ssl.CERT_NONE),
        ("RequireAnyClientCert", ssl.CERT_REQUIRED),
        ("VerifyClientCertIfGiven", ssl.CERT_OPTIONAL),
        ("RequireAndVerifyClientCert", ssl.CERT_REQUIRED),
    ],
)
def test_client_auth_types(tmp_path: Path, pki: Pki, auth: str, mode: ssl.VerifyMode) -> None:
    ca = "" if auth == "NoClientCert" else "client_ca_file: hwinfo-test-ca.crt"
    path = write(
        tls_dir(tmp_path, pki),
        f"tls_server_config:\n  cert_file: server-one.crt\n  key_file: server-one.key\n"
        f"  client_auth_type: {auth}\n  {ca}\n",
    )
    config = load_web_config(path)
    assert config.ssl_context is not None and config.ssl_context.verify_mode == mode
    # Where Python's ssl module cannot do what Go does, a note says what happens instead.
    assert bool(config.notes) == (auth in ("RequestClientCert", "RequireAnyClientCert"))


@pytest.mark.parametrize("prefix", ["2a", "2b"])
def test_bcrypt_variants_are_accepted(tmp_path: Path, prefix: str) -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(4, prefix=prefix.encode())).decode()
    config = load_web_config(write(tmp_path, f"basic_auth_users:\n  bob: '{hashed}'\n"))
    assert config.users["bob"] == hashed.encode()


def test_htpasswd_2y_hash_is_accepted(tmp_path: Path) -> None:
    htpasswd = require_tool("htpasswd")
    line = subprocess.run(
        [htpasswd, "-nbBC", "10", "alice", "secret"], capture_output=True, text=True, check=True
    ).stdout.strip()
    user, hashed = line.split(":", 1)
    assert hashed.startswith("$2y$10$")
    config = load_web_config(write(tmp_path, f"basic_auth_users:\n  {user}: '{hashed}'\n"))
    assert config.users == {"alice": hashed.encode()}


TLS = "tls_server_config:\n  cert_file: server-one.crt\n  key_file: server-one.key\n"

# (file text, the field named in the message, a part of the message)
ERRORS = [
    ("a: [1", "", "line 1"),
    ("- 1\n", "", "expected a mapping, got list"),
    ("listen: 1\n", "listen", "unknown field (known: tls_server_config"),
    ("rate_limit: {burst: 1}\n", "rate_limit", "not supported"),
    ("tls_server_config: 1\n", "tls_server_config", "expected a mapping, got int"),
    (TLS + "  foo: 1\n", "tls_server_config.foo", "unknown field"),
    (TLS + "  cert: x\n", "tls_server_config.cert", "inline PEM is not supported"),
    (TLS + "  client_allowed_sans: [a]\n", "tls_server_config.client_allowed_sans", "not sup"),
    ("tls_server_config: {cert_file: server-one.crt}\n", "tls_server_config.key_file", "missing"),
    ("tls_server_config: {key_file: server-one.key}\n", "tls_server_config.cert_file", "missing"),
    (TLS + "  min_version: TLS14\n", "tls_server_config.min_version", "'TLS14' is not one of"),
    (TLS + "  max_version: 1.2\n", "tls_server_config.max_version", "expected a string"),
    (
        TLS + "  min_version: TLS13\n  max_version: TLS12\n",
        "tls_server_config.min_version",
        "is above max_version",
    ),
    (TLS + "  client_auth_type: Maybe\n", "tls_server_config.client_auth_type", "not one of"),
    (
        TLS + "  client_ca_file: hwinfo-test-ca.crt\n",
        "tls_server_config.client_auth_type",
        "client_ca_file is set but no client certificate is asked for",
    ),
    (
        TLS + "  client_auth_type: RequireAndVerifyClientCert\n",
        "tls_server_config.client_auth_type",
        "needs client_ca_file",
    ),
    (
        TLS + "  client_auth_type: RequireAnyClientCert\n  client_ca_file: server-one.key\n",
        "tls_server_config.client_ca_file",
        "server-one.key: no CA certificate loads",
    ),
    (
        "tls_server_config: {cert_file: server-one.key, key_file: server-one.key}\n",
        "tls_server_config.cert_file",
        "server-one.key: no PEM certificate loads",
    ),
    (
        "tls_server_config: {cert_file: server-one.crt, key_file: server-two.key}\n",
        "tls_server_config.key_file",
        "server-two.key: not a PEM private key of cert_file ([X509: KEY_VALUES_MISMATCH]",
    ),
    (TLS + "  cipher_suites: TLS_AES_128_GCM_SHA256\n", "tls_server_config.cipher_suites", "list"),
    (TLS + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n", "tls_server_config.cipher_suites",
     "TLS 1.3 suite"),
    (TLS + "  cipher_suites: [TLS_FAKE]\n", "tls_server_config.cipher_suites", "not a cipher suite"),
    (TLS + "  cipher_suites: []\n", "tls_server_config.cipher_suites", "allows no cipher suite"),
    (TLS + "  curve_preferences: [CurveP384, X25519]\n", "tls_server_config.curve_preferences",
     "one curve only"),
    (TLS + "  curve_preferences: [P-384]\n", "tls_server_config.curve_preferences", "not one of"),
    (f"basic_auth_users:\n  alice: '{HASH_2B}'\n  alice: '{HASH_2B}'\n", "",
     "line 3, column 3: 'alice' is given twice"),
    ("[" * 100_000, "", "nested too deeply"),
    ("http_server_config: {http2: yes please}\n", "http_server_config.http2", "true or false"),
    (
        "http_server_config: {headers: {X-Powered-By: me}}\n",
        "http_server_config.headers.X-Powered-By",
        "cannot be set (allowed: Strict-Transport-Security",
    ),
    (
        "http_server_config: {headers: {X-Frame-Options: allow}}\n",
        "http_server_config.headers.X-Frame-Options",
        "'allow' is not one of deny, sameorigin",
    ),
    (
        'http_server_config: {headers: {Content-Security-Policy: "a\\r\\nSet-Cookie: x"}}\n',
        "http_server_config.headers.Content-Security-Policy",
        "only printable ASCII",
    ),
    ("basic_auth_users: [alice]\n", "basic_auth_users", "expected a mapping"),
    ("basic_auth_users: {alice: secret}\n", "basic_auth_users.alice", "not a bcrypt hash"),
    ("basic_auth_users: {alice: '$1$abc$def'}\n", "basic_auth_users.alice", "not a bcrypt hash"),
    # A salt bcrypt refuses ("Invalid salt") was taken, and every login turned away after.
    (f"basic_auth_users: {{alice: '{HASH_2B[:28]}a{HASH_2B[29:]}'}}\n", "basic_auth_users.alice",
     "not a bcrypt hash"),
    ("basic_auth_users: {alice: 12}\n", "basic_auth_users.alice", "expected a string, got int"),
    # A decoy of this cost would stall every login naming no real user.
    (f"basic_auth_users: {{alice: '{HASH_2B[:4]}31{HASH_2B[6:]}'}}\n", "basic_auth_users.alice",
     "bcrypt cost 31 is above 14"),
    (f"basic_auth_users: {{'a:b': '{HASH_2B}'}}\n", "basic_auth_users['a:b']", "cannot contain ':'"),
]


@pytest.mark.parametrize(("text", "field", "message"), ERRORS)
def test_each_problem_is_one_line_naming_file_and_field(
    tmp_path: Path, pki: Pki, text: str, field: str, message: str
) -> None:
    path = write(tls_dir(tmp_path, pki), text)
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    error = str(caught.value)
    assert "\n" not in error
    assert error.startswith(f"{path}: {field}: " if field else f"{path}: ")
    assert message in error


def test_an_empty_client_ca_file_is_one_line(tmp_path: Path, pki: Pki) -> None:
    where = tls_dir(tmp_path, pki)
    (where / "empty.crt").write_text("")
    path = write(where, TLS + "  client_auth_type: RequireAndVerifyClientCert\n"
                              "  client_ca_file: empty.crt\n")
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    assert str(caught.value) == (f"{path}: tls_server_config.client_ca_file: {where}/empty.crt: "
                                 "no CA certificate loads (Empty certificate data)")


def test_missing_certificate_message(tmp_path: Path) -> None:
    path = write(tmp_path, "tls_server_config: {cert_file: /etc/x.crt, key_file: x.key}\n")
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    assert str(caught.value) == (
        f"{path}: tls_server_config.cert_file: /etc/x.crt: No such file or directory"
    )


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(WebConfigError) as caught:
        load_web_config(tmp_path / "nope.yml")
    assert str(caught.value) == f"{tmp_path / 'nope.yml'}: No such file or directory"


def test_an_encrypted_key_is_refused_without_prompting(tmp_path: Path, pki: Pki) -> None:
    where = tls_dir(tmp_path, pki)
    subprocess.run(
        [require_tool("openssl"), "pkey", "-in", where / "server-one.key", "-aes256",
         "-passout", "pass:x", "-out", where / "locked.key"],
        check=True, capture_output=True,
    )  # fmt: skip
    text = "tls_server_config: {cert_file: server-one.crt, key_file: locked.key}\n"
    with pytest.raises(WebConfigError, match="key_file: .*the key is encrypted"):
        load_web_config(write(where, text))


def test_hostile_files_are_one_line(tmp_path: Path, pki: Pki) -> None:
    where = tls_dir(tmp_path, pki)
    (where / "binary.crt").write_bytes(b"\x00\xff\xfe" * 100)
    cases = {
        "/dev/zero": "not a regular file (a character device)",
        str(write(where, "tls_server_config: {cert_file: binary.crt, key_file: server-one.key}")):
            "binary.crt: not UTF-8 text",
    }
    for path, message in cases.items():
        with pytest.raises(WebConfigError, match=re.escape(message)):
            load_web_config(path)
    for special in ("/dev/zero", "/dev/null"):
        text = f"tls_server_config: {{cert_file: {special}, key_file: server-one.key}}\n"
        with pytest.raises(WebConfigError, match="cert_file: .*not a regular file"):
            load_web_config(write(where, text))


FULL = f"""tls_server_config:
  cert_file: server-one.crt
  key_file: server-one.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: hwinfo-test-ca.crt
  min_version: TLS12
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]
  curve_preferences: [CurveP256]
basic_auth_users:
  alice: '{HASH_2B}'
  bob: '{HASH_2B}'
"""


@pytest.mark.parametrize(("change", "reason"), [
    (lambda t: "", "turns basic authentication off"),
    (lambda t: "# nothing here\n", "turns basic authentication off"),
    (lambda t: "tls_server_config:\n" + t[t.index("basic_auth_users"):], "turns TLS off"),
    (lambda t: t.replace("RequireAndVerifyClientCert", "VerifyClientCertIfGiven"),
     "asks less of client certificates"),
    (lambda t: t.replace("min_version: TLS12", "min_version: TLS10"), "lowers min_version"),
    (lambda t: t.replace("min_version: TLS12", "min_version: TLS12\n  max_version: TLS12"),
     "lowers max_version (TLSv1_3 -> TLSv1_2)"),
    # Client certificates no longer asked for: the type and its CA file both removed.
    (lambda t: t.replace("  client_auth_type: RequireAndVerifyClientCert\n", "")
     .replace("  client_ca_file: hwinfo-test-ca.crt\n", ""),
     "asks less of client certificates (RequireAndVerifyClientCert -> NoClientCert)"),
    (lambda t: t.replace("  curve_preferences: [CurveP256]\n", ""), "allows key-exchange curves"),
    (lambda t: t.replace("  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n", ""),
     "allows cipher suites"),
    (lambda t: t.replace("AES_256_GCM_SHA384]", "AES_256_GCM_SHA384, "
                         "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA]"), "allows cipher suites"),
    (lambda t: t.replace("CurveP256", "X25519"), "allows key-exchange curves"),
])
def test_a_reload_never_weakens(tmp_path: Path, pki: Pki, change, reason: str) -> None:
    path = write(tls_dir(tmp_path, pki), FULL)
    running = load_web_config(path)
    path.write_text(change(FULL))
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path, previous=running)
    assert reason in str(caught.value) and "restart hwinfo serve" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_client_ca_file_removed_alone_is_refused_not_ignored(tmp_path: Path, pki: Pki) -> None:
    path = write(tls_dir(tmp_path, pki), FULL)
    running = load_web_config(path)
    path.write_text(FULL.replace("  client_ca_file: hwinfo-test-ca.crt\n", ""))
    with pytest.raises(WebConfigError, match="RequireAndVerifyClientCert needs client_ca_file"):
        load_web_config(path, previous=running)


def test_a_reload_may_strengthen(tmp_path: Path, pki: Pki) -> None:
    path = write(tls_dir(tmp_path, pki), FULL)
    running = load_web_config(path)
    stronger = FULL.replace(f"  bob: '{HASH_2B}'\n", "").replace("TLS12", "TLS13")
    path.write_text(stronger)
    assert load_web_config(path, previous=running).users.keys() == {"alice"}


def _handshake(port: int, pki: Pki, ciphers: str | None = None, curve: str | None = None,
               version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2) -> bool:
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.load_cert_chain(pki.client_cert, pki.client_key)
    context.maximum_version = version
    if ciphers:
        context.set_ciphers(ciphers)
    if curve:
        context.set_ecdh_curve(curve)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            tls.recv(64)
        return True
    except (ssl.SSLError, ConnectionError):
        return False


def test_ciphers_and_curves_are_enforced_in_real_handshakes(
    tmp_path: Path, pki: Pki, serve: ServeFactory,
) -> None:
    config = load_web_config(write(tls_dir(tmp_path, pki), FULL))
    server = serve({"/": lambda _: Response(body=b"ok")}, config)
    port = server.address[1]
    assert _handshake(port, pki)  # the allowed suite and curve
    assert not _handshake(port, pki, ciphers="ECDHE-ECDSA-AES128-GCM-SHA256")
    assert not _handshake(port, pki, ciphers="ECDHE-ECDSA-CHACHA20-POLY1305")
    assert not _handshake(port, pki, ciphers="ECDHE-ECDSA-AES128-SHA")
    assert not _handshake(port, pki, curve="X25519")
    assert not _handshake(port, pki, curve="X25519", version=ssl.TLSVersion.TLSv1_3)
    assert _handshake(port, pki, curve="prime256v1", version=ssl.TLSVersion.TLSv1_3)


def test_a_running_server_keeps_tls13_when_a_reload_lowers_max_version(
    tmp_path: Path, pki: Pki, serve: ServeFactory, caplog: pytest.LogCaptureFixture,
) -> None:
    path = write(tls_dir(tmp_path, pki), FULL)  # TLS 1.2 and 1.3
    server = serve({"/": lambda _: Response(body=b"ok")}, load_web_config(path))
    port = server.address[1]
    tls13 = ssl.TLSVersion.TLSv1_3
    assert _handshake(port, pki, curve="prime256v1", version=tls13)
    path.write_text(FULL.replace("min_version: TLS12", "min_version: TLS12\n  max_version: TLS12"))
    deadline = time.monotonic() + 60
    while "lowers max_version" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any(r.levelname == "WARNING" and "lowers max_version (TLSv1_3 -> TLSv1_2)" in
               r.getMessage() and "never weakens" in r.getMessage() for r in caplog.records)
    assert "web config reloaded" not in caplog.text
    # The new file would refuse TLS 1.3; the previous config, still in force, allows it.
    assert _handshake(port, pki, curve="prime256v1", version=tls13)


def test_a_running_server_keeps_tls_and_auth_when_the_file_is_emptied(
    tmp_path: Path, pki: Pki, serve: ServeFactory, caplog: pytest.LogCaptureFixture,
) -> None:
    path = write(tls_dir(tmp_path, pki), FULL)
    server = serve({"/": lambda _: Response(body=b"ok")}, load_web_config(path))
    path.write_text("")  # what a half-written or truncated file looks like
    deadline = time.monotonic() + 60
    while "never weakens" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "never weakens" in caplog.text and "turns basic authentication off" in caplog.text
    assert any(r.levelname == "WARNING" and "never weakens" in r.getMessage()
               for r in caplog.records)
    assert _handshake(server.address[1], pki)  # still TLS, still asking for certificates
    with socket.create_connection(server.address, timeout=60) as plain:
        plain.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            answer = plain.recv(64)
        except ConnectionResetError:
            answer = b""
    assert not answer.startswith(b"HTTP/1.1 200")  # plain HTTP is not served


@pytest.mark.parametrize("swapped", ["server-one.crt", "server-one.key"])
def test_a_file_swapped_for_a_fifo_after_its_check_is_not_opened_again(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    where = tls_dir(tmp_path, pki)
    path = write(where, "tls_server_config: {cert_file: server-one.crt, key_file: server-one.key}")
    checked = webconfig._Reader.read_file

    def read_then_swap(reader: webconfig._Reader, field: str, name: str) -> str:
        text = checked(reader, field, name)
        if name.endswith(swapped):  # the race won: a FIFO where the file was checked
            os.unlink(name)
            os.mkfifo(name)
        return text

    monkeypatch.setattr(webconfig._Reader, "read_file", read_then_swap)
    loaded: list[object] = []
    loader = threading.Thread(target=lambda: loaded.append(load_web_config(path)), daemon=True)
    loader.start()
    loader.join(10)
    if loader.is_alive():  # OpenSSL opened the FIFO by name: give it an end of file
        os.close(os.open(where / swapped, os.O_WRONLY | os.O_NONBLOCK))
        loader.join(10)
        pytest.fail("OpenSSL opened the file again by name, and waited on the FIFO")
    (config,) = loaded
    assert config.ssl_context is not None  # loaded from the text that was checked


def test_without_memory_files_the_checked_text_goes_through_a_private_directory(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_: object) -> int:  # as a seccomp filter without memfd_create answers
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "memfd_create", refused)
    made: list[tuple[int, list[int]]] = []
    private_dir = webconfig.tempfile.TemporaryDirectory

    class Watched(private_dir):  # type: ignore[misc, valid-type]
        def __exit__(self, *args: object) -> None:
            files = sorted(os.listdir(self.name))
            made.append((os.stat(self.name).st_mode & 0o777,
                         [os.stat(os.path.join(self.name, f)).st_mode & 0o777 for f in files]))
            super().__exit__(*args)

    monkeypatch.setattr(webconfig.tempfile, "TemporaryDirectory", Watched)
    where = tls_dir(tmp_path, pki)
    config = load_web_config(write(
        where, "tls_server_config: {cert_file: server-one.crt, key_file: server-one.key}"))
    assert config.ssl_context is not None
    assert made == [(0o700, [0o600, 0o600])]
