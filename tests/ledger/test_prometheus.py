"""`hwinfo usage` and `fleet` against a hostile Prometheus on loopback: whatever it answers
is a table, a document or one line, never a traceback, Infinity or a terminal escape."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fixtures.loopback import serving

from hwinfo.ledger.config import resolve
from hwinfo.ledger.prometheus import LedgerError, Prometheus
from hwinfo.ledger.queries import HELD_RECORD

AT = 1_700_000_000.0
RULES = {"groups": [{"name": "hwinfo-ledger", "interval": 60,
                     "rules": [{"name": HELD_RECORD, "type": "recording"}]}]}
GPU = {"job": "hwinfo", "instance": "a:9110", "gpu": "0", "uuid": "GPU-1",
       "model": "NVIDIA A100-SXM4-80GB"}


def vector(*series: tuple[dict[str, str], Any]) -> dict[str, Any]:
    return {"resultType": "vector",
            "result": [{"metric": labels, "value": [AT, value]} for labels, value in series]}


def held_by(user: str, value: Any = "30") -> dict[str, Any]:
    """What a usage query gets: one GPU seen, `user` holding it."""
    return vector(({"measure": "gpus", **GPU}, "1"),
                  ({"measure": "held", "user": user, "model": GPU["model"]}, value))


@pytest.fixture
def hostile() -> Iterator[tuple[str, dict[str, Any]]]:
    """A loopback server answering /api/v1/rules, /api/v1/series and /api/v1/query as the
    test says; by default, the ledger's rules."""
    answers: dict[str, Any] = {"rules": RULES}

    def answer(path: str) -> tuple[int, str, bytes]:
        data = answers.get(path.split("?")[0].rsplit("/", 1)[-1])
        body = data if isinstance(data, bytes) else json.dumps(
            {"status": "success", "data": data}).encode()
        return 200, "application/json", body

    with serving(answer) as url:
        yield url, answers


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1 and result.stdout == "", (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and "\x1b" not in line and "\x00" not in line
    return line


def _no_constants(name: str) -> None:
    raise AssertionError(f"{name} in JSON output")


@pytest.mark.parametrize(("rules", "expected"), [
    ({"groups": [{"name": "x", "interval": 60, "rules": 5}]}, "has not loaded the ledger's"),
    ({"groups": [{"name": "x", "interval": 10**310, "rules": RULES["groups"][0]["rules"]}]},
     "has not loaded the ledger's"),
    ({"groups": [{"name": "x", "interval": 1e300, "rules": RULES["groups"][0]["rules"]}]},
     "has not loaded the ledger's"),
    # Every figure is a sum times the interval: 1e-300 would make any range read nothing.
    ({"groups": [{"name": "x", "interval": 1e-300, "rules": RULES["groups"][0]["rules"]}]},
     "has not loaded the ledger's"),
])
def test_hostile_rule_groups_are_one_line(hostile: tuple[str, dict[str, Any]],
                                          rules: dict[str, Any], expected: str) -> None:
    url, answers = hostile
    answers["rules"] = rules
    answers["query"] = held_by("alice")
    assert expected in one_line(run("usage", "--prometheus", url))


@pytest.mark.parametrize(("value", "expected"), [
    (10**310, "a series of the answer is malformed"),  # a number, not Prometheus's string
    ("1e300", "held of 1e+300 cannot be a ledger figure"),
    ("-5", "held of -5 cannot be a ledger figure"),
], ids=["310 digits", "1e300", "negative"])
def test_absurd_figures_are_refused(hostile: tuple[str, dict[str, Any]], value: Any,
                                    expected: str) -> None:
    url, answers = hostile
    answers["query"] = held_by("alice", value)
    for fmt in ("text", "json", "csv"):
        assert expected in one_line(run("usage", "--prometheus", url, "--format", fmt))


def test_a_310_digit_sample_for_fleet_is_one_line(hostile: tuple[str, dict[str, Any]]) -> None:
    url, answers = hostile
    answers["query"] = vector(({"measure": "seen", "job": "hwinfo", "instance": "a"}, 10**310))
    assert "malformed" in one_line(run("fleet", "--prometheus", url))


# A user name from a JSON escape that is no character, and one that would set a terminal's title.
HOSTILE_USER = "us\udce9r\x1b]0;pwned\x07"


def test_hostile_labels_reach_every_format_escaped(hostile: tuple[str, dict[str, Any]]) -> None:
    url, answers = hostile
    answers["query"] = held_by(HOSTILE_USER)
    text = run("usage", "--prometheus", url)
    assert text.returncode == 0, text.stderr
    assert "us\\xe9r\\x1b]0;pwned\\x07" in text.stdout and "\x1b]" not in text.stdout
    document = run("usage", "--prometheus", url, "--format", "json")
    assert document.returncode == 0, document.stderr
    rows = json.loads(document.stdout, parse_constant=_no_constants)["rows"]
    assert [row["user"] for row in rows] == ["us\\xe9r\x1b]0;pwned\x07"]
    csv = run("usage", "--prometheus", url, "--format", "csv")
    assert csv.returncode == 0 and "us\\xe9r" in csv.stdout, csv.stderr


def test_fleet_shows_hostile_names_escaped(hostile: tuple[str, dict[str, Any]]) -> None:
    url, answers = hostile
    host = {"job": "hwinfo", "instance": "a\udce9:9110"}
    gpu = {**host, "gpu": "0", "uuid": "GPU-1"}
    answers["query"] = vector(
        ({"measure": "seen", **host}, "1"), ({"measure": "up", **host}, "1"),
        ({"__name__": "hwinfo_gpu_info", **gpu, "name": "A100\x1b[31m"}, "1"),
        ({"__name__": "hwinfo_gpu_memory_total_bytes", **gpu}, "85899345920"),
        ({"__name__": "hwinfo_mig_profile_free_instances", **gpu, "profile": "1g\x1b[5m"}, "7"),
        ({"__name__": "hwinfo_mig_profile_memory_bytes", **gpu, "profile": "1g\x1b[5m"},
         "10737418240"))
    text = run("fleet", "--prometheus", url)
    assert text.returncode == 0, text.stderr
    assert "A100\\x1b[31m" in text.stdout and "a\\xe9:9110" in text.stdout
    assert "\x1b" not in text.stdout
    document = run("fleet", "--prometheus", url, "--format", "json")
    assert document.returncode == 0, document.stderr
    (listed,) = json.loads(document.stdout)["hosts"]
    assert listed["gpus"][0]["model"] == "A100\x1b[31m"


@pytest.mark.parametrize("command", ["usage", "fleet"])
def test_a_servers_error_stays_one_line(hostile: tuple[str, dict[str, Any]],
                                         command: str) -> None:
    url, answers = hostile
    answers["rules"] = answers["query"] = json.dumps(
        {"status": "error", "error": "bad\x00 query\r\nError: forged\x1b]0;pwned\x07"}).encode()
    line = one_line(run(command, "--prometheus", url))
    assert "bad\\x00 query" in line and "\\x1b]0;pwned\\x07" in line


def test_more_evaluations_than_the_range_holds_is_refused(hostile: tuple[str, dict[str, Any]]) -> None:
    # A day of 1-minute rules holds 1,440 evaluations; 2,880 is rules loaded twice, or
    # overlapping roll-ups, and every figure made of them would be doubled or more. This
    # server answers the day's one part and the accounting counters' query alike: 5,760.
    url, answers = hostile
    answers["query"] = {**held_by("alice"), "result": [
        *held_by("alice")["result"], {"metric": {"measure": "evaluations"}, "value": [AT, "2880"]}]}
    assert "rules were evaluated for 4d of a 1d range" in one_line(
        run("usage", "--prometheus", url, "--since", "1d", "--until", str(AT)))


@pytest.mark.parametrize(("series", "expected"), [
    ({"gpu": "0"}, ": the answer about series is not a list"),
    ("[", "/api/v1/series: not Prometheus's API"),
    (b"\x00\xff", "/api/v1/series: not Prometheus's API"),
], ids=["a mapping", "cut short", "binary"])
def test_hostile_answers_about_series_are_one_line(hostile: tuple[str, dict[str, Any]],
                                                   series: Any, expected: str) -> None:
    url, answers = hostile
    answers["series"] = series.encode() if isinstance(series, str) else series
    with pytest.raises(LedgerError) as raised:
        Prometheus(resolve(url, candidates=())).series(["hwinfo_gpu_info"], AT - 60, AT)
    assert expected in str(raised.value) and "\n" not in str(raised.value)


def test_label_sets_of_the_index_are_text_and_others_are_left_out(
        hostile: tuple[str, dict[str, Any]]) -> None:
    url, answers = hostile
    answers["series"] = [5, "GPU", None, [GPU], {**GPU, "gpu": 0, "model": "A100\udce9"}]
    assert Prometheus(resolve(url, candidates=())).series(["hwinfo_gpu_info"], AT - 60, AT) == [
        {**GPU, "gpu": "0", "model": "A100\\xe9"}]


def test_fits_show_hostile_names_escaped(hostile: tuple[str, dict[str, Any]]) -> None:
    # The server answers every query alike: the host is seen and up (its age unknown: not
    # "up" but stale), and a place whose GPU's name and host are hostile.
    url, answers = hostile
    host = {"job": "hwinfo", "instance": "a\udce9\x1b]0;x\x07:9110"}
    answers["query"] = vector(
        ({"measure": "seen", **host}, "1"), ({"measure": "up", **host}, "1"),
        ({"measure": "age", **host}, "1"),
        ({**host, "gpu": "0", "uuid": "GPU-\x1b[5m", "name": "A100\x1b[31m", "kind": "gpu"},
         "85899345920"))
    text = run("fleet", "--prometheus", url, "--need-memory", "1GiB")
    assert text.returncode == 0, text.stderr
    assert "\x1b" not in text.stdout
    assert "a\\xe9\\x1b]0;x\\x07:9110" in text.stdout and "A100\\x1b[31m" in text.stdout
    document = run("fleet", "--prometheus", url, "--need-memory", "1GiB", "--format", "json")
    assert document.returncode == 0, document.stderr
    (fit,) = json.loads(document.stdout)["fits"]
    assert (fit["model"], fit["uuid"], fit["memory_bytes"]) == ("A100\x1b[31m", "GPU-\x1b[5m", 80 * 2**30)
