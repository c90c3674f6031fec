"""The web configuration file in Prometheus exporter-toolkit's format (web-config.yml).

It gives TLS settings, extra response headers and basic-auth users. A file node_exporter
accepts is accepted here too, except for the settings Python's ssl module cannot enforce as
written (each refused with a reason: ignoring one would serve with less protection than
asked for) and the one that changes nothing here (http2, accepted with a note).

A reload never weakens a running server: a file that would turn TLS or authentication off,
ask less of client certificates, allow older TLS versions or more ciphers or curves than
the configuration in force is refused, and the previous configuration stays (weaken_reason).
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hwinfo import inputs

TLS_VERSIONS: Mapping[str, ssl.TLSVersion] = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}

# How each client_auth_type maps onto OpenSSL. Python's ssl module cannot ask for a client
# certificate without verifying it, so the two "do not verify" policies of Go differ (see notes).
CLIENT_AUTH_TYPES: Mapping[str, ssl.VerifyMode] = {
    "NoClientCert": ssl.CERT_NONE,
    "RequestClientCert": ssl.CERT_NONE,
    "RequireAnyClientCert": ssl.CERT_REQUIRED,
    "RequireClientCert": ssl.CERT_REQUIRED,  # exporter-toolkit's older name of the one above
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}

# The response headers exporter-toolkit lets an operator set, with the values it allows
# (None: any value). Keeping its list means a file valid there is valid here and vice versa.
ALLOWED_HEADERS: Mapping[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}

_TOP_FIELDS = ("tls_server_config", "http_server_config", "basic_auth_users")
_TLS_FIELDS = (
    "cert_file",
    "key_file",
    "client_auth_type",
    "client_ca_file",
    "min_version",
    "max_version",
    "cipher_suites",
    "curve_preferences",
    "prefer_server_cipher_suites",
)
_HTTP_FIELDS = ("headers", "http2")

# Fields of newer exporter-toolkit releases that hwinfo refuses rather than silently ignores,
# because ignoring them would serve with less protection than the operator asked for.
_REFUSED = {
    "rate_limit": "not supported: hwinfo bounds concurrent scrapes instead",
    "tls_server_config.cert": "inline PEM is not supported: put it in a file named by cert_file",
    "tls_server_config.key": "inline PEM is not supported: put it in a file named by key_file",
    "tls_server_config.client_ca": (
        "inline PEM is not supported: put it in a file named by client_ca_file"
    ),
    "tls_server_config.client_allowed_sans": (
        "not supported: give the allowed clients certificates from their own client_ca_file"
    ),
}

_IGNORED = {
    "http_server_config.http2": "ignored: hwinfo serves HTTP/1.1 only",
}

# Go's names of the TLS 1.0-1.2 cipher suites (crypto/tls) and OpenSSL's for the same suites.
# As in Go, cipher_suites does not touch TLS 1.3, whose three suites are always offered.
CIPHER_SUITES: Mapping[str, str] = {
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
_TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")

# Go's curve names and OpenSSL's. Python's ssl sets key-exchange groups only through
# set_ecdh_curve, one group (with OpenSSL 3 it limits every TLS version to it): a list of
# one is enforced exactly, a longer one cannot be and is refused.
CURVES: Mapping[str, str] = {
    "CurveP256": "prime256v1",
    "CurveP384": "secp384r1",
    "CurveP521": "secp521r1",
    "X25519": "X25519",
}
# The limits a reload may not loosen; each read from the web config's file to 1 MiB at most.
_FILE_LIMIT = inputs.PEM_LIMIT_BYTES
_CONFIG_LIMIT = 256 << 10

# Modular crypt format of bcrypt: variant, two-digit cost 04..31, 22 salt + 31 hash characters.
# The salt's 22 characters carry 16 bytes, so the last holds 2 bits: one of ".Oeu". Another is
# a salt bcrypt refuses at every check, so the file would start and turn every login away.
_BCRYPT_HASH = re.compile(
    r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{21}[.Oeu][./A-Za-z0-9]{31}")
# Each step of cost doubles a check: 14 takes about a second on a server core. An unknown
# user is checked against a decoy of the highest cost configured, so one hash of cost 31
# (days a check) would stall every login that names no real user.
MAX_BCRYPT_COST = 14
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


class WebConfigError(Exception):
    """The web configuration cannot be used; str() is one line naming the file and the field."""


@dataclass(frozen=True)
class TlsSettings:
    """tls_server_config, with file paths already resolved against the config's directory."""

    cert_file: str
    key_file: str
    client_auth_type: str = "NoClientCert"
    client_ca_file: str | None = None
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3
    # OpenSSL names; None: OpenSSL's defaults (no restriction asked for).
    ciphers: frozenset[str] | None = None
    curve: str | None = None
    prefer_server_ciphers: bool = True


@dataclass(frozen=True)
class WebConfig:
    """One validated read of a web configuration file."""

    path: str
    tls: TlsSettings | None = None
    # Built (and so checked) when the file is loaded; None when TLS is off.
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict)
    users: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    # One line per setting accepted but not applied as written, for the log.
    notes: tuple[str, ...] = ()

    def watched_files(self) -> tuple[str, ...]:
        """The files whose change on disk calls for loading this configuration again."""
        files = [self.path]
        if self.tls is not None:
            files += [self.tls.cert_file, self.tls.key_file]
            if self.tls.client_ca_file:
                files.append(self.tls.client_ca_file)
        return tuple(files)


def load_web_config(
    path: str | os.PathLike[str], previous: WebConfig | None = None
) -> WebConfig:
    """Read, validate and load (TLS files included) a web configuration file.

    With `previous` (a reload of a running server), a file that would weaken it is refused.
    """
    config = _Reader(os.fspath(path)).read()
    if previous is not None and (reason := weaken_reason(previous, config)):
        raise WebConfigError(
            f"{config.path}: {reason}; a reload never weakens a running server "
            "(restart hwinfo serve to do that)"
        )
    return config


_VERIFY_RANK = {ssl.CERT_NONE: 0, ssl.CERT_OPTIONAL: 1, ssl.CERT_REQUIRED: 2}


def weaken_reason(old: WebConfig, new: WebConfig) -> str | None:
    """What `new` would loosen of `old`'s protection, or None when it loosens nothing."""
    if old.users and not new.users:
        return "it turns basic authentication off"
    if old.tls is None:
        return None
    if new.tls is None:
        return "it turns TLS off"
    before, after = old.tls, new.tls
    if _VERIFY_RANK[CLIENT_AUTH_TYPES[after.client_auth_type]] < \
            _VERIFY_RANK[CLIENT_AUTH_TYPES[before.client_auth_type]]:
        return (f"it asks less of client certificates ({before.client_auth_type} -> "
                f"{after.client_auth_type})")
    # Either bound lowered lets a client use an older protocol than the running server allows
    # (TLS13 -> TLS12 for max_version brings back TLS 1.2's weaker suites and renegotiation).
    for bound in ("min_version", "max_version"):
        was, now = getattr(before, bound), getattr(after, bound)
        if now < was:
            return f"it lowers {bound} ({was.name} -> {now.name})"
    if before.ciphers is not None and (after.ciphers is None or after.ciphers - before.ciphers):
        return "it allows cipher suites the running configuration does not"
    if before.curve is not None and after.curve != before.curve:
        return "it allows key-exchange curves the running configuration does not"
    return None


class _Reader:
    """Reads one file; every error it raises names the file and the dotted field."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.notes: list[str] = []

    def error(self, where: str, message: str) -> WebConfigError:
        return WebConfigError(
            f"{self.path}: {where}: {message}" if where else f"{self.path}: {message}"
        )

    def note(self, where: str, message: str) -> None:
        self.notes.append(f"{self.path}: {where}: {message}")

    def read(self) -> WebConfig:
        try:
            data = inputs.parse_yaml(
                inputs.read_text(self.path, self.path, _CONFIG_LIMIT), self.path)
        except inputs.InputError as exc:
            raise WebConfigError(str(exc)) from None
        top = self.mapping("", data, _TOP_FIELDS)
        tls = self.tls(self.mapping("tls_server_config", top.get("tls_server_config"), _TLS_FIELDS))
        http = self.mapping("http_server_config", top.get("http_server_config"), _HTTP_FIELDS)
        self.boolean("http_server_config.http2", http.get("http2"))
        return WebConfig(
            path=self.path,
            tls=tls,
            ssl_context=None if tls is None else self.ssl_context(tls),
            headers=self.headers(http.get("headers")),
            users=self.users(top.get("basic_auth_users")),
            notes=tuple(self.notes),
        )

    def entries(self, where: str, value: object) -> dict[Any, Any]:
        """A mapping of the file; an absent or empty one is empty."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(where, f"expected a mapping, got {_kind(value)}")
        return value

    def mapping(self, where: str, value: object, known: Collection[str]) -> dict[str, Any]:
        """A section with fixed field names."""
        section = self.entries(where, value)
        for key in section:
            inner = inputs.member(where, key)
            if inner in _REFUSED:
                raise self.error(inner, _REFUSED[inner])
            if key not in known:
                raise self.error(inner, f"unknown field (known: {', '.join(known)})")
            if inner in _IGNORED:
                self.note(inner, _IGNORED[inner])
        return section

    def string(self, where: str, value: object) -> str:
        """A string field; absent, null and "" all mean unset, as in exporter-toolkit."""
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.error(where, f"expected a string, got {_kind(value)}")
        return value

    def boolean(self, where: str, value: object) -> None:
        if value is not None and not isinstance(value, bool):
            raise self.error(where, f"expected true or false, got {_kind(value)}")

    def string_list(self, where: str, value: object) -> list[str] | None:
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(where, "expected a list of strings")
        return value

    def file(self, where: str, value: object) -> str:
        """A file path, relative ones taken from the config file's directory."""
        name = self.string(where, value)
        return os.path.join(os.path.dirname(self.path), name) if name else ""

    def tls(self, section: dict[str, Any]) -> TlsSettings | None:
        where = "tls_server_config"
        cert = self.file(f"{where}.cert_file", section.get("cert_file"))
        key = self.file(f"{where}.key_file", section.get("key_file"))
        ca = self.file(f"{where}.client_ca_file", section.get("client_ca_file"))
        auth = self.string(f"{where}.client_auth_type", section.get("client_auth_type"))
        ciphers = self.ciphers(f"{where}.cipher_suites", section.get("cipher_suites"))
        curve = self.curve(f"{where}.curve_preferences", section.get("curve_preferences"))
        prefer = section.get("prefer_server_cipher_suites")
        self.boolean(f"{where}.prefer_server_cipher_suites", prefer)
        low = self.version(
            f"{where}.min_version", section.get("min_version"), ssl.TLSVersion.TLSv1_2
        )
        high = self.version(
            f"{where}.max_version", section.get("max_version"), ssl.TLSVersion.TLSv1_3
        )
        # Like exporter-toolkit: TLS is on as soon as one of these is set, and then complete.
        if not (cert or key or ca or auth):
            return None
        if not cert:
            raise self.error(f"{where}.cert_file", "missing (TLS needs cert_file and key_file)")
        if not key:
            raise self.error(f"{where}.key_file", "missing (TLS needs cert_file and key_file)")
        if low > high:
            raise self.error(f"{where}.min_version", "is above max_version")
        auth = auth or "NoClientCert"
        self.client_auth(f"{where}.client_auth_type", auth, ca)
        # exporter-toolkit's default for prefer_server_cipher_suites is true.
        return TlsSettings(cert, key, auth, ca or None, low, high, ciphers, curve,
                           prefer is not False)

    def ciphers(self, where: str, value: object) -> frozenset[str] | None:
        """cipher_suites as OpenSSL names; None when not given (OpenSSL's defaults)."""
        names = self.string_list(where, value)
        if names is None:
            return None
        if not names:
            raise self.error(where, "an empty list allows no cipher suite")
        for name in names:
            if name in _TLS13_SUITES:
                raise self.error(where, f"{name} is a TLS 1.3 suite, which cannot be chosen "
                                        "(as in Go): list TLS 1.2 suites only")
            if name not in CIPHER_SUITES:
                raise self.error(where, f"{inputs.shown(name)} is not a cipher suite Go knows "
                                        "(e.g. TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)")
        return frozenset(CIPHER_SUITES[name] for name in names)

    def curve(self, where: str, value: object) -> str | None:
        """curve_preferences as the one OpenSSL group it can be; None when not given."""
        names = self.string_list(where, value)
        if names is None:
            return None
        for name in names:
            if name not in CURVES:
                raise self.error(where, f"{inputs.shown(name)} is not one of "
                                        f"{', '.join(CURVES)}")
        if len(set(names)) != 1:
            raise self.error(where, "Python's ssl can limit key exchange to one curve only, "
                                    "not a list: give one curve")
        return CURVES[names[0]]

    def version(self, where: str, value: object, default: ssl.TLSVersion) -> ssl.TLSVersion:
        name = self.string(where, value)
        if not name:
            return default
        if name not in TLS_VERSIONS:
            raise self.error(where, f"{name!r} is not one of {', '.join(TLS_VERSIONS)}")
        if TLS_VERSIONS[name] < ssl.TLSVersion.TLSv1_2:
            self.note(where, f"{name}: OpenSSL's security level may still refuse it")
        return TLS_VERSIONS[name]

    def client_auth(self, where: str, auth: str, ca: str) -> None:
        if auth not in CLIENT_AUTH_TYPES:
            raise self.error(where, f"{auth!r} is not one of {', '.join(CLIENT_AUTH_TYPES)}")
        if auth == "NoClientCert" and ca:
            raise self.error(where, "client_ca_file is set but no client certificate is asked for")
        if CLIENT_AUTH_TYPES[auth] != ssl.CERT_NONE and not ca:
            raise self.error(
                where, f"{auth} needs client_ca_file (the CA of the client certificates)"
            )
        if auth == "RequestClientCert":
            self.note(
                where, "RequestClientCert: no client certificate is asked for; no client is refused"
            )
        elif auth in ("RequireAnyClientCert", "RequireClientCert"):
            self.note(where, f"{auth}: the client certificate must also chain to client_ca_file")

    def ssl_context(self, tls: TlsSettings) -> ssl.SSLContext:
        where = "tls_server_config"
        cert_pem = self.read_file(f"{where}.cert_file", tls.cert_file)
        key_pem = self.read_file(f"{where}.key_file", tls.key_file)
        try:
            # Loading the certificate alone first tells a bad certificate from a bad key.
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=cert_pem)
        except (ssl.SSLError, ValueError):
            raise self.error(
                f"{where}.cert_file", f"{tls.cert_file}: no PEM certificate loads"
            ) from None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = tls.min_version
        context.maximum_version = tls.max_version
        context.options |= ssl.OP_NO_RENEGOTIATION
        if tls.prefer_server_ciphers:
            context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
        else:
            context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
        if tls.ciphers is not None:
            try:
                context.set_ciphers(":".join(sorted(tls.ciphers)))
            except ssl.SSLError:
                raise self.error(f"{where}.cipher_suites",
                                 "none of these suites is available in this OpenSSL") from None
        if tls.curve is not None:
            context.set_ecdh_curve(tls.curve)
        context.set_alpn_protocols(["http/1.1"])
        try:
            # The text read and checked, not the names: a file swapped for a FIFO since
            # would hang OpenSSL's own open, and with it the server.
            with _private_files(cert_pem, key_pem) as (cert_path, key_path):
                context.load_cert_chain(cert_path, key_path, password=_refuse_password)
        except (ssl.SSLError, _EncryptedKey) as exc:
            raise self.error(
                f"{where}.key_file",
                f"{tls.key_file}: not a PEM private key of cert_file ({inputs.ssl_reason(exc)})",
            ) from None
        context.verify_mode = CLIENT_AUTH_TYPES[tls.client_auth_type]
        if tls.client_ca_file and context.verify_mode != ssl.CERT_NONE:
            # The text read, not the name: OpenSSL would read a file swapped for a FIFO since.
            ca_pem = self.read_file(f"{where}.client_ca_file", tls.client_ca_file)
            try:
                context.load_verify_locations(cadata=ca_pem)
            except (ssl.SSLError, ValueError) as exc:  # ValueError: an empty file
                raise self.error(
                    f"{where}.client_ca_file",
                    f"{tls.client_ca_file}: no CA certificate loads ({inputs.ssl_reason(exc)})",
                ) from None
        return context

    def read_file(self, where: str, name: str) -> str:
        """The file's text, read as hostile input: a missing, special, huge or binary file
        gets its own line before OpenSSL reads it by name."""
        try:
            return inputs.read_text(name, name, _FILE_LIMIT)
        except inputs.InputError as exc:
            raise self.error(where, str(exc)) from None

    def headers(self, value: object) -> dict[str, str]:
        where = "http_server_config.headers"
        allowed = {name.lower(): name for name in ALLOWED_HEADERS}
        headers: dict[str, str] = {}
        for name, header_value in self.entries(where, value).items():
            inner = inputs.member(where, name)
            canonical = allowed.get(str(name).lower())
            if canonical is None:
                raise self.error(inner, f"cannot be set (allowed: {', '.join(ALLOWED_HEADERS)})")
            text = self.string(inner, header_value)
            if not _HEADER_VALUE.fullmatch(text):
                raise self.error(inner, "only printable ASCII is allowed in a header value")
            choices = ALLOWED_HEADERS[canonical]
            if choices is not None and text.lower() not in choices:
                raise self.error(inner, f"{text!r} is not one of {', '.join(choices)}")
            headers[canonical] = text
        return headers

    def users(self, value: object) -> dict[str, bytes]:
        where = "basic_auth_users"
        users: dict[str, bytes] = {}
        for user, hashed in self.entries(where, value).items():
            inner = inputs.member(where, user)
            if not isinstance(user, str) or not user:
                raise self.error(inner, "a user name must be a non-empty string")
            if ":" in user:
                raise self.error(inner, "a user name cannot contain ':' (basic auth splits on it)")
            text = self.string(inner, hashed)
            match = _BCRYPT_HASH.fullmatch(text)
            if not match:
                raise self.error(
                    inner, "not a bcrypt hash ($2y$, $2a$ or $2b$; make one with htpasswd -nBC 10)"
                )
            if int(match.group(1)) > MAX_BCRYPT_COST:
                raise self.error(inner, f"bcrypt cost {int(match.group(1))} is above "
                                 f"{MAX_BCRYPT_COST}: each login would take minutes or more "
                                 "(make one with htpasswd -nBC 10)")
            users[user] = text.encode("ascii")
        return users


@contextmanager
def _private_files(*texts: str) -> Iterator[tuple[str, ...]]:
    """Paths that OpenSSL can open by name (load_cert_chain takes no text), holding `texts`
    and readable by this process alone: memory files on Linux, never on a disk; where those
    cannot be made (no memfd_create, a seccomp filter, no /proc), files of mode 0600 in a
    directory of mode 0700, removed after."""
    fds: list[int] = []
    try:
        if os.path.isdir("/proc/self/fd"):
            for text in texts:
                fds.append(os.memfd_create("hwinfo-tls", os.MFD_CLOEXEC))
                with open(fds[-1], "w", closefd=False) as file:
                    file.write(text)
    except (AttributeError, OSError):
        for fd in fds:
            os.close(fd)
        fds = []
    if len(fds) == len(texts):
        try:
            yield tuple(f"/proc/self/fd/{fd}" for fd in fds)
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="hwinfo-tls-") as directory:  # mode 0700
        paths = []
        for n, text in enumerate(texts):
            paths.append(os.path.join(directory, str(n)))
            fd = os.open(paths[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(text)
        yield tuple(paths)


class _EncryptedKey(Exception):
    def __str__(self) -> str:
        return "the key is encrypted; a server key must be stored without a passphrase"


def _refuse_password() -> bytes:
    # Without a password callback OpenSSL would prompt on the terminal and block the daemon.
    raise _EncryptedKey


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__

