"""Where the ledger's engine is: options, HWINFO_PROMETHEUS and ledger.yml, each setting from
the first that gives it, and every file read as hostile input (the commands are run against
a real server in tests/test_cli_ledger_config.py)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from hwinfo.ledger.config import (
    FILE_LIMIT_BYTES,
    PASSWORD_LIMIT_BYTES,
    SYSTEM_FILE,
    ConfigError,
    Engine,
    NoEngine,
    files,
    resolve,
)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def write(path: Path, text: str | bytes, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)
    return path


@pytest.fixture
def lab(tmp_path: Path) -> tuple[Path, Path]:
    """A user's file and a system's file, both for https://prometheus.lab:9090, with their
    own credentials and CA (neither CA is read: no request is made here)."""
    write(tmp_path / "user-secret", "user-pw\n")
    write(tmp_path / "system-secret", "system-pw\n")
    user = write(tmp_path / "home" / "ledger.yml", f"""
url: https://prometheus.lab:9090
basic_auth: {{username: ann, password_file: {tmp_path / 'user-secret'}}}
tls_config: {{ca_file: ann-ca.pem}}
""")
    system = write(tmp_path / "etc" / "ledger.yml", f"""
url: https://prometheus.lab:9090/prefix
basic_auth: {{username: lab, password_file: {tmp_path / 'system-secret'}}}
tls_config: {{ca_file: /etc/ssl/lab-ca.pem}}
""", 0o644)
    return user, system


def engine(*files: Path, url: str | None = None, ca_file: str | None = None,
           **environ: str) -> Engine:
    return resolve(url, ca_file, environ, [str(f) for f in files])


def test_the_user_s_file_is_read_whole_before_the_system_s(lab: tuple[Path, Path]) -> None:
    user, system = lab
    found = engine(user, system)
    assert found.target.url == "https://prometheus.lab:9090"
    assert found.target.authorization == basic("ann", "user-pw")
    assert (found.ca_file, found.ca_what) == (
        str(user.parent / "ann-ca.pem"), f"{user}: tls_config.ca_file {user.parent / 'ann-ca.pem'}")
    alone = engine(user.parent / "missing.yml", system)
    assert alone.target.url == "https://prometheus.lab:9090/prefix"
    assert alone.target.authorization == basic("lab", "system-pw")
    assert alone.ca_file == "/etc/ssl/lab-ca.pem"
    # A user's file with a url only replaces the system's whole: none of its password or CA.
    write(user, "url: https://prometheus.lab:9090\n")
    bare = engine(user, system)
    assert (bare.target.authorization, bare.ca_file) == (None, None)


def test_the_environment_and_the_options_come_before_the_file(lab: tuple[Path, Path]) -> None:
    user, system = lab
    from_env = engine(user, system, HWINFO_PROMETHEUS="https://prometheus.lab:9090/thanos")
    assert from_env.target.url == "https://prometheus.lab:9090/thanos"
    # The same server: the file's credentials and CA are for it.
    assert from_env.target.authorization == basic("ann", "user-pw")
    assert from_env.ca_file == str(user.parent / "ann-ca.pem")
    from_option = engine(user, system, url="https://PROMETHEUS.lab:9090/mimir", ca_file="mine.pem",
                         HWINFO_PROMETHEUS="https://prometheus.lab:9090/thanos")
    assert from_option.target.url == "https://prometheus.lab:9090/mimir"
    assert from_option.target.authorization == basic("ann", "user-pw")
    assert (from_option.ca_file, from_option.ca_what) == ("mine.pem", "--ca-file mine.pem")
    # Credentials in the URL given are the user's word for this request.
    inline = engine(user, url="https://bo:other@prometheus.lab:9090")
    assert inline.target.authorization == basic("bo", "other")
    # An empty variable is unset.
    assert engine(user, HWINFO_PROMETHEUS="").target.url == "https://prometheus.lab:9090"


@pytest.mark.parametrize("elsewhere", [
    "https://prometheus.test:9090",  # another host
    "https://prometheus.lab:9091",  # another port
    "http://prometheus.lab:9090",  # plain HTTP: the password would travel in clear
])
def test_a_file_s_password_and_ca_never_go_to_another_server(lab: tuple[Path, Path],
                                                            elsewhere: str) -> None:
    user, _ = lab
    for found in (engine(user, url=elsewhere), engine(user, HWINFO_PROMETHEUS=elsewhere)):
        assert found.target.authorization is None and found.ca_file is None


def test_a_password_file_is_read_only_when_its_password_is_sent(lab: tuple[Path, Path]) -> None:
    user, _ = lab
    (user.parent.parent / "user-secret").unlink()
    assert engine(user, url="https://prometheus.test").target.authorization is None
    with pytest.raises(ConfigError, match="basic_auth.password_file .*: No such file"):
        engine(user)


def test_where_the_files_are() -> None:
    assert files({"XDG_CONFIG_HOME": "/x", "HOME": "/home/ann"}) == (
        "/x/hwinfo/ledger.yml", SYSTEM_FILE)
    # Unset, empty or relative (the XDG Base Directory spec: ignored), ~/.config.
    for xdg in ({}, {"XDG_CONFIG_HOME": ""}, {"XDG_CONFIG_HOME": "conf"}):
        assert files({**xdg, "HOME": "/home/ann"})[0] == "/home/ann/.config/hwinfo/ledger.yml"
    assert files({}) == (SYSTEM_FILE,)  # no home, no user's file
    assert files({"HWINFO_LEDGER_SYSTEM_CONFIG": "/opt/lab/ledger.yml"}) == ("/opt/lab/ledger.yml",)


def test_no_source_names_the_engine(tmp_path: Path) -> None:
    with pytest.raises(NoEngine) as none:
        engine(tmp_path / "user.yml", tmp_path / "system.yml")
    assert str(none.value) == (
        f"no Prometheus to ask: give --prometheus URL, set HWINFO_PROMETHEUS, or write url in "
        f"{tmp_path / 'user.yml'} or {tmp_path / 'system.yml'}")
    # An empty file is a file with nothing in it: it replaces the system's, and says so.
    empty = write(tmp_path / "user.yml", "")
    with pytest.raises(NoEngine, match=f"or give url in {empty}$"):
        engine(empty, write(tmp_path / "system.yml", "url: http://prometheus.lab:9090\n"))


@pytest.mark.parametrize(("content", "says"), [
    (b"\x00\xff binary", "not UTF-8 text (binary?) at byte 1"),
    (b"url: " + b"[" * 100 + b"\n", "nested too deeply"),
    (b"url: http://a:1\n" + b"#" * FILE_LIMIT_BYTES, "larger than 65536 bytes, the most accepted"),
    (b"url: .nan\n", "url: nan is not a finite number"),
    (b"url: 9090\n", "url: expected a string, got 9090"),
    (b"url: \n", "url: empty"),
    (b"url: ' '\n", "url: empty"),
    (b"url: \"http://a:1\\e[31m\"\n", "url: holds control characters"),
    (b"url: ftp://a:1\n", "url 'ftp://a:1': expected http://HOST:PORT or https://HOST:PORT"),
    (b"url: https://ann:pw@a:1\n", "url: the user and password go in basic_auth, not in the URL"),
    (b"url: http://a:1\nurl: http://b:1\n", "'url' is given twice"),
    (b"- url: http://a:1\n", "the file: expected a mapping, got a list"),
    (b"url: http://a:1\nbearer_token: x\n", "bearer_token: unknown key (known: url, basic_auth, tls_config)"),
    (b"url: http://a:1\ntls_config: {insecure_skip_verify: true}\n",
     "tls_config.insecure_skip_verify: unknown key (known: ca_file)"),
    (b"url: http://a:1\ntls_config: [a]\n", "tls_config: expected a mapping, got a list"),
    (b"url: http://a:1\ntls_config: {ca_file: 5}\n", "tls_config.ca_file: expected a string, got 5"),
    (b"url: http://a:1\nbasic_auth: {username: ann, username_file: f}\n",
     "basic_auth.username_file: unknown key (known: username, password, password_file)"),
    (b"tls_config: {ca_file: ca.pem}\n", "tls_config without url: a file's tls_config is only for its own url"),
    (b"basic_auth: {username: ann, password_file: pw}\n", "basic_auth without url"),
    (b"url: http://a:1\nbasic_auth: {password_file: pw}\n", "basic_auth.username: missing"),
    (b"url: http://a:1\nbasic_auth: {username: 'a:b', password_file: pw}\n",
     "basic_auth.username: holds a colon"),
    (b"url: http://a:1\nbasic_auth: {username: ann}\n",
     "basic_auth: give password_file (or password), one of them"),
    (b"url: http://a:1\nbasic_auth: {username: ann, password: x, password_file: pw}\n",
     "basic_auth: give password_file (or password), one of them"),
    (b"url: http://a:1\nbasic_auth: {username: ann, password: 1234}\n",
     "basic_auth.password: expected a string, got 1234 (quote it)"),
    (b"url: http://a:1\nbasic_auth: {username: ann, password: ''}\n", "basic_auth.password: empty"),
])
def test_a_hostile_file_is_one_line_naming_it(tmp_path: Path, content: bytes, says: str) -> None:
    config = write(tmp_path / "ledger.yml", content)
    with pytest.raises(ConfigError) as refused:
        engine(config, url="http://a:1")
    message = str(refused.value)
    assert message.startswith(f"{config}: ") and says in message and "\n" not in message


@pytest.mark.parametrize("special", ["fifo", "directory", "/dev/zero", "unreadable", "link"])
def test_a_file_that_is_no_file_is_one_line(tmp_path: Path, special: str) -> None:
    path = tmp_path / "ledger.yml"
    if special == "fifo":
        os.mkfifo(path)  # no writer: a plain open would wait for ever
        says = "not a regular file (a FIFO)"
    elif special == "directory":
        path.mkdir()
        says = "not a regular file (a directory)"
    elif special == "unreadable":
        path = unreadable(path)
        says = "Permission denied" if os.geteuid() else "Input/output error"
    elif special == "link":
        path.symlink_to(tmp_path / "gone.yml")  # there, but leads nowhere: not "no file"
        says = "No such file or directory"
    else:
        path, says = Path(special), "not a regular file (a character device)"
    with pytest.raises(ConfigError) as refused:
        engine(path, tmp_path / "system.yml")
    assert str(refused.value) == f"{path}: {says}"


def unreadable(path: Path) -> Path:
    """A file this process cannot read: one without permissions, or as root (who reads
    those), a file whose read fails (this process's memory at address 0)."""
    if os.geteuid() == 0:
        return Path("/proc/self/mem")
    write(path, "url: http://a:1\n", 0)
    return path


def test_a_file_anyone_can_change_is_refused(tmp_path: Path) -> None:
    config = write(tmp_path / "ledger.yml", "url: http://a:1\n", 0o666)
    with pytest.raises(ConfigError) as refused:
        engine(config)
    assert str(refused.value) == f"{config}: every user can change it (mode 0666): chmod o-w {config}"


def test_a_password_in_a_file_every_user_reads_is_refused(tmp_path: Path) -> None:
    text = "url: http://a:1\nbasic_auth: {username: ann, password: ' s3cret '}\n"
    config = write(tmp_path / "ledger.yml", text, 0o644)
    with pytest.raises(ConfigError) as refused:
        engine(config)
    assert str(refused.value) == (
        f"{config}: basic_auth.password: every user can read this file (mode 0644): put the "
        f"password in a password_file only its users can read, or chmod o-r {config}")
    config.chmod(0o640)  # its owner and group: as they chose
    assert engine(config).target.authorization == basic("ann", " s3cret ")


@pytest.mark.parametrize(("content", "password"), [
    (b"s3cret\n", "s3cret"),
    (b"s3cret", "s3cret"),
    (b"s3cret\r\n", "s3cret"),  # written on Windows
    (b" s3 cret \n", " s3 cret "),  # spaces are a password's own
    ("pässwörd\n".encode(), "pässwörd"),
])
def test_a_password_file_loses_one_trailing_newline(tmp_path: Path, content: bytes,
                                                     password: str) -> None:
    write(tmp_path / "secret", content)
    config = write(tmp_path / "ledger.yml",
                   "url: http://a:1\nbasic_auth: {username: ann, password_file: secret}\n")
    assert engine(config).target.authorization == basic("ann", password)


@pytest.mark.parametrize(("content", "says"), [
    (b"", "empty"),
    (b"\n", "empty"),
    (b"s3cret\n\n", "holds a line break or control character (one line, one password)"),
    (b"one\ntwo\n", "holds a line break"),
    (b"\x00\x01", "not text (it holds NUL bytes)"),
    (b"\xff\xfe", "not UTF-8 text"),
    (b"x" * (PASSWORD_LIMIT_BYTES + 1), "larger than 4096 bytes, the most accepted"),
])
def test_a_hostile_password_file_is_one_line(tmp_path: Path, content: bytes, says: str) -> None:
    secret = write(tmp_path / "secret", content)
    config = write(tmp_path / "ledger.yml",
                   "url: http://a:1\nbasic_auth: {username: ann, password_file: secret}\n")
    with pytest.raises(ConfigError) as refused:
        engine(config)
    assert str(refused.value).startswith(f"{config}: basic_auth.password_file {secret}: {says}")


def test_a_password_file_every_user_reads_or_no_file_is_refused(tmp_path: Path) -> None:
    secret = write(tmp_path / "secret", "s3cret\n", 0o604)
    config = write(tmp_path / "ledger.yml",
                   "url: http://a:1\nbasic_auth: {username: ann, password_file: secret}\n")
    what = f"{config}: basic_auth.password_file {secret}"
    with pytest.raises(ConfigError) as refused:
        engine(config)
    assert str(refused.value) == f"{what}: every user can read it (mode 0604): chmod o-r {secret}"
    secret.unlink()
    os.mkfifo(secret)
    with pytest.raises(ConfigError, match="not a regular file \\(a FIFO\\)"):
        engine(config)


def test_the_documented_file_is_read_as_documented(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "ledger-commands.md").read_text()
    (example,) = [block for block in page.split("```yaml\n")[1:] if block.startswith("url:")]
    config = write(tmp_path / "ledger.yml", example.split("```")[0], 0o644)
    # Asked of another server: nothing of the file but its checks (no password file read).
    found = engine(config, url="https://prometheus.test:9090")
    assert (found.target.authorization, found.ca_file) == (None, None)
    with pytest.raises(ConfigError, match="/etc/hwinfo/ledger-password: No such file"):
        engine(config)
