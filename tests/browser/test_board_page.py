"""The board in a real browser, on a real lab: simulated hosts, their `hwinfo serve` daemons, a
Prometheus evaluating the ledger's rules, and `hwinfo board` asking it. The last test takes a
host down; the others see the lab whole."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.chromium import Chromium, png_size
from tests.browser.screenshots import screenshot_for_readme
from tests.deploy.ledger_stack import LAB, answer, lab
from tests.deploy.prometheus_stack import Stack
from tests.exporter.serving import Daemon, serving

IMG = "<img src=x onerror=alert(1)>"
PHONE, WALL = (390, 844), (1920, 1080)


@pytest.fixture(scope="module")
def lab_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, dict[str, Daemon], Daemon]]:
    """ledger_stack's lab (alice on 8 busy GPUs, an idle GPU and a free one, a MIG GPU), the
    idle GPU's holder named with markup, and a board that asks its Prometheus."""
    hosts = copy.deepcopy(LAB)
    hosts["idle"]["gpus"][0]["processes"][0]["user"] = IMG
    with lab(tmp_path_factory.mktemp("lab"), hosts) as (stack, daemons), \
            serving("--prometheus", stack.prometheus, "--refresh", "2", command="board",
                    ready=False) as board:
        yield stack, daemons, board


def _instance(daemon: Daemon) -> str:
    return daemon.removeprefix("http://")


def _grid(browser: Chromium) -> dict[str, Any]:
    return browser.evaluate("""Object.fromEntries([...document.querySelectorAll('.host')].map(h => [
        h.querySelector('.host-h b').textContent,
        {state: h.querySelector('.host-h .badge').textContent,
         cells: [...h.querySelectorAll('li.cell')].map(c => [
             c.classList[1], c.querySelector('.g').textContent,
             (c.querySelector('.h') || {}).textContent || null])}]))""")


def _open_idle(browser: Chromium, url: str) -> None:
    """Open the board and wait, as a person would, until the ledger's rules have judged the
    idle GPU (the page refreshes itself meanwhile)."""
    browser.open(url)
    browser.wait_for("the idle hold on the board", lambda: browser.evaluate(
        "document.querySelectorAll('li.cell.idle').length === 1"
        " && document.querySelectorAll('#people tbody tr').length === 4"))


@pytest.mark.parametrize(("width", "height"), [PHONE, WALL])
def test_a_person_sees_every_gpu_its_state_and_who_holds_it(
        browser: Chromium, lab_board: Any, width: int, height: int) -> None:
    _, daemons, board = lab_board
    browser.viewport(width, height, mobile=width < 500)
    _open_idle(browser, board + "/")
    grid = _grid(browser)
    assert grid[_instance(daemons["busy"])] == {
        "state": "up", "cells": [["held", str(i), "alice"] for i in range(8)]}
    assert grid[_instance(daemons["idle"])] == {
        "state": "up", "cells": [["idle", "0", IMG], ["free", "1", None]]}
    assert grid[_instance(daemons["mig"])]["cells"] == [["held", "0", "carol"]]
    slots = browser.evaluate("[...document.querySelectorAll('.slot')].map(s => [s.classList[1], s.textContent])")
    assert slots == [["held", "3g"], ["free", "1g"], ["carve", "+"]]
    tiles = browser.evaluate("[...document.querySelectorAll('.tile')].map(t => t.innerText.replace(/\\s+/g, ' '))")
    assert tiles[:4] == ["1 free GPUs", "1 free MIG devices", "9 held", "1 held, idle"]
    idle = browser.evaluate("[...document.querySelectorAll('#people table')[1].querySelectorAll('td')]"
                            ".map(td => td.textContent)")
    assert idle[:2] == [IMG, f"{_instance(daemons['idle'])} · GPU 0"]
    assert browser.evaluate("document.images.length") == 0  # the name stayed text
    assert browser.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert png_size(browser.screenshot()) == (width, height)
    assert browser.problems() == []


def test_where_a_size_fits_is_fleets_answer(browser: Chromium, lab_board: Any) -> None:
    stack, _, board = lab_board
    browser.open(board + "/")
    loads = browser.event_count("Page.loadEventFired")
    browser.evaluate("document.getElementById('need').value = '20GiB';"
                     " document.querySelector('form.fit').requestSubmit()")
    browser.wait_for("the answer's page", lambda: browser.event_count("Page.loadEventFired") > loads)
    assert browser.evaluate("location.search") == "?need=20GiB"
    shown = browser.evaluate("[...document.querySelectorAll('#fits tbody tr')]"
                             ".map(tr => [...tr.cells].map(td => td.textContent).slice(0, 2))")
    fleet = answer("fleet", "--prometheus", stack.prometheus, "--need-memory", "20GiB")
    assert shown == [[fit["instance"], str(fit["gpu"])] for fit in fleet["fits"]] and shown
    assert browser.evaluate("document.getElementById('need').value") == "20GiB"
    assert browser.problems() == []


def test_the_readme_screenshot_of_the_board(browser: Chromium, tmp_path: Path) -> None:
    """From ledger_stack's lab as it is (erin holds the idle GPU), on a lab of its own."""
    if os.environ.get("HWINFO_SCREENSHOTS") != "1":
        screenshot_for_readme(browser, "board", 1100, 720)  # checks the README's copy
        return
    with lab(tmp_path, LAB) as (stack, _), \
            serving("--prometheus", stack.prometheus, "--refresh", "2", command="board",
                    ready=False) as board:
        browser.viewport(1100, 720)
        _open_idle(browser, board + "/?need=20GiB")
        screenshot_for_readme(browser, "board", 1100, 720)


def test_a_host_going_down_is_shown_down_without_a_reload(browser: Chromium, lab_board: Any) -> None:
    _, daemons, board = lab_board
    browser.open(board + "/")
    loads = browser.event_count("Page.loadEventFired")
    idle = daemons["idle"]
    idle.proc.terminate()
    assert idle.proc.wait(60) == 143
    browser.wait_for("the host down on the board", lambda: _grid(browser)[_instance(idle)] == {
        "state": "down", "cells": []}, timeout=60)
    assert browser.event_count("Page.loadEventFired") == loads  # refreshed in place
    note = browser.evaluate("[...document.querySelectorAll('.host.down .note')].map(n => n.textContent)")
    assert note == ["hwinfo on this host does not answer the engine: nothing here is offered."]
    tiles = json.dumps(browser.evaluate("[...document.querySelectorAll('.tile')].map(t => t.innerText)"))
    assert "of 3 hosts down" in tiles and '"1\\n' in tiles
    assert browser.problems() == []
