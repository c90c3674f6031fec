"""MIG profile tables, placements, GPU-instance id numbering and remaining capacity.

One table per board: its GPU-instance (GI) profiles as `nvidia-smi mig -lgip` and `-lgipp`
list them, and the compute-instance (CI) profiles each offers, as `-lcip` does. Each table
names its sources; a value no source gives is marked `# Unknown:` where it is set.

A board has 8 memory slices and 7 compute slices (A100, H100, H200, GH200, H20, B200, GB200),
4 of each (A30, RTX PRO 6000 Blackwell) or 2 (RTX PRO 4500 and, from R590, RTX PRO 5000
Blackwell). A GI occupies a run of memory slices (its
placement: start, size); a CI occupies a run of its GI's compute slices. Placements of one
profile never overlap each other, so "how many more fit" is the number of its placements that
do not overlap an existing instance.

Driver branches differ: some profiles appear only from a branch on (A30 2g.12gb+me: R525),
older branches reported other memory sizes for the same profile, and a board may have had
another table altogether (RTX PRO 5000: 4 slices in the R580 guide). `MigTable.for_driver`
gives the table a driver of that branch reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

MEMORY_SLICES = 8
# NVML_GPU_INSTANCE_PROFILE_COUNT / NVML_COMPUTE_INSTANCE_PROFILE_COUNT: profile indices at or
# past these answer InvalidArgument, known-but-absent ones NotSupported (nvml.h).
GPU_INSTANCE_PROFILE_COUNT = 0x12
COMPUTE_INSTANCE_PROFILE_COUNT = 0x9
# NVML_COMPUTE_INSTANCE_PROFILE_* index for a CI of N compute slices.
_CI_PROFILE_INDEX = {1: 0x0, 2: 0x1, 3: 0x2, 4: 0x3, 7: 0x4}
CI_PROFILE_1_SLICE_REV1 = 0x7

# NVML_GPU_INSTANCE_PROFILE_* (nvml.h): the index GetGpuInstanceProfileInfo takes.
GI_1_SLICE = 0x0
GI_2_SLICE = 0x1
GI_3_SLICE = 0x2
GI_4_SLICE = 0x3
GI_7_SLICE = 0x4
GI_1_SLICE_REV1 = 0x7  # 1g+me
GI_2_SLICE_REV1 = 0x8  # 2g+me (A30)
GI_1_SLICE_REV2 = 0x9  # 1g with twice the memory
GI_1_SLICE_GFX = 0xA
GI_2_SLICE_GFX = 0xB
GI_4_SLICE_GFX = 0xC
GI_1_SLICE_NO_ME = 0xD
GI_2_SLICE_NO_ME = 0xE
GI_1_SLICE_ALL_ME = 0xF
GI_2_SLICE_ALL_ME = 0x10

Branch = tuple[int, ...]
_ENGINE_ATTRS = ("copy_engine_count", "decoder_count", "encoder_count", "jpeg_count", "ofa_count")


@dataclass(frozen=True)
class GpuInstanceProfile:
    """One row of `nvidia-smi mig -lgip` for one board."""

    index: int  # NVML_GPU_INSTANCE_PROFILE_* constant: what GetGpuInstanceProfileInfo takes
    id: int  # profile ID (19/20/15/14/9/5/0 on A100): what every other GI call takes
    name: str  # "3g.40gb", "1g.10gb+me", "1g.24gb+gfx"
    slice_count: int  # compute slices (a 3g holds 3 even though it spans 4 memory slices)
    memory_slices: int  # placement size, in memory slices
    instance_count: int
    placement_starts: tuple[int, ...]
    multiprocessor_count: int
    copy_engine_count: int
    decoder_count: int
    encoder_count: int
    jpeg_count: int
    ofa_count: int
    memory_mib: int
    board_memory_slices: int = MEMORY_SLICES



@dataclass(frozen=True)
class ComputeInstanceProfile:
    """One row of `nvidia-smi mig -lcip` for a GPU instance of a given profile."""

    index: int  # NVML_COMPUTE_INSTANCE_PROFILE_*; NVML also uses it as the CI profile ID
    name: str  # "1c.3g.40gb", or the GI's name when the CI spans the whole GI
    slice_count: int
    instance_count: int
    placement_starts: tuple[int, ...]
    multiprocessor_count: int


@dataclass(frozen=True)
class MigTable:
    """The MIG profiles of one board, as the newest driver branch reports them."""

    family: str  # "ampere", "hopper" or "blackwell": decides CI profile quirks
    profiles: tuple[GpuInstanceProfile, ...]
    memory_slices: int = MEMORY_SLICES
    # nvmlDeviceGetMaxMigDeviceCount with MIG on: the most GPU instances the board holds.
    max_gpu_instances: int = 7
    min_driver: Branch = (450,)  # first driver branch with MIG on this board
    # Profile id -> first driver branch that offers it (absent: every branch from min_driver).
    since: tuple[tuple[int, Branch], ...] = ()
    # (branch, {profile id: MiB}): a driver before `branch` reports these sizes instead.
    memory_before: tuple[tuple[Branch, tuple[tuple[int, int], ...]], ...] = ()
    # (branch, table): a driver before `branch` reports that whole table instead (another
    # slice geometry); the earliest branch that applies wins.
    table_before: tuple[tuple[Branch, MigTable], ...] = ()
    # (branch, (profile id, profile id)): a driver before `branch` cannot hold both at once.
    apart_before: tuple[tuple[Branch, tuple[int, int]], ...] = ()
    # Profile id pairs this table's driver cannot hold at once (set by for_driver).
    apart: tuple[tuple[int, int], ...] = ()
    # BAR1 a MIG device gets per memory slice of its GI, in KiB; None: the board's BAR1 over
    # its memory slices less 256 KiB (see mig_bar1_bytes).
    bar1_per_slice_kib: int | None = None
    by_name: dict[str, GpuInstanceProfile] = field(init=False, repr=False, compare=False)
    by_id: dict[int, GpuInstanceProfile] = field(init=False, repr=False, compare=False)
    by_index: dict[int, GpuInstanceProfile] = field(init=False, repr=False, compare=False)
    # GI profile id -> the CI profiles a GI of that profile offers.
    ci_profiles: dict[int, tuple[ComputeInstanceProfile, ...]] = field(
        init=False, repr=False, compare=False
    )
    _variants: dict[int, MigTable] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {p.name: p for p in self.profiles})
        object.__setattr__(self, "by_id", {p.id: p for p in self.profiles})
        object.__setattr__(self, "by_index", {p.index: p for p in self.profiles})
        ci = {p.id: _compute_instance_profiles(self, p) for p in self.profiles}
        object.__setattr__(self, "ci_profiles", ci)
        object.__setattr__(self, "_variants", {})

    def can_coexist(self, profiles: Iterable[GpuInstanceProfile]) -> bool:
        """Whether GPU instances of these profiles can exist together (placements aside).

        Instances do not share copy, decode, encode, JPEG and OFA engines, and a board has at
        least as many of each as one profile's instances take together, its largest instance
        or all of its most numerous (B200: seven 1g with a decoder each, where the guide gives
        the 7g one): so one 1g+me at a time (MIG User Guide), and on A30 a 1g.6gb+me and a
        2g.12gb+me never together (one OFA). Some branches also refuse pairs of profiles
        (A100 4g with 3g before R510).
        """
        # Unknown: that the driver refuses exactly these engine mixes; no listing of a
        # refused create was found. On RTX PRO 6000 it pairs +me.all with -me instances.
        chosen = list(profiles)
        for attr in _ENGINE_ATTRS:
            budget = max(getattr(p, attr) * p.instance_count for p in self.profiles)
            if sum(getattr(p, attr) for p in chosen) > budget:
                return False
        ids = {p.id for p in chosen}
        return not any(a in ids and b in ids for a, b in self.apart)

    def driver_placement(self, profile: GpuInstanceProfile, occupied: int) -> int | None:
        """The start NVML picks for a GI created without a placement; None when none is free.

        The MIG User Guide's A100 examples (`-cgi 9,19,14,19`, `-cgi 14,19,19,19,19,19`,
        `-cgi 19,19,14,9`) get GI ids 2/7/4/8, 5/13/7/8/9/10 and 13/11/3: the driver fills
        the half and then the quarter of the GPU that is already most used, counting the
        memory slice no 1-slice instance can use (slot 7), then the lowest start.
        """
        # Unknown: the rule on boards other than A100, and on 4-slice boards (no dead slot).
        dead = placement_mask(7, 1) if self.memory_slices == MEMORY_SLICES else 0
        used = occupied | dead

        def fill(start: int, size: int) -> int:
            block = start - start % size
            return (used & placement_mask(block, size)).bit_count()

        half = self.memory_slices // 2
        free = free_placements(profile.placement_starts, profile.memory_slices, occupied)
        return max(
            free, key=lambda st: (fill(st, half), fill(st, max(2, half // 2)), -st), default=None
        )

    def for_driver(self, driver: Branch) -> MigTable:
        """The table as a driver of this version reports it (the same object for one branch).

        Profile objects are compared by identity elsewhere, so a branch always gets the same
        table back, and a branch that changes nothing gets this very table.
        """
        branch = driver[0] if driver else 0
        cached = self._variants.get(branch)
        if cached is not None:
            return cached
        older = [table for before, table in sorted(self.table_before) if (branch,) < before]
        if older:
            return self._variants.setdefault(branch, older[0].for_driver(driver))
        since = dict(self.since)
        sizes: dict[int, int] = {}
        # The oldest override that still applies wins: tables list them newest first.
        for before, overrides in self.memory_before:
            if (branch,) < before:
                sizes.update(overrides)
        profiles = tuple(
            replace(p, memory_mib=sizes.get(p.id, p.memory_mib))
            for p in self.profiles
            if (branch,) >= since.get(p.id, ())
        )
        apart = tuple(pair for before, pair in self.apart_before if (branch,) < before)
        variant = (
            self
            if profiles == self.profiles and not apart
            else MigTable(
                self.family,
                profiles,
                self.memory_slices,
                self.max_gpu_instances,
                self.min_driver,
                apart=apart,
                bar1_per_slice_kib=self.bar1_per_slice_kib,
            )
        )
        # setdefault: two threads building the same branch still share one table.
        return self._variants.setdefault(branch, variant)


def mig_bar1_bytes(
    table: MigTable | None, board_bar1_mib: int, profile: GpuInstanceProfile
) -> int:
    """BAR1 of a MIG device of a GPU instance of this profile.

    Real MIG devices get an equal BAR1 share per memory slice, 256 KiB short of a whole
    figure, which nvidia-smi rounds down to MiB (so 1, 2, 4 slices show x-1, 2x-1, 4x-1 on
    Ampere, and 4 slices show one MiB more than twice 2 slices):
    - A100-SXM4-40GB (BAR1 65536 MiB): a 3g.20gb (4 slices) shows 32767 (https://github.com/netdata/netdata/blob/master/src/go/plugin/go.d/collector/nvidia_smi/testdata/a100-sxm4-mig.xml),
      80 GB boards (BAR1 131072) 16383/32767/65535 by size (an A100 80GB's 2g.20gb shows
      32767: https://github.com/XuehaiPan/nvitop/pull/8): the board's BAR1 over its memory
      slices.
    - H100 80GB HBM3, 590.48.01 (BAR1 131072, https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h100-mig__590.48.01.txt):
      1g.10gb 6184, 2g.20gb 12369, 3g.40gb 24739: 6185 MiB a slice, less 256 KiB.
    - H200, 590 (https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h200-mig__590.48.01.txt): 1g.18gb 14809, 2g.35gb
      29618, 3g.71gb 59237: 14809.5 MiB a slice, less 256 KiB.
    Hopper's share is not its BAR1/8: about what BAR1 leaves beside the framebuffer
    (131072 - 81559 = 49513 MiB against the 49480 the H100's figure gives), but not exactly.
    Unknown: the share on Hopper boards without a figure (they get Ampere's), a 7g (8
    slices) anywhere, and other driver branches.
    """
    per_slice_kib = (
        board_bar1_mib * 1024 // profile.board_memory_slices
        if table is None or table.bar1_per_slice_kib is None
        else table.bar1_per_slice_kib
    )
    return profile.memory_slices * (per_slice_kib - 256) * 1024


def default_gpu_instance_id(
    start: int, memory_slices: int, board_slices: int = MEMORY_SLICES
) -> int:
    """GI id NVML gives a placement: the memory slices numbered as a binary heap.

    Observed on 8-slice boards (the MIG User Guide's examples, https://docs.nvidia.com/datacenter/tesla/mig-user-guide/; the H100 capture's
    GI 2 = 3g at 4, GI 3 = 2g at 0, GI 9/10 = 1g at 2/3; a real H100 NVL's): 7g -> 0; 4g/3g at slot 0/4 -> 1/2; 2g (and 1g double-memory) at
    slot 0/2/4/6 -> 3/4/5/6; 1g at slot 0..6 -> 7..13; H100 NVL 1g.24gb -> 5.
    """
    # Unknown: the numbering on 4-slice boards (A30, RTX PRO 6000); the same heap is assumed.
    return board_slices // memory_slices - 1 + start // memory_slices


def placement_mask(start: int, size: int) -> int:
    """Bit mask of the slices a placement occupies."""
    return ((1 << size) - 1) << start


def _compute_instance_profiles(
    table: MigTable, gi: GpuInstanceProfile
) -> tuple[ComputeInstanceProfile, ...]:
    """CI profiles a GI of this profile offers, as `nvidia-smi mig -lcip` lists them.

    A CI of c slices in a GI of S slices: S // c of them fit (1c.3g: 3, 2c.3g: 1, 3c.7g: 2),
    named "<c>c.<gi name>" unless it spans the whole GI. The CI sizes are the GI sizes the
    board has (A30: 1, 2, 4; A100: 1, 2, 3, 4, 7).
    """
    # A partial CI has the SMs of the board's plain GI profile of as many slices: on A100 that
    # is what real `-lcip` listings of a 3g.40gb show (1c 14, 2c 28, 3g 42 SMs, sharing the
    # GI's 3 CE and 2 DEC), not a share of the GI.
    # Unknown: partial-CI SM counts on Hopper and Blackwell; the same rule is taken there.
    plain = {
        p.slice_count: p.multiprocessor_count
        for p in table.profiles
        if p.index in (GI_1_SLICE, GI_2_SLICE, GI_3_SLICE, GI_4_SLICE, GI_7_SLICE)
    }
    out = []
    s = gi.slice_count
    for c, index in _CI_PROFILE_INDEX.items():
        if c > s or (c < s and c not in plain):
            continue
        whole = c == s
        if whole and table.family != "ampere" and gi.index == GI_1_SLICE_REV2:
            # On Hopper the double-memory 1g's CI is ID 7 (COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1),
            # as `nvidia-smi mig -cgi 15 -C` on a real H100 NVL reports it.
            # Unknown: the same on Blackwell's double-memory 1g.
            index = CI_PROFILE_1_SLICE_REV1
        # Unknown: placements of partial CIs are not in the facts; 3-slice CIs are taken to
        # sit at compute slices 0 and 4 like 3g GIs, every other size aligned to itself.
        step = 4 if c == 3 else c
        starts = tuple(range(0, s - c + 1, step))
        out.append(
            ComputeInstanceProfile(
                index=index,
                name=gi.name if whole else f"{c}c.{gi.name}",
                slice_count=c,
                instance_count=len(starts),
                placement_starts=starts,
                multiprocessor_count=(
                    gi.multiprocessor_count if whole else min(plain[c], gi.multiprocessor_count)
                ),
            )
        )
    return tuple(out)


def free_placements(starts: Iterable[int], size: int, occupied: int) -> list[int]:
    """Placement starts of one profile that do not overlap the occupied slice mask."""
    return [st for st in starts if not placement_mask(st, size) & occupied]


def remaining_capacity(
    starts: Sequence[int], size: int, instance_count: int, existing: int, occupied: int
) -> int:
    """How many more instances of a profile fit, given `existing` ones and the occupied mask."""
    return max(0, min(instance_count - existing, len(free_placements(starts, size, occupied))))


def fit_placements(
    wanted: Sequence[tuple[Sequence[int], int, int | None]], occupied: int = 0
) -> list[int] | None:
    """Starts for instances (candidate starts, size, fixed start or None), in order, or None.

    Each instance takes its fixed start or the first free candidate that still lets the rest
    fit (backtracking), so [1g, 4g] puts the 1g at slot 4, where greedy "first free" fails.
    """
    if not wanted:
        return []
    starts, size, fixed = wanted[0]
    for start in (fixed,) if fixed is not None else starts:
        mask = placement_mask(start, size)
        if mask & occupied:
            continue
        rest = fit_placements(wanted[1:], occupied | mask)
        if rest is not None:
            return [start, *rest]
    return None


# ---------------------------------------------------------------------------------------------
# Profile shapes: key -> (NVML index, profile ID, compute slices, memory slices, instances,
# placement starts). Identical on every board of one slice geometry (`-lgipp`).

# 8 memory slices (the MIG User Guide's `-lgipp` listings, https://docs.nvidia.com/datacenter/tesla/mig-user-guide/, and real H100/H100 NVL
# ones; B200, GB200, GH200 and H200 `-lgip` listings in NVIDIA/gpu-operator PRs #1242/#1303/
# #1057 and https://github.com/NVIDIA/mig-parted/issues/120 show the same IDs and instance
# counts).
# Unknown: `-lgipp` placements of Blackwell boards; the Hopper ones are taken.
_SHAPES_8: dict[str, tuple[int, int, int, int, int, tuple[int, ...]]] = {
    "1g": (GI_1_SLICE, 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
    "1g+me": (GI_1_SLICE_REV1, 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g2x": (GI_1_SLICE_REV2, 15, 1, 2, 4, (0, 2, 4, 6)),
    "2g": (GI_2_SLICE, 14, 2, 2, 3, (0, 2, 4)),
    "3g": (GI_3_SLICE, 9, 3, 4, 2, (0, 4)),
    "4g": (GI_4_SLICE, 5, 4, 4, 1, (0,)),
    "7g": (GI_7_SLICE, 0, 7, 8, 1, (0,)),
}

# 4 memory slices. A30: real `-lgip`/`-lgipp` listings (IDs 14, 21, 5, 6, 0; placements
# {0,1,2,3}:1, {0,2}:2, {0}:4) and the MIG User Guide (names, instance counts). RTX PRO 6000
# Blackwell: every ID and instance count from a real driver 580.105.08 `-lgip` of a Max-Q
# Workstation Edition (a public setup note, February 2026); bigstack-oss/cubecos #312 and
# GoogleCloudPlatform/container-engine-accelerators #564 list the 1g rows alike.
# Unknown: Blackwell 4-slice placements (the A30's).
_SHAPES_4: dict[str, tuple[int, int, int, int, int, tuple[int, ...]]] = {
    "1g": (GI_1_SLICE, 14, 1, 1, 4, (0, 1, 2, 3)),
    "1g+me": (GI_1_SLICE_REV1, 21, 1, 1, 1, (0, 1, 2, 3)),
    "1g+gfx": (GI_1_SLICE_GFX, 47, 1, 1, 4, (0, 1, 2, 3)),
    "1g+me.all": (GI_1_SLICE_ALL_ME, 65, 1, 1, 1, (0, 1, 2, 3)),
    "1g-me": (GI_1_SLICE_NO_ME, 67, 1, 1, 4, (0, 1, 2, 3)),
    "2g": (GI_2_SLICE, 5, 2, 2, 2, (0, 2)),
    "2g+me": (GI_2_SLICE_REV1, 6, 2, 2, 1, (0, 2)),
    "2g+gfx": (GI_2_SLICE_GFX, 35, 2, 2, 2, (0, 2)),
    "2g+me.all": (GI_2_SLICE_ALL_ME, 64, 2, 2, 1, (0, 2)),
    "2g-me": (GI_2_SLICE_NO_ME, 66, 2, 2, 2, (0, 2)),
    "4g": (GI_4_SLICE, 0, 4, 4, 1, (0,)),
    "4g+gfx": (GI_4_SLICE_GFX, 32, 4, 4, 1, (0,)),
}

# 2 memory slices (RTX PRO 5000 from R590, RTX PRO 4500): names and instance counts from the
# MIG User Guide's current tables; a 1g holds half the memory, a 2g all of it.
# Unknown: every profile ID (no listing). Real listings number profiles by their share of the
# memory and their extras, whatever the slice count: a half is 5 (A30 2g.12gb, RTX PRO 6000
# 2g.48gb), 6 with +me (A30 2g.12gb+me); the whole GPU 0 (A30 4g.24gb, A100 7g.40gb); the
# RTX PRO 6000's half-memory +gfx, +me.all and -me rows are 35, 64 and 66 and its whole-GPU
# +gfx 32 (a real driver 580.105.08 `-lgip` of an RTX PRO 6000 Max-Q). Those are taken here.
# Placements and GI ids as the 4-slice ones, halved.
_SHAPES_2: dict[str, tuple[int, int, int, int, int, tuple[int, ...]]] = {
    "1g": (GI_1_SLICE, 5, 1, 1, 2, (0, 1)),
    "1g+me": (GI_1_SLICE_REV1, 6, 1, 1, 1, (0, 1)),
    "1g+gfx": (GI_1_SLICE_GFX, 35, 1, 1, 2, (0, 1)),
    "1g+me.all": (GI_1_SLICE_ALL_ME, 64, 1, 1, 1, (0, 1)),
    "1g-me": (GI_1_SLICE_NO_ME, 66, 1, 1, 2, (0, 1)),
    "2g": (GI_2_SLICE, 0, 2, 2, 1, (0,)),
    "2g+gfx": (GI_2_SLICE_GFX, 32, 2, 2, 1, (0,)),
}
_SHAPES = {2: _SHAPES_2, 4: _SHAPES_4, 8: _SHAPES_8}

# Engines per shape as SM / CE / DEC / ENC / JPG / OFA, per engine family.
Engines = tuple[int, int, int, int, int, int]
_ENGINES: dict[str, dict[str, Engines]] = {
    # The MIG User Guide's A100 table and NVIDIA's go-nvml A100 mock
    # (https://github.com/NVIDIA/go-nvml/blob/main/pkg/nvml/mock/shared/gpus/a100.go); the
    # A100 capture's 3g.20gb: 42/3/2/0/0/0.
    "a100": {
        "1g": (14, 1, 0, 0, 0, 0),
        "1g+me": (14, 1, 1, 0, 1, 1),
        "1g2x": (14, 1, 1, 0, 0, 0),
        "2g": (28, 2, 1, 0, 0, 0),
        "3g": (42, 3, 2, 0, 0, 0),
        "4g": (56, 4, 2, 0, 0, 0),
        "7g": (98, 7, 5, 0, 1, 1),
    },
    # H100 SXM, H100 NVL, H200, GH200: the MIG User Guide's Hopper table, the `-lgip` listings
    # of gpu-operator #903 and mig-parted #120, and the H100 capture (590.48.01): 3g 60/3/3,
    # 2g 32/2/2, 1g 16/1/1, JPG as DEC, no OFA but on +me and 7g.
    "h100": {
        "1g": (16, 1, 1, 0, 1, 0),
        "1g+me": (16, 1, 1, 0, 1, 1),
        "1g2x": (26, 1, 1, 0, 1, 0),
        "2g": (32, 2, 2, 0, 2, 0),
        "3g": (60, 3, 3, 0, 3, 0),
        "4g": (64, 4, 4, 0, 4, 0),
        "7g": (132, 8, 7, 0, 7, 1),
    },
    # H100 PCIe (114 SMs): SMs of every row from a real driver 570.169 `nvidia-smi mig -lgip`/
    # `-lcip` listing of an H100 PCIe (14, 14, 14, 30, 46, 62 for 1g.10gb, 1g.10gb+me,
    # 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, listed in that order; 7g 114).
    # Unknown: engines (as on H100 SXM), and the H800 PCIe's SMs (the H100 PCIe's).
    "h100-pcie": {
        "1g": (14, 1, 1, 0, 1, 0),  # the 570.169 listing
        "1g+me": (14, 1, 1, 0, 1, 1),  # the 570.169 listing
        "1g2x": (14, 1, 1, 0, 1, 0),  # the 570.169 listing
        "2g": (30, 2, 2, 0, 2, 0),  # the 570.169 listing
        "3g": (46, 3, 3, 0, 3, 0),  # the 570.169 listing
        "4g": (62, 4, 4, 0, 4, 0),  # the 570.169 listing
        "7g": (114, 8, 7, 0, 7, 1),  # the whole GPU, as the 570.169 listing has it
    },
    # Unknown: no `-lgip` of an H20 (78 SMs); H100 SXM SM counts scaled by 78/132.
    "h20": {
        "1g": (8, 1, 1, 0, 1, 0),
        "1g+me": (8, 1, 1, 0, 1, 1),
        "1g2x": (14, 1, 1, 0, 1, 0),
        "2g": (18, 2, 2, 0, 2, 0),
        "3g": (34, 3, 3, 0, 3, 0),
        "4g": (36, 4, 4, 0, 4, 0),
        "7g": (78, 8, 7, 0, 7, 1),
    },
    # B200: gpu-operator PRs #1242/#1351 `-lgip` (1g 18/2/1/0/1/0, 1g.45gb 30, 2g 36/4/2/0/2):
    # real listings win where they exist, so 2g.45gb has 2 NVDEC / 2 JPEG / 4 CE where the MIG
    # User Guide's B200 table (R580 and current) says 1 / 1 / 3. The guide for the rows no
    # listing shows: one NVDEC and one JPEG on 1g+me, 3g, 4g and 7g; CE 6/8/16 for 3g/4g/7g;
    # OFA only on 1g+me and 7g.
    # Unknown: 3g/4g/7g SMs (60/72 and the whole GPU's 148).
    "b200": {
        "1g": (18, 2, 1, 0, 1, 0),  # gpu-operator #1351 `-lgip`
        "1g+me": (18, 2, 1, 0, 1, 1),  # MIG User Guide (SMs as 1g)
        "1g2x": (30, 2, 1, 0, 1, 0),  # gpu-operator #1351 `-lgip`
        "2g": (36, 4, 2, 0, 2, 0),  # gpu-operator #1351 `-lgip`
        "3g": (60, 6, 1, 0, 1, 0),  # MIG User Guide
        "4g": (72, 8, 1, 0, 1, 0),  # MIG User Guide
        "7g": (148, 16, 1, 0, 1, 1),  # MIG User Guide
    },
    # GB200: mig-parted #227 `-lgip` of a production board (1g 18/2/1/0/1/0, 1g.47gb 32,
    # 2g 38/4/2/0/2). Unknown: 3g, 4g and 7g rows (no GB200 table in the guide), taken like
    # B200's; 7g SMs 152.
    "gb200": {
        "1g": (18, 2, 1, 0, 1, 0),
        "1g+me": (18, 2, 1, 0, 1, 1),
        "1g2x": (32, 2, 1, 0, 1, 0),
        "2g": (38, 4, 2, 0, 2, 0),
        "3g": (66, 6, 1, 0, 1, 0),
        "4g": (76, 8, 1, 0, 1, 0),
        "7g": (152, 16, 1, 0, 1, 1),
    },
    # A30: real `-lgip` listings (the A30 tables below): 1g.6gb has a decoder, although the
    # MIG User Guide's table says 0 NVDECs; the rest as the guide's table.
    "a30": {
        "1g": (14, 1, 1, 0, 0, 0),
        "1g+me": (14, 1, 1, 0, 1, 1),
        "2g": (28, 2, 2, 0, 0, 0),
        "2g+me": (28, 2, 2, 0, 1, 1),
        "4g": (56, 4, 4, 0, 1, 1),
    },
    # RTX PRO 6000 Blackwell (188 SMs): the real 580.105.08 `-lgip` (see _SHAPES_4): SMs 46 /
    # 94 / 188, and engines as MIG User Guide table 11 gives them.
    "rtx-pro-6000": {
        "1g": (46, 1, 1, 1, 1, 0),
        "1g+me": (46, 1, 1, 1, 1, 1),
        "1g+gfx": (46, 1, 1, 1, 1, 0),
        "1g+me.all": (46, 1, 4, 4, 4, 1),
        "1g-me": (46, 1, 0, 0, 0, 0),
        "2g": (94, 2, 2, 2, 2, 0),
        "2g+gfx": (94, 2, 2, 2, 2, 0),
        "2g+me.all": (94, 2, 4, 4, 4, 1),
        "2g-me": (94, 2, 0, 0, 0, 0),
        "4g": (188, 4, 4, 4, 4, 1),
        "4g+gfx": (188, 4, 4, 4, 4, 1),
    },
    # RTX PRO 5000 Blackwell (110 SMs) on R590 and later: the current MIG User Guide's table
    # (2 slices; engines and CE per row).
    # Unknown: SMs (half of 110 rounded down to even, as the RTX PRO 6000's real 1g has 46 of
    # 188; the whole GPU's for 2g).
    "rtx-pro-5000": {
        "1g": (54, 1, 1, 1, 0, 0),
        "1g+me": (54, 1, 1, 1, 1, 1),
        "1g+gfx": (54, 1, 1, 1, 0, 0),
        "1g+me.all": (54, 1, 3, 3, 1, 1),
        "1g-me": (54, 1, 0, 0, 0, 0),
        "2g": (110, 4, 3, 3, 1, 1),
        "2g+gfx": (110, 4, 3, 3, 1, 1),
    },
    # RTX PRO 4500 Blackwell (82 SMs): the current MIG User Guide's table (2 slices; engines
    # and CE per row; no 1g+me row).
    # Unknown: SMs (half of 82 rounded down to even, as for the RTX PRO 5000; the whole GPU's
    # for 2g).
    "rtx-pro-4500": {
        "1g": (40, 1, 1, 1, 1, 0),
        "1g+gfx": (40, 1, 1, 1, 1, 0),
        "1g+me.all": (40, 1, 3, 3, 2, 1),
        "1g-me": (40, 1, 0, 0, 0, 0),
        "2g": (82, 2, 3, 3, 2, 1),
        "2g+gfx": (82, 2, 3, 3, 2, 1),
    },
    # RTX PRO 5000 Blackwell before R590: the R580 MIG User Guide's table 10 (4 slices; engines
    # and CE per row).
    # Unknown: SMs (a quarter of 110, rounded down to even; the whole GPU's for 4g).
    "rtx-pro-5000-r580": {
        "1g": (26, 1, 1, 1, 1, 0),
        "1g+me": (26, 1, 1, 1, 1, 1),
        "1g+gfx": (26, 1, 1, 1, 1, 0),
        "1g-me": (26, 1, 0, 0, 0, 0),
        "2g-me": (54, 2, 0, 0, 0, 0),
        "4g": (110, 4, 3, 3, 1, 1),
        "4g+gfx": (110, 4, 3, 3, 1, 1),
    },
}


def _table(
    engines: str,
    memory: Mapping[str, tuple[str, int]],
    family: str = "hopper",
    board_slices: int = MEMORY_SLICES,
    counts: Mapping[str, int] | None = None,
    **options: object,
) -> MigTable:
    """A board's table from its engine family and its shape -> (name, MiB) map.

    `counts` overrides the shape's instance count where a board allows fewer.
    """
    shapes = _SHAPES[board_slices]
    profiles = []
    for shape, (name, mib) in memory.items():
        index, pid, slices, mem_slices, count, starts = shapes[shape]
        count = (counts or {}).get(shape, count)
        sm, ce, dec, enc, jpg, ofa = _ENGINES[engines][shape]
        profiles.append(
            GpuInstanceProfile(
                index=index,
                id=pid,
                name=name,
                slice_count=slices,
                memory_slices=mem_slices,
                instance_count=count,
                placement_starts=starts,
                multiprocessor_count=sm,
                copy_engine_count=ce,
                decoder_count=dec,
                encoder_count=enc,
                jpeg_count=jpg,
                ofa_count=ofa,
                memory_mib=mib,
                board_memory_slices=board_slices,
            )
        )
    if board_slices != MEMORY_SLICES:
        options.setdefault("max_gpu_instances", board_slices)
    return MigTable(family, tuple(profiles), board_slices, **options)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Tables. Memory is what the driver reports in MiB (`-lgip` GiB x 1024; MIG device totals in
# captures are the same figures).

# A100: the MIG User Guide notes 1g+me from R470; 1g double-memory (ID 15) is missing from an
# older driver's listing of an A100 80GB. Unknown: the branch that added ID 15 (taken as R525).
# Older listings (an R470-era User Guide transcript for the 40GB board; an older-driver run
# of the 80GB board) show other sizes; the R510 A100-40GB capture shows today's.
# Unknown: the branch where the sizes changed (taken as R510, the oldest capture with them).
_A100_SINCE = ((20, (470,)), (15, (525,)))
# MIG User Guide: before R510 a 4g and a 3g instance could not exist together.
_A100_APART = (((510,), (5, 9)),)
A100_40GB = _table(
    "a100",
    {
        "1g": ("1g.5gb", 4864),
        "1g+me": ("1g.5gb+me", 4864),
        "1g2x": ("1g.10gb", 9856),
        "2g": ("2g.10gb", 9856),
        "3g": ("3g.20gb", 19968),
        "4g": ("4g.20gb", 19968),
        "7g": ("7g.40gb", 40192),
    },
    family="ampere",
    since=_A100_SINCE,
    apart_before=_A100_APART,
    memory_before=(((510,), ((14, 9984), (9, 20096), (5, 20096), (0, 40448))),),
)
A100_80GB = _table(
    "a100",
    {
        "1g": ("1g.10gb", 9856),
        "1g+me": ("1g.10gb+me", 9856),
        "1g2x": ("1g.20gb", 19968),
        "2g": ("2g.20gb", 19968),
        "3g": ("3g.40gb", 40192),
        "4g": ("4g.40gb", 40192),
        "7g": ("7g.80gb", 80384),
    },
    family="ampere",
    since=_A100_SINCE,
    apart_before=_A100_APART,
    memory_before=(((510,), ((19, 9728), (20, 9728), (0, 80640))),),
)
# A30: real `-lgip`/`-lgipp` listings in public notes (IDs 14, 21, 5, 6, 0; {0,1,2,3}:1,
# {0,2}:2, {0}:4; 5.81 / 11.69 / 23.44 GiB); MIG User Guide (1g.6gb+me from R470,
# 2g.12gb+me from R525, MIG from R460). A listing without 2g.12gb+me (so before R525) shows
# 4g.24gb at 23.50 GiB. Unknown: the exact branch of that change (taken as R525).
A30_24GB = _table(
    "a30",
    {
        "1g": ("1g.6gb", 5952),
        "1g+me": ("1g.6gb+me", 5952),
        "2g": ("2g.12gb", 11968),
        "2g+me": ("2g.12gb+me", 11968),
        "4g": ("4g.24gb", 24000),
    },
    family="ampere",
    board_slices=4,
    min_driver=(460,),
    since=((21, (470,)), (6, (525,))),
    memory_before=(((525,), ((0, 24064),)),),
)
_H100_80GB_NAMES = {
    "1g": ("1g.10gb", 9984),
    "1g+me": ("1g.10gb+me", 9984),
    "1g2x": ("1g.20gb", 20096),
    "2g": ("2g.20gb", 20096),
    "3g": ("3g.40gb", 40448),
    "4g": ("4g.40gb", 40448),
    "7g": ("7g.80gb", 81152),
}
# H100 80GB: the H100 capture (590.48.01) shows 3g.40gb 40448, 2g.20gb 20096, 1g.10gb 9984;
# a real R580 `-lgip` listing the rest. Another driver reported 9.62/19.50/39.25 GiB.
# Unknown: which branch that was, so no older sizes are modelled.
# MIG BAR1: the same capture (mig_bar1_bytes).
H100_80GB = _table(
    "h100", _H100_80GB_NAMES, min_driver=(525,), bar1_per_slice_kib=6185 * 1024
)
# H100 PCIe and H800 PCIe: names per gpu-operator's mig-parted config (0x2331, 0x2322 with
# the H100-80GB profiles); SMs from a real 570.169 listing (see engines).
# Unknown: memory sizes (the H100 SXM ones).
H100_PCIE = _table("h100-pcie", _H100_80GB_NAMES, min_driver=(525,))
# H100 94 GB, PCIe (H100 NVL, H800 NVL) and SXM5: an R560 walkthrough and the `-lgip` of an
# H100 NVL in https://github.com/NVIDIA/gpu-operator/pull/903; the MIG User Guide's one table for both (names, instance counts,
# engines) agrees. Unknown: the H100-SXM5 94GB's sizes (no listing; the NVL's are taken).
H100_NVL = _table(
    "h100",
    {
        "1g": ("1g.12gb", 11008),
        "1g+me": ("1g.12gb+me", 11008),
        "1g2x": ("1g.24gb", 22144),
        "2g": ("2g.24gb", 22144),
        "3g": ("3g.47gb", 47488),
        "4g": ("4g.47gb", 47488),
        "7g": ("7g.94gb", 95360),
    },
    min_driver=(525,),
)
# 96 GB Hopper boards (GH200 96GB, H20): names per gpu-operator's config (all-balanced for
# 0x2342/0x2329: 1g.12gb, 2g.24gb, 3g.48gb; all-7g.96gb).
# Unknown: memory sizes (H100 NVL's scaled by 96/94 to 128 MiB).
_HOPPER_96GB_NAMES = {
    "1g": ("1g.12gb", 11264),
    "1g+me": ("1g.12gb+me", 11264),
    "1g2x": ("1g.24gb", 22656),
    "2g": ("2g.24gb", 22656),
    "3g": ("3g.48gb", 48512),
    "4g": ("4g.48gb", 48512),
    "7g": ("7g.96gb", 97408),
}
# Unknown: the first MIG driver of either GH200 (the User Guide lists none; R535 and R550,
# the H20's and the H200's, are taken for the 96 GB and 144 GB boards).
GH200_96GB = _table("h100", _HOPPER_96GB_NAMES, min_driver=(535,))
# H20: MIG from R535 (MIG User Guide, deployment considerations).
H20_96GB = _table("h20", _HOPPER_96GB_NAMES, min_driver=(535,))
# H200 / H200 NVL: mig-parted #120 `-lgip` (an H200 SXM, R550,
# https://github.com/NVIDIA/mig-parted/issues/120); MIG from R550 (User Guide).
# A real H200 on driver 590 reports 2g.35gb and 3g.71gb MIG devices 256 MiB larger than that
# listing: 33280 and 71424 MiB (https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h200-mig__590.48.01.txt). Profiles of the same memory slices have the same memory in
# every real listing (that one: 1g.35gb = 2g.35gb, 3g.71gb = 4g.71gb; A100, H100 and H100
# NVL alike), so 1g.35gb and 4g.71gb take the new sizes too.
# Unknown: the H200 NVL's sizes (the H200 SXM's are taken); the branch of that change (taken
# as R590, the one observed); whether 1g.18gb and 7g.141gb changed with it (kept as R550's).
H200_141GB = _table(
    "h100",
    {
        "1g": ("1g.18gb", 16384),
        "1g+me": ("1g.18gb+me", 16384),
        "1g2x": ("1g.35gb", 33280),  # as 2g.35gb (the same two memory slices)
        "2g": ("2g.35gb", 33280),  # a real H200 on 590
        "3g": ("3g.71gb", 71424),  # a real H200 on 590
        "4g": ("4g.71gb", 71424),  # as 3g.71gb (the same four memory slices)
        "7g": ("7g.141gb", 143104),
    },
    min_driver=(550,),
    # mig-parted #120's R550 `-lgip`: 1g.35gb (ID 15) and 2g.35gb (ID 14) 33024, 3g.71gb
    # (ID 9) and 4g.71gb (ID 5) 71168 MiB.
    memory_before=(((590,), ((15, 33024), (14, 33024), (9, 71168), (5, 71168))),),
    # MIG BAR1: the same H200 on driver 590 (mig_bar1_bytes).
    bar1_per_slice_kib=14809 * 1024 + 512,
)
# GH200 144G HBM3e: mig-parted #139 / gpu-operator #1057 `-lgip` (1g 17.50, 1g.36gb and
# 2g.36gb 35.25 GiB); names of the rest from gpu-operator's config.
# Unknown: 3g, 4g and 7g sizes (twice and four times the 2g's).
GH200_144GB = _table(
    "h100",
    {
        "1g": ("1g.18gb", 17920),
        "1g+me": ("1g.18gb+me", 17920),
        "1g2x": ("1g.36gb", 36096),
        "2g": ("2g.36gb", 36096),
        "3g": ("3g.72gb", 72192),
        "4g": ("4g.72gb", 72192),
        "7g": ("7g.144gb", 144384),
    },
    min_driver=(550,),
)
# B200: gpu-operator #1351 / mig-parted #187 `-lgip` (1g 20.50, 1g.45gb and 2g 44.25 GiB);
# gpu-operator #2155's MIG devices (20992 and 45312 MiB) agree. MIG from R570 (User Guide).
# An earlier listing (gpu-operator #1242, January 2025, before the R570 release the guide
# requires) showed 1g at 22.00 GiB. Unknown: 3g, 4g and 7g sizes (twice / four times 2g's).
B200_180GB = _table(
    "b200",
    {
        "1g": ("1g.23gb", 20992),
        "1g+me": ("1g.23gb+me", 20992),
        "1g2x": ("1g.45gb", 45312),
        "2g": ("2g.45gb", 45312),
        "3g": ("3g.90gb", 90624),
        "4g": ("4g.90gb", 90624),
        "7g": ("7g.180gb", 181248),
    },
    family="blackwell",
    min_driver=(570,),
)
# GB200: mig-parted #227 `-lgip` of a production board (1g.23gb 22.00, 1g.47gb and 2g.47gb
# 45.50 GiB); names of the rest from gpu-operator's config (3g.93gb, 7g.186gb). Pre-production
# boards listed 1g.24gb at 20.00 GiB (gpu-operator #1303; mig-parted #228 replaced them).
# Unknown: 3g, 4g and 7g sizes (twice / four times the 2g's).
GB200_186GB = _table(
    "gb200",
    {
        "1g": ("1g.23gb", 22528),
        "1g+me": ("1g.23gb+me", 22528),
        "1g2x": ("1g.47gb", 46592),
        "2g": ("2g.47gb", 46592),
        "3g": ("3g.93gb", 93184),
        "4g": ("4g.93gb", 93184),
        "7g": ("7g.186gb", 186368),
    },
    family="blackwell",
    min_driver=(570,),
)
# RTX PRO 6000 Blackwell (Server, Workstation and Max-Q editions): 4 slices (MIG User Guide:
# at most 4 instances, R575 and later). Sizes from the real 580.105.08 `-lgip` (see
# _SHAPES_4): 23.62 / 47.38 / 95.00 GiB, as GKE #564 lists the 1g; cubecos #312 lists 23.12
# GiB. Unknown: the branch of that one (the newer listing is taken for every branch).
RTX_PRO_6000 = _table(
    "rtx-pro-6000",
    {
        "1g": ("1g.24gb", 24192),
        "1g+me": ("1g.24gb+me", 24192),
        "1g+gfx": ("1g.24gb+gfx", 24192),
        "1g+me.all": ("1g.24gb+me.all", 24192),
        "1g-me": ("1g.24gb-me", 24192),
        "2g": ("2g.48gb", 48512),
        "2g+gfx": ("2g.48gb+gfx", 48512),
        "2g+me.all": ("2g.48gb+me.all", 48512),
        "2g-me": ("2g.48gb-me", 48512),
        "4g": ("4g.96gb", 97280),
        "4g+gfx": ("4g.96gb+gfx", 97280),
    },
    family="blackwell",
    board_slices=4,
    min_driver=(575,),
)
# RTX PRO 5000 Blackwell (48 GB) before R590: the R580 MIG User Guide's table 10 (names,
# instance counts: one 1g of each media kind, three 1g-me, one 2g-me), MIG from R575.
# Unknown: profile IDs (the RTX PRO 6000's), memory sizes (no listing: the RTX PRO 6000's
# real rows of the same nominal size, 2g.24gb-me as its 1g.24gb, 4g.48gb as its 2g.48gb;
# 1g.12gb half the 1g.24gb), and whether a real R580 driver lists this table: the same
# guide's GPU list says at most 2 instances, as the later guides' 2-slice table does.
RTX_PRO_5000_R580 = _table(
    "rtx-pro-5000-r580",
    {
        "1g": ("1g.12gb", 12096),
        "1g+me": ("1g.12gb+me", 12096),
        "1g+gfx": ("1g.12gb+gfx", 12096),
        "1g-me": ("1g.12gb-me", 12096),
        "2g-me": ("2g.24gb-me", 24192),
        "4g": ("4g.48gb", 48512),
        "4g+gfx": ("4g.48gb+gfx", 48512),
    },
    family="blackwell",
    board_slices=4,
    counts={"1g": 1, "1g+gfx": 1, "1g-me": 3, "2g-me": 1},
    min_driver=(575,),
)
# RTX PRO 5000 Blackwell from R590: the current MIG User Guide's table (2 slices, at most 2
# instances: 1g.24gb, its +me, +gfx, +me.all and -me kinds, 2g.48gb and 2g.48gb+gfx).
# Unknown: the branch of the change (taken as R590, the first guide after R580's), profile IDs
# (see _SHAPES_2), and memory sizes: no listing; the RTX PRO 6000's real rows of the same
# nominal size (1g.24gb: 24192 MiB, 2g.48gb: 48512), as for the R580 table.
RTX_PRO_5000 = _table(
    "rtx-pro-5000",
    {
        "1g": ("1g.24gb", 24192),
        "1g+me": ("1g.24gb+me", 24192),
        "1g+gfx": ("1g.24gb+gfx", 24192),
        "1g+me.all": ("1g.24gb+me.all", 24192),
        "1g-me": ("1g.24gb-me", 24192),
        "2g": ("2g.48gb", 48512),
        "2g+gfx": ("2g.48gb+gfx", 48512),
    },
    family="blackwell",
    board_slices=2,
    min_driver=(575,),
    table_before=(((590,), RTX_PRO_5000_R580),),
)
# RTX PRO 4500 Blackwell (32 GB): the current MIG User Guide's table (2 slices, at most 2
# instances); MIG from R575 (575.64, the guide's deployment considerations).
# Unknown: profile IDs (see _SHAPES_2) and memory sizes: no listing; two thirds (32 GB of
# 48) of the RTX PRO 6000's real 1g.24gb and 2g.48gb (24192 and 48512 MiB), rounded down to
# 128 MiB as listed sizes are: 16128 and 32256.
RTX_PRO_4500 = _table(
    "rtx-pro-4500",
    {
        "1g": ("1g.16gb", 16128),
        "1g+gfx": ("1g.16gb+gfx", 16128),
        "1g+me.all": ("1g.16gb+me.all", 16128),
        "1g-me": ("1g.16gb-me", 16128),
        "2g": ("2g.32gb", 32256),
        "2g+gfx": ("2g.32gb+gfx", 32256),
    },
    family="blackwell",
    board_slices=2,
    min_driver=(575,),
)
