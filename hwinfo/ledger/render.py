"""The ledger's answers as text for people, JSON and CSV for scripts.

JSON and CSV carry base units (seconds, bytes, joules) under the names the README lists;
text shows hours, GiB and kWh. A figure not available is null in JSON, empty in CSV and
"n/a" in text, never 0.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from typing import Any

from hwinfo.escape import printable_copy, to_json
from hwinfo.inputs import decimal
from hwinfo.ledger.fleet import Fleet, Gpu, Host
from hwinfo.ledger.units import duration_text, figure, hours
from hwinfo.ledger.units import utc as _when  # job_render's name for it too
from hwinfo.ledger.usage import JOULES_PER_KWH, Ledger, Usage
from hwinfo.ledger.usage_efficiency import EFFICIENCY_BY
from hwinfo.render.text.layout import Section
from hwinfo.render.text.style import Style
from hwinfo.units import percent, size

NA = "n/a"
TOTAL = "(total)"  # no user, host or model can be named so: parentheses are not in either
_USAGE_FIELDS = ("held_gpu_seconds", "busy_gpu_seconds", "idle_held_gpu_seconds",
                 "unknown_gpu_seconds", "accounted_gpu_seconds", "mean_utilization_ratio",
                 "peak_memory_bytes", "energy_joules", "device_judged_gpu_seconds",
                 "unmetered_gpu_seconds", "unseen_gpu_seconds")


# What --by job and --by user add (usage_efficiency.py).
_EFFICIENCY_FIELDS = ("cpu_efficiency", "verdict")


def _fields(by: str) -> tuple[str, ...]:
    return _USAGE_FIELDS + (_EFFICIENCY_FIELDS if by in EFFICIENCY_BY else ())


def _usage_record(row: Usage, with_cost: bool, by: str) -> dict[str, Any]:
    record: dict[str, Any] = {name: getattr(row, name) for name in _fields(by)}
    if with_cost:
        record["cost"] = row.cost
        # A cost without the GPU-hours of models that have no price: partial.
        record["unpriced_models"] = ";".join(sorted(row.unpriced_models))
    return record


def usage_json(ledger: Ledger, currency: str | None) -> str:
    with_cost = currency is not None
    document: dict[str, Any] = {
        "since": ledger.since, "until": ledger.until, "by": ledger.by,
        "rule_interval_seconds": ledger.interval_seconds,
        "covered_seconds": ledger.covered_seconds,
        "rows": [{ledger.by: row.key, **_usage_record(row, with_cost, ledger.by)}
                 for row in ledger.rows],
        "totals": _usage_record(ledger.total, with_cost, ledger.by),
    }
    if with_cost:
        document["currency"] = currency
    if ledger.advice is not None:
        document["advice"] = [a.__dict__ for a in ledger.advice]
    document["notes"] = ledger.notes
    return to_json(document) + "\n"


def usage_csv(ledger: Ledger, currency: str | None) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = [ledger.by, *_fields(ledger.by),
              *(["cost", "unpriced_models"] if currency is not None else [])]
    writer.writerow(header)
    for row in [*ledger.rows, ledger.total]:
        record = _usage_record(row, currency is not None, ledger.by)
        writer.writerow([TOTAL if row is ledger.total else row.key,
                         *(_number(record[k]) for k in header[1:])])
    return out.getvalue()


def _number(value: float | str | None) -> str:
    """A CSV cell: whole numbers (bytes) whole, others to a millionth, nothing for n/a."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    # 969300.0000001 is 969300 to a millionth: "969300", not "969300.".
    return str(int(value)) if float(value).is_integer() else \
        f"{value:.6f}".rstrip("0").rstrip(".")


def usage_text(ledger: Ledger, currency: str | None, style: Style) -> str:
    ledger, currency = printable_copy(ledger), printable_copy(currency)
    span = ledger.until - ledger.since
    section = Section(f"GPU usage by {ledger.by}, {_when(ledger.since)} to {_when(ledger.until)}",
                      style)
    section.line(f"GPU-hours: hours of one whole GPU (a 3g.40gb of an A100 held an hour is "
                 f"0.43); range {duration_text(span)}, rules every "
                 f"{duration_text(ledger.interval_seconds)}")
    header = [ledger.by.upper(), "HELD", "BUSY", "IDLE", "UNKNOWN", "UTIL", "PEAK MEM", "kWh"]
    unseen = bool(ledger.total.unseen_gpu_seconds)
    if unseen:
        header.insert(5, "UNSEEN")
    efficiency = any(row.verdict is not None for row in ledger.rows)  # add_efficiency ran
    if efficiency:
        header += ["CPU EFF", "VERDICT"]
    if currency is not None:
        header.append(f"COST {currency}".strip())
    rows = []
    for row in [*ledger.rows, ledger.total]:
        cells = [TOTAL if row is ledger.total else row.key, hours(row.held_gpu_seconds),
                 hours(row.busy_gpu_seconds), hours(row.idle_held_gpu_seconds),
                 hours(row.unknown_gpu_seconds),
                 NA if row.mean_utilization_ratio is None else percent(row.mean_utilization_ratio),
                 NA if row.peak_memory_bytes is None else size(row.peak_memory_bytes),
                 figure(row.energy_joules / JOULES_PER_KWH)]
        if unseen:
            cells.insert(5, "" if row.unseen_gpu_seconds is None else hours(row.unseen_gpu_seconds))
        if efficiency:
            cells += [NA if row.cpu_efficiency is None else percent(row.cpu_efficiency),
                      "" if row is ledger.total else row.verdict or NA]
        if currency is not None:
            cells.append(NA if row.cost is None else figure(row.cost, 2))
        rows.append(cells)
    section.table(header, rows, right=[False] + [h != "VERDICT" for h in header[1:]])
    if any(row.accounted_gpu_seconds for row in ledger.rows):
        section.line("HELD includes short jobs NVML accounting saw between samples "
                     f"({hours(ledger.total.accounted_gpu_seconds)} h), in neither BUSY nor IDLE; "
                     "those that ended while a host's hwinfo was down count only where it kept "
                     "a --state-dir")
    if ledger.advice is not None:
        _advice_lines(section, ledger)
    for note in ledger.notes:
        section.line(f"note: {note}")
    return section.render() + "\n"


def _advice_lines(section: Section, ledger: Ledger) -> None:
    section.line("")
    section.line(section.style.heading("Advice"), indent=0)
    for a in ledger.advice or ():
        peak = NA if a.peak_memory_bytes is None else size(a.peak_memory_bytes)
        mean = NA if a.mean_utilization_ratio is None else percent(a.mean_utilization_ratio)
        source = " (hwinfo's MIG catalogue)" if a.profile_source == "catalogue" else ""
        what = {"release": f"idle: release it, frees {hours(a.freed_gpu_seconds)} GPU-hours",
                "profile": f"{a.profile}{source} would do: frees {hours(a.freed_gpu_seconds)} GPU-hours",
                "none": f"no smaller MIG profile holds this{source}",
                "no_mig": "no MIG on this model",
                "not_own_activity": "no verdict: its activity is the shared GPU's, maybe another's",
                "no_profile_data": "no verdict: no MIG profile data for this model"}[a.verdict]
        section.line(f"{a.user} on GPU {a.gpu} of {a.instance} ({a.model}): "
                     f"{hours(a.held_gpu_seconds)} GPU-hours, peak {peak}, mean {mean}: {what}")
    idle = [row for row in ledger.rows if row.idle_held_gpu_seconds > 0]
    if idle and ledger.by == "user":
        wasted = ", ".join(f"{row.key} {hours(row.idle_held_gpu_seconds)}"
                           for row in sorted(idle, key=lambda r: -r.idle_held_gpu_seconds))
        section.line(f"GPU-hours held idle (wasted): {wasted}")


def _gpu_record(gpu: Gpu) -> dict[str, Any]:
    return {
        # An integer, as NVML numbers GPUs; null where the engine's label is not one.
        "index": decimal(gpu.index), "uuid": gpu.uuid, "model": gpu.model,
        "memory_total_bytes": gpu.memory_total_bytes, "memory_used_bytes": gpu.memory_used_bytes,
        "memory_free_bytes": gpu.memory_free_bytes,
        "processes": gpu.processes, "mig_enabled": gpu.mig_enabled, "lost": gpu.lost,
        "free": gpu.free, "claimed_by": gpu.claimed_by,
        "holders": [{"user": u, "memory_used_bytes": b} for u, b in sorted(gpu.holders.items())],
        "mig_devices": [{**d.__dict__, "free": d.free,
                         "holders": [{"user": u, "memory_used_bytes": b}
                                     for u, b in sorted(d.holders.items())]}
                        for d in gpu.mig_devices],
        "mig_profiles_free": [p.__dict__ for p in gpu.profiles if p.free_instances > 0],
    }


def fleet_json(fleet: Fleet) -> str:
    """The fleet's hosts with their GPUs; with fits, the hosts' states and the fits."""
    hosts = [{"job": h.job, "instance": h.instance, "state": h.state,
              "gpu_data_age_seconds": h.gpu_data_age_seconds} for h in fleet.hosts]
    document: dict[str, Any] = {"time": fleet.at, "hosts": hosts}
    if fleet.fits is None:
        for record, host in zip(hosts, fleet.hosts):
            record["gpus"] = [_gpu_record(g) for g in host.gpus]
    else:
        document["fits"] = [{**f.__dict__, "gpu": decimal(f.gpu)} for f in fleet.fits]
    return to_json(document) + "\n"


def _holders(holders: dict[str, float | None]) -> str:
    return ", ".join(f"{u} {NA if b is None else size(b)}"
                     for u, b in sorted(holders.items(), key=lambda kv: -(kv[1] or 0)))


def _gpu_state(gpu: Gpu, host_state: str) -> str:
    if host_state != "up":
        return host_state
    if gpu.lost:
        return "lost"
    if gpu.mig_enabled:
        idle = sum(d.free for d in gpu.mig_devices)
        return f"MIG {len(gpu.mig_devices) - idle}/{len(gpu.mig_devices)} used"
    if gpu.processes is None:
        return NA
    if gpu.processes == 0 and gpu.claimed_by is not None:
        return "claimed"
    return "free" if gpu.free else "held"


def fleet_text(fleet: Fleet, need_memory: int | None, style: Style) -> str:
    # Each table escapes its cells whole (keep_colour=False), each distinct text once: a
    # printable_copy of a thousand hosts' fleet took half a second.
    section = Section(f"Fleet at {_when(fleet.at)}", style)
    if fleet.fits is not None and need_memory is not None:
        _fits_lines(section, fleet, need_memory, style)
        return section.render() + "\n"
    rows = []
    for host in fleet.hosts:
        if host.state != "up":
            rows.append([host.instance, "", "", "", _host_state(host), ""])
        for gpu in host.gpus:
            memory = NA if gpu.memory_total_bytes is None else size(gpu.memory_total_bytes)
            carve = ", ".join(f"{p.name}×{p.free_instances}" for p in gpu.profiles
                              if p.free_instances > 0)
            claims = [f"{where}claimed by {user}" for where, user in
                      [("", gpu.claimed_by)] + [(f"MIG {d.gpu_instance_id}/{d.compute_instance_id} ",
                                                 d.claimed_by) for d in gpu.mig_devices]
                      if user is not None]
            who = "; ".join(part for part in (_holders(gpu.holders), *claims,
                                              carve and f"can create {carve}") if part)
            rows.append([host.instance, gpu.index, gpu.model, memory,
                         _gpu_state(gpu, host.state), who])
    section.table(["HOST", "GPU", "MODEL", "MEMORY", "STATE", "HOLDERS"], rows,
                  right=[False, True, False, True, False, False], keep_colour=False)
    return section.render() + "\n"


def _host_state(host: Host) -> str:
    age = host.gpu_data_age_seconds
    return host.state + (f" (GPU data {age:.0f} s old)"
                         if age is not None and host.state == "stale" else "")


def _fits_lines(section: Section, fleet: Fleet, need_memory: int, style: Style) -> None:
    """The hosts counted, those that offer nothing (down, stale, or up with no place that
    fits), then the fits."""
    states = Counter(host.state for host in fleet.hosts)
    count = len(fleet.hosts)
    section.line(f"{count:,} host{'' if count == 1 else 's'}: " + ", ".join(
        f"{states[state]:,} {state}" for state in ("up", "stale", "down") if states[state]))
    offering = {fit.instance for fit in fleet.fits or ()}
    absent = [[host.instance, _host_state(host) if host.state != "up" else "up, nothing that fits"]
              for host in fleet.hosts if host.instance not in offering]
    if absent:
        section.line("offering nothing now:")
        section.table(["HOST", "STATE"], absent, indent=2, keep_colour=False)
    section.line("")
    section.line(style.heading(f"Where {size(need_memory)} fits now, best fit first"), indent=0)
    if not fleet.fits:
        section.line("nowhere: no free GPU, idle MIG device or MIG capacity that large")
        return
    rows = [[f.instance, f.gpu, f.model, {"gpu": "whole GPU", "mig_device": "MIG device",
                                          "mig_profile": "create MIG"}[f.kind],
             f.profile or "", size(f.memory_bytes), f.mig_uuid or f.uuid] for f in fleet.fits]
    section.table(["HOST", "GPU", "MODEL", "KIND", "PROFILE", "MEMORY", "UUID"], rows,
                  right=[False, True, False, False, False, True, False], keep_colour=False)
