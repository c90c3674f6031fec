"""The claim series: one per claimed device of the host, whatever the claims directory holds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hwinfo.collect.claims import take_lock
from hwinfo.model.claims import Request
from hwinfo.run.claimdir import Directory
from tests.exporter.activity import parsed
from tests.run.host import nameless_uid

ASKED = Request(1, None, None, False)


def _export(claims: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "hwinfo", "export", "--simulate", "dgx-a100-mig",
                           "--textfile", "-"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HWINFO_CLAIMS_DIR": str(claims)}, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _uuids() -> dict[str, tuple[str, str, str]]:
    """Device UUID -> (gpu, gpu_instance_id, compute_instance_id) of the scenario."""
    done = subprocess.run([sys.executable, "-m", "hwinfo", "report", "--simulate", "dgx-a100-mig",
                           "--format", "json"], capture_output=True, text=True, timeout=120,
                          check=True)
    found = {}
    for gpu in json.loads(done.stdout)["gpu"]["gpus"]:
        found[gpu["uuid"]] = (str(gpu["index"]), "", "")
        for dev in (gpu["mig"] or {}).get("devices", []):
            found[dev["uuid"]] = (str(gpu["index"]), str(dev["gpu_instance_id"]),
                                  str(dev["compute_instance_id"]))
    return found


def test_each_claimed_device_is_one_series_and_strangers_none(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    claims.mkdir(mode=0o1777)
    devices = _uuids()
    whole = _parent(devices, "7")  # not in MIG mode
    mig = next(u for u in devices if u.startswith("MIG-"))
    directory = Directory(str(claims))
    held = [directory.add(".claim", ASKED, ["python", "a.py"], [whole]),
            directory.add(".claim", ASKED, ["python", "b.py"],
                          [mig, "GPU-00000000-0000-0000-0000-00000000dead"]),
            directory.add(".wait", ASKED, ["python", "c.py"], sequence=1)]
    (claims / "junk").write_text("x")
    try:
        text = _export(claims)
    finally:
        for entry in held:
            entry.release()
        directory.close()
    gpu, gi, ci = devices[mig]
    assert parsed(text, "hwinfo_gpu_claim_info") == {
        _labels(gpu="7", uuid=whole, gpu_instance_id="", compute_instance_id="", user="root"): 1,
        _labels(gpu=gpu, uuid=_parent(devices, gpu), gpu_instance_id=gi, compute_instance_id=ci,
                user="root"): 1}
    assert len(re.findall(r"^hwinfo_gpu_claim_start_timestamp_seconds\{", text, re.MULTILINE)) == 2
    assert re.search(r"^hwinfo_claim_waiters 1\.0$", text, re.MULTILINE)
    assert re.search(r"^hwinfo_claim_ignored_entries 1\.0$", text, re.MULTILINE)


def _labels(**labels: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def _parent(devices: dict[str, tuple[str, str, str]], gpu: str) -> str:
    return next(u for u, (g, gi, _) in devices.items() if g == gpu and not gi)


def test_a_claim_of_a_uid_without_a_name_is_labelled_with_the_number(tmp_path: Path) -> None:
    """As that uid's processes are (ps's way): its idle claim was charged to `(unknown)`, not
    to the user its processes' GPU time goes to."""
    claims = tmp_path / "claims"
    claims.mkdir(mode=0o1777)
    uid = nameless_uid()
    whole = _parent(_uuids(), "7")
    path = claims / f"{uid}.4242.0123456789abcdef.claim"
    path.write_text(json.dumps({"devices": [whole], "command": ["python"], "sequence": 1,
                                "request": {"gpus": 1, "need_memory_bytes": None,
                                            "mig_profile": None, "share": False}}))
    path.chmod(0o644)
    os.chown(path, uid, -1)
    fd = os.open(path, os.O_RDWR)
    try:
        take_lock(fd)  # alive, as its hwinfo run would keep it
        text = _export(claims)
    finally:
        os.close(fd)
    assert parsed(text, "hwinfo_gpu_claim_info") == {
        _labels(gpu="7", uuid=whole, gpu_instance_id="", compute_instance_id="", user=str(uid)): 1}


def test_a_host_without_claims_serves_no_claim_series(tmp_path: Path) -> None:
    text = _export(tmp_path / "absent")
    assert "hwinfo_gpu_claim_info{" not in text and "\nhwinfo_claim_waiters " not in text
