"""The lab's page (`hwinfo board`): hosts × GPUs, who holds them, the longest idle holds, and
where a job of a given size fits now, in the machine page's look (render/html).

A GPU or MIG device is free (no process, no claim), held (someone's processes), idle (held,
and every holder idle by the ledger's rule), claimed (by `hwinfo run`, before its command's
processes came), down (its host does not answer, or its data is stale) or lost (fallen off
the bus). Every name comes from the engine, which took it from the
hosts: each is escaped (render/html/page.el).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from hwinfo.ledger.board import Board, IdleHold
from hwinfo.ledger.board_cache import Answer
from hwinfo.ledger.fleet import Fit, Fleet, Gpu, Host, MigDevice
from hwinfo.render.html.machine import slices
from hwinfo.render.html.page import Markup, cell, document, el, join, raw
from hwinfo.render.text.gpu import short_name, used_of
from hwinfo.units import duration, size

# Rows of the people's tables and of the fits; the rest are counted.
ROWS_SHOWN = 12
# A GPU or MIG device: job, instance, gpu, gpu_instance_id, compute_instance_id.
_DEVICE_KEY = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class FitBox:
    """The "where does it fit" box: what was typed, and the answer or why there is none."""

    text: str = ""
    answer: Answer[Fleet] | None = None
    error: str | None = None


@dataclass(frozen=True)
class View:
    """What the page is made of besides the engine's answers."""

    title: str
    now: float
    refresh_seconds: int
    version: str


def _holders(holders: dict[str, float | None]) -> list[str]:
    return [u for u, _ in sorted(holders.items(), key=lambda kv: (-(kv[1] or 0), kv[0]))]


def _holders_title(holders: dict[str, float | None]) -> str:
    return ", ".join(f"{u} {'memory n/a' if b is None else size(b)}"
                     for u, b in sorted(holders.items(), key=lambda kv: (-(kv[1] or 0), kv[0])))


class _Lab:
    """Each device's state, worked out once for the grid, the tiles and the tables."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self.idle: dict[_DEVICE_KEY, set[str]] = {}
        for hold in board.idle:
            self.idle.setdefault(hold.device, set()).add(hold.user)
        self.counts = {"free": 0, "free_mig": 0, "held": 0, "idle": 0, "claimed": 0, "down": 0}

    def held_state(self, key: _DEVICE_KEY, holders: dict[str, float | None]) -> str:
        idle = self.idle.get(key, set())
        return "idle" if holders and set(holders) <= idle else "held"

    def gpu_state(self, host: Host, gpu: Gpu) -> tuple[str, str]:
        if host.state != "up":
            return "down", host.state
        if gpu.lost:
            return "lost", "lost"
        if gpu.mig_enabled:
            free = sum(d.free for d in gpu.mig_devices)
            return ("free" if gpu.mig_devices and free == len(gpu.mig_devices) else
                    "held" if gpu.mig_devices else "unknown"), "MIG"
        if gpu.processes is None:
            return "unknown", "?"
        if gpu.free:
            return "free", "free"
        if gpu.processes == 0 and gpu.claimed_by is not None:
            return "claimed", "claimed"
        state = self.held_state((host.job, host.instance, gpu.index, "", ""), gpu.holders)
        return state, state

    def device_state(self, host: Host, gpu: Gpu, device: MigDevice) -> str:
        if device.free:
            return "free"
        if device.processes == 0 and device.claimed_by is not None:
            return "claimed"
        return self.held_state((host.job, host.instance, gpu.index, device.gpu_instance_id,
                                device.compute_instance_id), device.holders)

    def count(self) -> None:
        counts = self.counts
        for host in self.board.fleet.hosts:
            for gpu in host.gpus:
                state, _ = self.gpu_state(host, gpu)
                if state in ("down", "lost"):
                    counts["down"] += 1
                elif gpu.mig_enabled:
                    for device in gpu.mig_devices:
                        kind = self.device_state(host, gpu, device)
                        counts["free_mig" if kind == "free" else kind] += 1
                elif state in counts:
                    counts[state] += 1


def _slots(lab: _Lab, host: Host, gpu: Gpu) -> list[tuple[str, str, str | None]]:
    slots: list[tuple[str, str, str | None]] = [
        (lab.device_state(host, gpu, d), slices(d.profile),
         f"{d.profile} (GPU instance {d.gpu_instance_id}, compute instance "
         f"{d.compute_instance_id}): " + (_holders_title(d.holders) or _claimed(d.claimed_by)))
        for d in gpu.mig_devices]
    room = _room(gpu)
    if room:  # alternatives, not a sum: one slot says what could still be carved
        slots.append(("carve", "+", room))
    return slots


def _claimed(user: str | None) -> str:
    return "free" if user is None else f"claimed by {user} (hwinfo run)"


def _room(gpu: Gpu) -> str | None:
    free = [f"{p.name} ×{p.free_instances}" for p in gpu.profiles if p.free_instances > 0]
    return "Room for one of: " + ", ".join(free) if free else None


def _cell(lab: _Lab, host: Host, gpu: Gpu) -> Markup:
    state, word = lab.gpu_state(host, gpu)
    holders = {u: b for d in gpu.mig_devices for u, b in d.holders.items()} if gpu.mig_enabled \
        else gpu.holders
    who = ", ".join(_holders(holders)) or gpu.claimed_by
    memory = (used_of(gpu.memory_used_bytes, gpu.memory_total_bytes)
              if gpu.memory_total_bytes is not None else None)
    title = " · ".join(part for part in (
        gpu.model or "GPU", gpu.uuid, _holders_title(holders),
        _claimed(gpu.claimed_by) if gpu.claimed_by is not None else None,
        _room(gpu) if gpu.mig_enabled else None) if part)
    return cell(gpu.index, state, word, who or None, memory,
                _slots(lab, host, gpu) if gpu.mig_enabled else (), title=title)


def _host(lab: _Lab, host: Host) -> Markup:
    models = sorted({short_name(g.model) for g in host.gpus if g.model})
    note = None
    if host.state == "down":
        note = el("p", "hwinfo on this host does not answer the engine: nothing here is offered.",
                  cls="note")
    elif host.state == "stale":
        age = host.gpu_data_age_seconds
        note = el("p", "Its GPU data is " + ("of unknown age" if age is None else
                                             f"{duration(abs(age))} old") +
                  " (NVML hangs, or its clock is off): nothing here is offered.", cls="note")
    return el("div", el("div", el("b", host.instance, title=f"job {host.job}"),
                        el("span", " · ".join(models), cls="dim"),
                        el("span", host.state, cls=f"badge {host.state}"), cls="host-h"),
              note, el("ol", *(_cell(lab, host, gpu) for gpu in host.gpus), cls="cells")
              if host.gpus else None,
              cls=f"host {host.state}")


def _tiles(lab: _Lab) -> Markup:
    counts = lab.counts
    hosts = lab.board.fleet.hosts
    down_hosts = sum(h.state != "up" for h in hosts)
    tiles = [("free", counts["free"], "free GPUs"), ("free", counts["free_mig"], "free MIG devices"),
             ("held", counts["held"], "held"), ("idle", counts["idle"], "held, idle"),
             ("claimed", counts["claimed"], "claimed, no process yet"),
             ("down", counts["down"], "GPUs down or lost"),
             ("down", down_hosts, f"of {len(hosts)} hosts down")]
    return el("section", el("div", *(el("div", el("b", str(n)), label, cls=f"tile {kind}")
                                     for kind, n, label in tiles), cls="tiles"),
              id="tiles", data_live=True)


def _where(hold: IdleHold) -> str:
    mig = (f" · MIG GI {hold.gpu_instance_id} CI {hold.compute_instance_id}"
           if hold.gpu_instance_id else "")
    return f"{hold.instance} · GPU {hold.gpu}{mig}"


def _table(headers: Iterable[tuple[str, bool]], rows: list[list[str]], total: int) -> Markup:
    head = el("tr", *(el("th", h, cls="n" if right else None) for h, right in headers))
    aligned = [right for _, right in headers]
    body = [el("tr", *(el("td", c, cls="n" if right else None) for c, right in zip(row, aligned)))
            for row in rows[:ROWS_SHOWN]]
    more = el("p", f"+{total - ROWS_SHOWN} more", cls="note") if total > ROWS_SHOWN else None
    return join([el("div", el("table", el("thead", head), el("tbody", *body)), cls="table-wrap"),
                 *([more] if more else [])])


def _idle_table(board: Board, now: float) -> Markup:
    if not board.idle_known:
        return el("p", "Not known: the engine does not evaluate the ledger's rules "
                       "(prometheus/hwinfo-ledger.yml), which say which holds are idle.", cls="note")
    if not board.idle:
        return el("p", "No hold is idle now.", cls="note")
    named = any(h.named for h in board.idle)
    rows = [[h.user, *([", ".join(h.named)] if named else []), _where(h),
             "not known" if h.since is None else duration(max(0.0, now - h.since))]
            for h in board.idle]
    return _table((("User", False), *([("Job, pod, container", False)] if named else []),
                   ("Where", False), ("Idle for", True)), rows, len(rows))


def _people(lab: _Lab) -> Markup:
    """A row per holder: how many devices they hold, the memory, how many idle, where."""
    held: dict[str, dict[str, list[tuple[str, float | None, bool]]]] = {}
    for host in lab.board.fleet.hosts:
        if host.state != "up":
            continue
        for gpu in host.gpus:
            devices = ([(d, (host.job, host.instance, gpu.index, d.gpu_instance_id,
                             d.compute_instance_id), f"{gpu.index}/{d.profile}")
                        for d in gpu.mig_devices] if gpu.mig_enabled else
                       [(gpu, (host.job, host.instance, gpu.index, "", ""), gpu.index)])
            for device, key, name in devices:
                for user, memory in device.holders.items():
                    idle = user in lab.idle.get(key, set())
                    held.setdefault(user, {}).setdefault(host.instance, []).append((name, memory, idle))
                if device.processes == 0 and device.claimed_by is not None:  # the claimant's hold
                    held.setdefault(device.claimed_by, {}).setdefault(host.instance, []).append(
                        (name, None, False))
    if not held:
        return el("p", "Nobody holds a GPU now.", cls="note")
    rows = []
    for user, hosts in held.items():
        places = [p for devices in hosts.values() for p in devices]
        rows.append([user, str(len(places)), size(sum(m or 0 for _, m, _ in places)),
                     str(sum(idle for _, _, idle in places)),
                     "; ".join(f"{host} GPU {', '.join(n for n, _, _ in devices)}"
                               for host, devices in hosts.items())])
    rows.sort(key=lambda r: (-int(r[1]), r[0]))
    return _table((("User", False), ("Devices", True), ("Memory", True), ("Idle", True),
                   ("Where", False)), rows, len(rows))


def _place(fit: Fit) -> str:
    if fit.kind == "mig_device":
        return f"MIG device {fit.profile}"
    if fit.kind == "mig_profile":
        return f"new MIG device {fit.profile} (an admin creates it)"
    return "whole GPU"


def _fit_rows(fits: list[Fit]) -> list[list[str]]:
    return [[f.instance, f.gpu, short_name(f.model), _place(f), size(f.memory_bytes)] for f in fits]


def _fits(box: FitBox, now: float) -> Markup:
    parts: list[Markup | None] = []
    if box.error is not None:
        parts.append(el("p", box.error, cls="error"))
    answer = box.answer
    if answer is not None:
        if answer.error is not None:
            parts.append(el("p", answer.error, cls="error"))
        fleet = answer.value
        if fleet is not None and fleet.fits is not None:
            age = "" if answer.value_at is None else f" (asked {duration(max(0.0, now - answer.value_at))} ago)"
            if fleet.fits:
                places = f"{len(fleet.fits)} place" + ("" if len(fleet.fits) == 1 else "s")
                parts.append(el("p", f"{places} for {box.text}, best fit first{age}:", cls="note"))
                parts.append(_table((("Host", False), ("GPU", True), ("Model", False),
                                     ("Place", False), ("Memory", True)), _fit_rows(fleet.fits),
                                    len(fleet.fits)))
            else:
                parts.append(el("p", f"{box.text} fits nowhere now{age}.", cls="note"))
    return el("div", *parts, id="fits", data_live=True)


def _fit_box(box: FitBox, now: float) -> Markup:
    form = el("form", el("label", "Where does ", for_="need"),
              el("input", id="need", name="need", value=box.text or None, placeholder="40GiB",
                 maxlength=32, autocomplete="off", spellcheck="false"),
              el("label", " fit now?", for_="need"), el("button", "Find", type="submit"),
              method="get", action=".", cls="fit")
    return el("section", el("h2", "Where a job fits"), form, _fits(box, now))


def _reading(lab: Answer[Board] | None, busy: str | None, now: float) -> Markup:
    parts: list[Markup] = []
    if lab is not None and lab.value_at is not None:
        at = lab.value_at
        parts += [raw("Read "), el("time", time.strftime("%H:%M:%S UTC", time.gmtime(at)),
                                   datetime=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))),
                  raw(" from the engine · "), el("span", f"{duration(max(0.0, now - at))} ago", cls="num")]
    error = busy or (lab.error if lab is not None else None)
    if error:
        parts += [raw(" · "), el("span", "STALE" if lab and lab.value else "NO DATA", cls="badge crit"),
                  raw(" "), el("span", error)]
    return el("p", *parts, id="reading", cls="reading" + (" stale" if error else ""), data_live=True)


def render_board(view: View, lab: Answer[Board] | None, box: FitBox, busy: str | None = None) -> bytes:
    """The page; `lab` None (with `busy` saying why) before the engine first answered."""
    board = lab.value if lab is not None else None
    header = el("header", el("h1", view.title), _reading(lab, busy, view.now), cls="top")
    legend = el("p", *(el("span", word, cls=kind) for kind, word in (
        ("free", "free"), ("held", "held"), ("idle", "held, idle"), ("claimed", "claimed"),
        ("down", "down, stale or lost"))), cls="legend")
    if board is None:
        body = join([el("section", el("p", "No answer from the engine yet.", cls="note"), id="tiles",
                        data_live=True), _fit_box(box, view.now),
                     el("div", id="grid", data_live=True), el("div", id="people", data_live=True)])
        title = view.title
    else:
        state = _Lab(board)
        state.count()
        grid = el("section", el("h2", "Hosts and GPUs"), legend,
                  el("div", *(_host(state, h) for h in board.fleet.hosts), cls="hosts"),
                  id="grid", data_live=True)
        people = el("div", el("section", el("h2", "Who holds GPUs"), _people(state)),
                    el("section", el("h2", "Longest idle holds"), _idle_table(board, view.now)),
                    cls="two", id="people", data_live=True)
        body = join([_tiles(state), _fit_box(box, view.now), grid, people])
        free = state.counts["free"]
        title = f"{free} free GPU{'' if free == 1 else 's'} · {view.title}"
    footer = el("footer", f"hwinfo {view.version} · GPU memory and holders as the engine last "
                          "scraped them; idle by the ledger's rules")
    return document(title, body, view.refresh_seconds, header=header, footer=footer)
