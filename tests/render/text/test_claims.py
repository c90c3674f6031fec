"""The claims section: devices by their report names, who, since when, what; the line; refusals."""

from __future__ import annotations

import time

from fixtures.simulated import simulated_system

from hwinfo.model.claims import Claim, Claims, Request, Waiter
from hwinfo.render.text.claims import render_claims
from hwinfo.render.text.style import Style

SINCE = 1_790_000_000.0


def test_claims_and_the_line_read_as_the_report_names_devices() -> None:
    system = simulated_system("dgx-a100-mig")
    whole = [g for g in system.gpus if g.mig is None or not g.mig.enabled]
    mig_gpu = next(g for g in system.gpus if g.mig is not None and g.mig.enabled)
    device = mig_gpu.mig.devices[1]
    claims = Claims("/run/hwinfo/claims", True, [
        Claim([g.uuid for g in whole], "alice", 1001, 40, SINCE, "torchrun", None,
              Request(2, None, None, False)),
        Claim([device.uuid], None, 4242, 41, SINCE + 60, "python",
              "python serve.py --token 'x y'", Request(1, None, "1g.10gb", False)),
        Claim(["GPU-not-here"], "bob", 1002, 42, SINCE, "sleep", None, Request(1, None, None, True)),
    ], [
        Waiter(1, "carol", 1003, 50, SINCE + 3000, "python", None,
               Request(1, 40 * 2**30, None, False)),
        Waiter(2, "dave", 1004, 51, SINCE + 3540, "python", None,
               Request(1, None, "3g.40gb", True)),
    ], ["/run/hwinfo/claims/junk: not a claim's name; ignored"])
    text = render_claims(claims, system, Style(), now=SINCE + 3600)
    day = time.strftime("%Y-%m-%d %H:%M", time.localtime(SINCE))
    later = time.strftime("%Y-%m-%d %H:%M", time.localtime(SINCE + 60))
    indices = ",".join(str(g.index) for g in whole)
    mig_name = f"GPU {mig_gpu.index} MIG {device.index} ({device.profile})"
    rows = [line.split("  ") for line in text.splitlines()]
    assert [[cell.strip() for cell in row if cell.strip()] for row in rows] == [
        ["Claims (hwinfo run)"],
        ["Device", "User", "Since", "Command"],
        [f"GPU {indices}", "alice", f"{day} (1 h 0 min)", "torchrun"],
        [mig_name, "uid 4242", f"{later} (59 min)", "python serve.py --token 'x y'"],
        ["GPU-not-here", "bob", f"{day} (1 h 0 min)", "sleep"],
        ["Waiting", "1. carol: 1 GPU with 40.0 GiB free, 10 min ·"],
        ["2. dave: 1 MIG device 3g.40gb, shared, 1 min"],
        ["/run/hwinfo/claims/junk: not a claim's name; ignored"],
    ]


def test_no_claims_no_section() -> None:
    assert render_claims(None, None, Style(), now=SINCE) == ""
    assert render_claims(Claims("/run/hwinfo/claims", False), None, Style(), now=SINCE) == ""
