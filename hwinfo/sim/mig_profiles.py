"""MIG profile tables, placements, GPU-instance id numbering and remaining capacity.

Facts from shared/research/nvml-facts.md §2-§3 (MIG User Guide `nvidia-smi mig -lgip/-lgipp`
transcripts, NVIDIA go-nvml A100 mocks, an H100 NVL walkthrough, mig-parted issue #120) and
the NVML_*_PROFILE_* constants of pynvml/nvml.h.

A GPU has 8 memory slices and 7 compute slices. A GPU instance (GI) occupies a run of memory
slices (its placement: start, size); a compute instance (CI) occupies a run of its GI's
compute slices. Placements of one profile never overlap each other, so "how many more fit"
is the number of its placements that do not overlap an existing instance.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MEMORY_SLICES = 8
# NVML_GPU_INSTANCE_PROFILE_COUNT / NVML_COMPUTE_INSTANCE_PROFILE_COUNT: profile indices at or
# past these answer InvalidArgument, known-but-absent ones NotSupported (nvml.h).
GPU_INSTANCE_PROFILE_COUNT = 0x12
COMPUTE_INSTANCE_PROFILE_COUNT = 0x9
# NVML_COMPUTE_INSTANCE_PROFILE_* index for a CI of N compute slices.
_CI_PROFILE_INDEX = {1: 0x0, 2: 0x1, 3: 0x2, 4: 0x3, 7: 0x4}
CI_PROFILE_1_SLICE_REV1 = 0x7


@dataclass(frozen=True)
class GpuInstanceProfile:
    """One row of `nvidia-smi mig -lgip` for one board."""

    index: int  # NVML_GPU_INSTANCE_PROFILE_* constant: what GetGpuInstanceProfileInfo takes
    id: int  # profile ID (19/20/15/14/9/5/0): what every other GI call takes
    name: str  # "3g.40gb", "1g.10gb+me"
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

    @property
    def bar1_fraction(self) -> float:
        """Share of the board's BAR1 a MIG device of this profile gets."""
        return self.memory_slices / MEMORY_SLICES


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
    """The MIG profiles of one board."""

    family: str  # "ampere" or "hopper": decides engine counts and CI profile quirks
    profiles: tuple[GpuInstanceProfile, ...]
    by_name: dict[str, GpuInstanceProfile] = field(init=False, repr=False, compare=False)
    by_id: dict[int, GpuInstanceProfile] = field(init=False, repr=False, compare=False)
    by_index: dict[int, GpuInstanceProfile] = field(init=False, repr=False, compare=False)
    # GI profile id -> the CI profiles a GI of that profile offers.
    ci_profiles: dict[int, tuple[ComputeInstanceProfile, ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {p.name: p for p in self.profiles})
        object.__setattr__(self, "by_id", {p.id: p for p in self.profiles})
        object.__setattr__(self, "by_index", {p.index: p for p in self.profiles})
        ci = {p.id: _compute_instance_profiles(p, self.family == "hopper") for p in self.profiles}
        object.__setattr__(self, "ci_profiles", ci)


# Profile shapes shared by A100, H100, H100 NVL and H200 (facts §3; `-lgipp` placements):
# key -> (index constant, profile id, compute slices, memory slices, instance count, starts).
_SHAPES: dict[str, tuple[int, int, int, int, int, tuple[int, ...]]] = {
    "1g": (0x0, 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
    "1g+me": (0x7, 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g2x": (0x9, 15, 1, 2, 4, (0, 2, 4, 6)),  # 1_SLICE_REV2: one slice, twice the memory
    "2g": (0x1, 14, 2, 2, 3, (0, 2, 4)),
    "3g": (0x2, 9, 3, 4, 2, (0, 4)),
    "4g": (0x3, 5, 4, 4, 1, (0,)),
    "7g": (0x4, 0, 7, 8, 1, (0,)),
}

# Engines per shape as SM / copy / decoder / JPEG / OFA; no MIG profile has an encoder (facts §3).
_ENGINES: dict[str, dict[str, tuple[int, int, int, int, int]]] = {
    "ampere": {
        "1g": (14, 1, 0, 0, 0),
        "1g+me": (14, 1, 1, 1, 1),
        "1g2x": (14, 1, 1, 0, 0),
        "2g": (28, 2, 1, 0, 0),
        "3g": (42, 3, 2, 0, 0),
        "4g": (56, 4, 2, 0, 0),
        "7g": (98, 7, 5, 1, 1),
    },
    "hopper": {
        "1g": (16, 1, 1, 1, 0),
        "1g+me": (16, 1, 1, 1, 1),
        "1g2x": (26, 1, 1, 1, 0),
        "2g": (32, 2, 2, 2, 0),
        "3g": (60, 3, 3, 3, 0),
        "4g": (64, 4, 4, 4, 0),
        "7g": (132, 8, 7, 7, 1),
    },
}


def _table(family: str, memory: dict[str, tuple[str, int]]) -> MigTable:
    """Build a board's table from its family's engines and its shape -> (name, MiB) map."""
    profiles = []
    for shape, (name, mib) in memory.items():
        index, pid, slices, mem_slices, count, starts = _SHAPES[shape]
        sm, ce, dec, jpeg, ofa = _ENGINES[family][shape]
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
                encoder_count=0,
                jpeg_count=jpeg,
                ofa_count=ofa,
                memory_mib=mib,
            )
        )
    return MigTable(family, tuple(profiles))


def default_gpu_instance_id(start: int, memory_slices: int) -> int:
    """GI id NVML gives a placement: the memory slices numbered as a binary heap.

    Observed (facts §2): 7g -> 0; 4g/3g at slot 0/4 -> 1/2; 2g (and 1g double-memory) at slot
    0/2/4/6 -> 3/4/5/6; 1g at slot 0..6 -> 7..13; H100 NVL 1g.24gb -> 5.
    """
    return MEMORY_SLICES // memory_slices - 1 + start // memory_slices


def placement_mask(start: int, size: int) -> int:
    """Bit mask of the slices a placement occupies."""
    return ((1 << size) - 1) << start


def _compute_instance_profiles(
    gi: GpuInstanceProfile, hopper: bool
) -> tuple[ComputeInstanceProfile, ...]:
    """CI profiles a GI of this profile offers, as `nvidia-smi mig -lcip` lists them.

    A CI of c slices in a GI of S slices: S // c of them fit (1c.3g: 3, 2c.3g: 1, 3c.7g: 2),
    named "<c>c.<gi name>" unless it spans the whole GI.
    """
    out = []
    s = gi.slice_count
    for c, index in _CI_PROFILE_INDEX.items():
        if c > s:
            continue
        whole = c == s
        if whole and hopper and gi.id == 15:
            # facts §2: on H100 the 1g.20gb CI uses ID 7 (COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1).
            index = CI_PROFILE_1_SLICE_REV1
        # Unknown: placements of partial CIs are not in the facts; 3-slice CIs are taken to
        # sit at compute slices 0 and 4 like 3g GIs, every other size aligned to itself.
        step = 4 if c == 3 else c
        starts = tuple(range(0, s - c + 1, step))
        # Unknown: SM counts of partial Hopper CIs; taken as a proportional share of the GI.
        sm = gi.multiprocessor_count if whole else gi.multiprocessor_count * c // s
        out.append(
            ComputeInstanceProfile(
                index=index,
                name=gi.name if whole else f"{c}c.{gi.name}",
                slice_count=c,
                instance_count=len(starts),
                placement_starts=starts,
                multiprocessor_count=sm,
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


# Memory per profile: nvidia-smi `-lgip` GiB x 1024 on current drivers (facts §3 table).
A100_40GB = _table(
    "ampere",
    {
        "1g": ("1g.5gb", 4864),
        "1g+me": ("1g.5gb+me", 4864),
        "1g2x": ("1g.10gb", 9856),
        "2g": ("2g.10gb", 9856),
        "3g": ("3g.20gb", 19968),
        "4g": ("4g.20gb", 19968),
        "7g": ("7g.40gb", 40192),
    },
)
A100_80GB = _table(
    "ampere",
    {
        "1g": ("1g.10gb", 9856),
        "1g+me": ("1g.10gb+me", 9856),
        "1g2x": ("1g.20gb", 19968),
        "2g": ("2g.20gb", 19968),
        "3g": ("3g.40gb", 40192),
        "4g": ("4g.40gb", 40192),
        "7g": ("7g.80gb", 80384),
    },
)
H100_80GB = _table(
    "hopper",
    {
        "1g": ("1g.10gb", 9984),
        "1g+me": ("1g.10gb+me", 9984),
        "1g2x": ("1g.20gb", 20096),
        "2g": ("2g.20gb", 20096),
        "3g": ("3g.40gb", 40448),
        "4g": ("4g.40gb", 40448),
        "7g": ("7g.80gb", 81152),
    },
)
H100_NVL = _table(
    "hopper",
    {
        "1g": ("1g.12gb", 11008),
        "1g+me": ("1g.12gb+me", 11008),
        "1g2x": ("1g.24gb", 22144),
        "2g": ("2g.24gb", 22144),
        "3g": ("3g.47gb", 47488),
        "4g": ("4g.47gb", 47488),
        "7g": ("7g.94gb", 95360),
    },
)
# mig-parted issue #120; the 2g row is inferred there (facts §3).
H200_141GB = _table(
    "hopper",
    {
        "1g": ("1g.18gb", 16384),
        "1g+me": ("1g.18gb+me", 16384),
        "1g2x": ("1g.35gb", 33024),
        "2g": ("2g.35gb", 33024),
        "3g": ("3g.71gb", 71168),
        "4g": ("4g.71gb", 71168),
        "7g": ("7g.141gb", 143104),
    },
)
