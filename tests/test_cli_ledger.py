"""`hwinfo usage` and `hwinfo fleet` given what a user can get wrong: each is one line on
stderr and a non-zero exit, never a traceback. What they answer when all is right is proven
end to end in tests/deploy/test_ledger_end_to_end.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
from conftest import Pki
from fixtures.loopback import serving

from tests.deploy.ledger_stack import rules_every_second
from tests.deploy.prometheus_stack import prometheus_scraping, wait_for


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def one_line_error(result: subprocess.CompletedProcess[str], exit_code: int = 1) -> str:
    assert result.returncode == exit_code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


# Answers of servers that are not what --prometheus should name.
ANSWERS = {
    "/html": (200, "text/html", b"<html><body>Sign in</body></html>"),
    "/not-json": (200, "application/json", b"{not json"),
    "/error": (400, "application/json",
               b'{"status":"error","errorType":"bad_data","error":"invalid parameter \\"query\\""}'),
    "/down": (503, "text/plain", b"Service Unavailable"),
    "/nested": (200, "application/json", b"[" * 100_000),
    "/no-status": (200, "application/json", b'{"data": {"groups": []}}'),
}


@pytest.fixture(scope="module")
def impostor() -> Iterator[str]:
    def answer(path: str) -> tuple[int, str, bytes]:
        return ANSWERS.get("/" + path.split("/")[1], (404, "text/plain", b"404 page not found"))

    with serving(answer) as url:
        yield url


@pytest.mark.parametrize("command", ["usage", "fleet"])
@pytest.mark.parametrize(("path", "expected"), [
    ("/html", "not Prometheus's API (it answered text/html)"),
    ("/not-json", "not Prometheus's API"),
    ("/error", 'HTTP 400 Bad Request (invalid parameter "query")'),
    ("/down", "HTTP 503 Service Unavailable"),
    ("/nested", "not Prometheus's API"),
    ("/no-status", "no status"),
    ("/nothing", "HTTP 404 Not Found"),
])
def test_what_answers_is_not_prometheus(impostor: str, command: str, path: str, expected: str) -> None:
    line = one_line_error(run(command, "--prometheus", impostor + path))
    assert expected in line and impostor in line


def test_nothing_listens(unused_port: int) -> None:
    line = one_line_error(run("usage", "--prometheus", f"http://127.0.0.1:{unused_port}"))
    assert "connection refused (is Prometheus running there?)" in line


@pytest.fixture
def unused_port() -> Iterator[int]:
    # Held bound, never listening: connections are refused, and no parallel test can take it.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.mark.parametrize(("args", "expected"), [
    (["usage", "--since", "7"], "'7' is not a duration"),
    (["usage", "--since", "-1d"], "is not a duration"),
    (["usage", "--since", "99999999d"], "is not between 1ms and 10 years"),
    (["usage", "--until", "yesterday"], "'yesterday' is not a time"),
    (["usage", "--until", "nan"], "is not a time between 1970 and 2242"),
    (["usage", "--by", "group"], "'group' is not one of"),
    (["usage", "--timeout", "inf"], "not a finite number"),
    (["fleet", "--need-memory", "lots"], "'lots' is not a size"),
    (["fleet", "--need-memory", "0GiB"], "is not between 1 byte and 1 PiB"),
    (["fleet", "--model", "A100("], "is not a regular expression"),
    (["fleet", "--prometheus", ""], "needs a value"),
    (["fleet", "--model", ""], "needs a value"),  # an empty pattern would match every model
    (["usage", "--since", " "], "needs a value"),
])
def test_bad_options_are_usage_errors(args: list[str], expected: str) -> None:
    command = [*args, "--prometheus", "http://127.0.0.1:9"] if "--prometheus" not in args else args
    line = one_line_error(run(*command), exit_code=2)
    assert expected in line


@pytest.mark.parametrize(("url", "expected"), [
    ("ftp://127.0.0.1:9090", "expected http://HOST:PORT or https://HOST:PORT"),
    ("http://127.0.0.1:0", "port 0 is no port"),
    ("http://127.0.0.1:9090\n", "control characters"),
])
def test_bad_urls(url: str, expected: str) -> None:
    assert expected in one_line_error(run("fleet", "--prometheus", url))


@pytest.mark.parametrize("command", ["usage", "fleet"])
def test_a_ca_file_that_is_no_certificate(tmp_path: Path, command: str) -> None:
    binary, text, fifo = tmp_path / "binary.pem", tmp_path / "text.pem", tmp_path / "fifo.pem"
    binary.write_bytes(b"\x00" * 100)
    text.write_text("hello\n")
    os.mkfifo(fifo)  # no writer: OpenSSL reading it by name would wait for ever
    for ca, says in [(binary, "not text (it holds NUL bytes)"),
                     (text, "no CA certificate loads (no start line: cadata does not contain a certificate)"),
                     (fifo, "not a regular file (a FIFO)"),
                     ("/dev/zero", "not a regular file (a character device)")]:
        line = one_line_error(run(command, "--prometheus", "https://127.0.0.1:9", "--ca-file",
                                  str(ca)))
        assert line == f"Error: --ca-file {ca}: {says}"


@pytest.mark.parametrize(("content", "expected"), [
    (b"", "expected a mapping"),
    (b"\x00\xff\xfe binary", "not UTF-8 text"),
    (b"gpu_hour: {default: .nan}\n", "not a finite number"),
    (b"gpu_hour: {default: -1}\n", "is not a price between 0 and 1e+06"),
    (b"gpu_hour: {default: 1.0e+300}\n", "is not a price"),
    (b"gpu_hour: {default: 1" + b"0" * 400 + b"}\n", "is not a price"),  # 400 digits
    (b"gpu_hour: {default: '2'}\n", "expected a number, got '2'"),
    (b"gpu_hour: [1, 2]\n", "gpu_hour: expected a mapping"),
    (b"kwh: 0.3\nprice: 1\n", "price: unknown key"),
    (b"currency: EUR\n", "no prices"),
    (b"gpu_hour: {default: 1}\ncurrency: [x]\n", "currency: expected a short name"),
    (b"a: " + b"[" * 10_000, ""),
])
def test_bad_prices_files(tmp_path: Path, content: bytes, expected: str) -> None:
    prices = tmp_path / "prices.yml"
    prices.write_bytes(content)
    line = one_line_error(run("usage", "--prometheus", "http://127.0.0.1:9", "--prices", str(prices)))
    assert f"--prices {prices}" in line and expected in line


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "/"])
def test_prices_from_special_files(special: str) -> None:
    line = one_line_error(run("usage", "--prometheus", "http://127.0.0.1:9", "--prices", special))
    assert f"--prices {special}" in line


def test_prices_from_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "prices.fifo"
    os.mkfifo(fifo)
    assert "a FIFO" in one_line_error(
        run("usage", "--prometheus", "http://127.0.0.1:9", "--prices", str(fifo)))


def test_a_prometheus_without_rules_or_series_says_what_is_missing(tmp_path: Path) -> None:
    """A real Prometheus scraping nothing: first without the ledger rules, then with them."""
    with prometheus_scraping([], tmp_path / "bare", rule_files=()) as bare:
        wait_for("Prometheus to answer", lambda: bare.api("/api/v1/rules", {}) is not None)
        line = one_line_error(run("usage", "--prometheus", bare.prometheus))
        assert "has not loaded the ledger's recording rules" in line
        assert "add prometheus/hwinfo-ledger.yml to its rule_files" in line
        line = one_line_error(run("fleet", "--prometheus", bare.prometheus))
        assert "has no hwinfo series in the last 1h: is it scraping hwinfo serve?" in line
    rules = [rules_every_second(tmp_path)]
    with prometheus_scraping([], tmp_path / "ruled", rule_files=rules) as ruled:
        wait_for("the rules to load", lambda: ruled.api("/api/v1/rules", {})["groups"])
        line = one_line_error(run("usage", "--prometheus", ruled.prometheus, "--since", "1h",
                                  "--until", "2023-11-14T22:13:20Z"))
        assert ("has no hwinfo series between 2023-11-14 21:13:20 UTC and 2023-11-14 22:13:20 "
                "UTC: is it scraping hwinfo serve?") in line
        line = one_line_error(run("job", "42", "--prometheus", ruled.prometheus, "--since", "1h",
                                  "--until", "2023-11-14T22:13:20Z"))
        assert line == (f"Error: Slurm job 42: no GPU process of it between 2023-11-14 21:13:20 "
                        f"UTC and 2023-11-14 22:13:20 UTC at {ruled.prometheus}")



def test_a_prometheus_behind_tls_and_basic_auth(tmp_path: Path, pki: Pki) -> None:
    """Prometheus's own web config: https with our CA, and a user's password in the URL."""
    web = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    web.write_text(json.dumps({
        "tls_server_config": {"cert_file": str(pki.server_cert), "key_file": str(pki.server_key)},
        "basic_auth_users": {"ledger": hashed}}))
    rules = [rules_every_second(tmp_path)]
    with prometheus_scraping([], tmp_path / "tls", rule_files=rules,
                             flags=[f"--web.config.file={web}"]) as secured:
        https = secured.prometheus.replace("http://", "https://")
        right = https.replace("https://", "https://ledger:s3cret@")

        def answered() -> str | None:
            line = one_line_error(run("usage", "--prometheus", right, "--ca-file", str(pki.ca)))
            return None if "connection refused" in line else line

        # An answer about the data, not the connection: TLS and the password were accepted.
        assert "has no hwinfo series between " in wait_for("Prometheus", answered)
        wrong = https.replace("https://", "https://ledger:guess@")
        assert "HTTP 401 Unauthorized" in one_line_error(
            run("fleet", "--prometheus", wrong, "--ca-file", str(pki.ca)))
        assert "its certificate is not trusted" in one_line_error(run("fleet", "--prometheus", right))
        assert "speaks TLS: use https://" in one_line_error(
            run("fleet", "--prometheus", secured.prometheus))
        assert "s3cret" not in one_line_error(run("fleet", "--prometheus", right))
