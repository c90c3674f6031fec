"""`hwinfo serve` as Prometheus sees it: real subprocesses, real HTTP scrapes."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import bcrypt
import pytest
from conftest import require_tool
from fixtures.processes import nvml_hangs
from prometheus_client.parser import text_string_to_metric_families

from hwinfo import sim
from hwinfo.exporter.http.reload import _POLL_INTERVAL as RELOAD_INTERVAL

from .serving import get, serving

MIB = 1 << 20
SCENARIOS = Path(sim.__file__).parent / "scenarios"


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """name -> [(labels, value)] of one scrape, parsed by prometheus-client's parser."""
    status, _, body = get(url + "/metrics")
    assert status == 200
    samples: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            samples[sample.name].append((sample.labels, sample.value))
    return samples


def by_gpu(samples: list[tuple[dict[str, str], float]]) -> dict[int, float]:
    return {int(labels["gpu"]): value for labels, value in samples}


def scenario(name: str) -> dict[str, Any]:
    return json.loads((SCENARIOS / f"{name}.json").read_text())


def test_scrape_matches_the_scenario_and_the_snapshot() -> None:
    with serving("--simulate", "dgx-a100-mig", "--process-metrics") as url:
        metrics = scrape(url)
        snapshot = json.loads(get(url + "/api/v1/snapshot")[2])
    gpus = scenario("dgx-a100-mig")["gpus"]
    assert metrics["hwinfo_gpus"] == [({}, 8.0)]
    assert by_gpu(metrics["hwinfo_gpu_temperature_celsius"]) == {
        i: float(g["temperature_c"]) for i, g in enumerate(gpus)}
    info = {int(labels["gpu"]): labels for labels, _ in metrics["hwinfo_gpu_info"]}
    assert [info[i]["serial"] for i in range(8)] == [g["serial"] for g in gpus]
    assert all(value == 1.0 for _, value in metrics["hwinfo_gpu_info"])
    # One name per fact: every GPU gauge equals the JSON field of the same name.
    for gpu in snapshot["gpu"]["gpus"]:
        labels = {"gpu": str(gpu["index"]), "uuid": gpu["uuid"]}
        for field in ("memory_used_bytes", "memory_total_bytes", "power_draw_watts"):
            (value,) = [v for lab, v in metrics[f"hwinfo_gpu_{field}"] if lab == labels]
            assert value == gpu[field]
    # MIG: a series per device; memory once per GPU instance (GPU 2 has a GI split in two CIs).
    devices = defaultdict(int)
    for labels, _ in metrics["hwinfo_mig_device_info"]:
        devices[int(labels["gpu"])] += 1
    assert devices == {0: 7, 1: 4, 2: 3, 4: 2, 5: 4}
    gi_memory = [lab for lab, _ in metrics["hwinfo_mig_gpu_instance_memory_total_bytes"]
                 if lab["gpu"] == "2"]
    assert sorted(lab["profile"] for lab in gi_memory) == ["3g.40gb", "4g.40gb"]
    # Users and processes add up to the scenario's.
    expected_users: dict[tuple[str, str], float] = defaultdict(float)
    processes = 0
    for index, gpu in enumerate(gpus):
        for proc in gpu.get("processes", []):
            user = proc.get("user") if proc.get("visible", True) else "(unknown)"
            expected_users[(str(index), user)] += (proc.get("used_memory_mib") or 0) * MIB
            processes += proc.get("used_memory_mib") is not None
    got_users = {(lab["gpu"], lab["user"]): v for lab, v in metrics["hwinfo_gpu_user_memory_used_bytes"]}
    assert got_users == dict(expected_users)
    assert len(metrics["hwinfo_gpu_process_memory_used_bytes"]) == processes


def test_one_series_per_throttle_reason_and_unknown_values_absent() -> None:
    with serving("--simulate", "vgpu-guest") as url:
        metrics = scrape(url)
    assert "hwinfo_gpu_temperature_celsius" not in metrics  # NotSupported: absent, never 0
    assert "hwinfo_gpu_power_draw_watts" not in metrics
    assert "hwinfo_gpu_process_memory_used_bytes" not in metrics  # off by default
    with serving("--simulate", "faults-demo") as url:
        metrics = scrape(url)
    reasons = [lab for lab, _ in metrics["hwinfo_gpu_clock_event_active"] if lab["gpu"] == "3"]
    assert len(reasons) == 9 and len({lab["reason"] for lab in reasons}) == 9
    active = {lab["reason"] for lab, v in metrics["hwinfo_gpu_clock_event_active"]
              if lab["gpu"] == "3" and v == 1}
    assert {"sw_power_cap", "hw_thermal_slowdown"} <= active


def test_promtool_finds_no_problem(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    with serving("--simulate", "dgx-a100-mig", "--process-metrics") as url:
        body = get(url + "/metrics")[2]
    result = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_endpoints_and_negotiation() -> None:
    with serving("--simulate", "cloud-t4") as url:
        status, headers, body = get(url + "/")
        assert status == 200 and b"/metrics" in body and b"hwinfo" in body
        assert get(url + "/-/healthy")[0] == 200 and get(url + "/-/ready")[0] == 200
        status, headers, body = get(url + "/metrics", {"Accept": "application/openmetrics-text"})
        assert headers["Content-Type"].startswith("application/openmetrics-text")
        assert body.endswith(b"# EOF\n")
        status, headers, body = get(url + "/metrics", {"Accept-Encoding": "gzip"})
        assert headers["Content-Encoding"] == "gzip"
        assert b"hwinfo_gpus 1.0" in gzip.decompress(body)
        assert get(url + "/nope")[0] == 404


# (Accept, whether OpenMetrics is the answer). Prometheus lists the formats of its
# scrape_protocols with falling q-values; 2.x asks for OpenMetrics first by default, and a
# scrape_protocols that puts the text format first must get it.
ACCEPTS = [
    (("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
     "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"), True),
    (("text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,"
     "*/*;q=0.3"), False),
    ("application/openmetrics-text;q=0, text/plain", False),  # q=0: not acceptable
    ("Application/OpenMetrics-Text; version=1.0.0", True),  # media types ignore case
    ("application/openmetrics-text;q=0.4, */*;q=0.5", False),
    ("*/*", False),
    ("", False),
]


@pytest.mark.parametrize(("accept", "openmetrics"), ACCEPTS)
def test_openmetrics_is_served_where_the_scraper_weights_it_highest(
    accept: str, openmetrics: bool
) -> None:
    with serving("--simulate", "cloud-t4") as url:
        status, headers, body = get(url + "/metrics", {"Accept": accept} if accept else {})
    assert status == 200
    assert headers["Content-Type"].startswith(
        "application/openmetrics-text" if openmetrics else "text/plain; version=0.0.4")
    assert body.endswith(b"# EOF\n") is openmetrics
    # The answer depends on Accept: a cache in between must not give one scraper's format
    # to another.
    assert "Accept" in [v.strip() for v in headers["Vary"].split(",")]


def test_report_from_a_daemon_renders_its_snapshot() -> None:
    with serving("--simulate", "workstation-geforce") as url:
        served = json.loads(get(url + "/api/v1/snapshot")[2])
        remote = subprocess.run(
            [sys.executable, "-m", "hwinfo", "report", "--format", "json", "--from", url],
            capture_output=True, text=True, check=True,
        ).stdout
        text = subprocess.run([sys.executable, "-m", "hwinfo", "report", "--from", url],
                              capture_output=True, text=True, check=True).stdout
    assert json.loads(remote) == served
    assert "GeForce RTX 4090" in text


def _value(metrics: dict[str, Any], name: str, **labels: str) -> float | None:
    for got, value in metrics.get(name, []):
        if all(got.get(k) == v for k, v in labels.items()):
            return value
    return None


def test_hung_nvml_call_keeps_scrapes_fast_and_shows_staleness(tmp_path: Path) -> None:
    # Scrapes are answered while an NVML call hangs for 10 minutes: they never wait for it.
    # How fast they are then is measured by bench/soak.py (a 30 s hang under 20 scrapers).
    doc = scenario("cloud-t4")
    doc["faults"] = [{"call": "nvmlDeviceGetPowerUsage", "delay_seconds": 600, "after_samples": 2}]
    path = tmp_path / "hang.json"
    path.write_text(json.dumps(doc))
    with serving("--simulate", str(path), "--interval", "0.5", "--nvml-timeout", "0.5") as url:
        deadline = time.monotonic() + 60
        stalled = None
        while time.monotonic() < deadline and not stalled:
            metrics = scrape(url)
            stalled = _value(metrics, "hwinfo_collection_stalled", source="gpu")
            time.sleep(0.1)
        assert stalled == 1.0
        # The last GPU data is still served, flagged stale; host data keeps coming.
        assert _value(metrics, "hwinfo_gpu_temperature_celsius") is not None
        gpu_at = _value(metrics, "hwinfo_last_success_timestamp_seconds", source="gpu")
        cpu_at = _value(metrics, "hwinfo_last_success_timestamp_seconds", source="cpu")
        assert cpu_at > gpu_at
        for _ in range(10):  # each answered while the call still hangs
            assert _value(scrape(url), "hwinfo_collection_stalled", source="gpu") == 1.0
        threads = int(Path(f"/proc/{url.pid}/status").read_text().split("Threads:")[1].split()[0])
    assert threads < 20  # no pile-up behind the hung call


def _scraped_when(url: str, seconds: float, name: str, **labels: str) -> dict[str, Any]:
    """The daemon's metrics once `name` with these labels is 1, scraped until then; the test
    fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        metrics = scrape(url)
        if _value(metrics, name, **labels) == 1.0:
            return metrics
        time.sleep(0.1)
    pytest.fail(f"{name} {labels} not 1 within {seconds:g} s")


def test_a_gpu_sample_two_intervals_late_is_stalled_before_its_deadline(tmp_path: Path) -> None:
    """NVML hangs in the third sample; the daemon would wait 600 s for it (--nvml-timeout).
    Two sampling intervals (1 s) into that sample its GPU data is flagged stalled, so that
    the ledger stops charging the GPU then, and the last GPU data is still served."""
    doc = scenario("cloud-t4")
    doc["faults"] = [{"call": "nvmlDeviceGetPowerUsage", "delay_seconds": 600, "after_samples": 2}]
    path = tmp_path / "hang.json"
    path.write_text(json.dumps(doc))
    with serving("--simulate", str(path), "--interval", "0.5", "--nvml-timeout", "600") as url:
        # A tenth of NVML's deadline: only the early flag comes in time.
        metrics = _scraped_when(url, 60, "hwinfo_collection_stalled", source="gpu")
        assert _value(metrics, "hwinfo_gpu_temperature_celsius") is not None
        assert _value(metrics, "hwinfo_collection_stalled", source="cpu") == 0.0


def _hwinfo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_stalled_gpu_is_stale_in_the_snapshot_and_to_its_readers(tmp_path: Path) -> None:
    doc = scenario("cloud-t4")
    doc["faults"] = [{"call": "nvmlDeviceGetPowerUsage", "delay_seconds": 600, "after_samples": 2}]
    path = tmp_path / "hang.json"
    path.write_text(json.dumps(doc))
    config = tmp_path / "check.yml"
    config.write_text("stale_data_warning_seconds: 1\nstale_data_critical_seconds: 3600\n")
    with serving("--simulate", str(path), "--interval", "0.5", "--nvml-timeout", "0.5") as url:
        deadline = time.monotonic() + 60
        gpu: dict[str, Any] = {}
        while time.monotonic() < deadline:
            served = json.loads(get(url + "/api/v1/snapshot")[2])
            (gpu,) = [s for s in served["sources"] if s["source"] == "gpu"]
            if gpu["state"] == "stale" and gpu["age_seconds"] >= 2:
                break
            time.sleep(0.2)
        assert gpu["state"] == "stale", served["sources"]
        assert gpu["error"].startswith("NVML did not answer within 0.5 s")
        # The snapshot is fresh; its GPU section is the older one, and says how old.
        assert gpu["timestamp_seconds"] < served["timestamp_seconds"] - 1.5
        assert gpu["age_seconds"] == pytest.approx(served["timestamp_seconds"] - gpu["timestamp_seconds"])
        assert served["gpu"]["gpus"][0]["temperature_celsius"] is not None
        assert {s["source"]: s["state"] for s in served["sources"]}["cpu"] == "ok"
        warned = _hwinfo("check", "--from", url, "--config", str(config))
        text = _hwinfo("report", "--from", url).stdout
    assert warned.returncode == 1, warned.stdout + warned.stderr
    (line,) = [line for line in warned.stdout.splitlines() if "stale_data" in line]
    assert line.startswith("WARNING gpu: stale_data: gpu data is ")
    assert "old: NVML did not answer within 0.5 s" in line
    assert "stale: read " in text and "kept because NVML did not answer within 0.5 s" in text


def test_gpu_lost_mid_run_and_nvml_coming_back(tmp_path: Path) -> None:
    with serving("--simulate", "faults-demo", "--interval", "0.2") as url:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            metrics = scrape(url)
            if _value(metrics, "hwinfo_gpu_lost", gpu="2") == 1.0:
                break
            time.sleep(0.1)
        assert _value(metrics, "hwinfo_gpu_lost", gpu="2") == 1.0
        assert _value(metrics, "hwinfo_gpu_lost", gpu="0") == 0.0
        assert _value(metrics, "hwinfo_gpu_temperature_celsius", gpu="2") is None
        assert _value(metrics, "hwinfo_gpu_temperature_celsius", gpu="0") is not None
        # The XIDs of faults-demo: 13 on GPU 0, 79 (fallen off the bus) on the lost GPU 2.
        while time.monotonic() < deadline and _value(metrics, "hwinfo_gpu_last_xid", gpu="2") is None:
            metrics = scrape(url)
        assert _value(metrics, "hwinfo_gpu_xid_errors_total", gpu="0", xid="13") == 1.0
        assert _value(metrics, "hwinfo_gpu_xid_errors_total", gpu="2", xid="79") == 1.0
        assert _value(metrics, "hwinfo_gpu_last_xid", gpu="2") == 79.0
    doc = scenario("cloud-t4") | {"init_error": "DriverNotLoaded", "init_error_attempts": 2}
    path = tmp_path / "reload.json"
    path.write_text(json.dumps(doc))
    with serving("--simulate", str(path), "--interval", "0.5") as url:
        assert _value(scrape(url), "hwinfo_nvml_up") == 0.0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _value(scrape(url), "hwinfo_nvml_up") != 1.0:
            time.sleep(0.2)
        assert _value(scrape(url), "hwinfo_nvml_up") == 1.0


def _web_config(tmp_path: Path, pki: Any, password: bytes) -> Path:
    hashed = bcrypt.hashpw(password, bcrypt.gensalt(4)).decode()
    config = tmp_path / "web-config.yml"
    config.write_text(
        f"tls_server_config:\n  cert_file: {pki.server_cert}\n  key_file: {pki.server_key}\n"
        f"basic_auth_users:\n  prometheus: '{hashed}'\n"
    )
    return config


def test_tls_and_basic_auth(tmp_path: Path, pki: Any) -> None:
    import base64
    import ssl
    import urllib.request

    config = _web_config(tmp_path, pki, b"s3cret")
    context = ssl.create_default_context(cafile=str(pki.ca))

    def fetch(url: str, user: str | None, password: str) -> int:
        request = urllib.request.Request(url + "/metrics")
        if user is not None:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, context=context, timeout=60) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    with serving("--simulate", "cloud-t4", "--web-config", str(config),
                 ready=False, scheme="https") as url:
        deadline = time.monotonic() + 60
        while fetch(url, "prometheus", "s3cret") != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fetch(url, "prometheus", "s3cret") == 200
        assert fetch(url, "prometheus", "wrong") == 401
        assert fetch(url, None, "") == 401
        assert fetch(url, "mallory", "s3cret") == 401
        out = subprocess.run(
            [sys.executable, "-m", "hwinfo", "report", "--no-color", "--ca-file", str(pki.ca),
             "--from", url.replace("https://", "https://prometheus:s3cret@")],
            capture_output=True, text=True, check=True,
        ).stdout
        assert "Tesla T4" in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--web-config", "/no/such/web-config.yml"), "/no/such/web-config.yml"),
        (("--address", "256.1.1.1"), "256.1.1.1"),
        (("--interval", "0"), "--interval"),
        (("--no-collector", "disks"), "disks"),
    ],
)
def test_bad_startup_is_one_line(args: tuple[str, ...], says: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hwinfo", "serve", "--simulate", "cloud-t4", "--port", "0", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert says in result.stderr.strip().splitlines()[-1]


def test_port_in_use_is_one_line() -> None:
    with serving("--simulate", "cloud-t4") as url:
        port = url.rsplit(":", 1)[1]
        result = subprocess.run(
            [sys.executable, "-m", "hwinfo", "serve", "--simulate", "cloud-t4",
             "--address", "127.0.0.1", "--port", port],
            capture_output=True, text=True, timeout=60, check=False,
        )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "in use" in result.stderr.strip().splitlines()[-1]


def test_textfile_export_is_atomic_and_valid(tmp_path: Path) -> None:
    target = tmp_path / "hwinfo.prom"
    subprocess.run([sys.executable, "-m", "hwinfo", "export", "--textfile", str(target),
                    "--simulate", "dgx-a100-mig"], check=True, capture_output=True)
    text = target.read_text()
    assert "hwinfo_gpus 8.0" in text
    assert [p.name for p in tmp_path.iterdir()] == ["hwinfo.prom"]  # no temporary left behind
    promtool = require_tool("promtool")
    assert subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                          capture_output=True, check=False).returncode == 0
    result = subprocess.run([sys.executable, "-m", "hwinfo", "export", "--textfile",
                             str(tmp_path / "missing" / "x.prom"), "--simulate", "cloud-t4"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr


# Signals


def _basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _auth_config(path: Path, password: bytes) -> None:
    """A web config with one user, alice; the same length whatever the password."""
    hashed = bcrypt.hashpw(password, bcrypt.gensalt(4)).decode()
    path.write_text(f"basic_auth_users:\n  alice: '{hashed}'\n")


def _wait_for_log(url: Any, text: str, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text in line for line in url.log):
            return True
        time.sleep(0.05)
    return False


def test_sighup_reloads_the_web_config(tmp_path: Path) -> None:
    config = tmp_path / "web-config.yml"
    _auth_config(config, b"old")
    with serving("--simulate", "cloud-t4", "--web-config", str(config), ready=False) as url:
        deadline = time.monotonic() + 60
        while get(url + "/-/healthy", _basic("alice", "old"))[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # Rewritten in place, size and modification time kept: only SIGHUP can tell.
        before = config.stat()
        _auth_config(config, b"new")
        os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
        # A polling interval passes; the server's loop checks the file at the end of the turn
        # that reads the next request, before the turn that reads the one after, so the second
        # answer comes after a look at the file made since it was rewritten.
        time.sleep(RELOAD_INTERVAL + 0.5)
        for _ in range(2):
            assert get(url + "/-/healthy", _basic("alice", "new"))[0] == 401
        os.kill(url.pid, signal.SIGHUP)
        assert _wait_for_log(url, f"web config reloaded from {config} (on request)")
        assert not any("(its files changed)" in line for line in url.log)  # polling saw nothing
        assert get(url + "/-/healthy", _basic("alice", "new"))[0] == 200
        # A broken file on SIGHUP: one warning, the previous config stays, the daemon too.
        config.write_text("basic_auth_users: [\n")
        os.kill(url.pid, signal.SIGHUP)
        assert _wait_for_log(url, "web config not reloaded, keeping the previous one")
        assert get(url + "/-/healthy", _basic("alice", "new"))[0] == 200
    assert not any("Traceback" in line for line in url.log)


def test_a_web_config_note_is_logged_once_not_again_on_reload(tmp_path: Path) -> None:
    config = tmp_path / "web-config.yml"
    note = f"{config}: http_server_config.http2: ignored: hwinfo serves HTTP/1.1 only"

    def write(password: bytes) -> None:
        _auth_config(config, password)
        with config.open("a") as out:
            out.write("http_server_config:\n  http2: true\n")  # accepted, not applied: a note

    write(b"old")
    with serving("--simulate", "cloud-t4", "--web-config", str(config), ready=False) as url:
        deadline = time.monotonic() + 60
        while get(url + "/-/healthy", _basic("alice", "old"))[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert sum(note in line for line in url.log) == 1
        for reloads, password in enumerate((b"new", b"newer"), 1):  # the note still in the file
            write(password)
            os.kill(url.pid, signal.SIGHUP)
            deadline = time.monotonic() + 60
            while sum("web config reloaded" in line for line in url.log) < reloads:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert get(url + "/-/healthy", _basic("alice", password.decode()))[0] == 200
        assert sum(note in line for line in url.log) == 1


def test_sighup_without_a_web_config_is_harmless() -> None:
    with serving("--simulate", "cloud-t4") as url:
        os.kill(url.pid, signal.SIGHUP)
        assert _wait_for_log(url, "no web config to reload")
        assert get(url + "/-/healthy")[0] == 200


def _slow_reader(port: int) -> socket.socket:
    """Pipelines /metrics with a 4 KiB receive buffer and never reads."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(60)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 200)
    return sock


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stop_signals_end_the_daemon_at_once_whatever_clients_and_nvml_do(
    tmp_path: Path, signum: int
) -> None:
    # What the daemon is busy with when the signal comes would each hold it for minutes if
    # it waited: a sampler waiting 5 minutes on a 10-minute NVML call, and a flood that goes
    # on until the daemon has ended. So ending within a generous deadline means it waited for
    # none of them. (The slow readers' 10 s write timeout is shorter: test_http.py's
    # test_slow_readers_hold_no_worker shows shutdown() does not wait for it; how soon the
    # daemon ends under attack is measured by bench/auth_flood.py.)
    doc = scenario("cloud-t4")
    doc["faults"] = [{"call": "nvmlDeviceGetPowerUsage", "delay_seconds": 600, "after_samples": 1}]
    hang = tmp_path / "hang.json"
    hang.write_text(json.dumps(doc))
    config = tmp_path / "web-config.yml"
    _auth_config(config, b"secret")
    stop = threading.Event()
    readers: list[socket.socket] = []
    answered = threading.Semaphore(0)

    def flood(port: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            for attempt in range(2000):
                if stop.is_set():
                    return
                connection.request("GET", "/metrics", headers=_basic("alice", f"x{attempt}"))
                connection.getresponse().read()
                answered.release()
        except OSError:
            return  # the daemon went away under us: what the test wants
        finally:
            connection.close()

    with serving("--simulate", str(hang), "--web-config", str(config), "--interval", "0.3",
                 "--nvml-timeout", "300", ready=False) as url:
        port = int(url.rsplit(":", 1)[1])
        # The second sample's NVML call hangs; the sampler waits on it.
        deadline = time.monotonic() + 60
        while not nvml_hangs(url.pid):
            assert time.monotonic() < deadline, "the simulated NVML call never hung"
            time.sleep(0.05)
        readers = [_slow_reader(port) for _ in range(10)]
        flooders = [threading.Thread(target=flood, args=(port,)) for _ in range(16)]
        for thread in flooders:
            thread.start()
        try:
            for sock in readers:  # each is being answered (until its buffers are full)
                assert sock.recv(1, socket.MSG_PEEK)
            for _ in flooders:  # the flood is under way
                assert answered.acquire(timeout=60)
            os.kill(url.pid, signum)
            url.proc.wait(timeout=60)
        finally:
            stop.set()
            for thread in flooders:
                thread.join(60)
            for sock in readers:
                sock.close()
    assert url.proc.returncode == 128 + signum  # as the README says: 143, 130
    assert not any("Traceback" in line for line in url.log)
