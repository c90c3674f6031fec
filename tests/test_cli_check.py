"""`hwinfo check` as cron, Nagios or a CI gate runs it: a fresh process, its lines, its exit status.

The host side reads a fixture tree (`--root`), so memory pressure on the test machine cannot
change a verdict; the GPU side is the simulator.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import CAPTURES, require_captures
from fixtures.machines import shared_tree

from hwinfo import sim

SCENARIOS = Path(sim.__file__).parent / "scenarios"
UUID = r"GPU-[0-9a-f-]{36}"


def run(*args: str, root: bool = True) -> subprocess.CompletedProcess[str]:
    """The command on the fixture tree (unless root=False), as a fresh process."""
    fixture = ["--root", str(shared_tree("x86-2s-smt"))] if root else []
    return subprocess.run([sys.executable, "-m", "hwinfo", *args, *fixture],
                          capture_output=True, text=True, timeout=60, check=False)


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return run("check", *args)


def findings(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str, str]]:
    """(severity, subject, rule) of each line after the summary."""
    found = []
    for line in result.stdout.splitlines()[1:]:
        match = re.fullmatch(rf"(OK|WARNING|CRITICAL|UNKNOWN) (\w+(?: \d+)?)(?: \({UUID}\))?: (\w+): .+",
                             line)
        assert match, f"not a finding line: {line!r}"
        found.append(match.groups())
    return found


def scenario(tmp_path: Path, doc: dict[str, Any], name: str = "lab.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"format": 1, **doc}))
    return str(path)


def test_faults_demo_is_critical_with_each_fault_once() -> None:
    result = check("--simulate", "faults-demo")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == (
        "HWINFO CRITICAL - 1 critical, 5 warning | critical=1 warning=5 unknown=0 gpus=4")
    assert findings(result) == [
        ("CRITICAL", "gpu 0", "ecc_uncorrected"),
        ("WARNING", "gpu 0", "row_remap_pending"),
        ("WARNING", "gpu 1", "pcie_link_below_max"),
        ("WARNING", "gpu 3", "thermal_throttling"),
        ("WARNING", "gpu 3", "power_throttling"),
        ("WARNING", "gpu 3", "temperature_near_slowdown"),
    ]
    assert "x8 of x16 lanes, gen3 of gen4" in result.stdout
    assert result.stderr == ""


def test_json_verdict_has_status_and_facts() -> None:
    result = check("--simulate", "faults-demo", "--format", "json")
    assert result.returncode == 2
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["status"] == "CRITICAL" and doc["exit_code"] == 2
    assert doc["counts"] == {"critical": 1, "warning": 5, "unknown": 0}
    assert doc["error"] is None and doc["summary"].startswith("HWINFO CRITICAL - ")
    link = next(f for f in doc["findings"] if f["rule"] == "pcie_link_below_max")
    assert link["severity"] == "WARNING" and link["subject"] == "gpu 1"
    assert re.fullmatch(UUID, link["uuid"])
    assert link["facts"] == {"generation": 3, "max_generation": 4, "width": 8, "max_width": 16}


def test_lost_gpu_is_critical(tmp_path: Path) -> None:
    lab = scenario(tmp_path, {"gpus": [{"board": "A100-SXM4-40GB"},
                                       {"board": "A100-SXM4-40GB", "lost": True}]})
    result = check("--simulate", lab)
    assert result.returncode == 2
    assert findings(result) == [("CRITICAL", "gpu 1", "gpu_lost")]
    assert "gpu 1: gpu_lost: NVML reports the GPU fell off the bus" in result.stdout


def test_failed_row_remap_and_pending_page_retirement(tmp_path: Path) -> None:
    lab = scenario(tmp_path, {"gpus": [
        {"board": "A100-SXM4-40GB",
         "remapped_rows": {"correctable": 0, "uncorrectable": 3, "pending": False, "failure": True}},
        {"board": "T4", "pcie": {"width": 16},
         "retired_pages": {"single_bit": 1, "double_bit": 1, "pending": True}},
    ]})
    result = check("--simulate", lab)
    assert result.returncode == 2
    assert findings(result) == [("CRITICAL", "gpu 0", "row_remap_failed"),
                                ("WARNING", "gpu 1", "retired_pages_pending")]


def test_driver_library_mismatch_is_critical(tmp_path: Path) -> None:
    lab = scenario(tmp_path, {"init_error": "LibRmVersionMismatch", "gpus": [{"board": "T4"}]})
    result = check("--simulate", lab, "--expect-gpus", "1")
    assert result.returncode == 2
    assert findings(result) == [("CRITICAL", "gpus", "driver_mismatch")]
    assert "driver and library versions differ" in result.stdout


def test_mig_pending_and_empty_mig_are_warnings() -> None:
    result = check("--simulate", "dgx-a100-mig")
    assert result.returncode == 1
    assert findings(result) == [("WARNING", "gpu 3", "mig_without_instances"),
                                ("WARNING", "gpu 6", "mig_mode_change_pending")]


def test_fewer_gpus_than_expected_is_critical() -> None:
    result = check("--simulate", "dgx-a100-mig", "--expect-gpus", "9")
    assert result.returncode == 2
    assert findings(result)[0] == ("CRITICAL", "gpus", "gpu_count")
    assert "8 of 9 expected GPUs present" in result.stdout
    assert check("--simulate", "dgx-a100-mig", "--expect-gpus", "8").returncode == 1


def test_link_width_on_cloud_t4() -> None:
    result = check("--simulate", "cloud-t4")
    assert result.returncode == 1
    assert findings(result) == [("WARNING", "gpu 0", "pcie_link_below_max")]
    assert "x8 of x16 lanes" in result.stdout and "gen" not in result.stdout.splitlines()[1]


def test_no_driver_is_ok_unless_gpus_are_expected() -> None:
    result = check("--simulate", "no-driver")
    assert result.returncode == 0
    assert result.stdout == ("HWINFO OK - no NVIDIA driver installed (libnvidia-ml.so.1 not found), "
                             "no findings | critical=0 warning=0 unknown=0 gpus=0\n")
    expecting = check("--simulate", "no-driver", "--expect-gpus", "1")
    assert expecting.returncode == 2
    assert findings(expecting) == [("CRITICAL", "gpus", "gpu_count")]


def test_config_disables_a_rule_and_sets_expectations(tmp_path: Path) -> None:
    config = tmp_path / "check.yml"
    config.write_text("disable: [pcie_link_below_max]\n")
    assert check("--simulate", "cloud-t4", "--config", str(config)).returncode == 0
    config.write_text("expect_gpus: 2\n")
    result = check("--simulate", "cloud-t4", "--config", str(config))
    assert result.returncode == 2 and ("CRITICAL", "gpus", "gpu_count") in findings(result)
    # The option wins over the file.
    assert check("--simulate", "cloud-t4", "--config", str(config), "--expect-gpus", "1").returncode == 1


def test_baseline_drift(tmp_path: Path) -> None:
    machine = json.loads((SCENARIOS / "dgx-a100-mig.json").read_text())
    # The same file name both times: the simulator derives UUIDs from it.
    lab = scenario(tmp_path, machine, "dgx.json")
    saved = run("report", "--format", "json", "--simulate", lab)
    assert saved.returncode == 0
    baseline = tmp_path / "baseline.json"
    baseline.write_text(saved.stdout)
    assert check("--simulate", lab, "--baseline", str(baseline)).returncode == 1  # MIG warnings only

    gone = machine["gpus"].pop(7)  # fallen off the bus: gone from the PCI tree too
    _unplug(machine["topology"]["pci"], f"0000:{gone['pci_bus_id'][-7:].lower()}")
    machine["gpus"][2] |= {"uuid": "GPU-2f0e1bd6-5b37-4b17-8d49-701b0f063a99", "serial": "1562821009999"}
    machine["gpus"][3]["mig"]["gpu_instances"] = [{"profile": "7g.80gb"}]
    scenario(tmp_path, machine, "dgx.json")
    result = check("--simulate", lab, "--baseline", str(baseline))
    assert result.returncode == 2
    assert findings(result) == [
        ("CRITICAL", "gpu 7", "gpu_missing"),
        ("WARNING", "gpu 6", "mig_mode_change_pending"),
        ("WARNING", "gpu 2", "gpu_replaced"),
        ("WARNING", "gpu 3", "mig_layout_changed"),
    ]
    assert "was NVIDIA A100-SXM4-80GB serial 1562821004486" in result.stdout
    assert "now NVIDIA A100-SXM4-80GB serial 1562821009999 (GPU-2f0e1bd6-" in result.stdout
    assert "MIG layout changed: was MIG enabled, no instances, now 7g.80gb" in result.stdout


def _unplug(devices: list[dict[str, Any]], address: str) -> None:
    """Take the device at `address` out of a scenario's PCI tree."""
    for device in devices:
        if "devices" in device:
            device["devices"] = [d for d in device["devices"] if d.get("address") != address]
            _unplug(device["devices"], address)


class _Snapshot(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def daemon() -> Iterator[ThreadingHTTPServer]:
    """A stand-in for `hwinfo serve` that answers /api/v1/snapshot with _Snapshot.body."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Snapshot)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_xids_heard_by_a_daemon(daemon: ThreadingHTTPServer) -> None:
    # A one-shot check does not listen for XIDs; `hwinfo serve` does, and --from reads them.
    doc = json.loads(run("report", "--format", "json", "--simulate", "vgpu-guest").stdout)
    doc["gpu"]["gpus"][0]["xid_errors"] = [
        {"xid": 13, "count": 4, "last_timestamp_seconds": 1_790_000_000.0},
        {"xid": 79, "count": 1, "last_timestamp_seconds": 1_790_000_100.0},
    ]
    del doc["sources"]  # as daemons before sources[] existed serve it: still read
    _Snapshot.body = json.dumps(doc).encode()
    result = run("check", "--from", f"http://127.0.0.1:{daemon.server_address[1]}", root=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert findings(result) == [("CRITICAL", "gpu 0", "xid_errors"), ("WARNING", "gpu 0", "xid_errors")]
    assert "XID 79 once, last at 2026-09-21 14:15:00 UTC" in result.stdout
    assert "XID 13 4 times" in result.stdout


NOT_A_DIR = str(Path(__file__))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--bogus",), "No such option '--bogus' (see hwinfo check --help)"),
        (("--format", "xml"), "Invalid value for '--format'"),
        (("--expect-gpus", "many"), "Invalid value for '--expect-gpus'"),
        (("--nvml-timeout", "nan"), "'nan' is not a finite number"),
        (("--nvml-timeout", "inf"), "'inf' is not a finite number"),
        (("--nvml-timeout", "1e9"), "1e+09 is not between 0.1 and 3600 seconds"),
        (("--simulate", ""), "--simulate needs a value, not an empty string"),
        (("--from", ""), "--from needs a value, not an empty string"),
        (("--root", ""), "--root needs a value, not an empty string"),
        (("--from", "http://127.0.0.1:1", "--simulate", "cloud-t4"), "--from cannot be used with --simulate"),
        (("--from", "http://127.0.0.1:1", "--root", "/"), "--from cannot be used with --root"),
        (("--ca-file", NOT_A_DIR), "--ca-file needs --from"),
        (("--simulate", "no-such-scenario"), "scenario no-such-scenario: no such file"),
        (("--root", "/no/such/root"), "procfs root '/no/such/root' is not a readable directory"),
        (("--root", NOT_A_DIR), f"procfs root '{NOT_A_DIR}' is not a readable directory"),
        (("--from", "ftp://host"), "--from 'ftp://host': expected http://HOST:PORT"),
        (("--from", "http://127.0.0.1:1"), "http://127.0.0.1:1/api/v1/snapshot: "),
        (("--baseline", "/no/such/baseline.json"), "baseline /no/such/baseline.json: No such file"),
        (("--config", "/no/such/check.yml"), "config /no/such/check.yml: No such file"),
    ],
)
def test_anything_that_stops_the_check_is_unknown_in_one_line(args: tuple[str, ...], says: str) -> None:
    # Usage errors and runtime errors alike: a monitoring system reads 2 as CRITICAL.
    result = run("check", *args, root="--from" not in args and "--root" not in args)
    assert result.returncode == 3, result.stdout + result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("HWINFO UNKNOWN - ") and says in line
    assert "Traceback" not in result.stderr


def test_nothing_read_is_unknown_never_ok(tmp_path: Path) -> None:
    result = run("check", "--root", str(tmp_path), "--simulate", "no-driver", root=False)
    assert result.returncode == 3, result.stdout
    assert findings(result) == [("UNKNOWN", "host", "collection_failed")] * 4
    assert f"memory not read: nothing could be read below {tmp_path}" in result.stdout
    assert f"cpu not read: nothing could be read below {tmp_path}" in result.stdout


def _special(root: Path, rel: str, kind: str) -> Path:
    """A --root tree whose file `rel` is a FIFO (no writer) or a link to /dev/zero."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    return target


@pytest.mark.parametrize(("rel", "kind", "says"), [
    ("proc/meminfo", "fifo", "memory not read: {file}: not a regular file (a FIFO)"),
    ("proc/meminfo", "zero", "memory not read: {file}: not a regular file (a character device)"),
    ("proc/uptime", "fifo", "host not read: {file}: not a regular file (a FIFO)"),
    ("proc/cpuinfo", "fifo", "HWINFO UNKNOWN - {file}: not a regular file (a FIFO)"),
])
def test_a_root_file_no_procfs_holds_is_unknown_at_once(
    tmp_path: Path, rel: str, kind: str, says: str
) -> None:
    file = _special(tmp_path, rel, kind)
    # A FIFO read would block for ever and /dev/zero grow without end: run() has a deadline.
    result = run("check", "--root", str(tmp_path), "--simulate", "no-driver", root=False)
    assert result.returncode == 3, result.stdout
    assert says.format(file=file) in result.stdout
    assert result.stderr == ""


def imported_rtx_3090(tmp_path: Path) -> dict[str, Any]:
    """The real idle RTX 3090 dump (P8, 0 % busy, 210 MHz), imported with `hwinfo sim import`."""
    # https://github.com/influxdata/telegraf/blob/58ff61d01be05ec0d4c2f57c8c89031e026fa0b9/plugins/inputs/nvidia_smi/testdata/3090-v13.xml
    capture = CAPTURES / "rtx-3090-driver590-v13.xml"
    require_captures(capture)
    imported = tmp_path / "rtx-3090.json"
    subprocess.run([sys.executable, "-m", "hwinfo", "sim", "import", str(capture), "-o", str(imported)],
                   check=True, capture_output=True, timeout=60)
    return json.loads(imported.read_text())


def test_real_idle_rtx_3090_is_ok(tmp_path: Path) -> None:
    """Its gen1 link and power cap at rest are power management, not faults."""
    idle = scenario(tmp_path, imported_rtx_3090(tmp_path))
    result = check("--simulate", idle)
    assert result.returncode == 0, result.stdout
    assert result.stdout == "HWINFO OK - 1 GPU, no findings | critical=0 warning=0 unknown=0 gpus=1\n"
    text = run("report", "--simulate", idle).stdout
    assert "PCIe           gen1 x16 of gen4 x16\n" in text and "degraded" not in text
    assert "Throttling     sw_power_cap (at rest)\n" in text


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # The same board at work: a slow link and a power cap are findings again.
        ({"pstate": 0, "utilization_gpu_percent": 95},
         [("WARNING", "gpu 0", "power_throttling"), ("WARNING", "gpu 0", "pcie_link_below_max")]),
        # At rest, fewer lanes and the power brake are faults all the same.
        ({"pcie": {"width": 8}, "clock_event_reasons": ["sw_power_cap", "hw_power_brake_slowdown"]},
         [("WARNING", "gpu 0", "power_throttling"), ("WARNING", "gpu 0", "pcie_link_below_max")]),
    ],
)
def test_real_degradation_is_still_flagged(
    tmp_path: Path, change: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    doc = imported_rtx_3090(tmp_path)
    (gpu,) = doc["gpus"]
    for key, value in change.items():
        gpu[key] = gpu[key] | value if isinstance(value, dict) else value
    result = check("--simulate", scenario(tmp_path, doc))
    assert result.returncode == 1, result.stdout
    assert findings(result) == expected
    assert "(degraded)" in run("report", "--simulate", scenario(tmp_path, doc)).stdout


def test_broken_config_file_is_unknown_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "check.yml"
    config.write_text("temperature_margin_celsius: warm\n")
    result = check("--simulate", "cloud-t4", "--config", str(config), "--format", "json")
    assert result.returncode == 3
    doc = json.loads(result.stdout)
    assert doc["status"] == "UNKNOWN" and doc["findings"] == []
    assert doc["error"] == f"config {config}: temperature_margin_celsius: expected a number, got 'warm'"


def test_listed_in_help() -> None:
    assert "check" in run("--help", root=False).stdout
