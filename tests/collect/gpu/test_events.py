from __future__ import annotations

import time
from collections.abc import Callable

from hwinfo.collect.gpu.collector import GpuCollector

from .conftest import collect_samples


def _xids(collector: GpuCollector, want: dict[int, set[int]], samples: int) -> dict[int, set[int]]:
    """Sample until the wanted XIDs were heard (events reach the listener's thread a bit later)."""
    deadline = time.monotonic() + 60
    seen: dict[int, set[int]] = {}
    system = collect_samples(collector, samples)[-1]
    while time.monotonic() < deadline:
        seen = {g.index: {e.xid for e in g.xid_errors} for g in system.gpus if g.xid_errors}
        if seen == want:
            break
        time.sleep(0.05)
        system = collector.collect()
    return seen


def test_xid_events_are_counted_per_gpu_and_code(simulate: Callable[..., GpuCollector]) -> None:
    collector = simulate("faults-demo", between_samples=True)
    # faults-demo: XID 13 on GPU 0 after 2 samples, XID 79 on GPU 2 after 3 (and it is lost).
    assert _xids(collector, {0: {13}, 2: {79}}, samples=4) == {0: {13}, 2: {79}}
    gpus = collector.collect().gpus
    (xid13,) = gpus[0].xid_errors
    assert xid13.count == 1 and abs(xid13.last_timestamp_seconds - time.time()) < 30
    assert gpus[2].lost and [e.xid for e in gpus[2].xid_errors] == [79]


def test_one_shot_collection_does_not_listen(simulate: Callable[..., GpuCollector]) -> None:
    collector = simulate("faults-demo")
    system = collect_samples(collector, 4)[-1]
    assert all(g.xid_errors == [] for g in system.gpus)
