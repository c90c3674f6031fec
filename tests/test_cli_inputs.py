"""Hostile files named on the command line, as a user meets them: one stderr line, a non-zero exit.

`check` says UNKNOWN (exit 3) on standard output, as monitoring plugins must; every other
command says `Error: ...` on standard error. None prints a traceback, and none replaces what
it was told to write over unless it is a regular file.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import XML_CAPTURES, needs
from fixtures.machines import shared_tree

HWINFO = [sys.executable, "-m", "hwinfo"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWINFO, *args], capture_output=True, text=True, timeout=60,
                          check=False, cwd=cwd)


def one_error_line(result: subprocess.CompletedProcess[str], exit_code: int = 1) -> str:
    assert result.returncode == exit_code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: ")
    return line


def unknown_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("HWINFO UNKNOWN - ")
    return line


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("hostile")
    files = {
        "binary": b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4,
        "latin1": '{"format": 1, "description": "caf\xe9"}'.encode("latin-1"),
        "nested": b"[" * 100_000,
        "nested-yaml": b"a: " + b"[" * 100_000,
        "nan": b'{"format": 1, "gpus": [{"board": "T4", "power_draw_w": NaN}]}',
        "hot": b'{"format": 1, "gpus": [{"board": "T4", "temperature_c": 1e30}]}',
        "affinity": b'{"format": 1, "gpus": [{"board": "T4", "cpu_affinity": "0-99999999"}]}',
    }
    paths = {}
    for name, data in files.items():
        paths[name] = where / f"{name}.json"
        paths[name].write_bytes(data)
    os.mkfifo(where / "fifo.json")
    paths["fifo"] = where / "fifo.json"
    return paths


@pytest.mark.parametrize(("name", "says"), [
    ("binary", "not UTF-8 text (binary?) at byte 136"),
    ("latin1", "not UTF-8 text"),
    ("nested", "nested too deeply"),
    ("nan", "NaN is not a number JSON allows"),
    ("hot", "gpus[0].temperature_c: expected an integer, got float"),
    ("affinity", ("gpus[0].cpu_affinity: expected a CPU list such as '0-23,48-71': CPU 99999999 is "
                  "beyond the most this hwinfo accepts (65535)")),
    ("fifo", "not a regular file (a FIFO)"),
])
@pytest.mark.parametrize("command", [("report",), ("export", "--textfile", "-"), ("sim", "run")])
def test_a_hostile_scenario_is_one_line_for_every_command(
    hostile: dict[str, Path], name: str, says: str, command: tuple[str, ...]
) -> None:
    scenario = str(hostile[name])
    if command == ("sim", "run"):
        result = run("sim", "run", scenario, "--", sys.executable, "-c", "pass")
    else:
        result = run(*command, "--simulate", scenario, "--root", str(shared_tree("x86-2s-smt")))
    line = one_error_line(result)
    assert f"scenario {scenario}: " in line and says in line


def test_a_hostile_scenario_stops_serve_before_it_listens(hostile: dict[str, Path]) -> None:
    result = run("serve", "--simulate", str(hostile["binary"]), "--address", "127.0.0.1",
                 "--port", "0")
    assert "not UTF-8 text" in one_error_line(result)


@pytest.mark.parametrize(("option", "name", "says"), [
    ("--simulate", "binary", "not UTF-8 text"),
    ("--simulate", "nested", "nested too deeply"),
    ("--baseline", "nested", "nested too deeply"),
    ("--baseline", "binary", "not UTF-8 text"),
    ("--config", "nested-yaml", "nested too deeply"),
    ("--config", "binary", "not UTF-8 text"),
    ("--config", "fifo", "not a regular file (a FIFO)"),
])
def test_check_says_unknown_for_a_hostile_file(
    hostile: dict[str, Path], option: str, name: str, says: str
) -> None:
    result = run("check", option, str(hostile[name]), "--root", str(shared_tree("x86-2s-smt")))
    assert says in unknown_line(result)


def test_check_from_an_invalid_port_is_unknown() -> None:
    line = unknown_line(run("check", "--from", "http://127.0.0.1:99999"))
    assert "--from 'http://127.0.0.1:99999': expected http://HOST:PORT" in line


def test_report_from_an_invalid_port_is_one_line() -> None:
    line = one_error_line(run("report", "--from", "http://127.0.0.1:99999"))
    assert "Port out of range 0-65535" in line


# --- export --textfile ---------------------------------------------------------------------


def export(target: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run("export", "--textfile", str(target), "--simulate", "cloud-t4",
               "--root", str(shared_tree("x86-2s-smt")), cwd=cwd)


def test_export_replaces_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "hwinfo.prom"
    target.write_text("stale\n")
    result = export(target)
    assert result.returncode == 0, result.stderr
    assert "hwinfo_gpus 1.0" in target.read_text()


def test_export_dash_is_standard_output(tmp_path: Path) -> None:
    result = export("-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hwinfo_gpus 1.0" in result.stdout
    assert list(tmp_path.iterdir()) == []  # no file named "-"


def _null_device(tmp_path: Path) -> Path:
    """A character device like /dev/null: a copy of it as root, else (unprivileged) itself."""
    if os.geteuid() != 0:
        return Path("/dev/null")  # only root could replace it; the test still sees the refusal
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    return node


def test_export_refuses_devices_fifos_symlinks_and_directories(tmp_path: Path) -> None:
    fifo, link, real = tmp_path / "fifo.prom", tmp_path / "link.prom", tmp_path / "real.prom"
    os.mkfifo(fifo)
    real.write_text("kept\n")
    link.symlink_to(real)
    device = _null_device(tmp_path)
    cases = [(device, "is a character device", stat.S_ISCHR), (fifo, "is a FIFO", stat.S_ISFIFO),
             (link, "is a symbolic link", stat.S_ISLNK), (tmp_path, "is a directory", stat.S_ISDIR)]
    for target, says, still in cases:
        line = one_error_line(export(target))
        assert f"--textfile {target}: {says}, not a regular file; refusing to replace it" in line
        assert still(os.lstat(target).st_mode)
    assert real.read_text() == "kept\n"
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_export_into_a_missing_directory(tmp_path: Path) -> None:
    line = one_error_line(export(tmp_path / "missing" / "x.prom"))
    assert f"no directory {tmp_path / 'missing'}" in line


# --- sim import ----------------------------------------------------------------------------


@needs(XML_CAPTURES)
def test_sim_import_to_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    line = one_error_line(run("sim", "import", str(XML_CAPTURES[0]), "-o", "/nonexistent/x.json"))
    assert line == "Error: -o /nonexistent/x.json: no directory /nonexistent"


@needs(XML_CAPTURES)
def test_sim_import_writes_a_scenario_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "lab.json"
    result = run("sim", "import", str(XML_CAPTURES[0]), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert run("report", "--simulate", str(out)).returncode == 0


@pytest.mark.parametrize(("name", "says"), [
    ("binary", "not UTF-8 text (binary?)"), ("nested", "neither nvidia-smi -q -x XML"), ("fifo", "not a regular file"),
])
def test_sim_import_of_a_hostile_dump_is_one_line(hostile: dict[str, Path], name: str, says: str) -> None:
    assert says in one_error_line(run("sim", "import", str(hostile[name])))


# --- --from: what answered, in the user's terms -----------------------------------------------


class _Html(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>Router login</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def html_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Html)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_check_and_report_from_a_web_page(html_server: int) -> None:
    says = f"http://127.0.0.1:{html_server}/api/v1/snapshot is not an hwinfo daemon (it answered text/html)"
    assert unknown_line(run("check", "--from", f"http://127.0.0.1:{html_server}")).endswith(says)
    assert one_error_line(run("report", "--from", f"http://127.0.0.1:{html_server}")) == f"Error: {says}"


# --- --ca-file: read as hostile input, never by OpenSSL by name ---------------------------------


@pytest.mark.parametrize(("name", "says"), [
    ("fifo", "not a regular file (a FIFO)"),  # OpenSSL would wait on it for ever
    ("/dev/zero", "not a regular file (a character device)"),  # ... and read it for ever
    ("binary", "not UTF-8 text (binary?) at byte 136"),
    ("latin1", "not UTF-8 text (binary?) at byte 33"),
    ("nested", "no CA certificate loads (no start line: cadata does not contain a certificate)"),
])
def test_a_hostile_ca_file_is_one_line(hostile: dict[str, Path], name: str, says: str) -> None:
    ca = hostile.get(name, name)
    url = "https://127.0.0.1:9"
    assert one_error_line(run("report", "--from", url, "--ca-file", str(ca))) == \
        f"Error: --ca-file {ca}: {says}"
    assert unknown_line(run("check", "--from", url, "--ca-file", str(ca))) == \
        f"HWINFO UNKNOWN - --ca-file {ca}: {says}"
