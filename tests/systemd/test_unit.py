"""systemd/hwinfo.service and hwinfo-export.service (with its timer) as systemd itself reads
them: valid, hardened to the target, and still open where NVML and process attribution need
it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, require_tool

from hwinfo.cli import main

SYSTEMD = REPO / "systemd"
UNIT = SYSTEMD / "hwinfo.service"
EXPORT = SYSTEMD / "hwinfo-export.service"
TIMER = SYSTEMD / "hwinfo-export.timer"
SERVICES = [UNIT, EXPORT]
# Debian's prometheus-node-exporter reads this directory (its --collector.textfile.directory).
TEXTFILE_DIRECTORY = "/var/lib/prometheus/node-exporter"
DEFAULTS = SYSTEMD / "hwinfo.default"
SYSUSERS = SYSTEMD / "hwinfo.sysusers"

INSTALLED_HWINFO = "/opt/hwinfo/venv/bin/hwinfo"
# The exposure `systemd-analyze security` may give the unit at most (0 safe .. 10 unsafe).
EXPOSURE_TARGET = 2.5


def directives(path: Path) -> list[tuple[str, str, str]]:
    """(section, key, value) of every assignment in a unit file, in order, comments skipped."""
    section = ""
    found = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        found.append((section, key.strip(), value.strip()))
    return found


def values(key: str, unit: Path = UNIT, section: str = "Service") -> list[str]:
    return [value for s, k, value in directives(unit) if s == section and k == key]


def systemd_analyze(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_tool("systemd-analyze"), *args],
        capture_output=True, text=True, timeout=60, check=False,
    )


def test_verify_is_clean(tmp_path: Path) -> None:
    # verify checks that ExecStart's binary exists, so point it at this environment's
    # `hwinfo`; every other line stays as shipped. The timer is verified with the service
    # it starts.
    hwinfo = Path(sys.executable).parent / "hwinfo"
    assert hwinfo.is_file(), f"{hwinfo}: the hwinfo console script (pip install -e .)"
    copies = []
    for unit in [*SERVICES, TIMER]:
        shipped = unit.read_text()
        assert shipped.count(INSTALLED_HWINFO) == (unit in SERVICES), unit.name
        copies.append(tmp_path / unit.name)
        copies[-1].write_text(shipped.replace(INSTALLED_HWINFO, str(hwinfo)))

    result = systemd_analyze("verify", *map(str, copies))

    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@pytest.mark.parametrize("unit", SERVICES, ids=lambda u: u.name)
def test_exposure_is_at_most_the_target(unit: Path) -> None:
    # --threshold is on a 0..100 scale; the printed level is that divided by 10.
    result = systemd_analyze(
        "security", "--offline=yes", f"--threshold={EXPOSURE_TARGET * 10:.0f}", str(unit)
    )

    level = re.search(rf"Overall exposure level for {re.escape(unit.name)}: (\d+\.\d+) (\w+)",
                      result.stdout)
    assert level, result.stdout + result.stderr
    assert float(level[1]) <= EXPOSURE_TARGET, level[0]
    assert result.returncode == 0, result.stdout + result.stderr


def security_checks(unit: Path = UNIT) -> dict[str, dict[str, object]]:
    result = systemd_analyze("security", "--offline=yes", "--json=short", str(unit))
    assert result.returncode == 0, result.stderr
    return {check["name"]: check for check in json.loads(result.stdout)}


# Every check `systemd-analyze security` may still count against the unit, and why the unit
# accepts it (its comments say more). Any other failing check is a weakening.
ACCEPTED_EXPOSURES = {
    "PrivateNetwork=": "it serves metrics on the network",
    "RestrictAddressFamilies=~AF_(INET|INET6)": "it listens on TCP",
    "RestrictAddressFamilies=~AF_UNIX": "journal and user-name lookups (nss, sssd, nscd)",
    "IPAddressDeny=": "scrapers' addresses are the site's to restrict, in the firewall",
    "PrivateDevices=": "a private /dev has no /dev/nvidia*; DeviceAllow= restricts instead",
    "DeviceAllow=": "the NVIDIA device groups NVML opens",
    "ProtectProc=": "other users' /proc/<pid> name the GPU processes' owners",
    "ProcSubset=": "/proc/driver/nvidia and the host's /proc files are read",
    "PrivateUsers=": "other users' UIDs would all read as nobody",
    "SupplementaryGroups=": "video, for drivers loaded with device files mode 0660",
    "MemoryDenyWriteExecute=": "libnvidia-ml is a closed binary that cannot be tested here",
    "RootDirectory=/RootImage=": "Python and libnvidia-ml come from the host",
}
# hwinfo-export.service has no network at all, and runs with root's user id (and no
# capability): Debian's textfile directory is root's, mode 0755.
ACCEPTED_EXPORT_EXPOSURES = {
    **{name: why for name, why in ACCEPTED_EXPOSURES.items()
       if name not in ("PrivateNetwork=", "RestrictAddressFamilies=~AF_(INET|INET6)",
                       "IPAddressDeny=")},
    "User=/DynamicUser=": "only root may write in Debian's /var/lib/prometheus/node-exporter",
}
ACCEPTED = {UNIT: ACCEPTED_EXPOSURES, EXPORT: ACCEPTED_EXPORT_EXPOSURES}


@pytest.mark.parametrize("unit", SERVICES, ids=lambda u: u.name)
def test_every_exposure_left_is_an_accepted_one(unit: Path) -> None:
    # "set" is None where a check does not apply (RemoveIPC= to root).
    exposed = {name for name, check in security_checks(unit).items() if check["set"] is False}

    assert exposed - ACCEPTED[unit].keys() == set()


@pytest.mark.parametrize("unit", SERVICES, ids=lambda u: u.name)
def test_nvidia_device_nodes_stay_reachable_and_only_they(unit: Path) -> None:
    # /dev/nvidiactl and /dev/nvidia0..N (major 195, listed as "nvidia-frontend" by older
    # drivers, as "nvidia" and "nvidiactl" by newer ones), /dev/nvidia-uvm, and
    # /dev/nvidia-caps/* for MIG; char-rtc comes from ProtectClock=. As systemd parsed them.
    assert values("DevicePolicy", unit) == ["closed"]
    description = str(security_checks(unit)["DeviceAllow="]["description"])
    allowed = set(description.rpartition(": ")[2].split())

    assert allowed == {
        "char-nvidia-frontend:rw",
        "char-nvidia:rw",
        "char-nvidiactl:rw",
        "char-nvidia-uvm:rw",
        "char-nvidia-caps:r",
        "char-rtc:r",
    }, description


@pytest.mark.parametrize(
    ("directive", "breaks"),
    [
        ("PrivateDevices", "a private /dev has no /dev/nvidia*"),
        ("ProtectProc", "hides other users' /proc/<pid>: GPU processes lose owner and command"),
        ("ProcSubset", "hides /proc/driver/nvidia, which NVML reads, and the host's /proc files"),
        ("PrivateUsers", "maps other users' UIDs to nobody: every GPU process belongs to nobody"),
    ],
)
@pytest.mark.parametrize("unit", SERVICES, ids=lambda u: u.name)
def test_no_directive_that_breaks_nvml_or_attribution(unit: Path, directive: str, breaks: str) -> None:
    assert values(directive, unit) == [], f"{directive}= {breaks}"


def test_runs_unprivileged_as_a_user_that_always_exists(tmp_path: Path) -> None:
    assert values("User") == ["hwinfo"]
    # If the static user from hwinfo.sysusers is missing, systemd allocates one of that
    # name: no status=217/USER.
    assert values("DynamicUser") == ["yes"]
    assert values("CapabilityBoundingSet") == [""]
    assert values("NoNewPrivileges") == ["yes"]

    # The shipped sysusers file creates exactly that user, with no login shell.
    (tmp_path / "etc").mkdir()
    result = subprocess.run(
        [require_tool("systemd-sysusers"), f"--root={tmp_path}", str(SYSUSERS)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    users = [line.split(":") for line in (tmp_path / "etc/passwd").read_text().splitlines()]
    assert [(u[0], u[5], u[6]) for u in users] == [("hwinfo", "/", "/usr/sbin/nologin")]


def test_options_come_from_the_defaults_file() -> None:
    assert values("EnvironmentFile") == ["-/etc/default/hwinfo"]
    assert values("ExecStart") == [f"{INSTALLED_HWINFO} serve $HWINFO_OPTS"]
    active = [line for line in DEFAULTS.read_text().splitlines() if line.startswith("HWINFO_OPTS=")]
    assert active == ['HWINFO_OPTS=""']


def test_examples_in_the_defaults_file_are_options_of_serve() -> None:
    examples = re.findall(r'^#HWINFO_OPTS="(.+)"$', DEFAULTS.read_text(), flags=re.MULTILINE)
    assert len(examples) >= 5
    for example in examples:
        # --help first: click still rejects unknown options and missing values while
        # parsing, but exits before converting values (--web-config's file need not exist).
        result = CliRunner().invoke(main, ["serve", "--help", *example.split()])
        assert result.exit_code == 0, f"{example}: {result.output}"


def test_export_writes_debian_s_textfile_directory_and_nothing_else() -> None:
    (command,) = values("ExecStart", EXPORT)
    argv = command.split()
    assert argv[:2] == [INSTALLED_HWINFO, "export"]
    textfile = Path(argv[argv.index("--textfile") + 1])
    assert (str(textfile.parent), textfile.suffix) == (TEXTFILE_DIRECTORY, ".prom")
    assert values("ProtectSystem", EXPORT) == ["strict"]
    assert values("ReadWritePaths", EXPORT) == [TEXTFILE_DIRECTORY]
    assert values("CapabilityBoundingSet", EXPORT) == [""]
    assert values("NoNewPrivileges", EXPORT) == ["yes"]
    assert values("PrivateNetwork", EXPORT) == ["yes"]
    # The options as written are `hwinfo export`'s (--help: no file is touched).
    result = CliRunner().invoke(main, [*argv[1:2], "--help", *argv[2:]])
    assert result.exit_code == 0, result.output


def test_the_timer_keeps_the_textfile_fresh_enough_for_the_ledger() -> None:
    """The ledger's rules take GPU data older than 60 s as unseen: a file rewritten every
    OnUnitActiveSec, within AccuracySec, and scraped every scrape_interval must stay younger."""
    import yaml

    def seconds(value: str) -> float:
        number, unit = re.fullmatch(r"(\d+)(s|min)", value).groups()  # type: ignore[union-attr]
        return float(number) * (60 if unit == "min" else 1)

    assert values("Unit", TIMER, "Timer") in ([], [EXPORT.name])
    every = seconds(values("OnUnitActiveSec", TIMER, "Timer")[0])
    accuracy = seconds(values("AccuracySec", TIMER, "Timer")[0])
    scrape = yaml.safe_load((REPO / "prometheus" / "prometheus.yml").read_text())["global"]
    ledger = (REPO / "prometheus" / "hwinfo-ledger.yml").read_text()
    (stale_after,) = set(re.findall(r"time\(\) - hwinfo_last_success_timestamp_seconds\S* > (\d+)",
                                    ledger))
    assert every + accuracy + seconds(scrape["scrape_interval"]) < float(stale_after)
    assert values("WantedBy", TIMER, "Install") == ["timers.target"]
