"""Where the ledger's engine answers and how to reach it: options, HWINFO_PROMETHEUS, ledger.yml.

Each setting comes from the first source that gives it (docs/ledger-commands.md):

1. the command's options, --prometheus URL and --ca-file FILE;
2. $HWINFO_PROMETHEUS, the URL (empty counts as unset);
3. the user's file, $XDG_CONFIG_HOME/hwinfo/ledger.yml (~/.config/hwinfo/ledger.yml when
   XDG_CONFIG_HOME is unset, empty or relative, as the XDG Base Directory spec says);
4. the system's file, /etc/hwinfo/ledger.yml ($HWINFO_LEDGER_SYSTEM_CONFIG names another).

One file is read, as a whole: the user's where it exists, else the system's. A file's
tls_config and basic_auth belong to its url, and go only to that server (the same scheme,
host and port), whatever gave the URL in use: taking a password from one file and a URL
from another source would send it where no one asked it to go.

The file holds the keys of Prometheus's own http_config (`basic_auth` with `username` and
`password_file`, `tls_config` with `ca_file`) beside `url`, and is read like any hostile
input (inputs.py): one line naming the file and what is wrong. A secret every user can
read is refused, not warned about: a warning is read after the password was.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hwinfo import inputs, urlfetch

SERVICE = "Prometheus"
URL_VARIABLE = "HWINFO_PROMETHEUS"
SYSTEM_FILE_VARIABLE = "HWINFO_LEDGER_SYSTEM_CONFIG"
SYSTEM_FILE = "/etc/hwinfo/ledger.yml"
# A URL, a user name and two paths: a few hundred bytes.
FILE_LIMIT_BYTES = 64 * 1024
# Servers refuse request headers of more than 8 KiB or so: a longer password cannot work.
PASSWORD_LIMIT_BYTES = 4096
_KEYS: Mapping[str, tuple[str, ...]] = {
    "": ("url", "basic_auth", "tls_config"),
    "basic_auth": ("username", "password", "password_file"),
    "tls_config": ("ca_file",),
}


class ConfigError(Exception):
    """A source of the engine's settings cannot be used; str() is one line naming it."""


class NoEngine(ConfigError):
    """No source names the engine: the command line lacks what it needs (a usage error)."""


@dataclass(frozen=True)
class Engine:
    """Where to ask and how: the URL (with basic auth's Authorization when there is one),
    and the CA file to trust for https, with how errors name it."""

    target: urlfetch.Target
    ca_file: str | None = None
    ca_what: str | None = None


@dataclass(frozen=True)
class _File:
    """What one ledger.yml says; the password file is read only when the password is sent."""

    path: str
    url: urlfetch.Target | None = None
    ca_file: str | None = None
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    password_file: str | None = None

    def secret(self) -> str:
        if self.password is not None:
            return self.password
        assert self.password_file is not None  # _read requires one of them
        return _password_from(self.password_file, f"{self.path}: basic_auth.password_file "
                                                   f"{self.password_file}")


def files(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The user's file then the system's, as the environment places them."""
    found = []
    xdg = environ.get("XDG_CONFIG_HOME", "")
    home = environ.get("HOME", "")
    if os.path.isabs(xdg):
        found.append(os.path.join(xdg, "hwinfo", "ledger.yml"))
    elif os.path.isabs(home):  # no home, no user's file
        found.append(os.path.join(home, ".config", "hwinfo", "ledger.yml"))
    found.append(environ.get(SYSTEM_FILE_VARIABLE) or SYSTEM_FILE)
    return tuple(found)


def resolve(url: str | None = None, ca_file: str | None = None,
            environ: Mapping[str, str] | None = None,
            candidates: Sequence[str] | None = None) -> Engine:
    """The engine as the options (`url`, `ca_file`), `environ` and the first of `candidates`
    that exists give it (by default, os.environ and its files)."""
    environ = os.environ if environ is None else environ
    paths = files(environ) if candidates is None else tuple(candidates)
    chosen = next((path for path in paths if _exists(path)), None)
    settings = None if chosen is None else _read(chosen)
    if url is not None:
        target = _target(url, "--prometheus")
    elif environ.get(URL_VARIABLE):
        target = _target(environ[URL_VARIABLE], URL_VARIABLE)
    elif settings is not None and settings.url is not None:
        target = settings.url
    else:
        where = (f"give url in {chosen}" if chosen is not None
                 else f"write url in {' or '.join(paths)}" if paths else "")
        raise NoEngine(f"no {SERVICE} to ask: give --prometheus URL, set {URL_VARIABLE}"
                       + (f", or {where}" if where else ""))
    ours = (settings is not None and settings.url is not None
            and urlfetch.same_origin(settings.url, target))
    ca_what = None if ca_file is None else f"--ca-file {ca_file}"
    if ca_file is None and ours and settings.ca_file is not None:
        ca_file = settings.ca_file
        ca_what = f"{settings.path}: tls_config.ca_file {ca_file}"
    # Credentials in the URL given are the user's word for this request: they win.
    if target.authorization is None and ours and settings.username is not None:
        target = dataclasses.replace(target, authorization=urlfetch.basic_authorization(
            settings.username, settings.secret()))
    return Engine(target, ca_file, ca_what)


def _target(url: str, what: str) -> urlfetch.Target:
    try:
        return urlfetch.parse_url(url, what, SERVICE)
    except urlfetch.FetchError as exc:
        raise ConfigError(str(exc)) from None


def _exists(path: str) -> bool:
    """Whether there is something at `path` (a broken link too: reading it says so)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:  # cannot tell (a directory on the way not searchable): read, and fail
        pass
    return True


def _guarded(path: str, what: str, limit: int, others: int) -> tuple[str, int]:
    """The text and mode of the file at `path`, refused where every user may do `others`
    with it (stat.S_IWOTH: change it, stat.S_IROTH: read it)."""
    try:
        text = inputs.read_text(path, what, limit)
        mode = os.stat(path).st_mode
    except inputs.InputError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"{what}: {exc.strerror or exc}") from None
    if mode & others:
        can, letter = ("change", "w") if others == stat.S_IWOTH else ("read", "r")
        raise ConfigError(f"{what}: every user can {can} it (mode {stat.S_IMODE(mode):04o}): "
                          f"chmod o-{letter} {path}")
    return text, mode


def _read(path: str) -> _File:
    """The settings of one file, each checked; ConfigError names the file and the key."""
    # Whoever can change it can point the password it sends, and the CA trusted, anywhere.
    text, mode = _guarded(path, path, FILE_LIMIT_BYTES, stat.S_IWOTH)
    try:
        document = inputs.parse_yaml(text, path)
    except inputs.InputError as exc:
        raise ConfigError(str(exc)) from None
    top = _section(path, "", document)
    auth = _section(path, "basic_auth", top.get("basic_auth"))
    tls = _section(path, "tls_config", top.get("tls_config"))
    settings = _File(path)
    if "url" in top:
        target = _target(_text(path, "url", top["url"]), f"{path}: url")
        if target.authorization is not None:
            raise ConfigError(f"{path}: url: the user and password go in basic_auth, "
                              "not in the URL")
        settings = dataclasses.replace(settings, url=target)
    for key, section in (("basic_auth", auth), ("tls_config", tls)):
        if section and settings.url is None:
            raise ConfigError(f"{path}: {key} without url: a file's {key} is only for its "
                              "own url")
    if "ca_file" in tls:
        settings = dataclasses.replace(
            settings, ca_file=_file_name(path, "tls_config.ca_file", tls["ca_file"]))
    return _with_auth(settings, auth, mode) if auth else settings


def _with_auth(settings: _File, auth: dict[str, Any], mode: int) -> _File:
    path = settings.path
    if "username" not in auth:
        raise ConfigError(f"{path}: basic_auth.username: missing")
    username = _text(path, "basic_auth.username", auth["username"])
    if ":" in username:  # RFC 7617: the first colon ends the user-id
        raise ConfigError(f"{path}: basic_auth.username: holds a colon, which basic "
                          "authentication cannot carry")
    if ("password" in auth) == ("password_file" in auth):
        raise ConfigError(f"{path}: basic_auth: give password_file (or password), one of them")
    if "password" in auth:
        if mode & stat.S_IROTH:
            raise ConfigError(f"{path}: basic_auth.password: every user can read this file "
                              f"(mode {stat.S_IMODE(mode):04o}): put the password in a "
                              f"password_file only its users can read, or chmod o-r {path}")
        return dataclasses.replace(settings, username=username,
                                   password=_secret(f"{path}: basic_auth.password",
                                                    auth["password"]))
    return dataclasses.replace(settings, username=username, password_file=_file_name(
        path, "basic_auth.password_file", auth["password_file"]))


def _password_from(path: str, what: str) -> str:
    """A password file's text less one trailing newline, refused where every user can read it."""
    text, _ = _guarded(path, what, PASSWORD_LIMIT_BYTES, stat.S_IROTH)
    # One line as editors and `echo` write it; Prometheus trims all white space, but a
    # password may begin or end with a space.
    for newline in ("\r\n", "\n"):
        if text.endswith(newline):
            text = text[: -len(newline)]
            break
    return _secret(what, text)


def _secret(what: str, value: object) -> str:
    if value is None or value == "":
        raise ConfigError(f"{what}: empty")
    if not isinstance(value, str):
        raise ConfigError(f"{what}: expected a string, got {_kind(value)} (quote it)")
    if not value.isprintable():
        raise ConfigError(f"{what}: holds a line break or control character "
                          "(one line, one password)")
    return value


def _section(path: str, where: str, value: object) -> dict[str, Any]:
    """A mapping of known keys; absent or empty, an empty one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {where or 'the file'}: expected a mapping, got {_kind(value)}")
    known = _KEYS[where]
    for key in value:
        if key not in known:
            raise ConfigError(f"{path}: {inputs.member(where, key)}: unknown key "
                              f"(known: {', '.join(known)})")
    return value


def _text(path: str, where: str, value: object) -> str:
    if value is None:
        raise ConfigError(f"{path}: {where}: empty")
    if not isinstance(value, str):
        raise ConfigError(f"{path}: {where}: expected a string, got {_kind(value)}")
    if not value.strip() or not value.isprintable():
        raise ConfigError(f"{path}: {where}: " + ("empty" if not value.strip()
                                                   else "holds control characters"))
    return value


def _file_name(path: str, where: str, value: object) -> str:
    """A file a file names; a relative name is taken from that file's directory, as
    Prometheus does."""
    return os.path.join(os.path.dirname(path), _text(path, where, value))


def _kind(value: object) -> str:
    return inputs.shown(value, 40) if isinstance(value, (int, float, str)) else \
        f"a {type(value).__name__}"
