"""`hwinfo run` on the machine page: who holds which GPU or MIG device for a command, since
when, and who waits in line (the snapshot's claims, as the report's claims section says them)."""

from __future__ import annotations

import time

from hwinfo.model.claims import Claim, Claims
from hwinfo.model.gpu import GpuSystem
from hwinfo.render.html.page import Markup, el
from hwinfo.render.text.claims import device_labels, devices_text, request_text
from hwinfo.units import duration


def claimant(claim: Claim) -> str:
    return claim.user or f"uid {claim.uid}"


def _since(when: float, now: float) -> Markup:
    return el("span", f"for {duration(max(0.0, now - when))}", cls="since",
              title=time.strftime("since %Y-%m-%d %H:%M:%S UTC", time.gmtime(when)))


def claim_note(claim: Claim, now: float) -> Markup:
    """One line in a card: "claimed by ann for train.py, for 5 min"."""
    return el("p", el("span", "claimed", cls="badge claimed"),
              f" by {claimant(claim)} for {claim.name}, ", _since(claim.since_seconds, now),
              cls="note")


def claims_section(claims: Claims | None, system: GpuSystem | None, now: float) -> Markup | None:
    """The claims and the line; None where no run holds or waits for anything and nothing
    in the directory was refused."""
    if claims is None or not (claims.claims or claims.waiters or claims.ignored):
        return None
    labels = device_labels(system)
    parts: list[Markup] = []
    if claims.claims:
        rows = [el("tr", el("td", devices_text([labels.get(d, d) for d in claim.devices])),
                   el("td", claimant(claim)), el("td", _since(claim.since_seconds, now)),
                   el("td", claim.command or claim.name)) for claim in claims.claims]
        head = el("tr", el("th", "Devices"), el("th", "User"), el("th", "Since"), el("th", "Command"))
        parts.append(el("div", el("table", el("thead", head), el("tbody", *rows)), cls="table-wrap"))
    if claims.waiters:
        parts.append(el("ol", *(el("li", el("b", w.user or f"uid {w.uid}"),
                                   f": {request_text(w.request)}, {w.name}, waiting ",
                                   _since(w.since_seconds, now)) for w in claims.waiters),
                        cls="waiters"))
    parts += [el("p", line, cls="error") for line in claims.ignored]
    return el("section", el("h2", "hwinfo run: claims and the line"), *parts)
