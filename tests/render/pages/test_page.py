"""Markup that escapes what it is given, and the page around it."""

from __future__ import annotations

import base64
import hashlib

import pytest

from hwinfo.render.html.assets import ASSETS, PAGE_HEADERS, SCRIPT
from hwinfo.render.html.page import Markup, bar, cell, document, el, raw
from tests.render.pages.dom import parse

HOSTILE = ['<img src=x onerror=alert(1)>', '"><script>alert(2)</script>', "' onmouseover='alert(3)",
           "a&amp;b", "bidi \u202e evil", "nul \x00 and \udce9 byte"]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_name_is_text_in_an_element_and_in_an_attribute(name: str) -> None:
    page = el("div", el("span", name, title=name, data_x=name), id="x")
    root = parse(page)
    (div,) = root.find_all("div")
    (span,) = root.find_all("span")
    assert [n.tag for n in root.walk()] == ["#document", "div", "span"]  # no element from the name
    assert set(span.attrs) == {"title", "data-x"}  # and no attribute
    # What a person reads: the name, its invisible and undecodable characters as escapes.
    shown = name.replace("\u202e", "\\u202e").replace("\x00", "\\x00").replace("\udce9", "\\xe9")
    assert div.text() == shown and span.attrs["title"] == shown
    assert str(page).encode("utf-8")  # a lone surrogate never reaches the page


def test_markup_goes_in_as_it_is_and_nothing_else_does() -> None:
    assert el("p", raw("<b>ok</b>"), "<b>no</b>") == "<p><b>ok</b>&lt;b&gt;no&lt;/b&gt;</p>"
    assert isinstance(el("p"), Markup)
    assert el("input", for_="need", hidden=True, checked=False, value=None, cls="a b") == \
        '<input for="need" hidden class="a b">'


@pytest.mark.parametrize(("ratio", "classes"), [
    (None, "bar p0"), (0.0, "bar p0"), (0.024, "bar p0"), (0.026, "bar p5"), (0.53, "bar p55"),
    (0.9, "bar p90"), (0.95, "bar p95 hot"), (1.0, "bar p100 hot"), (7.0, "bar p100 hot"),
    (-1.0, "bar p0"),
])
def test_a_bar_is_a_class_per_5_percent(ratio: float | None, classes: str) -> None:
    (span,) = parse(bar(ratio)).find_all("span")
    assert span.attrs["class"] == classes


def test_every_width_class_a_bar_can_have_is_in_the_stylesheet() -> None:
    css = next(a for a in ASSETS if a.name == "hwinfo.css").body.decode()
    for step in range(0, 101, 5):
        assert f".p{step} > i {{ width: {step}%" in css or (step == 0 and ".p0 > i { width: 0; }" in css)


def test_the_page_loads_only_its_own_files_and_the_script_by_its_hash() -> None:
    root = parse(document("t", el("p", "body"), 5))
    (script,) = root.find_all("script")
    digest = base64.b64encode(hashlib.sha256(SCRIPT.body).digest()).decode()
    assert script.attrs["integrity"] == f"sha256-{digest}" == SCRIPT.integrity
    assert script.attrs["src"] == SCRIPT.link and script.attrs["src"].startswith("./static/")
    assert f"script-src 'sha256-{digest}'" in PAGE_HEADERS["Content-Security-Policy"]
    hrefs = [n.attrs["href"] for n in root.find_all("link")]
    assert all(h.startswith("./static/") for h in hrefs) and len(hrefs) == 2
    # No JavaScript: the browser reloads the page itself, at the same pace.
    (noscript,) = root.find_all("noscript")
    assert [(n.tag, n.attrs) for n in noscript.walk()][1:] == [
        ("meta", {"http-equiv": "refresh", "content": "5"})]
    assert root.find_all("body")[0].attrs["data-refresh"] == "5"


def test_the_policy_allows_no_inline_script_and_no_other_site() -> None:
    policy = dict(part.split(" ", 1) for part in PAGE_HEADERS["Content-Security-Policy"].split("; "))
    assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    assert "'unsafe-inline'" not in policy["script-src"] and "'self'" not in policy["script-src"]
    assert all(v in ("'self'", "'none'") or k == "script-src" for k, v in policy.items())
    assert PAGE_HEADERS["X-Content-Type-Options"] == "nosniff"


def test_a_cell_carries_its_state_and_slots() -> None:
    root = parse(cell("0", "idle", "idle", "<ann>", "8/80 GiB", [("held", "3g", "#1: bob")],
                      title="A100", href="#gpu-0"))
    (li,) = root.find_all("li")
    assert li.classes == {"cell", "idle"} and li.attrs["title"] == "A100"
    assert root.find_all("a")[0].attrs["href"] == "#gpu-0"
    assert [s.text() for s in root.find_all(cls="slot")] == ["3g"]
    assert root.find_all(cls="h")[0].text() == "<ann>"
