"""The board's routes, served by the exporter's HTTP server: the page at `/`, its files, and
`/-/healthy`.

A request reaches the engine only through EngineAnswers (board_cache.py): the lab's fixed
queries, and where a size fits once the size is read and bounded (ledger/units.py). The page
without a size is rendered at most once a second, however many screens ask.
"""

from __future__ import annotations

import threading
import time

from hwinfo.exporter.http import Handler, Request, Response
from hwinfo.exporter.pages import asset_routes, page_response
from hwinfo.ledger.board import Board, board
from hwinfo.ledger.board_cache import Answer, Busy, EngineAnswers
from hwinfo.ledger.board_page import FitBox, View, render_board
from hwinfo.ledger.fits import fits
from hwinfo.ledger.prometheus import Prometheus
from hwinfo.ledger.units import size_bytes

# "40GiB", "512 MiB", "85899345920": anything longer is not a size someone typed.
MAX_SIZE_TEXT = 32


class BoardPage:
    """`/` of `hwinfo board`."""

    def __init__(self, prometheus: Prometheus, title: str, refresh_seconds: int, version: str) -> None:
        self.prometheus = prometheus
        self.title, self.refresh, self.version = title, refresh_seconds, version
        # Answers live as long as the page's refresh; a request waits for a round under way
        # at most as long as the engine may take to answer one.
        self.answers = EngineAnswers(ttl=refresh_seconds, wait=prometheus.timeout)
        self._lock = threading.Lock()
        self._made_for: tuple[Answer[Board] | None, str | None, int] | None = None
        self._made: Response | None = None

    def _box(self, request: Request) -> tuple[FitBox, int]:
        """The fit box for the request's `need`, and the page's status (400: a bad size)."""
        values = request.query.get("need", [])
        text = values[0].strip() if values else ""
        if len(values) > 1:
            return FitBox(error="Ask for one size at a time."), 400
        if not text:
            return FitBox(), 200
        if len(text) > MAX_SIZE_TEXT:
            return FitBox(error=f"A size is at most {MAX_SIZE_TEXT} characters, e.g. 40GiB."), 400
        try:
            need = size_bytes(text)
        except ValueError as exc:
            return FitBox(text, error=str(exc)), 400
        try:
            answer = self.answers.get(("fits", need), lambda at: fits(self.prometheus, at, need),
                                      rationed=True)
        except Busy as exc:
            return FitBox(text, error=f"Not asked: {exc}. Try again in a few seconds."), 429
        return FitBox(text, answer), 200

    def __call__(self, request: Request) -> Response:
        box, status = self._box(request)
        busy = None
        try:
            lab: Answer[Board] | None = self.answers.get("lab", lambda at: board(self.prometheus, at))
        except Busy as exc:
            lab, busy = None, f"{exc}; the page tries again in {self.refresh} s"
        now = time.time()
        view = View(self.title, now, self.refresh, self.version)
        if box != FitBox():
            return page_response(render_board(view, lab, box, busy), status)
        with self._lock:  # the page without a size: once a second, whoever asks
            made_for = self._made_for
            if (self._made is None or made_for is None or made_for[0] is not lab
                    or made_for[1] != busy or made_for[2] != int(now)):
                self._made = page_response(render_board(view, lab, box, busy))
                self._made_for = (lab, busy, int(now))
            return self._made


def routes(page: BoardPage) -> dict[str, Handler]:
    return {"/": page, "/-/healthy": lambda _: Response(body=b"OK\n"), **asset_routes()}
