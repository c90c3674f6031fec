"""Any name into the pages' markup, any query into the board: text stays text, and the engine
is asked only for a size that parsed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hwinfo.escape import printable
from hwinfo.exporter.http import Request
from hwinfo.ledger.board_server import BoardPage
from hwinfo.ledger.units import size_bytes
from hwinfo.render.html.page import el
from tests.ledger.test_board import _Engine
from tests.render.pages.dom import parse

# Every code point, lone surrogates (undecodable bytes in a name) included.
ANY_TEXT = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=80)


@given(ANY_TEXT)
def test_any_name_is_one_text_in_an_element_and_an_attribute(name: str) -> None:
    root = parse(el("p", el("span", name, title=name)).encode("utf-8"))
    assert [n.tag for n in root.walk()] == ["#document", "p", "span"]
    (span,) = root.find_all("span")
    assert span.text() == printable(name) == span.attrs["title"]


@settings(max_examples=60, deadline=None)
@given(st.lists(ANY_TEXT, max_size=3))
def test_any_size_asked_reaches_the_engine_only_once_it_parsed(values: list[str]) -> None:
    engine = _Engine()
    page = BoardPage(engine, "Lab", 10, "9.9")  # type: ignore[arg-type]
    query = {"need": values} if values else {}
    response = page(Request("GET", "/", query, {}))  # the query as the server parsed it
    asked_fits = any("(hwinfo_gpu_memory_free_bytes) >=" in q for q in engine.asked)
    text = values[0].strip() if len(values) == 1 else ""
    try:
        parsed = len(text) <= 32 and size_bytes(text) > 0
    except ValueError:
        parsed = False
    assert asked_fits == parsed
    assert response.status == (200 if parsed or not text and len(values) <= 1 else 400)
    parse(response.body)  # whole, well-formed markup whatever was asked
