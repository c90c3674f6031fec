"""Which devices a run gets: kind, memory, other users' processes, best fit, and the line."""

from __future__ import annotations

import pytest
from fixtures.simulated import simulated_system

from hwinfo.model.claims import Request
from hwinfo.placement import GPU, MIG_DEVICE
from hwinfo.run.choose import Asker, Device, choose, devices, hindrance, never, pick

GIB = 2**30


def gpu(n: int, free: float = 79, users: frozenset[str | None] = frozenset(),
        total: float = 79.4) -> Device:
    return Device(f"GPU-{n}", n, GPU, None, None, int(free * GIB), int(total * GIB), users)


def mig(n: int, index: int, profile: str, free: float, users: frozenset[str | None] = frozenset()
        ) -> Device:
    return Device(f"MIG-{n}-{index}", n, MIG_DEVICE, index, profile, int(free * GIB),
                  int(free * GIB), users)


def ask(gpus: int = 1, need: float | None = None, profile: str | None = None,
        share: bool = False, user: str = "ann") -> Asker:
    return Asker(Request(gpus, None if need is None else int(need * GIB), profile, share), user)


HOST = [gpu(0, 79), gpu(1, 40), gpu(2, 79, frozenset({"bob"})), gpu(3, 60, frozenset({"ann"})),
        mig(4, 0, "1g.10gb", 9.5), mig(4, 1, "3g.40gb", 39.5), mig(4, 2, "1g.10gb", 9.5,
                                                                   frozenset({None}))]


def uuids(got: list[Device] | None) -> list[str] | None:
    return None if got is None else [d.uuid for d in got]


@pytest.mark.parametrize(("asker", "expected"), [
    # Any GPU: whole ones only, the smallest free first; bob's is not ann's to take, her own is.
    (ask(), ["GPU-1"]),
    (ask(4), None),
    (ask(3), ["GPU-1", "GPU-3", "GPU-0"]),
    # A size, one device: MIG devices too, the smallest that takes it (not one with a process
    # whose owner is unknown).
    (ask(need=9), ["MIG-4-0"]),
    (ask(need=39), ["MIG-4-1"]),
    (ask(need=41), ["GPU-3"]),
    # Two devices with a size: whole GPUs only (CUDA shows a process one MIG device).
    (ask(2, need=9), ["GPU-1", "GPU-3"]),
    # A profile: its devices only.
    (ask(profile="3g.40gb"), ["MIG-4-1"]),
    (ask(profile="3g.40gb", need=40), None),
    # Sharing: bob's GPU and the device of an unknown owner are fine.
    (ask(need=70, share=True), ["GPU-0"]),
    (ask(2, need=70, share=True), ["GPU-0", "GPU-2"]),
    (ask(profile="1g.10gb", share=True), ["MIG-4-0"]),
])
def test_the_best_fit_of_the_kind_asked_for(asker: Asker, expected: list[str] | None) -> None:
    assert uuids(pick(HOST, asker)) == expected


def test_a_claimed_device_is_never_handed_out() -> None:
    assert uuids(choose(HOST, {"GPU-1", "GPU-3"}, [], ask())) == ["GPU-0"]
    assert uuids(choose(HOST, {"GPU-0", "GPU-1", "GPU-3"}, [], ask(share=True))) == ["GPU-2"]
    assert choose(HOST, {"GPU-0", "GPU-1", "GPU-3"}, [], ask()) is None


def test_those_ahead_are_served_first_and_a_large_request_is_not_starved() -> None:
    claimed = {"GPU-0", "GPU-3"}  # GPU 1 is the one whole GPU ann may have
    # carol, ahead, takes GPU 1 now: nothing for ann.
    assert choose(HOST, claimed, [ask(user="carol")], ask()) is None
    # dave, ahead, needs 2 and only one is free: he keeps it, so ann does not get it...
    assert choose(HOST, claimed, [ask(2, user="dave")], ask()) is None
    # ...but a MIG device he does not want passes to her.
    assert uuids(choose(HOST, claimed, [ask(2, user="dave")], ask(profile="1g.10gb"))) == \
        ["MIG-4-0"]
    # A ticket asking for what this host can never give holds nothing back.
    assert uuids(choose(HOST, claimed, [ask(9, user="mallory")], ask())) == ["GPU-1"]
    # Someone ahead waiting for a 3g.40gb holds no 1g.10gb back.
    assert uuids(choose(HOST, claimed | {"MIG-4-1"}, [ask(profile="3g.40gb", user="erin")],
                        ask(profile="1g.10gb"))) == ["MIG-4-0"]


def test_what_can_never_fit_here_is_said_at_once() -> None:
    assert never(HOST, ask(4).request) is None  # 4 whole GPUs exist, busy or not
    assert never(HOST, ask(5).request) == (
        "this host has 4 GPUs not in MIG mode, not 5 (--mig-profile NAME asks for a MIG device)")
    assert never(HOST, ask(need=80).request) == \
        "this host has 0 GPUs or MIG devices with 80.0 GiB or more, not 1"
    assert never(HOST, ask(profile="7g.80gb").request) == (
        "this host has 0 MIG devices of profile 7g.80gb, not 1 (profiles here: 1g.10gb, 3g.40gb)")


def test_what_keeps_a_waiter_waiting_is_said() -> None:
    assert hindrance(HOST, {"GPU-0", "GPU-1", "GPU-3"}, ask()) == \
        "3 of the 3 that fit are claimed"
    assert hindrance(HOST, set(), ask(2, need=70)) == (
        "1 fit now; the others are short of free memory or hold other users' processes")
    assert hindrance(HOST, {"GPU-1"}, ask(user="carol")) == (
        "1 of the 2 that fit are claimed; the rest wait for those ahead")


def test_devices_of_a_simulated_dgx_a100_in_mig_mode() -> None:
    """The devices as the real pynvml reads them on the simulator: GPUs in MIG mode offer their
    MIG devices, the others themselves; free memory is net of what is used (and reserved)."""
    system = simulated_system("dgx-a100-mig")
    found = devices(system)
    for g in system.gpus:
        mine = [d for d in found if d.gpu == g.index]
        if g.mig is not None and g.mig.enabled:
            assert [d.uuid for d in mine] == [m.uuid for m in g.mig.devices]
            for d, m in zip(mine, g.mig.devices):
                assert (d.kind, d.profile, d.memory_free_bytes) == (
                    MIG_DEVICE, m.profile, m.memory_total_bytes - m.memory_used_bytes)
                assert d.users == {p.user for p in m.processes}
        else:
            (d,) = mine
            assert (d.kind, d.uuid, d.memory_free_bytes, d.memory_total_bytes) == (
                GPU, g.uuid, g.memory_free_bytes, g.memory_total_bytes - g.memory_reserved_bytes)
