"""--advise on holds whose truth is worked out by hand: the rules' sums in, verdicts out (the
queries run on real engines in tests/deploy/test_ledger_end_to_end.py and the messy lab)."""

from __future__ import annotations

import pytest

from hwinfo.ledger.advice import Advice, advice_for, idle_threshold
from hwinfo.ledger.prometheus import LedgerError, Sample

A100 = "NVIDIA A100-SXM4-80GB"
A100_40GB = "NVIDIA A100-SXM4-40GB"
HOLD = {"user": "ann", "model": A100, "instance": "h:9110", "gpu": "0"}
THRESHOLD = 0.05  # the shipped rules'
MIB = 2**20


def sample(measure: str, value: float, **labels: str) -> Sample:
    return Sample({"measure": measure, **labels}, value)


# As an A100 80GB in MIG mode exports them (hwinfo_mig_profile_*).
PROFILES = [
    *(sample("profile_memory", mib * MIB, model=A100, profile=name)
      for name, mib in (("1g.10gb", 9856), ("3g.40gb", 40192), ("7g.80gb", 80896))),
    *(sample("profile_share", share, model=A100, profile=name)
      for name, share in (("1g.10gb", 1 / 7), ("3g.40gb", 3 / 7), ("7g.80gb", 1.0))),
]


def hold(evaluations: int, share: float, activity: float, peak_mib: float,
         judged_by_device: bool = False, **labels: str) -> list[Sample]:
    """The advice query's measures of one hold: held at `evaluations` evaluations at `share`
    of the GPU, at `activity`, with a peak of `peak_mib`."""
    who = {**HOLD, **labels}
    held = evaluations * share
    measures = [sample("whole_held", held, **who), sample("whole_evaluations", evaluations, **who),
                sample("whole_utilization", held * activity, **who),
                sample("whole_peak_memory", peak_mib * MIB, **who)]
    if judged_by_device:
        measures += [sample("whole_device_judged", held, **who),
                     sample("whole_device_judged_evaluations", evaluations, **who)]
    return measures


def capable(model: str) -> Sample:
    """Some GPU of the model exports its MIG mode (on or off): it can do MIG."""
    return sample("mig_capable", 0, model=model)


def verdicts(advice: list[Advice]) -> list[tuple[str, str | None]]:
    return [(a.verdict, a.profile) for a in advice]


@pytest.mark.parametrize(("peak_mib", "activity", "verdict", "profile"), [
    (9000, 0.0, "release", None),       # idle: give it back, whatever its size
    (9000, 0.3, "profile", "3g.40gb"),  # small but 30 % busy: 1/7 of the compute would not do
    (20000, 0.1, "profile", "3g.40gb"),  # too big for a 1g.10gb
    (60000, 0.1, "none", None),         # only the whole GPU holds it: no advice
    (9000, 0.9, "none", None),          # too busy for any slice
])
def test_the_smallest_profile_that_holds_memory_and_activity(
        peak_mib: int, activity: float, verdict: str, profile: str | None) -> None:
    """Alone on the GPU for 100 evaluations of 60 s: 6,000 GPU-s. Releasing frees them all;
    a profile of share p costs p x 6,000 s, so frees 6,000 x (1 - p)."""
    notes: list[str] = []
    advice = advice_for([*hold(100, 1.0, activity, peak_mib), *PROFILES, capable(A100)], 60.0,
                        THRESHOLD, notes)
    assert verdicts(advice) == [(verdict, profile)]
    share = {"1g.10gb": 1 / 7, "3g.40gb": 3 / 7, None: 1.0}[profile]
    freed = 6000 if verdict == "release" else 6000 * (1 - share)
    assert advice[0].freed_gpu_seconds == pytest.approx(freed)
    assert advice[0].profile_source == (None if verdict == "release" else "gpu")
    assert notes == []


def test_advice_is_per_hold_not_one_lump_per_user() -> None:
    # ann holds GPU 0 with 4 GiB at 10 % and GPU 1 with 30 GiB at 20 %: a 1g.10gb and a
    # 3g.40gb, where one lump (30 GiB peak, 15 % mean) would ask one 3g.40gb.
    advice = advice_for([*hold(100, 1.0, 0.1, 4096, gpu="0"), *hold(100, 1.0, 0.2, 30720, gpu="1"),
                         *PROFILES], 60.0, THRESHOLD, [])
    assert sorted((a.gpu, a.profile) for a in advice) == [("0", "1g.10gb"), ("1", "3g.40gb")]


def test_a_shared_hold_is_weighed_as_the_share_it_held() -> None:
    """A 0.5 hold of an A100 40GB for 42 evaluations of 6 s: 252 s, 126 GPU-s.
    At 50 % activity, 15 GiB: a 4g.20gb (4/7) would hold it 252 s, 144 GPU-s: 18 more than
    the 126 held (it was said to free 126 x 3/7 = 54); a 3g.20gb (3/7) is too small for
    50 %: nothing smaller would do. At 10 %, 4 GiB: a 1g.5gb holds it, 252 / 7 = 36 GPU-s,
    and frees 126 - 36 = 90."""
    busy = hold(42, 0.5, 0.5, 15 * 1024, model=A100_40GB)
    quiet = hold(42, 0.5, 0.1, 4 * 1024, model=A100_40GB, gpu="1")
    advice = {a.gpu: a for a in advice_for([*busy, *quiet, capable(A100_40GB)], 6.0, THRESHOLD, [])}
    assert advice["0"].held_gpu_seconds == pytest.approx(126)
    assert (advice["0"].verdict, advice["0"].freed_gpu_seconds) == ("none", 0.0)
    assert (advice["1"].verdict, advice["1"].profile) == ("profile", "1g.5gb")
    assert advice["1"].freed_gpu_seconds == pytest.approx(90)


def test_a_probe_is_not_given_the_activity_of_the_job_beside_it() -> None:
    """A 512 MiB probe beside a 40 GiB job on one GPU, 100 evaluations: its share is
    0.5 / 40.5 of the GPU, and with no per-process samples its activity is the GPU's: 90 %,
    the job's. No verdict on that activity; but on a GPU that is idle, so is the probe."""
    share = 0.5 / 40.5
    notes: list[str] = []
    busy = advice_for([*hold(100, share, 0.9, 512, judged_by_device=True), *PROFILES,
                       capable(A100)], 60.0, THRESHOLD, notes)
    assert verdicts(busy) == [("not_own_activity", None)]
    assert notes == [("busy judged by a shared GPU's activity (no per-process samples), which "
                     "may be another holder's: no MIG advice for those holds")]
    idle = advice_for([*hold(100, share, 0.0, 512, judged_by_device=True), *PROFILES,
                       capable(A100)], 60.0, THRESHOLD, [])
    assert verdicts(idle) == [("release", None)]
    # Alone on its GPU, the device's activity is its own: advised as before.
    alone = advice_for([*hold(100, 1.0, 0.1, 512, judged_by_device=True), *PROFILES,
                        capable(A100)], 60.0, THRESHOLD, [])
    assert verdicts(alone) == [("profile", "1g.10gb")]


def test_with_mig_off_everywhere_the_catalogue_gives_the_profiles_and_says_so() -> None:
    """No GPU exports profiles (MIG off on every A100 80GB). hwinfo's catalogue: a 1g.10gb is
    9,856 MiB and 1/7 of the GPU, a 2g.20gb 19,968 MiB and 2/7. A 12 GiB hold at 20 %:
    2g.20gb, freeing 6,000 x 5/7."""
    notes: list[str] = []
    advice = advice_for([*hold(100, 1.0, 0.2, 12 * 1024), *hold(100, 1.0, 0.1, 4096, gpu="1"),
                         capable(A100)], 60.0, THRESHOLD, notes)
    assert sorted((a.gpu, a.verdict, a.profile, a.profile_source) for a in advice) == [
        ("0", "profile", "2g.20gb", "catalogue"), ("1", "profile", "1g.10gb", "catalogue")]
    assert next(a for a in advice if a.gpu == "0").freed_gpu_seconds == pytest.approx(6000 * 5 / 7)
    assert notes == [(f"MIG profiles of {A100} from hwinfo's catalogue (no GPU of it exports "
                     "them: MIG is off on every one)")]


def test_a_model_without_mig_says_so_and_one_without_data_says_why_once() -> None:
    notes: list[str] = []
    geforce = {"model": "NVIDIA GeForce RTX 4090"}
    unknown = {"model": "NVIDIA Future GPU"}  # can do MIG, in no catalogue, profiles not exported
    advice = advice_for([*hold(10, 1.0, 0.5, 1024, user="a", **geforce),
                         *hold(10, 1.0, 0.5, 1024, user="b", **unknown),
                         *hold(10, 1.0, 0.5, 1024, user="c", **unknown),
                         capable("NVIDIA Future GPU")], 60.0, THRESHOLD, notes)
    assert sorted((a.user, a.verdict) for a in advice) == [
        ("a", "no_mig"), ("b", "no_profile_data"), ("c", "no_profile_data")]
    assert notes == [("no MIG profile data for NVIDIA Future GPU: no GPU of it exports its "
                     "profiles, and hwinfo's catalogue has none")]


def test_the_threshold_is_the_rules() -> None:
    """At the rules' threshold moved to 0.5, a hold at 30 % is idle: release it."""
    samples = [*hold(100, 1.0, 0.3, 9000), *PROFILES, sample("idle_threshold", 0.5)]
    assert verdicts(advice_for(samples, 60.0, idle_threshold(samples, "u"), [])) == [("release", None)]
    with pytest.raises(LedgerError, match="recorded no hwinfo:ledger_idle_threshold:ratio in the range"):
        idle_threshold(samples[:-1], "u")
    with pytest.raises(LedgerError, match="an idle threshold of 5 is not an activity ratio"):
        idle_threshold([sample("idle_threshold", 5)], "u")
