"""fleet --need-memory's queries (hwinfo/ledger/fits.py) evaluated by Prometheus's own
engine (promtool), on facts an HA pair holds twice: each with a `replica` label."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwinfo.ledger.fits import MODELS, fit_queries
from tests.deploy.promql import Expect, assert_answers

GIB = 2**30
HOST = 'job="hwinfo", instance="a:9110"'


def series(name: str, labels: str, value: float, replica: str = "A") -> dict[str, str]:
    return {"series": f'{name}{{{HOST}, {labels}, replica="{replica}"}}', "values": f"{value:.0f}x5"}


def both(name: str, labels: str, a: float, b: float) -> list[dict[str, str]]:
    return [series(name, labels, a, "A"), series(name, labels, b, "B")]


FACTS = [
    # GPU 0: one replica sees a process on it: busy, as the listing says.
    *both("hwinfo_gpu_memory_free_bytes", 'gpu="0"', 80 * GIB, 80 * GIB),
    *both("hwinfo_gpu_processes", 'gpu="0"', 0, 2),
    # GPU 1: free on both, 70 and 60 GiB free: one place of the larger, as the listing.
    *both("hwinfo_gpu_memory_free_bytes", 'gpu="1"', 70 * GIB, 60 * GIB),
    *both("hwinfo_gpu_processes", 'gpu="1"', 0, 0),
    # GPU 2: free but too small.
    series("hwinfo_gpu_memory_free_bytes", 'gpu="2"', 30 * GIB),
    series("hwinfo_gpu_processes", 'gpu="2"', 0),
    # GPU 3 in MIG mode: GPU instance 1 busy on one replica, 2 idle; 7g.80gb has no free
    # instance, 4g.40gb one on a replica.
    *[series("hwinfo_mig_device_info", f'gpu="3", gpu_instance_id="{gi}", compute_instance_id="0", '
             f'profile="{profile}", mig_uuid="MIG-{gi}"', 1, replica)
      for gi, profile in ((1, "3g.40gb"), (2, "4g.40gb")) for replica in "AB"],
    *both("hwinfo_mig_device_processes", 'gpu="3", gpu_instance_id="1", compute_instance_id="0"', 0, 1),
    *both("hwinfo_mig_device_processes", 'gpu="3", gpu_instance_id="2", compute_instance_id="0"', 0, 0),
    *[series("hwinfo_mig_gpu_instance_memory_total_bytes",
             f'gpu="3", gpu_instance_id="{gi}", profile="{profile}"', 40.5 * GIB, replica)
      for gi, profile in ((1, "3g.40gb"), (2, "4g.40gb")) for replica in "AB"],
    *both("hwinfo_mig_profile_memory_bytes", 'gpu="3", profile="7g.80gb"', 80 * GIB, 80 * GIB),
    *both("hwinfo_mig_profile_free_instances", 'gpu="3", profile="7g.80gb"', 0, 0),
    *both("hwinfo_mig_profile_memory_bytes", 'gpu="3", profile="4g.40gb"', 40.5 * GIB, 40.5 * GIB),
    *both("hwinfo_mig_profile_free_instances", 'gpu="3", profile="4g.40gb"', 1, 0),
    # GPU 4: free and large, but `hwinfo run` claims it for ana (seen by one replica): not
    # offered. So is GPU 3's idle GPU instance 6, claimed for bo.
    *both("hwinfo_gpu_memory_free_bytes", 'gpu="4"', 50 * GIB, 50 * GIB),
    *both("hwinfo_gpu_processes", 'gpu="4"', 0, 0),
    series("hwinfo_gpu_claim_info", 'gpu="4", user="ana"', 1),
    *both("hwinfo_mig_device_info", 'gpu="3", gpu_instance_id="6", compute_instance_id="0", '
          'profile="4g.40gb", mig_uuid="MIG-6"', 1, 1),
    *both("hwinfo_mig_device_processes", 'gpu="3", gpu_instance_id="6", compute_instance_id="0"', 0, 0),
    *both("hwinfo_mig_gpu_instance_memory_total_bytes", 'gpu="3", gpu_instance_id="6", '
          'profile="4g.40gb"', 40.5 * GIB, 40.5 * GIB),
    series("hwinfo_gpu_claim_info", 'gpu="3", gpu_instance_id="6", compute_instance_id="0", '
           'user="bo"', 1, "B"),
]


WHOLE_1 = (f'{{{HOST}, gpu="1", kind="gpu"}}', 70 * GIB)
WHOLE_2 = (f'{{{HOST}, gpu="2", kind="gpu"}}', 30 * GIB)
MIG_DEVICE_2 = ((f'{{{HOST}, gpu="3", gpu_instance_id="2", compute_instance_id="0", '
                 f'profile="4g.40gb", mig_uuid="MIG-2", kind="mig_device"}}'), 40.5 * GIB)
MIG_PROFILE_4G = (f'{{{HOST}, gpu="3", profile="4g.40gb", kind="mig_profile"}}', 40.5 * GIB)


@pytest.mark.parametrize(("need", "whole", "mig"), [
    (40 * GIB, [WHOLE_1], [MIG_DEVICE_2, MIG_PROFILE_4G]),
    # Smaller: GPU 2's 30 GiB too. Larger than any: nothing.
    (20 * GIB, [WHOLE_1, WHOLE_2], [MIG_DEVICE_2, MIG_PROFILE_4G]),
    (75 * GIB, [], []),
], ids=["40GiB", "20GiB", "75GiB"])
def test_the_engine_offers_each_place_of_that_size_once_never_a_busy_copy_or_a_claimed_one(
    tmp_path: Path, need: int, whole: list[tuple[str, float]], mig: list[tuple[str, float]]
) -> None:
    expected: list[Expect] = list(zip(fit_queries(need), [whole, mig]))
    assert_answers(tmp_path, FACTS, "2m", expected)


def test_each_gpu_is_named_once_whatever_else_its_info_carries(tmp_path: Path) -> None:
    info = [series("hwinfo_gpu_info", f'gpu="{gpu}", uuid="GPU-{gpu}", name="NVIDIA A100-SXM4-80GB", '
                   f'driver_version="550.54.15"', 1, replica)
            for gpu in "01" for replica in "AB"]
    assert_answers(tmp_path, info, "2m", [(MODELS, [
        (f'{{{HOST}, gpu="{gpu}", uuid="GPU-{gpu}", name="NVIDIA A100-SXM4-80GB"}}', 1)
        for gpu in "01"])])
