"""`hwinfo fleet --need-memory`: where a job of a given size fits now, asked of the engine.

The engine answers only the places that could take the job: a whole GPU with no process and
that much free memory, an existing MIG device with no process and that much memory (neither
claimed by `hwinfo run`), a MIG profile with free instances that large. Listing every GPU to find them (fleet.py) is the
cost of the whole fleet: for 1,000 hosts, 66,000 series sent and parsed to offer a few
thousand. What the engine would weigh only by reading every GPU again, the client applies
as the listing does: the host's state (up, stale or down), MIG mode and a lost GPU; and it
names each place's model.
"""

from __future__ import annotations

import re

from hwinfo.ledger.fleet import FLAGS, HOSTS, Fit, Fleet, Host, checked, hosts_seen
from hwinfo.ledger.prometheus import Prometheus, Sample
from hwinfo.placement import GPU as WHOLE
from hwinfo.placement import MIG_DEVICE, MIG_PROFILE, rank
from hwinfo.placement import fits as takes

GPU = "job, instance, gpu"
# Each GPU's uuid and model, joined here: Prometheus 2.42 took 0.17 s to join 4,000 places of
# 1,000 hosts with hwinfo_gpu_info, and 0.05 s to send this. A GPU without hwinfo_gpu_info,
# which hwinfo always exports beside its other facts, is not offered: nothing names it.
MODELS = f"group by ({GPU}, uuid, name) (hwinfo_gpu_info)"
# A device `hwinfo run` holds for someone is not offered, processes or not.
CLAIMED = "hwinfo_gpu_claim_info"


def _kind(kind: str, expr: str) -> str:
    return f'label_replace({expr}, "kind", "{kind}", "", "")'


def _one(name: str, labels: str) -> str:
    """`name` by `labels` alone, as the listing reads it: an engine may hold a fact twice
    with one more label (an HA pair's replica), and one busy copy makes the GPU busy."""
    return f"max by ({labels}) ({name})"


def fit_queries(need: int) -> list[str]:
    """Whole GPUs, and MIG devices and profiles, where `need` bytes fit: two queries to send
    together (the engine answers each on one core)."""
    instance = f"{GPU}, gpu_instance_id"
    device = f"{instance}, compute_instance_id"
    profile = f"{GPU}, profile"
    return [
        _kind(WHOLE, f"({_one('hwinfo_gpu_memory_free_bytes', GPU)} >= {need}) "
                     f"and on({GPU}) ({_one('hwinfo_gpu_processes', GPU)} == 0) "
                     f"unless on({GPU}) {CLAIMED}{{gpu_instance_id=\"\"}}"),
        # A GPU instance's memory is each of its compute instances' (MIG devices').
        _kind(MIG_DEVICE, f"({_one('hwinfo_mig_device_info', f'{device}, profile, mig_uuid')} "
                            f"and on({device}) ({_one('hwinfo_mig_device_processes', device)} == 0) "
                            f"unless on({device}) {CLAIMED}) "
                            f"* on({instance}) group_left() "
                            f"({_one('hwinfo_mig_gpu_instance_memory_total_bytes', instance)} >= {need})")
        + " or " + _kind(MIG_PROFILE, f"({_one('hwinfo_mig_profile_memory_bytes', profile)} >= {need}) "
                                         f"and on({profile}) "
                                         f"({_one('hwinfo_mig_profile_free_instances', profile)} > 0)"),
    ]


def fits(prometheus: Prometheus, at: float, need: int,
         model: re.Pattern[str] | None = None) -> Fleet:
    """Every host's state, and the places where `need` bytes fit, best fit first."""
    seen, flags, named, *places = prometheus.queries([HOSTS, FLAGS, MODELS, *fit_queries(need)], at)
    hosts = hosts_seen(seen, prometheus.url)
    flagged: dict[tuple[str, str, str], set[str]] = {}
    for s in checked(flags, prometheus.url):
        flagged.setdefault(_gpu(s), set()).add(s.labels.get("__name__", ""))
    # A GPU renamed in the lookback (a driver upgrade) or under two uuids: one, the same
    # in every run.
    named_as: dict[tuple[str, str, str], tuple[str, str]] = {}
    for s in named:
        this = (s.labels.get("uuid", ""), s.labels.get("name", ""))
        named_as[_gpu(s)] = max(named_as.get(_gpu(s), this), this)
    # A set: an engine that answers a place twice offers it once.
    found = sorted({fit for s in checked([s for part in places for s in part], prometheus.url)
                    if (fit := _fit(s, need, hosts, flagged.get(_gpu(s), set()),
                                    named_as.get(_gpu(s))))
                    and (model is None or model.search(fit.model))},
                   key=lambda f: (*rank(f.memory_bytes, f.kind, f.instance, f.gpu), f.kind,
                                  f.profile or "", f.mig_uuid or "", f.uuid, f.model))
    return Fleet(at, sorted(hosts.values(), key=lambda h: h.instance), found)


def _gpu(s: Sample) -> tuple[str, str, str]:
    return s.labels.get("job", ""), s.labels.get("instance", ""), s.labels.get("gpu", "")


def _fit(s: Sample, need: int, hosts: dict[tuple[str, str], Host], flags: set[str],
         named: tuple[str, str] | None) -> Fit | None:
    """The fit a series of the engine's answer offers, where its host and GPU can take it
    (and it is as large as asked: the engine's word is not taken for that)."""
    labels = s.labels
    host = hosts.get((labels.get("job", ""), labels.get("instance", "")))
    kind = labels.get("kind", "")
    mig = "hwinfo_gpu_mig_enabled" in flags
    if (host is None or host.state != "up" or named is None or "hwinfo_gpu_lost" in flags
            or not takes(s.value, need) or kind not in (WHOLE, MIG_DEVICE, MIG_PROFILE)
            or mig != (kind != WHOLE)):
        return None
    return Fit(kind, host.instance, labels.get("gpu", ""), *named, s.value,
               labels.get("profile", "") if kind != WHOLE else None,
               labels.get("mig_uuid", "") if kind == MIG_DEVICE else None)
