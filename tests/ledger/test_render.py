"""The ledger's answers as a person and a script read them: figures that are not 0 never
print as 0, durations as people write them, counts as integers, no stray separators (the
same output from a real engine: tests/deploy/test_ledger_end_to_end.py)."""

from __future__ import annotations

import json

from hwinfo.ledger import render
from hwinfo.ledger.fleet import Fit, Fleet, Gpu, Host, MigDevice, Profile
from hwinfo.ledger.usage import Advice, Ledger, Usage, _notes
from hwinfo.render.text.style import Style

A100 = "NVIDIA A100-SXM4-80GB"
GIB = 2**30
UNTIL = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
MONTH = 30 * 86400
PLAIN = Style(False)


def ledger(row: Usage, covered: float | None = MONTH, interval: float = 60) -> Ledger:
    total = Usage("total", **{k: v for k, v in row.__dict__.items() if k != "key"})
    return Ledger(UNTIL - MONTH, UNTIL, "user", interval, covered, [row], total)


def test_a_figure_that_is_not_zero_never_shows_as_zero() -> None:
    # 170 GPU-seconds are 0.047 GPU-hours: at a price of 2.50 an hour, 0.12; 1,000 J are
    # 0.0003 kWh. Each shows as less than its last digit, never as 0.0 beside the cost.
    row = Usage("ann", held_gpu_seconds=170, busy_gpu_seconds=170, utilization_gpu_seconds=85,
                energy_joules=1000, cost=170 / 3600 * 2.5)
    done = ledger(row)
    done.advice = [Advice("ann", A100, "h:9110", "0", 170, 0.01, GIB, "release", None, 170)]
    text = render.usage_text(done, "EUR", PLAIN)
    ann = next(line.split() for line in text.splitlines() if line.startswith("  ann"))
    assert ann == ["ann", "<0.1", "<0.1", "0.0", "0.0", "50%", "n/a", "<0.1", "0.12"]
    assert "0.01 GPU-hours, peak" not in text
    assert ": <0.1 GPU-hours, peak 1.00 GiB, mean 1%: idle: release it, frees <0.1 GPU-hours" in text
    row.cost = 0.001
    assert render.usage_text(ledger(row), "EUR", PLAIN).splitlines()[3].endswith(" <0.01")


def test_notes_show_figures_and_durations_as_people_read_them() -> None:
    row = Usage("ann", held_gpu_seconds=170, device_judged_gpu_seconds=100)
    done = ledger(row, covered=MONTH - 2 * 3600)
    _notes(done, [], None, UNTIL)
    assert done.notes == [
        ("the rules evaluated 29d22h of the range's 30d (not loaded yet, Prometheus down, or "
         "its newest records not written yet): the rest is in no figure"),
        ("busy or idle judged by the device's activity, not the holder's own (no per-process "
         "samples): <0.1 of <0.1 GPU-hours held")]
    text = render.usage_text(done, None, PLAIN)
    assert "range 30d, rules every 1m\n" in text and "e+0" not in text
    ahead = ledger(row, interval=1.5)
    _notes(ahead, [], None, UNTIL - 3 * 3600 - 90.25)
    assert ahead.notes[0] == ("the range ends 3h1m30s from now: what is still to come is in "
                              "no figure")
    assert "rules every 1s500ms" in render.usage_text(ahead, None, PLAIN)


def test_csv_numbers_have_no_trailing_dot() -> None:
    row = Usage("ann", held_gpu_seconds=3600, energy_joules=969300.0000001,
                peak_memory_bytes=3.0000001, utilization_gpu_seconds=1800.5)
    header, ann, total = render.usage_csv(ledger(row), None).splitlines()
    cells = dict(zip(header.split(","), ann.split(",")))
    assert (cells["energy_joules"], cells["peak_memory_bytes"], cells["held_gpu_seconds"],
            cells["mean_utilization_ratio"]) == ("969300", "3", "3600", "0.500139")
    assert not any(cell.endswith(".") for line in (ann, total) for cell in line.split(","))


def mig_gpu() -> Gpu:
    """An A100 in MIG mode with no instance yet: seven 1g.10gb could be created."""
    return Gpu("0", "GPU-1", A100, 80 * GIB, 0, 79 * GIB, 0, mig_enabled=True,
               profiles=[Profile("1g.10gb", 7, 10 * GIB)])


def test_a_mig_gpu_without_instances_lists_what_can_be_created_alone() -> None:
    held = Gpu("1", "GPU-2", A100, 80 * GIB, 80 * GIB, 0, 1, holders={"bo": 70 * GIB},
               mig_enabled=True, profiles=[Profile("1g.10gb", 1, 10 * GIB)],
               mig_devices=[MigDevice("1", "0", "7g.80gb", "MIG-1", 80 * GIB, 1, {"bo": 70 * GIB})])
    text = render.fleet_text(Fleet(UNTIL, [Host("hwinfo", "a:9110", "up", 1.0, [mig_gpu(), held])]),
                             None, PLAIN)
    rows = [line for line in text.splitlines() if line.startswith("  a:9110")]
    assert rows[0].endswith("MIG 0/0 used  can create 1g.10gb×7")
    assert rows[1].endswith("MIG 1/1 used  bo 70.0 GiB; can create 1g.10gb×1")
    assert ";" not in rows[0]


def test_fleet_json_counts_and_indexes_are_integers() -> None:
    whole = Gpu("1", "GPU-2", A100, 80 * GIB, 0, 79 * GIB, 3)
    foreign = Gpu("x", "GPU-3", A100, 80 * GIB, 0, 79 * GIB, 0)  # not hwinfo's label: no index
    document = json.loads(render.fleet_json(Fleet(UNTIL, [
        Host("hwinfo", "a:9110", "up", 1.0, [mig_gpu(), whole, foreign])])))
    gpus = document["hosts"][0]["gpus"]
    assert [(g["index"], g["processes"]) for g in gpus] == [(0, 0), (1, 3), (None, 0)]
    assert all(type(g["processes"]) is int for g in gpus)
    assert gpus[0]["mig_profiles_free"] == [
        {"name": "1g.10gb", "free_instances": 7, "memory_bytes": 10 * GIB}]
    assert type(gpus[0]["mig_profiles_free"][0]["free_instances"]) is int
    fits = json.loads(render.fleet_json(Fleet(UNTIL, [Host("hwinfo", "a:9110", "up", 1.0)], [
        Fit("gpu", "a:9110", "1", "GPU-2", A100, 79 * GIB)])))["fits"]
    assert fits[0]["gpu"] == 1


def test_hosts_up_with_nothing_that_fits_are_listed_as_offering_nothing() -> None:
    hosts = [Host("hwinfo", "a:9110", "up", 1.0), Host("hwinfo", "b:9110", "up", 1.0),
             Host("hwinfo", "c:9110", "down"), Host("hwinfo", "d:9110", "stale", 90.0)]
    fits = [Fit("gpu", "b:9110", "0", "GPU-3", A100, 79 * GIB)]
    text = render.fleet_text(Fleet(UNTIL, hosts, fits), 40 * GIB, PLAIN)
    assert text.split("\n\n")[0].splitlines()[1:] == [
        "  4 hosts: 2 up, 1 stale, 1 down",
        "  offering nothing now:",
        "    HOST    STATE",
        "    a:9110  up, nothing that fits",
        "    c:9110  down",
        "    d:9110  stale (GPU data 90 s old)"]
