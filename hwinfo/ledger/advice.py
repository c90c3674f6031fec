"""`hwinfo usage --advise`: for each hold of a whole GPU, release it, or a MIG profile that would do.

The profiles weighed for a model are those a GPU of it exports, else hwinfo's MIG catalogue
(hwinfo/mig), marked as such: a fleet with MIG off everywhere exports none.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from hwinfo.ledger import queries
from hwinfo.ledger.prometheus import LedgerError, Sample
from hwinfo.mig.models import profile_shapes

# An A100 or H100 offers 6 to 19 MIG profiles. More is not a GPU's answer, and each user's
# advice compares every profile of the model: a hostile answer of 12,000 profiles and
# 12,000 users took 48 s.
MAX_PROFILES = 64


@dataclass(frozen=True)
class Advice:
    """For one hold: a user on one whole GPU."""

    user: str
    model: str
    instance: str
    gpu: str
    held_gpu_seconds: float
    mean_utilization_ratio: float | None
    peak_memory_bytes: float | None
    # release (idle: give it back), profile (a smaller MIG profile would do), none (no
    # smaller profile holds it), no_mig (the model has no MIG), not_own_activity (judged
    # by a shared GPU's activity, which may be another holder's), no_profile_data (no GPU of
    # the model exports its profiles, and hwinfo's catalogue has none)
    verdict: str
    profile: str | None  # with verdict "profile": the smallest that would do
    freed_gpu_seconds: float  # what following the advice would give back
    # Where the profiles weighed came from: "gpu" (a GPU of the model exports them) or
    # "catalogue" (hwinfo's MIG catalogue, hwinfo/mig); None: none weighed.
    profile_source: str | None = None


def idle_threshold(samples: list[Sample], url: str) -> float:
    """The activity at or below which the rules call a hold idle, as they recorded it; a
    LedgerError where they did not (rules older than the record) or it is no ratio."""
    found = [s.value for s in samples if s.labels.get("measure") == "idle_threshold"]
    if not found:
        raise LedgerError(f"{url} recorded no {queries.IDLE_THRESHOLD_RECORD} in the range: "
                          f"--advise needs the current {queries.LEDGER_RULES_FILE}")
    if not 0 <= found[0] < 1:
        raise LedgerError(f"{url}: an idle threshold of {found[0]:g} is not an activity ratio")
    return found[0]


def advice_for(samples: list[Sample], interval: float, threshold: float,
               notes: list[str]) -> list[Advice]:
    """For each hold (a user on a whole GPU): release it if idle, else the smallest MIG
    profile of its model whose memory holds its peak, whose share covers its activity, and
    which is smaller than the share of the GPU it held."""
    sums: dict[str, dict[tuple[str, ...], float]] = defaultdict(lambda: defaultdict(float))
    peak: dict[tuple[str, ...], float] = {}
    profiles: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    mig_capable: set[str] = set()
    for s in samples:
        measure, labels = s.labels.get("measure", ""), s.labels
        hold = tuple(labels.get(k, "") for k in ("user", "model", "instance", "gpu"))
        if measure == "whole_peak_memory":
            peak[hold] = max(peak.get(hold, 0.0), s.value)
        elif measure.startswith("whole_"):
            sums[measure][hold] += s.value
        elif measure in ("profile_memory", "profile_share"):
            profiles[labels.get("model", "")][labels.get("profile", "")][measure] = s.value
        elif measure == "mig_capable":
            mig_capable.add(labels.get("model", ""))
    held, noted = sums["whole_held"], _AdviceNotes(notes)
    found = []
    for hold, shares in sorted(held.items(), key=lambda kv: (-kv[1], kv[0])):
        seconds = shares * interval
        if seconds <= 0:
            continue
        user, model, instance, gpu = hold
        # The hold's wall time; a hold can be no longer than its GPU-seconds are (share 1).
        wall = max(sums["whole_evaluations"][hold] * interval, seconds)
        mean = min(1.0, sums["whole_utilization"][hold] * interval / seconds)
        # Evaluations judged by the device's activity while others held the GPU too: what
        # the device did may be theirs (a 512 MiB probe beside a busy job is not busy).
        judged = sums["whole_device_judged"][hold]
        shared = sums["whole_device_judged_evaluations"][hold] - judged > 1e-9 * max(1.0, judged)
        verdict, profile, freed, source = "none", None, 0.0, None
        if mean <= threshold:  # a device's activity bounds its holders': idle is idle
            verdict, freed = "release", seconds
        elif shared:
            verdict = "not_own_activity"
            noted.once("shared", "busy judged by a shared GPU's activity (no per-process "
                       "samples), which may be another holder's: no MIG advice for those holds")
        else:
            offered, source = _profiles_of(model, profiles, model in mig_capable, noted)
            fit = None if not offered or peak.get(hold) is None else smallest_fit(
                offered, peak[hold], mean, seconds / wall)
            if source is None:
                verdict = "no_mig" if offered is None else "no_profile_data"
            elif fit is not None:
                # The profile holds it all the wall time: what it costs is its share of that.
                verdict, profile, freed = "profile", fit[0], seconds - fit[1] * wall
        found.append(Advice(user, model, instance, gpu, seconds, mean, peak.get(hold), verdict,
                            profile, freed, source))
    return found


class _AdviceNotes:
    """Notes of --advise, each said once (per model where it names one)."""

    def __init__(self, notes: list[str]) -> None:
        self.notes, self.said = notes, set[str]()

    def once(self, key: str, note: str) -> None:
        if key not in self.said:
            self.said.add(key)
            self.notes.append(note)


def _profiles_of(model: str, exported: dict[str, dict[str, dict[str, float]]], capable: bool,
                 noted: _AdviceNotes) -> tuple[dict[str, dict[str, float]] | None, str | None]:
    """The profiles weighed for a model and where they come from: a GPU of the model that
    exports them, else hwinfo's MIG catalogue; ({}, None) where neither has them for a model
    that can do MIG, (None, None) for one that cannot (no GPU of it exports a MIG mode, and
    the catalogue has no table for it)."""
    offered = exported.get(model)
    if offered and len(offered) <= MAX_PROFILES:
        return offered, "gpu"
    if offered:
        noted.once(model, f"{model} has {len(offered):,} MIG profiles, more than any GPU: no "
                   "advice for it")
        return {}, None
    catalogued = catalogue_profiles(model)
    if catalogued:
        noted.once(model, f"MIG profiles of {model} from hwinfo's catalogue (no GPU of it "
                   "exports them: MIG is off on every one)")
        return catalogued, "catalogue"
    if not capable:
        return None, None
    noted.once(model, f"no MIG profile data for {model}: no GPU of it exports its profiles, "
               "and hwinfo's catalogue has none")
    return {}, None


def catalogue_profiles(model: str) -> dict[str, dict[str, float]]:
    """The model's profiles from hwinfo's MIG catalogue, as the engine's answers give a GPU's
    (profile -> profile_memory, profile_share); empty where the catalogue has none."""
    return {name: {"profile_memory": float(memory), "profile_share": share}
            for name, (memory, share) in profile_shapes(model).items()}


def smallest_fit(profiles: dict[str, dict[str, float]], memory: float, mean: float,
                 below: float = 1.0) -> tuple[str, float] | None:
    """The smallest profile (and its share of the GPU) whose memory holds `memory` and whose
    share covers `mean` activity, smaller than `below` (the share of the GPU held now)."""
    fits = [(shape["profile_share"], shape["profile_memory"], name)
            for name, shape in profiles.items()
            if {"profile_share", "profile_memory"} <= shape.keys()
            and shape["profile_memory"] >= memory and shape["profile_share"] >= mean
            and shape["profile_share"] < below and math.isfinite(shape["profile_share"])]
    if not fits:
        return None
    share, _, name = min(fits)
    return name, share
