"""The machine page in a real browser (headless Chromium): what a person sees on a phone and
on a wall screen, hostile names that stay text, refreshing in place, a daemon restart, and no
JavaScript at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hwinfo.model.claims import Request
from hwinfo.run.claimdir import Directory
from tests.browser.chromium import Chromium, png_size
from tests.browser.png import decode, indexed_pixels, small
from tests.browser.screenshots import screenshot_for_readme
from tests.exporter.serving import serving

IMG = "<img src=x onerror=alert(1)>"
# A command name is its program's basename (scenario-format.md): no space, no slash.
TAG = "<marquee>moving"
PHONE, WALL = (390, 844), (1920, 1080)


def _hostile(tmp_path: Path) -> Path:
    """A GPU held by a user and a process whose names are markup, and a free GPU."""
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps({"format": 1, "description": "names that are markup", "gpus": [
        {"board": "A100-SXM4-80GB", "name": "NVIDIA <b>A100</b>", "utilization_gpu_percent": 60,
         "processes": [{"pid": 4242, "user": IMG, "used_memory_mib": 4000,
                        "command": f"{TAG} --epochs 3"}]},
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 0, "processes": []},
    ]}))
    return path


def _seen(browser: Chromium) -> dict[str, Any]:
    """What a person would read, asked of the DOM after the scripts ran."""
    return browser.evaluate("""({
        cells: [...document.querySelectorAll('li.cell')].map(c => [c.className, c.innerText]),
        holders: [...document.querySelectorAll('.holders .who')].map(e => e.textContent),
        names: [...document.querySelectorAll('.holders .what')].map(e => e.textContent),
        gpuName: document.querySelector('.card .name').textContent,
        images: document.images.length,
        scripts: document.scripts.length,
        wide: document.documentElement.scrollWidth,
        shown: innerWidth,
    })""")


@pytest.mark.parametrize(("width", "height"), [PHONE, WALL])
def test_a_person_sees_each_gpu_and_its_holder_and_no_name_runs(
        browser: Chromium, tmp_path: Path, width: int, height: int) -> None:
    with serving("--simulate", str(_hostile(tmp_path)), "--interval", "1") as url:
        browser.viewport(width, height, mobile=width < 500)
        browser.open(url + "/")
        seen = _seen(browser)
        assert [(c.split()[1], text.split()[:2]) for c, text in seen["cells"]] == [
            ("held", ["0", "held"]), ("free", ["1", "free"])]
        assert seen["holders"] == [IMG] and seen["names"] == [TAG]
        assert seen["gpuName"] == "<b>A100</b>"
        assert seen["images"] == 0 and seen["scripts"] == 1  # no name became an element
        assert seen["wide"] <= seen["shown"], "the page is wider than the screen"
        assert png_size(browser.screenshot()) == (width, height)
        assert browser.problems() == []  # no console error, no CSP violation, no alert()


def test_a_claim_and_the_line_of_hwinfo_run(browser: Chromium, tmp_path: Path) -> None:
    scenario = tmp_path / "two.json"
    scenario.write_text(json.dumps({"format": 1, "description": "two idle GPUs", "gpus": [
        {"board": "A100-SXM4-80GB", "processes": []}, {"board": "A100-SXM4-80GB", "processes": []}]}))
    uuids = [g["uuid"] for g in json.loads(subprocess.run(
        [sys.executable, "-m", "hwinfo", "report", "--simulate", str(scenario), "--format", "json"],
        check=True, capture_output=True, text=True, timeout=60).stdout)["gpu"]["gpus"]]
    claims = tmp_path / "claims"
    claims.mkdir(mode=0o1777)
    directory = Directory(str(claims))
    # As `hwinfo run` leaves them: a claim on GPU 1, and a ticket of a run waiting for two.
    held = [directory.add(".claim", Request(1, None, None, False), ["python", "train.py"], [uuids[1]]),
            directory.add(".wait", Request(2, None, None, False), ["torchrun", "x.py"], sequence=1)]
    try:
        with serving("--simulate", str(scenario), "--interval", "1",
                     env={**os.environ, "HWINFO_CLAIMS_DIR": str(claims)}) as url:
            browser.open(url + "/")
            seen = browser.evaluate("""({
                cells: [...document.querySelectorAll('li.cell')].map(c => c.classList[1]),
                note: document.querySelector('#gpu-1 .badge.claimed').parentNode.textContent,
                rows: [...document.querySelectorAll('section tbody tr')].map(tr =>
                    [...tr.cells].map(td => td.textContent)),
                line: document.querySelector('ol.waiters').textContent})""")
            assert seen["cells"] == ["free", "claimed"]
            assert seen["note"].startswith("claimed by root for python, for ")
            # The whole command line is not read (it can hold secrets): the program only.
            assert [row[:2] + row[3:] for row in seen["rows"]] == [["GPU 1", "root", "python"]]
            assert seen["line"].startswith("root: 2 GPUs, torchrun, waiting for ")
            assert browser.problems() == []
    finally:
        for entry in held:
            entry.release()
        directory.close()


def test_the_page_refreshes_in_place(browser: Chromium) -> None:
    with serving("--simulate", "dgx-a100-mig", "--interval", "1") as url:
        browser.open(url + "/")
        loads = browser.event_count("Page.loadEventFired")
        browser.evaluate("document.getElementById('live').dataset.old = 'yes'")
        # The script swaps the live parts for the ones of a fresh page, without reloading.
        browser.wait_for("the live part swapped", lambda: browser.evaluate(
            "document.getElementById('live').dataset.old === undefined"))
        assert browser.event_count("Page.loadEventFired") == loads
        assert browser.evaluate("document.querySelectorAll('article.card').length") == 8
        assert browser.problems() == []


def test_the_page_survives_a_daemon_restart(browser: Chromium) -> None:
    with serving("--simulate", "cloud-t4", "--interval", "1") as first:
        browser.open(first + "/")
        assert browser.evaluate("document.getElementById('offline').hidden")
        first.proc.terminate()
        assert first.proc.wait(60) == 143
        browser.wait_for("the page to say the daemon is gone", lambda: browser.evaluate(
            "!document.getElementById('offline').hidden && document.body.classList.contains('offline')"))
        note = browser.evaluate("document.getElementById('offline').textContent")
        assert note.startswith("Not updated since") and "Retrying every 2 s" in note
        assert browser.evaluate("document.querySelectorAll('article.card').length") == 1  # kept
        browser.evaluate("document.getElementById('live').dataset.old = 'yes'")
        port = first.rsplit(":", 1)[1]
        # The same port again, as systemd restarts the service: taken a moment after it was
        # let go, so no other test can hold it in between but by a rare chance.
        with serving("--simulate", "cloud-t4", "--interval", "1", "--port", port) as second:
            assert second == first
            browser.wait_for("the page to come back", lambda: browser.evaluate(
                "document.getElementById('offline').hidden"
                " && document.getElementById('live').dataset.old === undefined"))
    # Chromium logs each request the gap refused (the page, its icon); nothing else may fail.
    assert [p for p in browser.problems()
            if not p.startswith("network: Failed to load resource: net::ERR_")] == []


def test_without_javascript_the_page_is_whole_and_reloads_itself(browser: Chromium) -> None:
    with serving("--simulate", "dgx-a100-mig", "--interval", "1") as url:
        browser.javascript(False)
        browser.open(url + "/")
        assert browser.evaluate("document.querySelectorAll('article.card').length") == 8
        loads = browser.event_count("Page.loadEventFired")
        browser.wait_for("<noscript>'s meta refresh",
                         lambda: browser.event_count("Page.loadEventFired") > loads)
        assert browser.problems() == []


def test_the_policy_stops_a_handler_that_got_in(browser: Chromium) -> None:
    """A second wall behind escaping: an inline handler on the page is refused by the CSP."""
    with serving("--simulate", "cloud-t4") as url:
        browser.open(url + "/")
        browser.evaluate("document.body.insertAdjacentHTML('beforeend',"
                         " '<img src=missing onerror=\"window.ran = 1\">')")
        browser.wait_for("the violation", lambda: any(
            "Content Security Policy" in p for p in browser.problems()))
        assert browser.evaluate("window.ran === undefined")


def test_the_readme_screenshots_of_the_machine_page(browser: Chromium) -> None:
    with serving("--simulate", "dgx-a100-mig") as url:
        browser.viewport(1100, 720)
        browser.open(url + "/")
        screenshot_for_readme(browser, "machine", 1100, 720)
        browser.viewport(390, 760, mobile=True)
        browser.open(url + "/")
        screenshot_for_readme(browser, "machine-phone", 390, 760)


def test_a_screenshot_made_small_is_the_same_picture(browser: Chromium) -> None:
    """png.small, which makes the README's screenshots: same size, nearly every pixel the same
    colour, and far fewer bytes."""
    with serving("--simulate", "faults-demo") as url:
        browser.viewport(600, 400)
        browser.open(url + "/")
        shot = browser.screenshot()
    smaller = small(shot)
    width, height, rows = decode(shot)
    assert indexed_pixels(smaller)[:2] == (width, height) == (600, 400)
    same = sum(a[x:x + 3] == b[x:x + 3] for a, b in zip(rows, indexed_pixels(smaller)[2])
               for x in range(0, 3 * width, 3))
    assert same >= 0.95 * width * height and len(smaller) < len(shot) / 2
