"""A MIG GPU's GPU instances rebuilt from what an nvidia-smi dump shows of its MIG devices.

`-q` lists one MIG device per compute instance (its GPU and compute instance ids, SMs and
memory) and names no profile; a capture's `mig -lgi` and `-L` sections name them and place
them. Profiles come from the catalogue's MIG table, or are described by the dump's own facts
for a board the catalogue lacks; whatever had to be inferred is said in `guessed`.
"""

from __future__ import annotations

import re
from typing import Any

from hwinfo.mig import profiles as mig_profiles
from hwinfo.mig.profiles import GpuInstanceProfile, MigTable
from hwinfo.sim.boards import Board
from hwinfo.sim.importer_capture import MigPlacement
from hwinfo.sim.importer_fields import MIG_DEVICE_FIELDS, DumpError

_MIG_DEVICE_REQUIRED = ("gpu_instance_id", "compute_instance_id", "sm_count", "memory_total_mib")
# mig_device attribute -> GpuInstanceProfile attribute; the engines that tell 1g from 1g+me.
_MIG_ENGINES = (("decoders", "decoder_count"), ("jpegs", "jpeg_count"), ("ofas", "ofa_count"))
# Key order of a GPU instance in the scenario file.
_GI_ORDER = (
    "profile",
    "id",
    "start",
    "memory_total_mib",
    "memory_used_mib",
    "memory_free_mib",
    "bar1_total_mib",
    "sram_uncorrected_volatile",
    "compute_instances",
    "guessed",
)
# What every MIG device of a GPU instance shows alike: its memory, BAR1 and SRAM error figures.
_GI_DUMP = (
    "memory_total_mib",
    "memory_used_mib",
    "memory_free_mib",
    "bar1_total_mib",
    "sram_uncorrected_volatile",
)


# Relative tolerance between a MIG device's memory and its profile's: drivers differ by up to
# ~1.5% (R450 showed 20224 and 20096 MiB for 3g.20gb's 19968; older A100-80GB 1g.10gb: 9728).
_MIG_MEMORY_TOLERANCE = 0.05




def gpu_instances_of(
    board: Board | None,
    devices: list[dict[str, Any]],
    placements: dict[int, MigPlacement],
    memory_total_mib: int,
    where: str,
    guesses: list[str],
) -> list[dict[str, Any]]:
    """A MIG GPU's `gpu_instances` from its MIG devices' facts (one per compute instance:
    index, gpu/compute instance ids, sm_count, memory) and the placements known by GI id;
    profiles from the catalogue's table, or described by those facts for a board it lacks.
    What had to be inferred is added to `guesses`."""
    derived = any("uuid" not in device for device in devices)
    if derived:
        # NVML always has one; the simulator derives it, so it is not the machine's.
        guesses.append(f"{where}: MIG device UUIDs (the dump lists none; derived)")
    if board is None or board.mig is None:
        instances = _described_instances(devices, placements, memory_total_mib, where, guesses)
    else:
        instances = _gpu_instances(board.mig, devices, placements, where, guesses)
    for instance in instances:
        if any("uuid" not in ci for ci in instance["compute_instances"]):
            _guessed(instance, "uuid")
    return instances


def _guessed(instance: dict[str, Any], fact: str) -> None:
    """Mark one of a GPU instance's facts as inferred, not read (its `guessed` list)."""
    instance["guessed"] = sorted({*instance.get("guessed", ()), fact})



def _grouped(devices: list[dict[str, Any]], where: str) -> dict[int, list[dict[str, Any]]]:
    """MIG devices (one per compute instance) by GPU instance id, in CI id order."""
    for number, device in enumerate(devices):
        for field in MIG_DEVICE_FIELDS:
            if field.key in _MIG_DEVICE_REQUIRED and field.key not in device:
                raise DumpError(f"{where}: mig_device {number}: no <{field.paths[0]}> value")
    by_gi: dict[int, list[dict[str, Any]]] = {}
    for device in sorted(devices, key=lambda d: (d["gpu_instance_id"], d["compute_instance_id"])):
        by_gi.setdefault(device["gpu_instance_id"], []).append(device)
    for gi_id, cis in by_gi.items():
        ci_ids = [ci["compute_instance_id"] for ci in cis]
        if ci_ids != list(range(len(cis))):
            # The format numbers a GI's compute instances 0, 1, ... in list order.
            raise DumpError(
                f"{where}: GPU instance {gi_id} has compute instance ids {ci_ids}; a scenario "
                "can only express ids 0, 1, ... without gaps"
            )
    return by_gi


def _uuid_of(device: dict[str, Any]) -> dict[str, str]:
    """A compute instance's `uuid` where the capture listed its MIG device's (-L)."""
    return {"uuid": device["uuid"]} if "uuid" in device else {}


def _described_instances(
    devices: list[dict[str, Any]],
    placements: dict[int, MigPlacement],
    gpu_memory_mib: int,
    where: str,
    guesses: list[str],
) -> list[dict[str, Any]]:
    """GPU instances of a board outside the catalogue, as the dump shows them."""
    out = []
    for gi_id, cis in _grouped(devices, where).items():
        placement = placements.get(gi_id)
        named = {re.sub(r"^\d+c\.", "", ci["name"]) for ci in cis if ci.get("name")}
        inferred = placement is None and len(named) != 1
        if placement is not None:
            name = placement.profile
        elif not inferred:
            name = named.pop()
        else:
            # `-q` names no profile: N compute slices of 7 by the GI's share of the memory.
            # Unknown: boards whose slices are not 7 compute / 8 memory (A30 has 4 / 4).
            memory = cis[0]["memory_total_mib"]
            slices = max(1, round(7 * memory / gpu_memory_mib))
            name = f"{slices}g.{round(memory / 1024)}gb"
            guesses.append(f"{where}: GPU instance {gi_id}'s profile name {name}")
        instance: dict[str, Any] = {"profile": name, "id": gi_id}
        if inferred:
            _guessed(instance, "profile")
        if placement is None:
            guesses.append(f"{where}: GPU instance {gi_id}'s placement and profile id")
            _guessed(instance, "placement")
            _guessed(instance, "profile_id")
        else:
            instance["start"] = placement.start
            instance["memory_slices"] = placement.size
            instance["profile_id"] = placement.profile_id
        for key in _GI_DUMP:
            if key in cis[0]:
                instance[key] = cis[0][key]
        engines = {
            "copy": cis[0].get("copy_engines"),
            "decoder": cis[0].get("decoders"),
            "encoder": cis[0].get("encoders"),
            "jpeg": cis[0].get("jpegs"),
            "ofa": cis[0].get("ofas"),
        }
        instance["engines"] = {k: v for k, v in engines.items() if v is not None}
        instance["compute_instances"] = [
            {"multiprocessor_count": ci["sm_count"], **_uuid_of(ci)} for ci in cis
        ]
        if len(cis) > 1:
            # Unknown: how a partial CI's slices follow from its SMs on an unknown board.
            total = sum(ci["sm_count"] for ci in cis)
            slices = int(re.match(r"\d+", name).group())  # type: ignore[union-attr]
            for entry, ci in zip(instance["compute_instances"], cis):
                entry["slices"] = max(1, round(slices * ci["sm_count"] / total))
        out.append(instance)
    return out


def _gpu_instances(
    table: MigTable,
    devices: list[dict[str, Any]],
    placements: dict[int, MigPlacement],
    where: str,
    guesses: list[str],
) -> list[dict[str, Any]]:
    """MIG devices (one per compute instance) grouped into GPU instances with named profiles."""
    by_gi = _grouped(devices, where)
    instances = [
        _gpu_instance(table, gi_id, cis, placements.get(gi_id), where, guesses)
        for gi_id, cis in by_gi.items()
    ]
    # -q does not say where a GI sits: NVML's usual numbering tells, when every id is one it
    # gives its profile and the placements so read fit together; otherwise (real ids do not
    # always follow it) the loader picks free placements and the ids stay as the dump has them.
    # Unknown: which drivers number GPU instances this way (the MIG User Guide's examples do).
    inferred = [
        gi.get("start", _placement_start(table.by_name[gi["profile"]], gi["id"]))
        for gi in instances
    ]
    profiles = [table.by_name[gi["profile"]] for gi in instances]
    if None not in inferred and mig_profiles.fit_placements(
        [(p.placement_starts, p.memory_slices, start) for p, start in zip(profiles, inferred)]
    ):
        for gi, start in zip(instances, inferred):
            gi["start"] = start
    if any(gi_id not in placements for gi_id in by_gi):
        guesses.append(f"{where}: MIG placements (the dump has none)")
    for gi in instances:
        if gi["id"] not in placements:
            _guessed(gi, "placement")
    return [{key: gi[key] for key in _GI_ORDER if key in gi} for gi in instances]


def _named_profile(
    table: MigTable,
    gi_id: int,
    cis: list[dict[str, Any]],
    placement: MigPlacement | None,
    where: str,
) -> GpuInstanceProfile | None:
    """The profile the capture names for this GPU instance (`mig -lgi`, else `-L`), if any."""
    if placement is not None:
        name = placement.profile
    else:
        # `-L` names a partial compute instance "1c.3g.40gb": the GI profile is the rest.
        named = {re.sub(r"^\d+c\.", "", ci["name"]) for ci in cis if ci.get("name")}
        if len(named) > 1:
            raise DumpError(f"{where}: GPU instance {gi_id} is named {sorted(named)} by -L")
        if not named:
            return None
        name = named.pop()
    profile = table.by_name.get(name)
    if profile is None:
        raise DumpError(
            f"{where}: GPU instance {gi_id} is a {name}, which the catalogue's MIG table for "
            f"this board lacks (known: {', '.join(p.name for p in table.profiles)})"
        )
    return profile


def _gpu_instance(
    table: MigTable,
    gi_id: int,
    cis: list[dict[str, Any]],
    placement: MigPlacement | None,
    where: str,
    guesses: list[str],
) -> dict[str, Any]:
    profile = _named_profile(table, gi_id, cis, placement, where)
    matched = profile is None
    if profile is not None and not _fits(profile, cis):
        # -lgi or -L names a profile that -q's own figures contradict: which is right is
        # unknown, and a scenario of both would show a machine that cannot be.
        raise DumpError(
            f"{where}: GPU instance {gi_id} is a {profile.name} ({profile.multiprocessor_count}"
            f" SMs, {profile.memory_mib} MiB) by {'-lgi' if placement else '-L'}, but -q shows "
            f"{sum(ci['sm_count'] for ci in cis)} SMs and {cis[0]['memory_total_mib']} MiB"
        )
    if profile is None:
        profile = _match_profile(table, gi_id, cis)
        if profile is None:
            raise DumpError(
                f"{where}: GPU instance {gi_id} ({sum(ci['sm_count'] for ci in cis)} SMs, "
                f"{cis[0]['memory_total_mib']} MiB) matches no MIG profile of this board"
            )
        guesses.append(
            f"{where}: GPU instance {gi_id}'s profile name {profile.name} (the dump names "
            "none; matched by memory and SMs)"
        )
    instance: dict[str, Any] = {"profile": profile.name, "id": gi_id}
    if matched:
        _guessed(instance, "profile")
    if placement is not None:
        # The dump's own placement; refused rather than moved when the table disagrees.
        if (placement.profile_id, placement.size) != (profile.id, profile.memory_slices):
            raise DumpError(
                f"{where}: GPU instance {gi_id} ({profile.name}) is listed by -lgi with profile "
                f"id {placement.profile_id} and {placement.size} memory slices; the catalogue's "
                f"{profile.name} has id {profile.id} and {profile.memory_slices}"
            )
        if placement.start not in profile.placement_starts:
            raise DumpError(
                f"{where}: GPU instance {gi_id} ({profile.name}) is placed at "
                f"{placement.start}:{placement.size}, which the catalogue's table does not offer"
            )
        instance["start"] = placement.start
    for key in _GI_DUMP:
        if key in cis[0]:
            instance[key] = cis[0][key]
    offered = table.ci_profiles[profile.id]
    # The CI profile with the device's SM count (nearest: partial-CI SM counts vary); the
    # SMs themselves as the dump has them.
    instance["compute_instances"] = [
        {
            "slices": min(
                offered, key=lambda c: abs(c.multiprocessor_count - ci["sm_count"])
            ).slice_count,
            "multiprocessor_count": ci["sm_count"],
            **_uuid_of(ci),
        }
        for ci in cis
    ]
    return instance


def _match_profile(
    table: MigTable, gi_id: int, cis: list[dict[str, Any]]
) -> GpuInstanceProfile | None:
    """The profile of a GPU instance, which nvidia-smi -q does not name.

    Its memory must be the profile's (within driver variation) and its compute instances'
    SMs must fit in it. Among those, prefer a profile whose placements give this GI id, whose
    SM count is exactly the CIs' total (a GI split into CIs can leave slices unused), whose
    decoder/JPEG/OFA counts agree (1g vs 1g+me), and whose memory is nearest.
    """
    memory = cis[0]["memory_total_mib"]
    sms = sum(ci["sm_count"] for ci in cis)
    engines = [(cis[0].get(key), attr) for key, attr in _MIG_ENGINES]

    def rank(profile: GpuInstanceProfile) -> tuple[bool, bool, int, int]:
        return (
            _placement_start(profile, gi_id) is None,
            profile.multiprocessor_count != sms,
            sum(seen is not None and seen != getattr(profile, attr) for seen, attr in engines),
            abs(profile.memory_mib - memory),
        )

    return min((p for p in table.profiles if _fits(p, cis)), key=rank, default=None)


def _fits(profile: GpuInstanceProfile, cis: list[dict[str, Any]]) -> bool:
    """Whether a GPU instance's compute instances (as a dump shows them) can be of `profile`:
    its memory (within driver variation), and SMs no more than the profile's."""
    memory = cis[0]["memory_total_mib"]
    return (abs(profile.memory_mib - memory) <= _MIG_MEMORY_TOLERANCE * profile.memory_mib
            and sum(ci["sm_count"] for ci in cis) <= profile.multiprocessor_count)


def _placement_start(profile: GpuInstanceProfile, gi_id: int) -> int | None:
    """The placement NVML numbers `gi_id` for this profile, if the id fits the profile."""
    return next(
        (
            start
            for start in profile.placement_starts
            if mig_profiles.default_gpu_instance_id(
                start, profile.memory_slices, profile.board_memory_slices) == gi_id
        ),
        None,
    )
