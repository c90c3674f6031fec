"""MIG profile tables, GI id numbering, placements and capacity (facts §2-§3)."""

from __future__ import annotations

import pytest

from hwinfo.sim import mig_profiles as mp
from hwinfo.sim.boards import BOARDS

# facts §3: profile id -> memory MiB per board, and the profile names.
MEMORY = {
    "A100-SXM4-40GB": {19: 4864, 20: 4864, 15: 9856, 14: 9856, 9: 19968, 5: 19968, 0: 40192},
    "A100-SXM4-80GB": {19: 9856, 20: 9856, 15: 19968, 14: 19968, 9: 40192, 5: 40192, 0: 80384},
    "H100-SXM5-80GB": {19: 9984, 20: 9984, 15: 20096, 14: 20096, 9: 40448, 5: 40448, 0: 81152},
    "H100-NVL": {19: 11008, 20: 11008, 15: 22144, 14: 22144, 9: 47488, 5: 47488, 0: 95360},
    "H200-SXM-141GB": {19: 16384, 20: 16384, 15: 33024, 14: 33024, 9: 71168, 5: 71168, 0: 143104},
}
NAMES = {
    "A100-SXM4-40GB": [
        "1g.5gb",
        "1g.5gb+me",
        "1g.10gb",
        "2g.10gb",
        "3g.20gb",
        "4g.20gb",
        "7g.40gb",
    ],
    "H100-NVL": ["1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"],
}


def table(board: str) -> mp.MigTable:
    mig = BOARDS[board].mig
    assert mig is not None
    return mig


@pytest.mark.parametrize("board", sorted(MEMORY))
def test_profile_ids_indices_and_memory(board: str) -> None:
    t = table(board)
    assert {p.id: p.memory_mib for p in t.profiles} == MEMORY[board]
    # Profile info takes the NVML_GPU_INSTANCE_PROFILE_* index; every other call the id.
    index_to_id = {p.index: p.id for p in t.profiles}
    assert index_to_id == {0x0: 19, 0x7: 20, 0x9: 15, 0x1: 14, 0x2: 9, 0x3: 5, 0x4: 0}
    shapes = {
        p.id: (p.slice_count, p.memory_slices, p.instance_count, p.placement_starts)
        for p in t.profiles
    }
    assert shapes == {
        19: (1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
        20: (1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
        15: (1, 2, 4, (0, 2, 4, 6)),
        14: (2, 2, 3, (0, 2, 4)),
        9: (3, 4, 2, (0, 4)),
        5: (4, 4, 1, (0,)),
        0: (7, 8, 1, (0,)),
    }
    assert all(p.encoder_count == 0 for p in t.profiles)


@pytest.mark.parametrize("board", sorted(NAMES))
def test_profile_names(board: str) -> None:
    assert [p.name for p in table(board).profiles] == NAMES[board]


def test_engines_differ_between_ampere_and_hopper() -> None:
    a100 = table("A100-SXM4-80GB").by_name["3g.40gb"]
    h100 = table("H100-SXM5-80GB").by_name["3g.40gb"]
    assert (a100.multiprocessor_count, a100.copy_engine_count, a100.decoder_count) == (42, 3, 2)
    assert (h100.multiprocessor_count, h100.copy_engine_count, h100.decoder_count) == (60, 3, 3)
    assert table("H100-SXM5-80GB").by_name["7g.80gb"].copy_engine_count == 8
    assert table("A100-SXM4-40GB").by_name["1g.5gb+me"].ofa_count == 1


@pytest.mark.parametrize(
    ("start", "size", "gi_id"),
    [
        (0, 8, 0),
        (0, 4, 1),
        (4, 4, 2),
        (0, 2, 3),
        (2, 2, 4),
        (4, 2, 5),
        (6, 2, 6),
        (0, 1, 7),
        (6, 1, 13),
    ],
)
def test_default_gpu_instance_ids_follow_observed_numbering(
    start: int, size: int, gi_id: int
) -> None:
    assert mp.default_gpu_instance_id(start, size) == gi_id


def test_h100_nvl_1g24gb_at_slot_4_is_gi_5() -> None:
    # facts §2: an H100 NVL walkthrough created a 1g.24gb that got GI ID 5.
    profile = table("H100-NVL").by_name["1g.24gb"]
    assert mp.default_gpu_instance_id(4, profile.memory_slices) == 5


def _occupied(*placements: tuple[int, int]) -> int:
    mask = 0
    for start, size in placements:
        mask |= mp.placement_mask(start, size)
    return mask


@pytest.mark.parametrize(
    ("profile", "placements", "existing", "expected"),
    [
        ("1g.10gb", [], 0, 7),
        ("1g.10gb", [(4, 4)], 0, 4),  # a 3g in the upper half leaves slots 0-3
        ("2g.20gb", [(4, 4)], 0, 2),
        ("3g.40gb", [(4, 4)], 1, 1),
        ("4g.40gb", [(4, 4)], 0, 1),
        ("7g.80gb", [(4, 4)], 0, 0),
        ("1g.20gb", [(4, 4)], 0, 2),
        ("1g.20gb", [(6, 1)], 0, 3),  # a 1g at slot 6 blocks the 1g.20gb placement 6-7
        ("1g.10gb+me", [(0, 1)], 1, 0),  # only one +me instance per GPU
        ("1g.10gb", [(i, 1) for i in range(7)], 7, 0),  # all seven taken
    ],
)
def test_remaining_capacity(
    profile: str, placements: list[tuple[int, int]], existing: int, expected: int
) -> None:
    p = table("A100-SXM4-80GB").by_name[profile]
    got = mp.remaining_capacity(
        p.placement_starts, p.memory_slices, p.instance_count, existing, _occupied(*placements)
    )
    assert got == expected


def test_fit_placements_backtracks() -> None:
    one, four = (
        table("A100-SXM4-80GB").by_name["1g.10gb"],
        table("A100-SXM4-80GB").by_name["4g.40gb"],
    )
    wanted = [(one.placement_starts, 1, None), (four.placement_starts, 4, None)]
    assert mp.fit_placements(wanted) == [4, 0]  # greedy "first free" would put the 1g at 0
    assert (
        mp.fit_placements([(four.placement_starts, 4, 0), (four.placement_starts, 4, None)]) is None
    )
    assert mp.fit_placements([(one.placement_starts, 1, 3)]) == [3]


def test_compute_instance_profiles() -> None:
    t = table("A100-SXM4-80GB")
    three = {
        c.name: (c.index, c.slice_count, c.instance_count, c.multiprocessor_count)
        for c in t.ci_profiles[9]
    }
    assert three == {
        "1c.3g.40gb": (0, 1, 3, 14),
        "2c.3g.40gb": (1, 2, 1, 28),
        "3g.40gb": (2, 3, 1, 42),
    }
    seven = {c.slice_count: c.instance_count for c in t.ci_profiles[0]}
    assert seven == {1: 7, 2: 3, 3: 2, 4: 1, 7: 1}
    assert [c.name for c in t.ci_profiles[19]] == ["1g.10gb"]


def test_hopper_double_memory_1g_uses_ci_profile_rev1() -> None:
    # facts §2: on H100 the 1g.20gb CI uses ID 7 (COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1).
    (ci,) = table("H100-SXM5-80GB").ci_profiles[15]
    assert (ci.index, ci.multiprocessor_count, ci.name) == (7, 26, "1g.20gb")
    (a100_ci,) = table("A100-SXM4-80GB").ci_profiles[15]
    assert a100_ci.index == 0
