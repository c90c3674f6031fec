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
        (["alertname=HwinfoGpuLost", "gpu=0"], "admins"),
    ],
)
def test_routes(labels: list[str], receiver: str) -> None:
    output = amtool("config", "routes", "test", f"--config.file={CONFIG}", *labels)
    assert output.split() == [receiver]
