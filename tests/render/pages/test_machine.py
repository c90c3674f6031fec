"""The machine page, rendered from simulated snapshots and read back as a browser parses it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from fixtures.simulated import simulated_snapshot, simulated_system

from hwinfo.health.evaluate import evaluate
from hwinfo.health.findings import Severity
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.claims import Claim, Claims, Request, Waiter
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.sources import STALE, SourceState
from hwinfo.render.html.machine import Reading, render_machine
from hwinfo.render.text.brief import render_brief
from hwinfo.render.text.style import Style
from hwinfo.units import size
from tests.render.pages.dom import Node, parse

# The elements hwinfo's pages are made of: a name that became markup would add another.
OURS = {"#document", "html", "head", "meta", "title", "link", "script", "noscript", "body",
        "header", "h1", "h2", "p", "span", "main", "div", "section", "article", "ol", "ul", "li",
        "a", "b", "i", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "th", "td", "time",
        "footer"}
IMG = "<img src=x onerror=alert(1)>"
# A command name is its program's basename (scenario-format.md): no space, no slash.
TAG = "<marquee>moving"


def _page(snapshot: Snapshot | None, now: float | None = None, stale_after: float = 20.0) -> Node:
    when = now if now is not None else (snapshot.timestamp_seconds + 1 if snapshot else 0.0)
    return parse(render_machine(snapshot, Reading(when, 5, stale_after, "9.9")))


def _scenario(tmp_path: Path, gpus: list[dict[str, Any]]) -> Path:
    path = tmp_path / "machine.json"
    path.write_text(json.dumps({"format": 1, "description": "page test", "gpus": gpus}))
    return path


def _proc(pid: int, user: str, mib: int, command: str = "python train.py") -> dict[str, Any]:
    return {"pid": pid, "user": user, "used_memory_mib": mib, "command": command}


def test_a_free_a_held_and_an_idle_gpu_at_a_glance(tmp_path: Path) -> None:
    snapshot = simulated_snapshot(_scenario(tmp_path, [
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 0, "processes": []},
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 80,
         "processes": [_proc(10, "ann", 3000), _proc(11, "ann", 1000), _proc(12, "bob", 500, "jupyter")]},
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 0, "processes": [_proc(20, "cy", 9000)]},
    ]))
    root = _page(snapshot)
    cells = root.find_all("li", "cell")
    assert [(c.classes - {"cell"}, c.find_all(cls="s")[0].text()) for c in cells] == [
        ({"free"}, "free"), ({"held"}, "held"), ({"idle"}, "idle")]
    assert [c.find_all(cls="h")[0].text() for c in cells[1:]] == ["ann, bob", "cy"]
    assert root.find_all("title")[0].text().endswith("· 1 of 3 GPUs free · hwinfo")
    cards = root.find_all("article", "card")
    assert [c.attrs["id"] for c in cards] == ["gpu-0", "gpu-1", "gpu-2"]
    assert "Free" in cards[0].text()
    holders = [(li.find_all(cls="who")[0].text(), li.find_all(cls="what")[0].text(),
                li.find_all(cls="mem")[0].text()) for li in cards[1].find_all("li")]
    assert holders == [("ann", "python ×2", size(4000 * 2**20)), ("bob", "jupyter", size(500 * 2**20))]


def test_each_mig_device_names_its_holders_with_their_memory() -> None:
    snapshot = simulated_snapshot("dgx-a100-mig")
    root = _page(snapshot)
    assert snapshot.gpu is not None
    for gpu in snapshot.gpu.gpus:
        card = root.by_id(f"gpu-{gpu.index}")
        blocks = card.find_all("div", "mig")
        assert len(blocks) == (len(gpu.mig.devices) if gpu.mig and gpu.mig.enabled else 0)
        for block, device in zip(blocks, gpu.mig.devices if gpu.mig else []):
            truth: dict[str, int] = {}
            for proc in device.processes or ():
                user = proc.user if proc.visible and proc.user else "?"
                truth[user] = truth.get(user, 0) + (proc.used_memory_bytes or 0)
            shown = {li.find_all(cls="who")[0].text(): li.find_all(cls="mem")[0].text()
                     for li in block.find_all("li")}
            assert shown == {user: size(n) for user, n in truth.items()}, f"GPU {gpu.index}"
            assert block.find_all("b")[0].text() == device.profile
            assert ("free" in block.classes) == (device.process_count == 0)


def test_hostile_names_are_text_and_nothing_else(tmp_path: Path) -> None:
    snapshot = simulated_snapshot(_scenario(tmp_path, [
        {"board": "A100-SXM4-80GB", "name": '<script>alert(2)</script>"><b>x',
         "processes": [_proc(30, IMG, 4000, f"{TAG} --flag"), _proc(31, "eve\u202e", 10, "x")]}]))
    root = _page(snapshot)
    assert {n.tag for n in root.walk()} <= OURS
    assert len(root.find_all("script")) == 1 and not root.find_all("img")
    text = root.text()
    assert IMG in text and TAG in text and "eve\\u202e" in text and "\u202e" not in text
    (name,) = root.find_all(cls="name")
    assert name.text() == '<script>alert(2)</script>"><b>x'
    assert name.attrs["title"].startswith('<script>alert(2)</script>"><b>x · GPU-')


def test_stale_data_is_said_with_its_age_and_reason() -> None:
    snapshot = simulated_snapshot("cloud-t4")
    fresh = _page(snapshot).by_id("reading")
    assert "stale" not in fresh.classes and "STALE" not in fresh.text()
    old = _page(snapshot, now=snapshot.timestamp_seconds + 125).by_id("reading")
    assert "stale" in old.classes and "STALE" in old.text()
    assert "no new reading for 2 min" in old.text() and "2 min ago" in old.text()
    hung = dataclasses.replace(snapshot, sources=[
        SourceState("gpu", STALE, snapshot.timestamp_seconds - 40, 40.0, "NVML did not answer")])
    partly = _page(hung).by_id("reading")
    assert "PARTLY STALE" in partly.text() and "gpu data stale: NVML did not answer" in partly.text()


def test_findings_are_listed_worst_first_and_counted_at_the_top() -> None:
    snapshot = simulated_snapshot("faults-demo")
    root = _page(snapshot)
    findings = evaluate(snapshot, Thresholds(), now=snapshot.timestamp_seconds + 1)
    listed = root.find_all("ul", "findings")[0].find_all("li")
    assert [(li.find_all(cls="badge")[0].text(), li.attrs["title"]) for li in listed] == \
        [(f.severity.name.lower(), f.rule) for f in findings]
    critical = sum(f.severity is Severity.CRITICAL for f in findings)
    badges = [a.text() for a in root.by_id("reading").find_all("a", "badge")]
    assert badges[0] == f"{critical} critical" and critical >= 1


def test_a_lost_gpu_says_so_and_shows_no_figures() -> None:
    # faults-demo's GPU 2 falls off the bus after 3 samples.
    system = simulated_system("faults-demo", samples=5)
    assert [g.index for g in system.gpus if g.lost] == [2]
    snapshot = dataclasses.replace(simulated_snapshot("cloud-t4"), gpu=system)
    card = _page(snapshot).by_id("gpu-2")
    assert "lost" in card.classes and "Not readable: NVML says it fell off the bus" in card.text()
    assert not card.find_all(cls="meter")


def test_before_the_first_sample_the_page_says_it_waits() -> None:
    root = _page(None)
    assert "No reading yet" in root.by_id("live").text()
    assert root.find_all("body")[0].attrs["data-refresh"] == "5"


def test_no_driver_is_said_in_the_gpu_section() -> None:
    root = _page(simulated_snapshot("no-driver"))
    assert not root.find_all("article") and root.find_all("p", "error")


def _claims(snapshot: Snapshot, gpu_uuids: list[str], mig_uuids: list[str]) -> Snapshot:
    request = Request(1, None, None, False)
    at = snapshot.timestamp_seconds
    claims = Claims("/run/hwinfo/claims", True, claims=[
        Claim(gpu_uuids, IMG, 1000, 77, at - 600, TAG, None, request),
        Claim(mig_uuids, "bob", 1001, 78, at - 60, "jupyter", "jupyter lab --port 8888", request)],
        waiters=[Waiter(1, "cy", 1002, 79, at - 30, "python", None, Request(2, 40 * 2**30, None, False))],
        ignored=["x.claim: not a claim (garbage)"])
    return dataclasses.replace(snapshot, claims=claims)


def test_claims_of_hwinfo_run_and_the_line(tmp_path: Path) -> None:
    snapshot = simulated_snapshot(_scenario(tmp_path, [
        {"board": "A100-SXM4-80GB", "processes": []},
        {"board": "A100-SXM4-80GB", "processes": []},
        {"board": "A100-SXM4-80GB", "mig": {"enabled": True, "gpu_instances": [
            {"profile": "3g.40gb", "start": 4, "id": 1}, {"profile": "1g.10gb", "start": 0, "id": 9}]},
         "processes": []},
    ]))
    assert snapshot.gpu is not None
    gpus = snapshot.gpu.gpus
    mig = gpus[2].mig.devices  # type: ignore[union-attr]
    root = _page(_claims(snapshot, [gpus[1].uuid], [mig[0].uuid]))  # type: ignore[list-item]
    cells = root.find_all("li", "cell")
    assert [(c.classes - {"cell"}, c.find_all(cls="s")[0].text()) for c in cells] == [
        ({"free"}, "free"), ({"claimed"}, "claimed"), ({"held"}, "MIG")]
    assert cells[1].find_all(cls="h")[0].text() == IMG
    assert [(s.classes - {"slot"}) for s in cells[2].find_all(cls="slot")] == [{"claimed"}, {"free"}]
    card = root.by_id("gpu-1")
    assert "claimed" in card.classes and "Free" not in card.text()
    assert f"claimed by {IMG} for {TAG}, for 10 min" in card.text()
    assert "claimed by bob for jupyter" in root.by_id("gpu-2").find_all("div", "mig")[0].text()
    assert root.find_all("title")[0].text().endswith("· 1 of 3 GPUs free · hwinfo")
    (section,) = [s for s in root.find_all("section") if "claims and the line" in s.text()]
    rows = [[td.text() for td in tr.find_all("td")] for tr in section.find_all("tbody")[0].find_all("tr")]
    assert rows == [["GPU 1", IMG, "for 10 min", TAG],
                    [f"GPU 2 MIG {mig[0].index} (3g.40gb)", "bob", "for 1 min", "jupyter lab --port 8888"]]
    assert section.find_all("ol", "waiters")[0].text() == \
        "cy: 2 GPUs with 40.0 GiB free, python, waiting for 31 s"  # the page is made 1 s after
    assert "x.claim: not a claim (garbage)" in section.text()
    assert not root.find_all("img")


def test_no_claims_no_section() -> None:
    root = _page(simulated_snapshot("cloud-t4"))
    assert "claims and the line" not in root.text()


def test_the_facts_are_the_briefs() -> None:
    snapshot = simulated_snapshot("dgx-a100-mig")
    root = _page(snapshot)
    facts = dict(zip((dt.text() for dt in root.find_all("dt")),
                     (dd.text() for dd in root.find_all("dd")), strict=True))
    brief = {line[:6].strip(): line[6:] for line in render_brief(snapshot, Style()).splitlines()
             if line[:6] in ("CPU   ", "Mem   ", "Disk  ", "Net   ")}
    assert list(facts) == ["CPU", "Memory", "Disks", "Network", "GPUs"]
    for label, short in (("CPU", "CPU"), ("Memory", "Mem"), ("Disks", "Disk"), ("Network", "Net")):
        # The brief cuts a line at 80 columns with a mark; the page does not cut.
        assert facts[label].startswith(brief[short].removesuffix("…")), label
    assert facts["GPUs"] == "8 · driver 550.54.15 · CUDA 12.4"
