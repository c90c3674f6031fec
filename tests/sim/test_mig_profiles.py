"""MIG profile tables, GI id numbering, placements and capacity, each as a cited listing (the
MIG User Guide, https://docs.nvidia.com/datacenter/tesla/mig-user-guide/, and real `-lgip`
listings) has it, checked by hand through the real pynvml on the simulator."""

from __future__ import annotations

import ctypes
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from typing import Any

import pynvml as N
import pytest
from conftest import CAPTURES, require_captures

import hwinfo.sim
from hwinfo.mig import profiles as mp
from hwinfo.sim.boards import BOARDS
from hwinfo.sim.scenario import parse_scenario

# Profile id -> memory MiB per board, and the profile names, as `nvidia-smi mig -lgip` lists
# them (GiB x 1024): the User Guide's tables, NVIDIA's go-nvml A100 mock, gpu-operator #903
# (H100 NVL), mig-parted #120 (H200, R550).
MEMORY = {
    "A100-SXM4-40GB": {19: 4864, 20: 4864, 15: 9856, 14: 9856, 9: 19968, 5: 19968, 0: 40192},
    "A100-SXM4-80GB": {19: 9856, 20: 9856, 15: 19968, 14: 19968, 9: 40192, 5: 40192, 0: 80384},
    "H100-SXM5-80GB": {19: 9984, 20: 9984, 15: 20096, 14: 20096, 9: 40448, 5: 40448, 0: 81152},
    "H100-NVL": {19: 11008, 20: 11008, 15: 22144, 14: 22144, 9: 47488, 5: 47488, 0: 95360},
    # 2g and 3g as a real H200 on 590 shows them, 1g.35gb and 4g as their twins of the same
    # memory slices; R550's: see H200_SIZES below.
    "H200-SXM-141GB": {19: 16384, 20: 16384, 15: 33280, 14: 33280, 9: 71424, 5: 71424, 0: 143104},
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


@pytest.fixture
def simulate_gpu() -> Iterator[Callable[[str, str], Any]]:
    """A one-GPU machine with MIG on, on this driver, through the real pynvml: its handle."""
    installed = 0

    def make(board: str, driver: str) -> Any:
        nonlocal installed
        data = {
            "format": 1,
            "driver": {"version": driver},
            "gpus": [{"board": board, "mig": {"enabled": True}}],
        }
        hwinfo.sim.install(parse_scenario(data, "t.json", "t"))
        installed += 1
        N.nvmlInit()
        return N.nvmlDeviceGetHandleByIndex(0)

    yield make
    for _ in range(installed):
        hwinfo.sim.uninstall()


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
    # A real H100 NVL's `nvidia-smi mig -cgi 15,15,15 -C` made its first 1g.24gb GI ID 5.
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
    # The same H100 NVL run: the double-memory 1g's CI is ID 7 (COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1).
    (ci,) = table("H100-SXM5-80GB").ci_profiles[15]
    assert (ci.index, ci.multiprocessor_count, ci.name) == (7, 26, "1g.20gb")
    (a100_ci,) = table("A100-SXM4-80GB").ci_profiles[15]
    assert a100_ci.index == 0


# --- every MIG board of the catalogue --------------------------------------------------------

MIG_BOARDS = sorted(key for key, board in BOARDS.items() if board.mig is not None)


def _layouts(t: mp.MigTable) -> list[list[tuple[mp.GpuInstanceProfile, int]]]:
    """Every set of GPU instances that fits together on the board (instance counts honoured)."""
    out: list[list[tuple[mp.GpuInstanceProfile, int]]] = []

    def grow(chosen: list[tuple[mp.GpuInstanceProfile, int]], occupied: int, first: int) -> None:
        out.append(chosen)
        options = [(p, st) for p in t.profiles for st in p.placement_starts]
        for n, (p, st) in enumerate(options[first:], first):
            mask = mp.placement_mask(st, p.memory_slices)
            if mask & occupied or sum(q is p for q, _ in chosen) >= p.instance_count:
                continue
            if not t.can_coexist([*(q for q, _ in chosen), p]):
                continue
            grow([*chosen, (p, st)], occupied | mask, n + 1)

    grow([], 0, 0)
    return out


# Every board's table, and each older table a board had, as the branch before its change.
MIG_TABLES = [(key, None) for key in MIG_BOARDS] + [
    (key, (before[0] - 1,)) for key in MIG_BOARDS for before, _ in table(key).table_before
]


@pytest.mark.parametrize(("board", "driver"), MIG_TABLES)
def test_table_invariants(board: str, driver: tuple[int, ...] | None) -> None:
    b = BOARDS[board]
    t = table(board) if driver is None else table(board).for_driver(driver)
    slices = t.memory_slices
    compute_slices = 7 if slices == 8 else slices
    assert slices in (2, 4, 8) and t.max_gpu_instances == compute_slices
    for field in ("id", "index", "name"):
        values = [getattr(p, field) for p in t.profiles]
        assert len(values) == len(set(values)), field
    for p in t.profiles:
        assert 0 <= p.index < mp.GPU_INSTANCE_PROFILE_COUNT
        assert p.name.startswith(f"{p.slice_count}g.") and p.board_memory_slices == slices
        assert p.placement_starts and all(
            0 <= st and st + p.memory_slices <= slices for st in p.placement_starts
        )
        assert 1 <= p.instance_count <= len(p.placement_starts)
        assert p.slice_count <= p.memory_slices or p.slice_count == compute_slices
        assert 0 < p.memory_mib <= int(b.defaults["memory_total_mib"])  # type: ignore[call-overload]
        assert 0 < p.multiprocessor_count <= (b.multiprocessor_count or 0)
        # More memory slices never means less memory.
        for q in t.profiles:
            if q.memory_slices > p.memory_slices:
                assert q.memory_mib > p.memory_mib, (p.name, q.name)
        for ci in t.ci_profiles[p.id]:
            assert ci.multiprocessor_count <= p.multiprocessor_count
            assert ci.instance_count * ci.slice_count <= p.slice_count
            assert all(st + ci.slice_count <= p.slice_count for st in ci.placement_starts)
        whole = [ci for ci in t.ci_profiles[p.id] if ci.slice_count == p.slice_count]
        assert [ci.name for ci in whole] == [p.name]
        assert whole[0].multiprocessor_count == p.multiprocessor_count
        # The most compute instances a GI holds never use more SMs than the GI has.
        smallest = t.ci_profiles[p.id][0]
        assert smallest.instance_count * smallest.multiprocessor_count <= p.multiprocessor_count
    layouts = _layouts(t)
    assert max(len(layout) for layout in layouts) == compute_slices
    for layout in layouts:
        assert sum(p.slice_count for p, _ in layout) <= compute_slices
        assert sum(p.multiprocessor_count for p, _ in layout) <= (b.multiprocessor_count or 0)
        assert sum(p.memory_mib for p, _ in layout) <= int(b.defaults["memory_total_mib"])  # type: ignore[call-overload]


def test_four_slice_boards_number_their_instances_in_four() -> None:
    a30 = table("A30")
    # Real A30 `-lgip`: 5.81 / 11.69 / 23.44 GiB; 14 SMs a slice; 1g.6gb has one decoder.
    assert [(p.memory_mib, p.multiprocessor_count, p.decoder_count) for p in a30.profiles] == [
        (5952, 14, 1),
        (5952, 14, 1),
        (11968, 28, 2),
        (11968, 28, 2),
        (24000, 56, 4),
    ]
    assert {p.name: (p.id, p.index, p.memory_slices) for p in a30.profiles} == {
        "1g.6gb": (14, 0x0, 1),
        "1g.6gb+me": (21, 0x7, 1),
        "2g.12gb": (5, 0x1, 2),
        "2g.12gb+me": (6, 0x8, 2),
        "4g.24gb": (0, 0x3, 4),
    }
    assert [mp.default_gpu_instance_id(st, 1, 4) for st in range(4)] == [3, 4, 5, 6]
    assert [mp.default_gpu_instance_id(st, 2, 4) for st in (0, 2)] == [1, 2]
    assert [c.name for c in a30.ci_profiles[0]] == ["1c.4g.24gb", "2c.4g.24gb", "4g.24gb"]
    # Half its 4 memory slices: half the BAR1, 2 x 256 KiB short (mig_bar1_bytes).
    assert mp.mig_bar1_bytes(a30, 8192, a30.by_name["2g.12gb+me"]) == (4096 - 0.5) * 2**20
    # One OFA and one JPEG engine: a single instance with media extensions at a time.
    me1, me2, plain = (a30.by_name[n] for n in ("1g.6gb+me", "2g.12gb+me", "1g.6gb"))
    assert a30.can_coexist([me2, plain, plain]) and not a30.can_coexist([me1, me2])


def test_blackwell_graphics_and_media_profiles() -> None:
    rtx = table("RTX-PRO-6000-BLACKWELL-SERVER")
    # cubecos #312 / GKE #564 `-lgip`: IDs 14, 21, 47, 65; 46 SMs; +me.all has 4 decoders.
    ids = {p.name: p.id for p in rtx.profiles}
    assert (ids["1g.24gb"], ids["1g.24gb+me"], ids["1g.24gb+gfx"], ids["1g.24gb+me.all"]) == (
        14,
        21,
        47,
        65,
    )
    gfx = rtx.by_name["1g.24gb+gfx"]
    assert (gfx.index, gfx.instance_count, gfx.multiprocessor_count) == (0xA, 4, 46)
    # MIG User Guide table 11: NVDEC / NVENC / JPEG / OFA and copy engines of every row.
    engines = {
        p.name: (
            p.decoder_count,
            p.encoder_count,
            p.jpeg_count,
            p.ofa_count,
            p.copy_engine_count,
            p.instance_count,
        )
        for p in rtx.profiles
    }
    assert engines == {
        "1g.24gb": (1, 1, 1, 0, 1, 4),
        "1g.24gb+me": (1, 1, 1, 1, 1, 1),
        "1g.24gb+gfx": (1, 1, 1, 0, 1, 4),
        "1g.24gb+me.all": (4, 4, 4, 1, 1, 1),
        "1g.24gb-me": (0, 0, 0, 0, 1, 4),
        "2g.48gb": (2, 2, 2, 0, 2, 2),
        "2g.48gb+gfx": (2, 2, 2, 0, 2, 2),
        "2g.48gb+me.all": (4, 4, 4, 1, 2, 1),
        "2g.48gb-me": (0, 0, 0, 0, 2, 2),
        "4g.96gb": (4, 4, 4, 1, 4, 1),
        "4g.96gb+gfx": (4, 4, 4, 1, 4, 1),
    }
    assert {p.index for p in rtx.profiles} >= {0xA, 0xB, 0xC, 0xD, 0xE, 0xF, 0x10}
    # All media engines in one instance leave the others none: they pair with -me ones.
    all_me, no_me = rtx.by_name["1g.24gb+me.all"], rtx.by_name["1g.24gb-me"]
    assert rtx.can_coexist([all_me, no_me, no_me, no_me])
    assert not rtx.can_coexist([all_me, rtx.by_name["1g.24gb"]])


@pytest.mark.parametrize(
    ("board", "driver", "rows"),
    [
        # gpu-operator #1351 `-lgip` (GiB x 1024) and #2155's MIG devices (20992, 45312 MiB).
        ("B200", None, {19: (20992, 18, 2, 1), 15: (45312, 30, 2, 1), 14: (45312, 36, 4, 2)}),
        # mig-parted #227 `-lgip` of a production GB200.
        ("GB200", None, {19: (22528, 18, 2, 1), 15: (46592, 32, 2, 1), 14: (46592, 38, 4, 2)}),
        # mig-parted #139 `-lgip`.
        ("GH200-144GB", None, {19: (17920, 16, 1, 1), 15: (36096, 26, 1, 1), 14: (36096, 32, 2, 2)}),
        # mig-parted #120 `-lgip`, an R550 driver.
        ("H200-SXM-141GB", (550,), {9: (71168, 60, 3, 3), 0: (143104, 132, 8, 7)}),
    ],
)
def test_rows_as_real_listings_show_them(
    board: str, driver: tuple[int, ...] | None, rows: dict[int, tuple[int, int, int, int]]
) -> None:
    t = table(board) if driver is None else table(board).for_driver(driver)
    for pid, row in rows.items():
        p = t.by_id[pid]
        assert (p.memory_mib, p.multiprocessor_count, p.copy_engine_count, p.decoder_count) == row


def test_driver_branches_change_profiles_and_sizes() -> None:
    a100 = table("A100-SXM4-40GB")
    assert a100.for_driver((590, 48, 1)) is a100  # today's sizes: the variant is the table
    r470 = a100.for_driver((470, 57, 2))
    assert r470 is a100.for_driver((470, 256))  # one object per branch: identity holds
    assert 15 not in r470.by_id and 20 in r470.by_id  # no 1g.10gb yet; 1g.5gb+me since R470
    assert (r470.by_id[14].memory_mib, r470.by_id[9].memory_mib) == (9984, 20096)
    assert 20 not in a100.for_driver((460, 91, 3)).by_id
    a30 = table("A30")
    assert 6 not in a30.for_driver((515, 86)).by_id and 6 in a30.for_driver((525, 60)).by_id
    # A30 `-lgip` listings: 4g.24gb at 23.50 GiB without 2g.12gb+me, 23.44 GiB with it.
    assert a30.for_driver((515, 86)).by_id[0].memory_mib == 24064
    assert a30.by_id[0].memory_mib == 24000


def test_a100_capture_matches_the_table_of_its_driver_branch() -> None:
    """A real A100-SXM4-40GB dump (510.47.03, two 3g.20gb): what the table says for R510."""
    # https://github.com/netdata/netdata/blob/master/src/go/plugin/go.d/collector/nvidia_smi/testdata/a100-sxm4-mig.xml
    path = CAPTURES / "a100-sxm4-40gb-mig-2x3g.20gb.xml"
    require_captures(path)
    root = ET.parse(path).getroot()
    driver = tuple(int(n) for n in root.findtext("driver_version", "").split("."))
    (gpu,) = root.findall("gpu")
    t = table("A100-SXM4-40GB").for_driver(driver)
    devices = gpu.findall("mig_devices/mig_device")
    assert len(devices) == 2
    for dev in devices:
        shared = dev.find("device_attributes/shared")
        assert shared is not None
        seen = tuple(
            int(shared.findtext(tag, "-1"))
            for tag in (
                "multiprocessor_count",
                "copy_engine_count",
                "encoder_count",
                "decoder_count",
                "ofa_count",
                "jpg_count",
            )
        )
        memory = int(dev.findtext("fb_memory_usage/total", "").split()[0])
        gi_id = int(dev.findtext("gpu_instance_id", ""))
        (profile,) = [
            p
            for p in t.profiles
            if (
                p.multiprocessor_count,
                p.copy_engine_count,
                p.encoder_count,
                p.decoder_count,
                p.ofa_count,
                p.jpeg_count,
            )
            == seen
            and p.memory_mib == memory
        ]
        assert profile.name == "3g.20gb"
        assert gi_id in [mp.default_gpu_instance_id(st, 4) for st in profile.placement_starts]


# A real driver 570.169 `nvidia-smi mig -lgip`/`-lcip` listing of an H100 PCIe: SMs per GI
# profile, in the listing's order.
H100_PCIE_570_SMS = {
    "1g.10gb": 14, "1g.10gb+me": 14, "1g.20gb": 14, "2g.20gb": 30, "3g.40gb": 46,
    "4g.40gb": 62, "7g.80gb": 114,
}
# A real H200 on driver 590 (its MIG device totals: https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h200-mig__590.48.01.txt);
# https://github.com/NVIDIA/mig-parted/issues/120: an R550 `-lgip`.
H200_SIZES = {(590,): {"1g.35gb": 33280, "2g.35gb": 33280, "3g.71gb": 71424, "4g.71gb": 71424},
              (550,): {"1g.35gb": 33024, "2g.35gb": 33024, "3g.71gb": 71168, "4g.71gb": 71168}}


def test_h100_pcie_sm_counts_as_a_real_listing_shows() -> None:
    table = mp.H100_PCIE
    assert {p.name: p.multiprocessor_count for p in table.profiles} == H100_PCIE_570_SMS


def test_h200_sizes_per_driver_branch() -> None:
    for branch, sizes in H200_SIZES.items():
        table = mp.H200_141GB.for_driver(branch)
        assert {name: table.by_name[name].memory_mib for name in sizes} == sizes


# B200 engines per row as DEC / JPEG / OFA / CE. 1g, 1g.45gb and 2g.45gb as the real `-lgip`
# of gpu-operator #1351 lists them (its 2g.45gb: 2 / 2 / 4 CE where the guide says 1 / 1 / 3);
# 1g+me, 3g, 4g and 7g, which no real listing shows, as the MIG User Guide's B200 table (R580
# and current) gives them: one NVDEC and one JPEG each.
B200_ENGINES = {
    "1g.23gb": (1, 1, 0, 2),
    "1g.23gb+me": (1, 1, 1, 2),
    "1g.45gb": (1, 1, 0, 2),
    "2g.45gb": (2, 2, 0, 4),
    "3g.90gb": (1, 1, 0, 6),
    "4g.90gb": (1, 1, 0, 8),
    "7g.180gb": (1, 1, 1, 16),
}


def test_b200_engines_follow_real_listings_then_the_guide(simulate_gpu: Any) -> None:
    gpu = simulate_gpu("B200", "590.48.01")
    seen = {}
    for index in (0x0, 0x7, 0x9, 0x1, 0x2, 0x3, 0x4):
        info = N.nvmlDeviceGetGpuInstanceProfileInfoV(gpu, index)
        seen[info.name.removeprefix("MIG ")] = (
            info.decoderCount, info.jpegCount, info.ofaCount, info.copyEngineCount
        )
    assert seen == B200_ENGINES
    # Seven 1g instances each get a decoder although the 7g gets one: the board has seven.
    t = table("B200")
    assert t.can_coexist([t.by_name["1g.23gb"]] * 7)


def _lgip(gpu: Any) -> dict[str, tuple[int, ...]]:
    """What `nvidia-smi mig -lgip` shows, read through pynvml: name -> (compute slices,
    instances, MiB, NVDEC, NVENC, JPEG, OFA, CE, placement starts, placement size)."""
    rows = {}
    for index in range(mp.GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = N.nvmlDeviceGetGpuInstanceProfileInfoV(gpu, index)
        except N.NVMLError_NotSupported:
            continue
        count = ctypes.c_uint(info.instanceCount * 8)
        buf = (N.c_nvmlGpuInstancePlacement_t * count.value)()
        N.nvmlDeviceGetGpuInstancePossiblePlacements(gpu, info.id, buf, ctypes.byref(count))
        places = buf[: count.value]
        (size,) = {p.size for p in places}
        rows[info.name.removeprefix("MIG ")] = (
            info.sliceCount,
            info.instanceCount,
            info.memorySizeMB,
            info.decoderCount,
            info.encoderCount,
            info.jpegCount,
            info.ofaCount,
            info.copyEngineCount,
            tuple(p.start for p in places),
            size,
        )
    return rows


# RTX PRO 5000 Blackwell by driver branch, as the MIG User Guide's tables give names, instance
# counts, engines (NVDEC / NVENC / JPEG / OFA) and copy engines: R580's table 10 has 4 slices;
# the current guide 2 slices, at most 2 instances. MiB derived (docs/simulator.md): the RTX
# PRO 6000's real rows of the same nominal size (24 GB: 24192, 48 GB: 48512), 12 GB half.
RTX_PRO_5000 = {
    "580.105.08": {
        "1g.12gb": (1, 1, 12096, 1, 1, 1, 0, 1, (0, 1, 2, 3), 1),
        "1g.12gb+me": (1, 1, 12096, 1, 1, 1, 1, 1, (0, 1, 2, 3), 1),
        "1g.12gb+gfx": (1, 1, 12096, 1, 1, 1, 0, 1, (0, 1, 2, 3), 1),
        "1g.12gb-me": (1, 3, 12096, 0, 0, 0, 0, 1, (0, 1, 2, 3), 1),
        "2g.24gb-me": (2, 1, 24192, 0, 0, 0, 0, 2, (0, 2), 2),
        "4g.48gb": (4, 1, 48512, 3, 3, 1, 1, 4, (0,), 4),
        "4g.48gb+gfx": (4, 1, 48512, 3, 3, 1, 1, 4, (0,), 4),
    },
    "590.48.01": {
        "1g.24gb": (1, 2, 24192, 1, 1, 0, 0, 1, (0, 1), 1),
        "1g.24gb+me": (1, 1, 24192, 1, 1, 1, 1, 1, (0, 1), 1),
        "1g.24gb+gfx": (1, 2, 24192, 1, 1, 0, 0, 1, (0, 1), 1),
        "1g.24gb+me.all": (1, 1, 24192, 3, 3, 1, 1, 1, (0, 1), 1),
        "1g.24gb-me": (1, 2, 24192, 0, 0, 0, 0, 1, (0, 1), 1),
        "2g.48gb": (2, 1, 48512, 3, 3, 1, 1, 4, (0,), 2),
        "2g.48gb+gfx": (2, 1, 48512, 3, 3, 1, 1, 4, (0,), 2),
    },
}


@pytest.mark.parametrize("driver", sorted(RTX_PRO_5000))
def test_rtx_pro_5000_table_by_driver_branch(simulate_gpu: Any, driver: str) -> None:
    gpu = simulate_gpu("RTX-PRO-5000-BLACKWELL", driver)
    assert _lgip(gpu) == RTX_PRO_5000[driver]
    slices = 4 if driver.startswith("580") else 2
    assert N.nvmlDeviceGetMaxMigDeviceCount(gpu) == slices


# RTX PRO 4500 Blackwell (32 GB): the current MIG User Guide's table gives names, instance
# counts, NVDEC / NVENC / JPEG / OFA and copy engines (there is no 1g+me row). MiB derived
# (docs/simulator.md): two thirds of the RTX PRO 6000's real 1g.24gb and 2g.48gb (24192,
# 48512), rounded down to 128 MiB.
RTX_PRO_4500 = {
    "1g.16gb": (1, 2, 16128, 1, 1, 1, 0, 1, (0, 1), 1),
    "1g.16gb+gfx": (1, 2, 16128, 1, 1, 1, 0, 1, (0, 1), 1),
    "1g.16gb+me.all": (1, 1, 16128, 3, 3, 2, 1, 1, (0, 1), 1),
    "1g.16gb-me": (1, 2, 16128, 0, 0, 0, 0, 1, (0, 1), 1),
    "2g.32gb": (2, 1, 32256, 3, 3, 2, 1, 2, (0,), 2),
    "2g.32gb+gfx": (2, 1, 32256, 3, 3, 2, 1, 2, (0,), 2),
}


def test_rtx_pro_4500_table_as_the_guide_gives_it(simulate_gpu: Any) -> None:
    gpu = simulate_gpu("RTX-PRO-4500-BLACKWELL", "590.48.01")
    assert N.nvmlDeviceGetName(gpu) == "NVIDIA RTX PRO 4500 Blackwell"
    assert _lgip(gpu) == RTX_PRO_4500
    assert N.nvmlDeviceGetMaxMigDeviceCount(gpu) == 2
    # All media engines in one half leave the other half none: only a -me instance fits.
    all_me = N.nvmlDeviceGetGpuInstanceProfileInfoV(gpu, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME)
    N.nvmlDeviceCreateGpuInstance(gpu, all_me.id)
    plain = N.nvmlDeviceGetGpuInstanceProfileInfoV(gpu, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE)
    no_me = N.nvmlDeviceGetGpuInstanceProfileInfoV(gpu, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME)
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, plain.id) == 0
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, no_me.id) == 1
    # MIG from R575 (MIG User Guide, deployment considerations: 575.64 or later).
    data = {
        "format": 1,
        "driver": {"version": "570.172.08"},
        "gpus": [{"board": "RTX-PRO-4500-BLACKWELL", "mig": {"enabled": True}}],
    }
    with pytest.raises(hwinfo.sim.ScenarioError, match="needs driver 575"):
        parse_scenario(data, "t.json", "t")


# H100-SXM5 94GB: the current MIG User Guide's table for the H100 94GB (PCIe and SXM5) gives
# names, instance counts, NVDEC / JPEG / OFA and copy engines; MiB as the H100 NVL's (the PCIe
# 94 GB board) real `-lgip` of gpu-operator #903, derived for the SXM5 (docs/simulator.md).
H100_SXM5_94GB = {
    "1g.12gb": (1, 7, 11008, 1, 0, 1, 0, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    "1g.12gb+me": (1, 1, 11008, 1, 0, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    "1g.24gb": (1, 4, 22144, 1, 0, 1, 0, 1, (0, 2, 4, 6), 2),
    "2g.24gb": (2, 3, 22144, 2, 0, 2, 0, 2, (0, 2, 4), 2),
    "3g.47gb": (3, 2, 47488, 3, 0, 3, 0, 3, (0, 4), 4),
    "4g.47gb": (4, 1, 47488, 4, 0, 4, 0, 4, (0,), 4),
    "7g.94gb": (7, 1, 95360, 7, 0, 7, 1, 8, (0,), 8),
}


def test_h100_sxm5_94gb_table_as_the_guide_gives_it(simulate_gpu: Any) -> None:
    gpu = simulate_gpu("H100-SXM5-94GB", "590.48.01")
    # TSUBAME 4.0's H100 SXM5 94GB on 580.105.08: "NVIDIA H100 94GB", 95830 MiB.
    assert N.nvmlDeviceGetName(gpu) == "NVIDIA H100 94GB"
    assert _lgip(gpu) == H100_SXM5_94GB
    assert N.nvmlDeviceGetMaxMigDeviceCount(gpu) == 7


# A real driver 580.105.08 `nvidia-smi mig -lgip` of an RTX PRO 6000 Blackwell Max-Q
# Workstation Edition (a public setup note, February 2026): every row's ID, instances, GiB
# (x 1024), SMs, NVDEC / NVENC / JPEG / OFA and CE.
RTX_PRO_6000_580 = {
    "1g.24gb": (14, 4, 24192, 46, 1, 1, 1, 0, 1),
    "1g.24gb+me": (21, 1, 24192, 46, 1, 1, 1, 1, 1),
    "1g.24gb+gfx": (47, 4, 24192, 46, 1, 1, 1, 0, 1),
    "1g.24gb+me.all": (65, 1, 24192, 46, 4, 4, 4, 1, 1),
    "1g.24gb-me": (67, 4, 24192, 46, 0, 0, 0, 0, 1),
    "2g.48gb": (5, 2, 48512, 94, 2, 2, 2, 0, 2),
    "2g.48gb+gfx": (35, 2, 48512, 94, 2, 2, 2, 0, 2),
    "2g.48gb+me.all": (64, 1, 48512, 94, 4, 4, 4, 1, 2),
    "2g.48gb-me": (66, 2, 48512, 94, 0, 0, 0, 0, 2),
    "4g.96gb": (0, 1, 97280, 188, 4, 4, 4, 1, 4),
    "4g.96gb+gfx": (32, 1, 97280, 188, 4, 4, 4, 1, 4),
}


def test_rtx_pro_6000_as_a_real_listing_shows_it(simulate_gpu: Any) -> None:
    gpu = simulate_gpu("RTX-PRO-6000-BLACKWELL-MAX-Q", "580.105.08")
    seen = {}
    for index in range(mp.GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = N.nvmlDeviceGetGpuInstanceProfileInfoV(gpu, index)
        except N.NVMLError_NotSupported:
            continue
        seen[info.name.removeprefix("MIG ")] = (
            info.id,
            info.instanceCount,
            info.memorySizeMB,
            info.multiprocessorCount,
            info.decoderCount,
            info.encoderCount,
            info.jpegCount,
            info.ofaCount,
            info.copyEngineCount,
        )
    assert seen == RTX_PRO_6000_580
