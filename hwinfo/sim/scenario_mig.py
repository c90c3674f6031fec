"""A scenario GPU's MIG mode: GPU and compute instances, by profile or described."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hwinfo import inputs
from hwinfo.mig import profiles as mig_profiles
from hwinfo.mig.profiles import (
    ComputeInstanceProfile,
    GpuInstanceProfile,
    MigTable,
    default_gpu_instance_id,
    fit_placements,
)
from hwinfo.sim.boards import Board
from hwinfo.sim.scenario_bounds import MAX_MEMORY_MIB, MAX_SMS, MIG_MIN_DRIVER
from hwinfo.sim.scenario_defaults import MEMORY_SLICES_GUESS, PROFILE_ID_GUESS
from hwinfo.sim.scenario_model import (
    GUESSED_GI_FACTS,
    ComputeInstanceSpec,
    GpuInstanceSpec,
    MigSpec,
)
from hwinfo.sim.scenario_reader import Reader, opt_int, opt_str, read_gpm

_GI_KEYS = ("profile", "start", "id", "compute_instances", "gpm", "guessed")
# Exact figures a dump showed for a GPU instance's MIG devices (GpuInstanceSpec fields).
_GI_DUMP_KEYS = (
    "memory_total_mib",
    "memory_used_mib",
    "memory_free_mib",
    "bar1_total_mib",
    "sram_uncorrected_volatile",
)


def parse_mig(
    r: Reader, path: str, value: object, board: Board | None, driver: tuple[int, ...]
) -> MigSpec:
    """A GPU's `mig` object: profiles, placements, ids and compute instances, all checked."""
    data = r.obj(path, value, ("enabled", "pending", "gpu_instances"), ("enabled",))
    if driver < MIG_MIN_DRIVER:
        r.fail(path, f"MIG needs driver {MIG_MIN_DRIVER[0]} or later")
    enabled = r.bool(inputs.member(path, "enabled"), data["enabled"])
    pending = r.bool(inputs.member(path, "pending"), data.get("pending", enabled))
    gi_path = inputs.member(path, "gpu_instances")
    items = r.list(gi_path, data.get("gpu_instances", []))
    if items and not enabled:
        r.fail(gi_path, "GPU instances need MIG enabled")
    if board is None:
        # A GPU outside the catalogue (a dump of a MIG board it lacks): its GPU instances are
        # described by what the dump showed of them.
        return MigSpec(enabled, pending, _described_instances(r, gi_path, items))
    if board.mig is None:
        r.fail(path, f"board {board.key} has no MIG support (give null, or a board that has MIG)")
    # The profiles, and their memory sizes, a driver of this branch reports for the board.
    table = board.mig.for_driver(driver)
    if enabled and driver < table.min_driver:
        r.fail(
            inputs.member(path, "enabled"),
            f"MIG on board {board.key} needs driver {table.min_driver[0]} or later",
        )
    requests = []
    for i, item in enumerate(items):
        p = inputs.member(gi_path, i)
        gi = r.obj(p, item, (*_GI_KEYS, *_GI_DUMP_KEYS), ("profile",))
        name = r.str(inputs.member(p, "profile"), gi["profile"])
        profile = table.by_name.get(name)
        if profile is None:
            known = ", ".join(pr.name for pr in table.profiles)
            newer = " on this driver" if name in board.mig.by_name else ""
            r.fail(
                inputs.member(p, "profile"),
                f"unknown profile {inputs.shown(name)} for board {board.key}{newer} "
                f"(known: {known})",
            )
        start = gi.get("start")
        if start is not None:
            start = r.int(inputs.member(p, "start"), start)
            if start not in profile.placement_starts:
                r.fail(
                    inputs.member(p, "start"),
                    f"{name} can start at {_starts(profile.placement_starts)}, not {start}",
                )
        requests.append((p, gi, profile, start))
    for profile in table.profiles:
        used = [p for p, _, pr, _ in requests if pr is profile]
        if len(used) > profile.instance_count:
            r.fail(
                used[-1],
                f"at most {profile.instance_count} instance(s) of {profile.name} fit on a GPU",
            )
    _check_fixed_overlaps(
        r, [(p, pr.memory_slices, st) for p, _, pr, st in requests], "memory slices"
    )
    starts = fit_placements(
        [(pr.placement_starts, pr.memory_slices, st) for _, _, pr, st in requests]
    )
    if starts is None:
        r.fail(
            gi_path,
            f"these GPU instances do not fit on the GPU's {table.memory_slices} memory slices "
            "together",
        )
    if not table.can_coexist(pr for _, _, pr, _ in requests):
        r.fail(
            gi_path,
            "these GPU instances cannot exist together on this board and driver (more copy or "
            "media engines than the GPU has, or a profile pair the driver refuses)",
        )
    instances = []
    ids: dict[int, str] = {}
    for (p, gi, profile, _), start in zip(requests, starts):
        gid = gi.get("id")
        gid = (
            default_gpu_instance_id(start, profile.memory_slices, table.memory_slices)
            if gid is None
            else r.int(inputs.member(p, "id"), gid)
        )
        if gid in ids:
            r.fail(inputs.member(p, "id"), f"GPU instance id {gid} is also used by {ids[gid]}")
        ids[gid] = p
        cis = _parse_compute_instances(
            r, inputs.member(p, "compute_instances"), gi.get("compute_instances"), table, profile
        )
        gpm = None if gi.get("gpm") is None else read_gpm(r, inputs.member(p, "gpm"), gi["gpm"])
        memory = {key: opt_int(r, p, gi, key, MAX_MEMORY_MIB) for key in _GI_DUMP_KEYS}
        instances.append(GpuInstanceSpec(gid, start, profile, cis, gpm, **memory,
                                         guessed=_guessed(r, p, gi)))
    return MigSpec(enabled, pending, tuple(instances))


def _guessed(r: Reader, path: str, gi: dict[str, object]) -> frozenset[str]:
    """A GPU instance's `guessed`: which of its facts an import inferred."""
    where = inputs.member(path, "guessed")
    return frozenset(r.choice(inputs.member(where, i), fact, GUESSED_GI_FACTS)
                     for i, fact in enumerate(r.list(where, gi.get("guessed", []))))


# Keys of a GPU instance on a GPU without a profile table (a board outside the catalogue).
_DESCRIBED_GI_KEYS = (
    "profile",
    "id",
    "start",
    "profile_id",
    "memory_slices",
    "engines",
    "compute_instances",
    "guessed",
    *_GI_DUMP_KEYS,
)
_ENGINE_KEYS = ("copy", "decoder", "encoder", "jpeg", "ofa")
# NVML_COMPUTE_INSTANCE_PROFILE_* for a compute instance of N slices (nvml.h).
_CI_PROFILE_INDEX = {1: 0x0, 2: 0x1, 3: 0x2, 4: 0x3, 6: 0x6, 7: 0x4, 8: 0x5}


def _described_instances(
    r: Reader, path: str, items: list[object]
) -> tuple[GpuInstanceSpec, ...]:
    """GPU instances given by their own facts, for a GPU whose board has no MIG table."""
    requests = []
    for i, item in enumerate(items):
        p = inputs.member(path, i)
        gi = r.obj(
            p,
            item,
            _DESCRIBED_GI_KEYS,
            ("profile", "id", "memory_total_mib", "compute_instances"),
        )
        name = r.str(inputs.member(p, "profile"), gi["profile"])
        shape = re.fullmatch(r"(\d)g\.\d+gb(\+\S+)?", name)
        if shape is None:
            r.fail(inputs.member(p, "profile"), f"expected a profile name like '1g.10gb', got {name!r}")
        slices = int(shape.group(1))
        size = r.int(
            inputs.member(p, "memory_slices"),
            gi.get("memory_slices", MEMORY_SLICES_GUESS.get(slices, slices)),
            1,
            mig_profiles.MEMORY_SLICES,
        )
        engines = r.obj(inputs.member(p, "engines"), gi.get("engines", {}), _ENGINE_KEYS)
        counts = {k: r.int(inputs.member(inputs.member(p, "engines"), k), engines.get(k, 0)) for k in _ENGINE_KEYS}
        ci_path = inputs.member(p, "compute_instances")
        cis = []
        for j, ci_item in enumerate(r.list(ci_path, gi["compute_instances"])):
            cp = inputs.member(ci_path, j)
            ci = r.obj(cp, ci_item, ("multiprocessor_count", "slices", "uuid"),
                       ("multiprocessor_count",))
            ci_slices = ci.get("slices")
            if ci_slices is None and len(gi["compute_instances"]) > 1:  # type: ignore[arg-type]
                r.fail(inputs.member(cp, "slices"), "required when a GPU instance has several")
            cis.append(
                (
                    r.int(inputs.member(cp, "multiprocessor_count"), ci["multiprocessor_count"], 1),
                    slices if ci_slices is None else r.int(inputs.member(cp, "slices"), ci_slices, 1, slices),
                    opt_str(r, cp, ci, "uuid"),
                )
            )
        if not cis:
            r.fail(ci_path, "a GPU instance needs at least one compute instance")
        start = gi.get("start")
        profile = GpuInstanceProfile(
            index=-1,  # not listed: the board's profile table is unknown
            id=r.int(inputs.member(p, "profile_id"), gi.get("profile_id", PROFILE_ID_GUESS.get(slices, 0))),
            name=name,
            slice_count=slices,
            memory_slices=size,
            instance_count=1,
            # Unknown: the board's placements; a run of `size` slots at a multiple of it.
            placement_starts=tuple(range(0, mig_profiles.MEMORY_SLICES - size + 1, size)),
            multiprocessor_count=sum(sms for sms, _, _ in cis),
            copy_engine_count=counts["copy"],
            decoder_count=counts["decoder"],
            encoder_count=counts["encoder"],
            jpeg_count=counts["jpeg"],
            ofa_count=counts["ofa"],
            memory_mib=r.int(inputs.member(p, "memory_total_mib"), gi["memory_total_mib"]),
        )
        requests.append((p, gi, profile, None if start is None else r.int(inputs.member(p, "start"), start), cis))
    _check_fixed_overlaps(r, [(p, pr.memory_slices, st) for p, _, pr, st, _ in requests], "memory slices")
    starts = fit_placements([(pr.placement_starts, pr.memory_slices, st) for _, _, pr, st, _ in requests])
    if starts is None:
        r.fail(path, "these GPU instances do not fit on the GPU's 8 memory slices together")
    instances = []
    ids: dict[int, str] = {}
    for (p, gi, profile, _, cis), start in zip(requests, starts):
        gid = r.int(inputs.member(p, "id"), gi["id"])
        if gid in ids:
            r.fail(inputs.member(p, "id"), f"GPU instance id {gid} is also used by {ids[gid]}")
        ids[gid] = p
        computes = []
        offset = 0
        for number, (sms, ci_slices, ci_uuid) in enumerate(cis):
            ci_name = profile.name
            if ci_slices != profile.slice_count:
                ci_name = f"{ci_slices}c.{profile.name}"
            ci_profile = ComputeInstanceProfile(
                _CI_PROFILE_INDEX.get(ci_slices, 0), ci_name, ci_slices, 1, (offset,), sms
            )
            computes.append(ComputeInstanceSpec(number, offset, ci_profile, None, uuid=ci_uuid))
            offset += ci_slices
        memory = {key: opt_int(r, p, gi, key, MAX_MEMORY_MIB) for key in _GI_DUMP_KEYS}
        instances.append(GpuInstanceSpec(gid, start, profile, tuple(computes), **memory,
                                         guessed=_guessed(r, p, gi)))
    return tuple(instances)


def _parse_compute_instances(
    r: Reader, path: str, value: object, table: MigTable, gi: GpuInstanceProfile
) -> tuple[ComputeInstanceSpec, ...]:
    offered = {c.slice_count: c for c in table.ci_profiles[gi.id]}
    whole = offered[gi.slice_count]
    if value is None:
        return (ComputeInstanceSpec(0, 0, whole, None),)
    requests = []
    for i, item in enumerate(r.list(path, value)):
        p = inputs.member(path, i)
        data = r.obj(p, item, ("slices", "memory_used_mib", "multiprocessor_count", "uuid"),
                     ("slices",))
        slices = r.int(inputs.member(p, "slices"), data["slices"], 1)
        profile = offered.get(slices)
        if profile is None:
            r.fail(
                inputs.member(p, "slices"),
                f"a {gi.name} GPU instance offers compute instances of "
                f"{_starts(sorted(offered))} slices, not {slices}",
            )
        memory = data.get("memory_used_mib")
        requests.append(
            (
                p,
                profile,
                None
                if memory is None
                else r.int(inputs.member(p, "memory_used_mib"), memory, 0, MAX_MEMORY_MIB),
                opt_int(r, p, data, "multiprocessor_count", MAX_SMS),
                opt_str(r, p, data, "uuid"),
            )
        )
    if not requests:
        r.fail(path, "a GPU instance needs at least one compute instance")
    for profile in offered.values():
        used = [p for p, pr, *_ in requests if pr is profile]
        if len(used) > profile.instance_count:
            r.fail(
                used[-1],
                f"at most {profile.instance_count} compute instance(s) of {profile.name} fit",
            )
    starts = fit_placements(
        [(pr.placement_starts, pr.slice_count, None) for _, pr, *_ in requests]
    )
    if starts is None:
        r.fail(
            path, f"these compute instances do not fit in the {gi.slice_count} slices of {gi.name}"
        )
    # Unknown: NVML numbers CIs in creation order; the list order stands in for it.
    return tuple(
        ComputeInstanceSpec(i, start, profile, memory, sms, ci_uuid)
        for i, ((_, profile, memory, sms, ci_uuid), start) in enumerate(zip(requests, starts))
    )


def _check_fixed_overlaps(r: Reader, items: list[tuple[str, int, int | None]], what: str) -> None:
    """Name the first pair of explicitly placed instances that overlap."""
    for i, (path, size, start) in enumerate(items):
        if start is None:
            continue
        for other_path, other_size, other in items[:i]:
            if other is not None and (
                mig_profiles.placement_mask(start, size)
                & mig_profiles.placement_mask(other, other_size)
            ):
                r.fail(
                    inputs.member(path, "start"),
                    f"placement {start}:{size} overlaps {other_path} "
                    f"({other}:{other_size}) on the {what}",
                )


def _starts(values: Iterable[int]) -> str:
    return "{" + ",".join(str(v) for v in values) + "}"
