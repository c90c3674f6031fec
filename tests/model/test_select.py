"""`--gpu`: GPUs by index, UUID or PCI bus id, as nvidia-smi -i takes them."""

from __future__ import annotations

import re

import pytest
from fixtures.simulated import simulated_snapshot

from hwinfo.model.select import SelectionError, parse_selectors, select_gpus
from hwinfo.model.snapshot import Snapshot


@pytest.fixture(scope="module")
def dgx() -> Snapshot:
    return simulated_snapshot("dgx-a100-mig")


def test_index_uuid_and_bus_id_forms(dgx: Snapshot) -> None:
    gpus = dgx.gpu.gpus
    bus = gpus[5].pci_bus_id  # "00000000:XX:00.0"
    selectors = parse_selectors(["0", f"{gpus[3].uuid.lower()},{bus[4:]}", bus[9:]])
    kept = select_gpus(dgx, selectors).gpu
    assert [g.index for g in kept.gpus] == [0, 3, 5]
    assert {u.gpu_index for u in kept.users} <= {0, 3, 5}
    assert any(u.gpu_index == 5 for u in kept.users)


@pytest.mark.parametrize("value, message", [
    ("9", "--gpu 9: no such GPU (indices: 0, 1, 2, 3, 4, 5, 6, 7)"),
    ("GPU-00000000-0000-0000-0000-000000000000", "no such GPU"),
    ("0000:ff:1f.7", "no such GPU"),
])
def test_unknown_gpu_is_one_line(dgx: Snapshot, value: str, message: str) -> None:
    with pytest.raises(SelectionError, match=re.escape(message)):
        select_gpus(dgx, parse_selectors([value]))


@pytest.mark.parametrize("value", ["", "0,", "gpu zero", "-1", "MIG-abc"])
def test_malformed_selector(value: str) -> None:
    with pytest.raises(SelectionError, match="--gpu"):
        parse_selectors([value])


def test_the_claims_on_the_selected_gpus_are_kept(dgx: Snapshot) -> None:
    import dataclasses

    from hwinfo.model.claims import Claim, Claims, Request

    asked = Request(1, None, None, False)
    mig = dgx.gpu.gpus[0].mig.devices[2].uuid
    on = [Claim([dgx.gpu.gpus[7].uuid], "ann", 1, 2, 3.0, "a", None, asked),
          Claim([mig], "bo", 1, 2, 3.0, "b", None, asked),
          Claim([dgx.gpu.gpus[6].uuid], "cy", 1, 2, 3.0, "c", None, asked)]
    claimed = dataclasses.replace(dgx, claims=Claims("/run/hwinfo/claims", True, on))
    kept = select_gpus(claimed, parse_selectors(["0,7"])).claims
    assert kept is not None and [c.user for c in kept.claims] == ["ann", "bo"]
