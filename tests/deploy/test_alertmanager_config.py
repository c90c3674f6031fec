"""The example Alertmanager configuration: valid for Alertmanager's own amtool, and routing the
ledger's idle-holder alert to the user who holds the GPU."""

from __future__ import annotations

import subprocess

import pytest
from conftest import require_tool

from tests.deploy.artifacts import REPO

CONFIG = REPO / "prometheus" / "alertmanager.yml"


def amtool(*args: str) -> str:
    result = subprocess.run(
        [require_tool("amtool"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"amtool {' '.join(args)} failed:\n{result.stdout}{result.stderr}"
    return result.stdout


def test_amtool_accepts_the_configuration() -> None:
    assert "SUCCESS" in amtool("check-config", str(CONFIG))


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        (["alertname=HwinfoGpuIdleHeld", "user=bob"], "gpu-holder"),
        # erin asked for chat: her own route, before the mail route.
        (["alertname=HwinfoGpuIdleHeld", "user=erin"], "erin-chat"),
        (["alertname=HwinfoGpuLost", "user=erin"], "admins"),
        # Without a user there is nobody to tell but the admins.
        (["alertname=HwinfoGpuIdleHeld"], "admins"),
        # Holders that are not people: containers and pods charged for root's processes,
        # root, an owner hwinfo could not read, a UID without a name (as hwinfo names them).
        *((["alertname=HwinfoGpuIdleHeld", f"user={holder}", *labels], "admins")
          for holder, labels in [
              ("docker:95ea86131114", ["container_id=95ea86131114" + "0" * 52]),
              ("podman:3f1c2a9d0b7e", []),
              ("containerd:7d2f4c1b9e0a", []),
              ("cri-o:0a1b2c3d4e5f", []),
              ("pod:0125ec2f-7e4b-4a9c-8d3e-55a1b2c3d4e5",
               ["pod_uid=0125ec2f-7e4b-4a9c-8d3e-55a1b2c3d4e5"]),
              ("root", []), ("(unknown)", []), ("nobody", []), ("1234", []),
          ]),
        # A person in a Slurm job is still that person; a name that only starts like root's.
        (["alertname=HwinfoGpuIdleHeld", "user=carol", "slurm_job=4242"], "gpu-holder"),
        (["alertname=HwinfoGpuIdleHeld", "user=rootkit-lab"], "gpu-holder"),
        (["alertname=HwinfoGpuLost", "gpu=0"], "admins"),
    ],
)
def test_routes(labels: list[str], receiver: str) -> None:
    output = amtool("config", "routes", "test", f"--config.file={CONFIG}", *labels)
    assert output.split() == [receiver]
