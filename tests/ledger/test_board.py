"""The board's facts, its rationing of the engine, and its page, on an engine that answers each
query by what it asks (a real engine's answers are in tests/browser/test_board_page.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hwinfo.exporter.http import Request
from hwinfo.ledger import board_cache, queries
from hwinfo.ledger.board import board, idle_holds
from hwinfo.ledger.board_cache import Answer, Busy, EngineAnswers
from hwinfo.ledger.board_server import BoardPage
from hwinfo.ledger.fits import MODELS, fit_queries
from hwinfo.ledger.fleet import FLAGS, HOSTS
from hwinfo.ledger.prometheus import LedgerError, Sample
from tests.render.pages.dom import parse

GIB = 2**30
AT = 1_800_000_000.0
HOST = {"job": "hwinfo", "instance": "gpu01:9110"}
GPU0, GPU1 = {**HOST, "gpu": "0"}, {**HOST, "gpu": "1"}
IMG = "<img src=x onerror=alert(1)>"


def _fact(labels: dict[str, str], metric: str, value: float, **more: str) -> Sample:
    return Sample({**labels, "__name__": metric, **more}, value)


class _Engine:
    """One host, up: GPU 0 held by `holder` (idle), GPU 1 free; counts what it is asked."""

    url = "http://engine.test"
    timeout = 5.0

    def __init__(self, holder: str = "ann", model: str = "NVIDIA A100-SXM4-80GB",
                 claimant: str | None = None) -> None:
        """`claimant`: GPU 1 is claimed by `hwinfo run` for them, no process on it yet."""
        self.asked: list[str] = []
        self.fail: str | None = None
        self.holder, self.model, self.claimant = holder, model, claimant

    def queries(self, exprs: list[str], at: float) -> list[list[Sample]]:
        return [self.query(expr, at) for expr in exprs]

    def query(self, expr: str, at: float) -> list[Sample]:
        self.asked.append(expr)
        if self.fail:
            raise LedgerError(self.fail)
        if expr == HOSTS:
            return [Sample({**HOST, "measure": m}, v) for m, v in (("seen", 1), ("up", 1), ("age", 2))]
        if expr == queries.idle_holds():
            return [Sample({**GPU0, "user": self.holder, "measure": "idle"}, 1.0),
                    Sample({**GPU0, "user": self.holder, "slurm_job": "42", "measure": "since"},
                           at - 3 * 3600),
                    Sample({"measure": "rules"}, 1)]
        if expr in (FLAGS,):
            return []
        if expr == MODELS:
            return [Sample({**g, "uuid": f"GPU-{g['gpu']}", "name": self.model}, 1) for g in (GPU0, GPU1)]
        if "(hwinfo_gpu_memory_free_bytes) >=" in expr:
            return [Sample({**GPU1, "kind": "gpu"}, 79 * GIB)]  # where a size fits: GPU 1
        if "hwinfo_gpu_info" in expr and "uuid, name" in expr:  # fleet's GPU facts
            return [s for g, used, procs in ((GPU0, 9 * GIB, 1), (GPU1, 0, 0)) for s in (
                _fact(g, "hwinfo_gpu_info", 1, uuid=f"GPU-{g['gpu']}", name=self.model),
                _fact(g, "hwinfo_gpu_memory_total_bytes", 80 * GIB),
                _fact(g, "hwinfo_gpu_memory_used_bytes", used),
                _fact(g, "hwinfo_gpu_memory_free_bytes", 80 * GIB - used),
                _fact(g, "hwinfo_gpu_processes", procs))] + [
                _fact(GPU0, "hwinfo_gpu_user_memory_used_bytes", 9 * GIB, user=self.holder)] + [
                _fact(GPU1, "hwinfo_gpu_claim_info", 1, user=self.claimant, uuid="GPU-1")
                for _ in range(self.claimant is not None)]
        return []


def test_idle_holds_longest_first_with_what_their_alert_names() -> None:
    samples = [
        Sample({**GPU0, "user": "ann", "measure": "idle"}, 1.0),
        Sample({**GPU0, "user": "ann", "slurm_job": "42", "measure": "since"}, AT - 60),
        Sample({**GPU0, "user": "ann", "container_id": "c" * 64, "measure": "since"}, AT - 600),
        Sample({**GPU1, "user": "bob", "measure": "idle"}, 0.5),
        Sample({**GPU1, "user": "bob", "measure": "since"}, AT - 7200),
        Sample({**HOST, "gpu": "2", "user": "cy", "measure": "idle"}, 1.0),
        Sample({**HOST, "gpu": "2", "user": "cy", "measure": "since"}, AT + 10**6),  # no clock
        Sample({**HOST, "gpu": "3", "user": "dee", "measure": "since"}, AT - 60),  # not idle now
    ]
    holds, known = idle_holds(samples, AT)
    assert not known  # no "rules" measure: the engine has no ledger records
    assert [(h.user, h.since, h.named) for h in holds] == [
        ("bob", AT - 7200, ()), ("ann", AT - 600, ("container:cccccccccccc", "slurm:42")),
        ("cy", None, ())]
    assert idle_holds([Sample({"measure": "rules"}, 1)], AT) == ([], True)


def test_the_lab_is_one_round_of_fleets_queries_and_the_idle_one() -> None:
    engine = _Engine()
    lab = board(engine, AT)  # type: ignore[arg-type]
    assert sorted(engine.asked) == sorted([HOSTS, *_fleet_queries(), queries.idle_holds()])
    [host] = lab.fleet.hosts
    assert [(g.index, g.free, g.holders) for g in host.gpus] == [("0", False, {"ann": 9 * GIB}),
                                                                 ("1", True, {})]
    assert lab.idle_known and [(h.user, h.since) for h in lab.idle] == [("ann", AT - 3 * 3600)]


def _fleet_queries() -> list[str]:
    engine = _Engine()
    from hwinfo.ledger.fleet import fleet

    fleet(engine, AT)  # type: ignore[arg-type]
    return [q for q in engine.asked if q != HOSTS]


class _Clock:
    def __init__(self) -> None:
        self.now = AT

    def __call__(self) -> float:
        return self.now


def test_an_answer_is_reused_for_its_time_to_live() -> None:
    clock, asked = _Clock(), []
    answers = EngineAnswers(ttl=10, wait=1, clock=clock)

    def ask(at: float) -> str:
        asked.append(at)
        return f"lab at {at}"

    first = answers.get("lab", ask)
    clock.now += 9.9
    assert answers.get("lab", ask) is first and asked == [AT]
    clock.now += 0.1
    assert answers.get("lab", ask).value == f"lab at {AT + 10}" and len(asked) == 2


def test_a_failed_round_keeps_the_last_answer_and_says_why() -> None:
    clock = _Clock()
    answers = EngineAnswers(ttl=10, wait=1, clock=clock)
    answers.get("lab", lambda at: "good")
    clock.now += 10

    def fail(at: float) -> str:
        raise LedgerError("http://engine.test: connection refused")

    answer = answers.get("lab", fail)
    assert answer == Answer("good", AT, "http://engine.test: connection refused")
    assert answers.get("new", fail) == Answer(None, None, "http://engine.test: connection refused")


def test_one_round_at_a_time_whoever_asks() -> None:
    answers = EngineAnswers(ttl=10, wait=30)
    started, release = threading.Event(), threading.Event()
    rounds: list[str] = []

    def slow(at: float) -> str:
        rounds.append("lab")
        started.set()
        release.wait(30)
        return "lab"

    results: list[Answer[str]] = []
    first = threading.Thread(target=lambda: results.append(answers.get("lab", slow)))
    first.start()
    assert started.wait(30)
    waiting = [threading.Thread(target=lambda: results.append(answers.get("lab", slow)))
               for _ in range(20)]
    for thread in waiting:
        thread.start()
    release.set()
    for thread in (first, *waiting):
        thread.join(30)
    assert rounds == ["lab"] and len(results) == 21 and all(r.value == "lab" for r in results)


def test_a_round_under_way_too_long_is_not_waited_for() -> None:
    answers = EngineAnswers(ttl=10, wait=0.05)
    started, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=answers.get, args=("lab", lambda at: (started.set(), release.wait(30))))
    thread.start()
    assert started.wait(30)
    with pytest.raises(Busy, match="still answering"):
        answers.get("fits", lambda at: "fits")
    release.set()
    thread.join(30)


def test_sizes_are_rationed_and_a_known_one_is_shown_as_it_was() -> None:
    clock = _Clock()
    answers = EngineAnswers(ttl=10, wait=1, clock=clock)
    for n in range(board_cache.SIZES_BURST):
        assert answers.get(n, lambda at, n=n: n, rationed=True).value == n
    with pytest.raises(Busy, match="too many sizes"):
        answers.get("another", lambda at: "another", rationed=True)
    clock.now += 10  # every answer is old, and the bucket full again
    assert int(10 / board_cache.SIZE_SECONDS) >= board_cache.SIZES_BURST
    for n in range(1, board_cache.SIZES_BURST):
        answers.get(n, lambda at, n=n: n, rationed=True)
    answers.get("another", lambda at: "another", rationed=True)
    refused = answers.get(0, lambda at: "never asked", rationed=True)
    assert refused.value == 0 and refused.value_at == AT and "too many sizes" in (refused.error or "")
    assert answers.rounds == 2 * board_cache.SIZES_BURST


def _page(engine: _Engine, query: str = "") -> tuple[int, Any]:
    page = BoardPage(engine, "Lab <b>", 10, "9.9")  # type: ignore[arg-type]
    return _ask(page, query)


def _ask(page: BoardPage, query: str = "") -> tuple[int, Any]:
    from urllib.parse import parse_qs

    response = page(Request("GET", "/", parse_qs(query, keep_blank_values=True), {}))
    return response.status, parse(response.body)


@pytest.mark.parametrize(("query", "error"), [
    ("need=forty", "'forty' is not a size"),
    ("need=2PiB", "is not between 1 byte and 1 PiB"),
    ("need=" + "9" * 40, "at most 32 characters"),
    ("need=40GiB&need=1GiB", "one size at a time"),
])
def test_a_bad_size_reaches_no_engine(query: str, error: str) -> None:
    engine = _Engine()
    status, root = _page(engine, query)
    assert status == 400 and error in root.by_id("fits").text()
    assert not any("memory_free" in q and ">=" in q for q in engine.asked)  # no fit query sent
    assert queries.idle_holds() in engine.asked  # the lab is still shown


def test_many_viewers_cost_one_round_and_a_size_one_more() -> None:
    engine = _Engine()
    page = BoardPage(engine, "Lab", 10, "9.9")  # type: ignore[arg-type]
    for _ in range(30):
        status, root = _ask(page)
        assert status == 200
    lab = [HOSTS, *_fleet_queries(), queries.idle_holds()]
    assert page.answers.rounds == 1 and sorted(engine.asked) == sorted(lab)
    for _ in range(30):
        status, root = _ask(page, "need=40GiB")
    assert page.answers.rounds == 2
    assert sorted(engine.asked) == sorted([*lab, HOSTS, FLAGS, MODELS, *fit_queries(40 * GIB)])
    rows = [[td.text() for td in tr.find_all("td")] for tr in root.by_id("fits").find_all("tr")[1:]]
    assert rows == [["gpu01:9110", "1", "A100-SXM4-80GB", "whole GPU", "79.0 GiB"]]


def test_the_page_shows_states_holders_and_idle_holds() -> None:
    _, root = _page(_Engine())
    cells = root.find_all("li", "cell")
    assert [(c.classes - {"cell"}, c.find_all(cls="s")[0].text()) for c in cells] == [
        ({"idle"}, "idle"), ({"free"}, "free")]
    tiles = {t.children[1]: int(t.find_all("b")[0].text()) for t in root.find_all("div", "tile")}
    assert tiles["free GPUs"] == 1 and tiles["held, idle"] == 1 and tiles["held"] == 0
    (row,) = root.by_id("people").find_all("table")[1].find_all("tbody")[0].find_all("tr")
    assert [td.text() for td in row.find_all("td")] == ["ann", "slurm:42", "gpu01:9110 · GPU 0", "3 h 0 min"]
    assert root.find_all("h1")[0].text() == "Lab <b>"


def test_hostile_names_from_the_engine_are_text() -> None:
    _, root = _page(_Engine(holder=IMG, model='"><script>alert(2)</script>'), "need=1GiB")
    tags = {n.tag for n in root.walk()}
    assert "img" not in tags and len(root.find_all("script")) == 1
    assert IMG in root.by_id("grid").text() and IMG in root.by_id("people").text()
    assert '"><script>alert(2)</script>' in root.by_id("fits").text()
    assert any(IMG in (c.attrs.get("title") or "") for c in root.find_all("li", "cell"))


def test_an_engine_that_fails_is_said_and_nothing_is_invented() -> None:
    engine = _Engine()
    engine.fail = "http://engine.test: connection refused"
    status, root = _page(engine)
    assert status == 200 and "NO DATA" in root.by_id("reading").text()
    assert "connection refused" in root.by_id("reading").text()
    assert not root.find_all("li", "cell")


def test_a_claimed_gpu_is_neither_free_nor_held() -> None:
    _, root = _page(_Engine(claimant="dee"))
    cells = root.find_all("li", "cell")
    assert [(c.classes - {"cell"}, c.find_all(cls="s")[0].text()) for c in cells] == [
        ({"idle"}, "idle"), ({"claimed"}, "claimed")]
    assert cells[1].find_all(cls="h")[0].text() == "dee"
    assert "claimed by dee (hwinfo run)" in cells[1].attrs["title"]
    tiles = {t.children[1]: int(t.find_all("b")[0].text()) for t in root.find_all("div", "tile")}
    assert tiles["free GPUs"] == 0 and tiles["claimed, no process yet"] == 1
    holders = [[td.text() for td in tr.find_all("td")][:2]
               for tr in root.by_id("people").find_all("table")[0].find_all("tbody")[0].find_all("tr")]
    assert holders == [["ann", "1"], ["dee", "1"]]
