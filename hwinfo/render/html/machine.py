"""The machine page (`/` of `hwinfo serve`): what `report --brief` shows, who holds each GPU
and MIG device, `hwinfo run`'s claims and line, and the health findings, from one snapshot.

A card per GPU: its model, health, utilization, memory, temperature and power, then its
holders (a user with the job, pod or container their processes' cgroup names), each with the
memory they hold and how long their oldest process has run; a MIG GPU has a block per MIG
device instead. A GPU with no process and no claim says it is free, as `fleet` counts it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from hwinfo.health.evaluate import evaluate
from hwinfo.health.findings import Finding, Severity
from hwinfo.health.labels import LABELS
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.claims import Claim, Claims
from hwinfo.model.gpu import Gpu, GpuProcess, MigDevice
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.sources import OK
from hwinfo.render.html.claims import claim_note, claimant, claims_section
from hwinfo.render.html.page import Markup, bar, cell, document, el, join, raw
from hwinfo.render.text.brief import cpu_text, memory_text, network_text, storage_text
from hwinfo.render.text.gpu import memory_short, short_name, used_of
from hwinfo.render.text.gpu_processes import process_owner, user_totals
from hwinfo.render.text.style import Style
from hwinfo.units import NA, celsius, duration, or_na, percent, size, watts

# Holders listed per GPU or MIG device, most memory first; the rest are counted.
HOLDERS_SHOWN = 6
# Command names listed per holder; the rest are counted.
NAMES_SHOWN = 3
_SEVERITY_CLASS = {Severity.CRITICAL: "crit", Severity.WARNING: "warn",
                   Severity.UNKNOWN: "unknown", Severity.OK: "ok"}


@dataclass(frozen=True)
class Reading:
    """When the page is made, and how to judge the snapshot's age."""

    now: float  # Unix time the page is rendered
    refresh_seconds: int  # how often the page reloads itself
    stale_after_seconds: float  # a snapshot older than this is said to be stale
    version: str  # hwinfo's, for the footer


@dataclass
class _Holder:
    """One user's processes (with one job, pod or container) on one GPU or MIG device."""

    user: str
    job: str | None
    memory_bytes: int | None = None
    processes: int = 0
    names: dict[str, int] = field(default_factory=dict)
    longest_seconds: float | None = None

    def add(self, proc: GpuProcess) -> None:
        self.processes += 1
        if proc.used_memory_bytes is not None:
            self.memory_bytes = (self.memory_bytes or 0) + proc.used_memory_bytes
        name = process_owner(proc)[1] if not proc.visible else proc.name or "?"
        self.names[name] = self.names.get(name, 0) + 1
        if proc.run_seconds is not None:
            self.longest_seconds = max(self.longest_seconds or 0.0, proc.run_seconds)


def _holders(processes: Iterable[GpuProcess]) -> list[_Holder]:
    found: dict[tuple[str, str | None], _Holder] = {}
    for proc in processes:
        user = process_owner(proc)[0]
        label = proc.attribution.label if proc.attribution is not None else None
        job = None if label in (None, "-") else label
        found.setdefault((user, job), _Holder(user, job)).add(proc)
    return sorted(found.values(), key=lambda h: (-(h.memory_bytes or 0), -h.processes, h.user))


def _names(holder: _Holder) -> str:
    shown = sorted(holder.names.items(), key=lambda item: (-item[1], item[0]))
    text = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in shown[:NAMES_SHOWN])
    more = len(shown) - NAMES_SHOWN
    return text + (f" +{more}" if more > 0 else "")


def _holder_list(processes: list[GpuProcess] | None, count: int | None) -> Markup:
    if processes is None:  # not collected; NVML's count may still be known
        return el("p", f"{or_na(count, str)} processes (not listed)", cls="note")
    holders = _holders(processes)
    items = [el("li",
                el("span", h.user, cls="who"),
                el("span", h.job, cls="job") if h.job else None,
                el("span", _names(h), cls="what"),
                el("span", "for " + duration(h.longest_seconds), cls="since")
                if h.longest_seconds is not None else None,
                el("span", or_na(h.memory_bytes, size).replace(NA, "memory n/a"), cls="mem"))
             for h in holders[:HOLDERS_SHOWN]]
    if len(holders) > HOLDERS_SHOWN:
        items.append(el("li", f"+{len(holders) - HOLDERS_SHOWN} more holders", cls="dim"))
    return el("ul", *items, cls="holders")


def _meter(label: str, ratio: float | None, value: str, hot_above: float = 0.9) -> Markup:
    return el("div", el("span", label, cls="k"), bar(ratio, hot_above), el("span", value, cls="v"),
              cls="meter")


def _ratio(used: int | None, total: int | None) -> float | None:
    return used / total if used is not None and total else None


def _power(gpu: Gpu) -> str:
    draw = or_na(gpu.power_draw_watts, watts).replace(NA, "power n/a")
    return draw + (f" of {watts(gpu.power_limit_watts)}" if gpu.power_limit_watts else "")


def _memory(used: int | None, total: int | None) -> str:
    return "memory n/a" if total is None else used_of(used, total)


@dataclass(frozen=True)
class _Claims:
    """The snapshot's claims of `hwinfo run`, and the time the page is made."""

    claims: Claims | None
    now: float

    def of(self, uuid: str | None) -> Claim | None:
        return self.claims.holder_of(uuid) if self.claims is not None else None


def _device_state(device: MigDevice, claims: _Claims) -> str:
    if device.process_count != 0:
        return "held"
    return "claimed" if claims.of(device.uuid) else "free"


def _mig_device(device: MigDevice, claims: _Claims) -> Markup:
    state = _device_state(device, claims)
    claim = claims.of(device.uuid)
    who = (_holder_list(device.processes, device.process_count) if state == "held"
           else el("p", "free", cls="free-word") if state == "free" else None)
    return el("div", el("b", device.profile or "MIG device", title=device.uuid),
              el("span", f"#{device.index}", cls="dim"),
              bar(_ratio(device.memory_used_bytes, device.memory_total_bytes)),
              el("span", _memory(device.memory_used_bytes, device.memory_total_bytes), cls="num"),
              who, claim_note(claim, claims.now) if claim else None, cls=f"mig {state}")


def _is_free(gpu: Gpu, claims: _Claims) -> bool:
    """Whole, readable, without a process and not claimed by `hwinfo run`: what `fleet`
    offers as a free GPU."""
    if gpu.lost or gpu.unavailable.get("gpu") or (gpu.mig is not None and gpu.mig.enabled):
        return False
    count = gpu.process_count if gpu.process_count is not None else (
        None if gpu.processes is None else len(gpu.processes))
    return count == 0 and claims.of(gpu.uuid) is None


def slices(profile: str | None) -> str:
    """A MIG profile by its compute slices alone, for a slot: "1g" of "1g.10gb", "1c.3g"."""
    return (profile or "MIG").rsplit(".", 1)[0] if profile and profile.endswith("gb") else profile or "MIG"


def _state(gpu: Gpu, findings: list[Finding], claims: _Claims) -> tuple[str, str]:
    """(the cell's state class, its word): free, held, idle (memory held, nothing computed:
    the health rule idle_gpu_memory), claimed (by `hwinfo run`, no process yet), lost,
    unreadable; a MIG GPU by its devices."""
    if gpu.lost:
        return "lost", "lost"
    if gpu.unavailable.get("gpu"):
        return "unknown", "unreadable"
    if gpu.mig is not None and gpu.mig.enabled:
        devices = gpu.mig.devices
        if not devices:
            return "unknown", "MIG"
        free = sum(_device_state(device, claims) == "free" for device in devices)
        return ("free" if free == len(devices) else "held"), "MIG"
    if _is_free(gpu, claims):
        return "free", "free"
    if gpu.process_count == 0 and claims.of(gpu.uuid):
        return "claimed", "claimed"
    if any(f.rule == "idle_gpu_memory" for f in findings):
        return "idle", "idle"
    return "held", "held"


def _who(processes: list[GpuProcess] | None, claim: Claim | None) -> str:
    users = list(dict.fromkeys(h.user for h in _holders(processes or ())))
    return ", ".join(users) or (claimant(claim) if claim else "")


def _overview_cell(gpu: Gpu, findings: list[Finding], claims: _Claims) -> Markup:
    state, word = _state(gpu, findings, claims)
    slots = [(_device_state(d, claims), slices(d.profile),
              f"#{d.index}: " + (_who(d.processes, claims.of(d.uuid)) or "free"))
             for d in (gpu.mig.devices if gpu.mig is not None and gpu.mig.enabled else ())]
    memory = None if gpu.lost else memory_short(gpu)
    return cell(str(gpu.index), state, word, _who(gpu.all_processes(), claims.of(gpu.uuid)) or None,
                memory, slots, title=gpu.name, href=f"#gpu-{gpu.index}")


def _card(gpu: Gpu, findings: list[Finding], claims: _Claims) -> Markup:
    worst = findings[0] if findings else None
    severity = worst.severity if worst else Severity.OK
    words = LABELS[worst.rule](worst) if worst and worst.rule in LABELS else (
        worst.message if worst else "ok")
    state, _ = _state(gpu, findings, claims)
    head = el("div", el("span", str(gpu.index), cls="idx"),
              el("span", short_name(gpu.name), cls="name", title=f"{gpu.name or NA} · {gpu.uuid or NA}"),
              el("span", words, cls="badge " + _SEVERITY_CLASS[severity], title=worst.message if worst else None),
              cls="card-h")
    classes = f"card {state}" + (f" {_SEVERITY_CLASS[severity]}" if severity is not Severity.OK else "")
    if gpu.lost or gpu.unavailable.get("gpu"):
        reason = "NVML says it fell off the bus" if gpu.lost else gpu.unavailable["gpu"]
        return el("article", head, el("p", f"Not readable: {reason}", cls="note"), cls=classes,
                  id=f"gpu-{gpu.index}")
    mig = gpu.mig is not None and gpu.mig.enabled
    facts = [or_na(gpu.temperature_celsius, celsius).replace(NA, "temperature n/a"), _power(gpu),
             _plural(gpu.process_count, "proc")]
    claim = claims.of(gpu.uuid)
    rows = [
        # NVML has no utilization of a GPU in MIG mode before Hopper's GPM: no empty bar.
        None if mig else
        _meter("Util", gpu.utilization_gpu_ratio, or_na(gpu.utilization_gpu_ratio, percent), 1.0),
        _meter("Memory", _ratio(gpu.memory_used_bytes, gpu.memory_total_bytes), memory_short(gpu), 0.95),
        el("p", " · ".join(["MIG mode", *facts] if mig else facts), cls="line"),
        claim_note(claim, claims.now) if claim else None,
    ]
    if mig:
        assert gpu.mig is not None
        rows += [_mig_device(device, claims) for device in gpu.mig.devices]
        if not gpu.mig.devices:
            rows.append(el("p", "MIG is on and no instance exists: it runs no work", cls="note"))
        free = [f"{c.profile} ×{c.instances_free}" for c in gpu.mig.capacity or () if c.instances_free]
        if free:
            rows.append(el("p", "Can still create: " + ", ".join(free), cls="note"))
    elif state == "free":
        rows.append(el("p", el("span", "Free", cls="free-word"), ": no process on it", cls="note"))
    elif state != "claimed":
        rows.append(_holder_list(gpu.processes, gpu.process_count))
    return el("article", head, *rows, cls=classes, id=f"gpu-{gpu.index}")


def _clock(seconds: float) -> Markup:
    return el("time", time.strftime("%H:%M:%S UTC", time.gmtime(seconds)),
              datetime=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds)))


def _counts(findings: list[Finding]) -> list[Markup]:
    """A badge per severity found ("2 critical", "1 warning"), linking to the findings."""
    words = ((Severity.CRITICAL, "critical", "critical"), (Severity.WARNING, "warning", "warnings"),
             (Severity.UNKNOWN, "unknown", "unknown"))
    counts = [(severity, sum(f.severity is severity for f in findings), one, many)
              for severity, one, many in words]
    return [el("a", f"{n} {one if n == 1 else many}", href="#health",
               cls="badge " + _SEVERITY_CLASS[severity]) for severity, n, one, many in counts if n]


def _plural(n: int | None, word: str) -> str:
    return f"{or_na(n, str)} {word}" + ("" if n == 1 else "s")


def _reading_line(snapshot: Snapshot, reading: Reading, findings: list[Finding]) -> Markup:
    """When the snapshot was taken, its age, what of it is stale or missing, and how many
    health findings there are."""
    age = snapshot.age_seconds(reading.now)
    problems = [f"{s.source} data {s.state}" + (f": {s.error}" if s.error else "")
                for s in snapshot.sources if s.state != OK and s.state != "not_collected"]
    stale = age > reading.stale_after_seconds
    if stale:
        problems.insert(0, f"no new reading for {duration(age)}: is the sampler stuck?")
    text = [raw("Read "), _clock(snapshot.timestamp_seconds), raw(" · "),
            el("span", f"{duration(age)} ago", cls="num")]
    if problems:
        text += [raw(" · "), el("span", "STALE" if stale else "PARTLY STALE", cls="badge crit"),
                 raw(" "), el("span", "; ".join(problems))]
    for badge in _counts(findings):
        text += [raw(" "), badge]
    return el("p", *text, id="reading", cls="reading" + (" stale" if stale else ""), data_live=True)


def _summary(snapshot: Snapshot) -> Markup:
    system = snapshot.gpu
    if system is None:
        gpus = "not collected"
    elif system.status != "ok":
        gpus = system.message or system.status
    else:
        gpus = (f"{len(system.gpus)} · driver {system.driver_version or NA} · "
                f"CUDA {system.cuda_driver_version or NA}")
    rows = [("CPU", cpu_text(snapshot.cpu)), ("Memory", memory_text(snapshot.memory))]
    # As the brief: an older daemon's document (report --from) has neither.
    if snapshot.storage is not None or snapshot.source("storage") is not None:
        rows.append(("Disks", storage_text(snapshot.storage, Style())))
    if snapshot.network is not None or snapshot.source("network") is not None:
        rows.append(("Network", network_text(snapshot.network)))
    rows.append(("GPUs", gpus))
    return el("dl", *(part for k, v in rows for part in (el("dt", k), el("dd", v))), cls="facts")


def _users(snapshot: Snapshot) -> Markup | None:
    users = snapshot.gpu.users if snapshot.gpu is not None else None
    totals = user_totals(users or [])
    if not totals:
        return None
    rows = [el("tr", el("td", t.user or "(unknown)"), el("td", ", ".join(map(str, t.gpu_indices))),
               el("td", or_na(t.used_memory_bytes, size).replace(NA, "n/a"), cls="n"),
               el("td", str(t.processes), cls="n"), el("td", ", ".join(t.attributions)))
            for t in totals]
    head = el("tr", el("th", "User"), el("th", "GPUs"), el("th", "Memory", cls="n"),
              el("th", "Procs", cls="n"), el("th", "Jobs, pods, containers"))
    return el("section", el("h2", "GPU users"),
              el("div", el("table", el("thead", head), el("tbody", *rows)), cls="table-wrap"))


def _health(snapshot: Snapshot, findings: list[Finding]) -> Markup:
    items = [el("li", el("span", f"{e.source}: collection failed", cls="badge crit"), e.message)
             for e in snapshot.errors]
    items += [el("li", el("span", f.severity.name.lower(), cls="badge " + _SEVERITY_CLASS[f.severity]),
                 el("b", f.subject), ": ", f.message, title=f.rule)
              for f in findings]
    if not items:
        items = [el("li", el("span", "ok", cls="badge ok"), " every health rule passed")]
    return el("section", el("h2", "Health", id="health"), el("ul", *items, cls="findings"))


def _gpus(snapshot: Snapshot, findings: list[Finding], claims: _Claims) -> Markup:
    system = snapshot.gpu
    if system is None:
        return el("p", "GPU collection is switched off.", cls="note")
    if system.status != "ok":
        return el("p", system.message or system.status, cls="error")
    if not system.gpus:
        return el("p", f"No NVIDIA GPU found (driver {system.driver_version or NA}).", cls="note")
    by_gpu: dict[str, list[Finding]] = {}
    for finding in findings:
        by_gpu.setdefault(finding.subject, []).append(finding)
    of = [(gpu, by_gpu.get(f"gpu {gpu.index}", [])) for gpu in system.gpus]
    return join([el("ol", *(_overview_cell(gpu, found, claims) for gpu, found in of),
                    cls="cells overview"),
                 el("div", *(_card(gpu, found, claims) for gpu, found in of), cls="cards")])


def _title(snapshot: Snapshot, claims: _Claims) -> str:
    system = snapshot.gpu
    if system is None or system.status != "ok" or not system.gpus:
        return f"{snapshot.host.hostname} · hwinfo"
    free = sum(_is_free(gpu, claims) for gpu in system.gpus)
    return f"{snapshot.host.hostname} · {free} of {len(system.gpus)} GPUs free · hwinfo"


def _footer(reading: Reading) -> Markup:
    links = [el("a", label, href=href) for href, label in (
        ("./metrics", "metrics"), ("./api/v1/snapshot", "snapshot JSON"),
        ("./-/healthy", "healthy"), ("./-/ready", "ready"))]
    return el("footer", join(links, " "), f" hwinfo {reading.version}")


def render_machine(snapshot: Snapshot | None, reading: Reading) -> bytes:
    """The machine page; before the first sample, a page that says so and refreshes."""
    if snapshot is None:
        body = el("div", el("p", "No reading yet: the first sample is being taken.", cls="note"),
                  id="live", data_live=True)
        header = el("header", el("h1", "hwinfo"), cls="top")
        return document("hwinfo · waiting for the first sample", body, reading.refresh_seconds,
                        header=header, footer=_footer(reading))
    host = snapshot.host
    findings = evaluate(snapshot, Thresholds(), now=reading.now)
    claims = _Claims(snapshot.claims, reading.now)
    header = el("header", el("h1", host.hostname),
                el("span", " · ".join((host.os_name or NA, f"kernel {host.kernel_release or NA}",
                                       f"up {or_na(host.uptime_seconds, duration)}")), cls="meta"),
                _reading_line(snapshot, reading, findings), cls="top")
    live = el("div", el("section", _summary(snapshot)),
              el("section", el("h2", "GPUs"), _gpus(snapshot, findings, claims)),
              claims_section(snapshot.claims, snapshot.gpu, reading.now),
              _users(snapshot), _health(snapshot, findings), id="live", data_live=True)
    return document(_title(snapshot, claims), live, reading.refresh_seconds, header=header,
                    footer=_footer(reading))
