"""`hwinfo fleet`: every host's GPUs now, and which are free (fits.py: where a job fits).

Free means nobody is on it now: a whole GPU with no process, an existing MIG device with no
process, neither claimed by `hwinfo run`, or MIG capacity an admin could still carve (a
profile with free instances). A host
whose hwinfo is down or whose GPU data is stale offers nothing: its last values may be old.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from hwinfo.ledger.prometheus import LedgerError, Prometheus, Sample

# GPU data older than this is stale: hwinfo samples every 5 s by default, and a stalled NVML
# call keeps the last values in place.
STALE_AFTER_SECONDS = 60.0
# The most any fact fleet reads may be: 1 PiB of memory (counts and flags are far less).
MAX_FACT = 2.0**50
# A host that went silent within this window is listed as down; before it, it is forgotten.
FORGET_AFTER = "1h"
# Facts that count things: whole numbers, and integers in fleet's answers.
COUNTS = frozenset({"hwinfo_gpu_processes", "hwinfo_gpu_user_processes",
                    "hwinfo_mig_device_processes", "hwinfo_mig_device_user_processes",
                    "hwinfo_mig_profile_free_instances"})

# What `fleet` reads of each GPU now, in parts asked side by side, each with only the labels
# it uses (a GPU's uuid and model from hwinfo_gpu_info alone): a 1,000-host fleet is about
# 45,000 series, more than one answer may hold (urlfetch, inputs), and the engine answers each
# query on one core. Flags (the last part) are read only where set: a GPU without the series
# is not in MIG mode and not lost, as with the series at 0, and a thousand hosts send 16,000
# fewer series. They are a query of their own: `or` matches series on their labels without
# the metric name, so a flag or-ed to another fact of its GPU would be dropped.
_SERIES = (
    (("hwinfo_gpu_info", "hwinfo_gpu_memory_total_bytes", "hwinfo_gpu_memory_used_bytes",
      "hwinfo_gpu_memory_free_bytes"), "uuid, name"),
    (("hwinfo_gpu_user_processes", "hwinfo_gpu_processes", "hwinfo_gpu_user_memory_used_bytes"),
     "user"),
    (("hwinfo_mig_device_info", "hwinfo_mig_device_processes",
      "hwinfo_mig_device_user_memory_used_bytes", "hwinfo_mig_device_user_processes",
      "hwinfo_mig_gpu_instance_memory_total_bytes",
      "hwinfo_mig_profile_free_instances", "hwinfo_mig_profile_memory_bytes",
      "hwinfo_gpu_claim_info"),
     "gpu_instance_id, compute_instance_id, profile, mig_uuid, user"),
)
FLAGS = ('max by (__name__, job, instance, gpu) '
         '({__name__=~"hwinfo_gpu_mig_enabled|hwinfo_gpu_lost"} == 1)')
_NOW = [*(f'max by (__name__, job, instance, gpu, {labels}) ({{__name__=~"{"|".join(names)}"}})'
          for names, labels in _SERIES), FLAGS]
HOSTS = f"""
label_replace(last_over_time(hwinfo_gpus[{FORGET_AFTER}]), "measure", "seen", "", "")
or label_replace(up and on(job, instance) hwinfo_gpus, "measure", "up", "", "")
or label_replace(hwinfo_collection_stalled{{source="gpu"}}, "measure", "stalled", "", "")
or label_replace(time() - hwinfo_last_success_timestamp_seconds{{source="gpu"}},
                 "measure", "age", "", "")
"""


@dataclass
class MigDevice:
    gpu_instance_id: str
    compute_instance_id: str
    profile: str
    mig_uuid: str
    memory_total_bytes: float | None = None
    processes: int | None = None
    # user -> bytes; None: their processes are on it but NVML reports no memory for them
    holders: dict[str, float | None] = field(default_factory=dict)
    claimed_by: str | None = None  # the user `hwinfo run` holds it for

    @property
    def free(self) -> bool:
        return self.processes == 0 and self.claimed_by is None


@dataclass
class Profile:
    """MIG capacity not carved yet: instances of this profile that could still be created."""

    name: str
    free_instances: int
    memory_bytes: float | None = None


@dataclass
class Gpu:
    index: str
    uuid: str
    model: str = ""
    memory_total_bytes: float | None = None
    memory_used_bytes: float | None = None
    # What a job can get: total minus the driver's reserve minus what is used (NVML's free).
    memory_free_bytes: float | None = None
    processes: int | None = None
    mig_enabled: bool = False
    lost: bool = False
    # user -> bytes; None: their processes are on it but NVML reports no memory for them
    holders: dict[str, float | None] = field(default_factory=dict)
    mig_devices: list[MigDevice] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    claimed_by: str | None = None  # the user `hwinfo run` holds it for

    @property
    def free(self) -> bool:
        """Whole and unused: not in MIG mode, not lost, no process (known to be none), not
        claimed by `hwinfo run`."""
        return (not self.mig_enabled and not self.lost and self.processes == 0
                and self.claimed_by is None)


@dataclass
class Host:
    job: str
    instance: str
    state: str = "down"  # up, stale (GPU data too old or NVML stalled), down
    gpu_data_age_seconds: float | None = None
    gpus: list[Gpu] = field(default_factory=list)


@dataclass(frozen=True)
class Fit:
    """A place where a job of the asked size can run now."""

    kind: str  # gpu (a free whole GPU), mig_device (an idle one), mig_profile (to be created)
    instance: str
    gpu: str
    uuid: str
    model: str
    memory_bytes: float
    profile: str | None = None
    mig_uuid: str | None = None


@dataclass
class Fleet:
    at: float
    hosts: list[Host]  # with `fits`, their states only (no GPUs)
    fits: list[Fit] | None = None  # with a needed size only


def fleet(prometheus: Prometheus, at: float, model: re.Pattern[str] | None = None) -> Fleet:
    seen, *now = prometheus.queries([HOSTS, *_NOW], at)
    hosts = hosts_seen(seen, prometheus.url)
    _fill(hosts, checked([s for part in now for s in part], prometheus.url))
    for host in hosts.values():
        host.gpus.sort(key=lambda g: (len(g.index), g.index))
        if model is not None:
            host.gpus = [g for g in host.gpus if model.search(g.model)]
    return Fleet(at, [h for h in sorted(hosts.values(), key=lambda h: h.instance)
                      if model is None or h.gpus])


def checked(samples: list[Sample], url: str) -> list[Sample]:
    """The samples, or a LedgerError naming the first that no GPU can have: bytes, counts
    and flags are none negative, none past a PiB, and counts whole."""
    for s in samples:
        name = s.labels.get("__name__", "a series")
        if not 0 <= s.value <= MAX_FACT:
            raise LedgerError(f"{url}: {name} of {s.value:g} cannot be a GPU's "
                              "(negative or absurd)")
        if name in COUNTS and not float(s.value).is_integer():
            raise LedgerError(f"{url}: {name} of {s.value:g} is not a count")
    return samples


def hosts_seen(samples: list[Sample], url: str) -> dict[tuple[str, str], Host]:
    """Each host the answer to HOSTS has seen, in its state; a LedgerError if none."""
    hosts: dict[tuple[str, str], Host] = {}
    measures: dict[tuple[str, str], dict[str, float]] = {}
    for s in samples:
        key = (s.labels.get("job", ""), s.labels.get("instance", ""))
        measures.setdefault(key, {})[s.labels.get("measure", "")] = s.value
    for key, seen in measures.items():
        if "seen" not in seen:
            continue
        host = hosts[key] = Host(*key)
        host.gpu_data_age_seconds = seen.get("age")
        if seen.get("up") != 1:
            host.state = "down"
        # Data from further ahead than that: a clock so far off its time is unknown.
        elif seen.get("stalled") == 1 or host.gpu_data_age_seconds is None \
                or not -STALE_AFTER_SECONDS <= host.gpu_data_age_seconds <= STALE_AFTER_SECONDS:
            host.state = "stale"
        else:
            host.state = "up"
    if not hosts:
        raise LedgerError(f"{url} has no hwinfo series in the last {FORGET_AFTER}: "
                          "is it scraping hwinfo serve?")
    return hosts


def _fill(hosts: dict[tuple[str, str], Host], samples: list[Sample]) -> None:
    """Every GPU fact of `samples` in its host's GPUs, in one pass and a second for the MIG
    devices' facts: every lookup is by key, so a hostile answer of many devices or profiles
    costs linear time (a scan per series took 97 s for 20,000 MIG devices)."""
    gpus: dict[tuple[str, str, str], Gpu] = {}
    devices: dict[tuple[str, str, str, str, str], MigDevice] = {}
    # The compute instances of each GPU instance: a series may name only the latter.
    instances: dict[tuple[str, str, str, str], list[MigDevice]] = {}
    profiles: dict[tuple[str, str, str, str], Profile] = {}
    later: list[Sample] = []
    for s in samples:
        labels = s.labels
        host = hosts.get((labels.get("job", ""), labels.get("instance", "")))
        if host is None or "gpu" not in labels:
            continue
        gkey = (host.job, host.instance, labels["gpu"])
        gpu = gpus.get(gkey)
        if gpu is None:
            gpu = gpus[gkey] = Gpu(labels["gpu"], labels.get("uuid", ""))
            host.gpus.append(gpu)
        name = labels.get("__name__", "")
        if name == "hwinfo_mig_device_info":
            dkey = (*gkey, labels.get("gpu_instance_id", ""), labels.get("compute_instance_id", ""))
            device = devices[dkey] = MigDevice(dkey[3], dkey[4], labels.get("profile", ""),
                                               labels.get("mig_uuid", ""))
            gpu.mig_devices.append(device)
            instances.setdefault(dkey[:4], []).append(device)
        elif name in ("hwinfo_mig_profile_free_instances", "hwinfo_mig_profile_memory_bytes"):
            pkey = (*gkey, labels.get("profile", ""))
            profile = profiles.get(pkey)
            if profile is None:
                profile = profiles[pkey] = Profile(pkey[3], 0)
                gpu.profiles.append(profile)
            if name == "hwinfo_mig_profile_free_instances":
                profile.free_instances = int(s.value)
            else:
                profile.memory_bytes = s.value
        else:
            _gpu_fact(gpu, name, labels, s.value)
            later.append(s)
    for s in later:  # facts of MIG devices, now that every device is known
        labels = s.labels
        gkey = (labels.get("job", ""), labels.get("instance", ""), labels["gpu"])
        for device in _devices_of(devices, instances, gkey, labels):
            name = s.labels.get("__name__", "")
            if name == "hwinfo_mig_device_processes":
                device.processes = int(s.value)
            elif name == "hwinfo_mig_device_user_memory_used_bytes":
                device.holders[labels.get("user", "")] = s.value
            elif name == "hwinfo_mig_device_user_processes" and s.value > 0:
                device.holders.setdefault(labels.get("user", ""), None)
            elif name == "hwinfo_mig_gpu_instance_memory_total_bytes":
                device.memory_total_bytes = s.value
            elif name == "hwinfo_gpu_claim_info":
                device.claimed_by = labels.get("user", "")


def _devices_of(devices: dict[tuple[str, str, str, str, str], MigDevice],
                instances: dict[tuple[str, str, str, str], list[MigDevice]],
                gkey: tuple[str, str, str], labels: dict[str, str]) -> Iterator[MigDevice]:
    """The MIG devices a series is about: one, or every compute instance of a GPU instance."""
    gi, ci = labels.get("gpu_instance_id"), labels.get("compute_instance_id")
    if gi is None:
        return
    if ci is not None:
        if (device := devices.get((*gkey, gi, ci))) is not None:
            yield device
        return
    yield from instances.get((*gkey, gi), ())


def _gpu_fact(gpu: Gpu, name: str, labels: dict[str, str], value: float) -> None:
    if name == "hwinfo_gpu_info":  # the one series that carries the GPU's uuid and model
        gpu.model = labels.get("name", "")
        gpu.uuid = labels.get("uuid", gpu.uuid)
    elif name == "hwinfo_gpu_memory_total_bytes":
        gpu.memory_total_bytes = value
    elif name == "hwinfo_gpu_memory_used_bytes":
        gpu.memory_used_bytes = value
    elif name == "hwinfo_gpu_memory_free_bytes":
        gpu.memory_free_bytes = value
    elif name == "hwinfo_gpu_processes":
        gpu.processes = int(value)
    elif name == "hwinfo_gpu_mig_enabled":
        gpu.mig_enabled = value == 1
    elif name == "hwinfo_gpu_lost":
        gpu.lost = value == 1
    elif name == "hwinfo_gpu_user_memory_used_bytes":
        gpu.holders[labels.get("user", "")] = value
    elif name == "hwinfo_gpu_user_processes" and value > 0:
        gpu.holders.setdefault(labels.get("user", ""), None)
    elif name == "hwinfo_gpu_claim_info" and "gpu_instance_id" not in labels:  # a whole GPU's
        gpu.claimed_by = labels.get("user", "")
