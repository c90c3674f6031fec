"""Prometheus's HTTP API, as the ledger asks it: instant queries and the loaded rules.

Whatever answers at the URL is hostile until proven otherwise (urlfetch): one deadline per
request, a size limit, and one line for every way it can go wrong, including an answer that
is not Prometheus's JSON (an HTML login page, a proxy's error).
"""

from __future__ import annotations

import dataclasses
import math
import queue
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hwinfo import inputs, urlfetch
from hwinfo.escape import unicode
from hwinfo.ledger.config import SERVICE, Engine

# Prometheus and vmalert take rule intervals to the millisecond and evaluate them at most
# daily: a group outside these is not a ledger's.
MIN_RULE_INTERVAL_SECONDS = 0.001
MAX_RULE_INTERVAL_SECONDS = 86400.0
# VictoriaMetrics answers a range selector's raw samples as application/stream+json.
JSON_TYPES = ("application/json", "application/stream+json")

T = TypeVar("T")


class LedgerError(Exception):
    """The ledger cannot answer; str() is one line for a person."""


@dataclass(frozen=True)
class Sample:
    """One series of an instant vector: its labels and its value."""

    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class RuleGroup:
    name: str
    interval_seconds: float
    records: frozenset[str]  # the names its recording rules write
    failing: frozenset[str] = frozenset()  # those whose last evaluation failed


class Prometheus:
    """A Prometheus (or a server with its query API) where `engine` says (ledger/config.py):
    its URL, basic auth and CA."""

    def __init__(self, engine: Engine, timeout: float = 10.0) -> None:
        self.target = engine.target
        try:
            self.context = (urlfetch.tls_context(engine.ca_file, engine.ca_what)
                            if self.target.https else None)
        except urlfetch.FetchError as exc:
            raise LedgerError(str(exc)) from None
        self.timeout = timeout
        self.base = self.target.path

    @property
    def url(self) -> str:
        return self.target.url

    def _get(self, path: str, params: Sequence[tuple[str, str]] = (), post: bool = False) -> Any:
        """The `data` of a successful API answer."""
        # Errors name the API asked: a server may answer one and not another.
        target = dataclasses.replace(self.target, path=self.base + path,
                                     url=self.target.url.rstrip("/") + path)
        encoded = urllib.parse.urlencode(params)
        try:
            content_type, body = urlfetch.fetch(
                target, self.context, self.timeout,
                query="" if post else encoded, form=encoded.encode() if post else None)
        except urlfetch.FetchError as exc:
            raise LedgerError(str(exc)) from None
        kind = content_type.split(";")[0].strip().lower()
        if kind not in JSON_TYPES:
            raise LedgerError(f"{target.url}: not {SERVICE}'s API (it answered {kind or 'no type'})")
        try:
            document = inputs.parse_json(body, target.url)
        except inputs.InputError as exc:
            raise LedgerError(f"{target.url}: not {SERVICE}'s API "
                              f"({str(exc).removeprefix(target.url).removeprefix(': ')})") from None
        if not isinstance(document, dict) or document.get("status") != "success":
            error = document.get("error") if isinstance(document, dict) else None
            said = " ".join(error.split())[:200] if isinstance(error, str) else "no status"
            raise LedgerError(f"{target.url}: {said}")
        return document.get("data")

    def query(self, expr: str, at: float) -> list[Sample]:
        """An instant query at Unix time `at`; its vector (NaN and infinite values dropped)."""
        data = self._get("/api/v1/query", (("query", expr), ("time", f"{at:.3f}")), post=True)
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            raise LedgerError(f"{self.url}: the answer to a query is not a vector")
        return list(_samples(data.get("result"), self.url))

    def sample_times(self, expr: str, at: float) -> list[float]:
        """The times of the samples a range selector finds at Unix time `at` (its matrix)."""
        data = self._get("/api/v1/query", (("query", expr), ("time", f"{at:.3f}")), post=True)
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(result, list):
            raise LedgerError(f"{self.url}: the answer to a range selector is not a matrix")
        times = []
        try:
            for series in result:
                for pair in series["values"]:
                    if not (isinstance(pair, list) and len(pair) == 2):
                        raise TypeError("not a [time, value] pair")
                    times.append(float(pair[0]))
        except (KeyError, TypeError, ValueError, OverflowError):
            raise LedgerError(f"{self.url}: a series of the answer is malformed") from None
        if not all(math.isfinite(t) for t in times):
            raise LedgerError(f"{self.url}: a sample time of the answer is not a number")
        if any(not 0 < t <= at + 1 for t in times):  # a range selector ends at `at`
            raise LedgerError(f"{self.url}: a sample time of the answer is outside the range asked")
        return times

    def queries(self, exprs: Sequence[str], at: float) -> list[list[Sample]]:
        """Several instant queries sent together (each keeps its own deadline); their vectors
        in order, or the first one's error."""
        return together([lambda expr=expr: self.query(expr, at) for expr in exprs])

    def series(self, selectors: Sequence[str], start: float, end: float) -> list[dict[str, str]]:
        """The label sets of the series that `selectors` match with samples in [start, end],
        from the engine's index: no sample is read. Engines answer at the grain they store
        (Prometheus: its blocks and chunks, VictoriaMetrics: days), so a series that ended
        a little before `start` may be among them."""
        data = self._get("/api/v1/series", [*(("match[]", s) for s in selectors),
                                             ("start", f"{start:.3f}"), ("end", f"{end:.3f}")],
                         post=True)
        if not isinstance(data, list):
            raise LedgerError(f"{self.url}: the answer about series is not a list")
        return [_labels(labels) for labels in data if isinstance(labels, dict)]

    def rule_groups(self) -> list[RuleGroup]:
        """The recording-rule groups Prometheus has loaded."""
        return _rule_groups(self._get("/api/v1/rules", (("type", "record"),)), self.url)


def together(calls: Sequence[Callable[[], T]], at_once: int | None = None) -> list[T]:
    """Each call's result, the calls run side by side (`at_once` at a time at most; each
    keeps its own deadlines), in order; or the first error to come, as soon as it comes
    (the others are left to end by their deadlines)."""
    answers: list[T | Exception | None] = [None] * len(calls)
    ended: queue.SimpleQueue[int] = queue.SimpleQueue()
    slots = threading.BoundedSemaphore(at_once or max(1, len(calls)))

    def run(index: int, call: Callable[[], T]) -> None:
        try:
            with slots:
                answers[index] = call()
        except Exception as exc:  # noqa: BLE001 - raised again below, in the caller's thread
            answers[index] = exc
        finally:
            ended.put(index)

    for i, call in enumerate(calls):
        threading.Thread(target=run, args=(i, call), name="hwinfo-query", daemon=True).start()
    for _ in calls:
        answer = answers[ended.get()]  # interruptible: Ctrl-C ends the wait
        if isinstance(answer, Exception):
            raise answer
    return answers  # type: ignore[return-value]  # no exception left: every one a T


def _rule_groups(data: object, url: str) -> list[RuleGroup]:
    """The recording-rule groups of an answer about rules; sensible ones only."""
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, list):
        raise LedgerError(f"{url}: the answer about rules has no groups")
    found = []
    for group in groups:
        if not isinstance(group, dict):
            continue
        interval = group.get("interval")
        rules = group.get("rules")
        named = [rule for rule in rules if isinstance(rule, dict)
                 and isinstance(rule.get("name"), str)] if isinstance(rules, list) else []
        records = frozenset(rule["name"] for rule in named)
        # Prometheus and vmalert both say "err" of a rule whose last evaluation failed.
        failing = frozenset(rule["name"] for rule in named if rule.get("health") == "err")
        # A 310-digit interval would overflow every figure made with it, 1e-300 make every
        # range a sum of nothing.
        if (isinstance(interval, (int, float)) and not isinstance(interval, bool)
                and MIN_RULE_INTERVAL_SECONDS <= interval <= MAX_RULE_INTERVAL_SECONDS):
            found.append(RuleGroup(unicode(str(group.get("name"))), float(interval),
                                   records, failing))
    return found


def _samples(result: object, url: str) -> Iterator[Sample]:
    if not isinstance(result, list):
        raise LedgerError(f"{url}: the answer to a query has no result list")
    for series in result:
        try:
            labels, (_, text) = series["metric"], series["value"]
            value = float(text)
        except (KeyError, TypeError, ValueError, OverflowError):  # Overflow: a 310-digit int
            raise LedgerError(f"{url}: a series of the answer is malformed") from None
        if isinstance(labels, dict) and math.isfinite(value):
            yield Sample(_labels(labels), value)


def _labels(labels: dict[str, Any]) -> dict[str, str]:
    """A label set of an answer, safe to show: it reaches text, CSV and JSON, and a lone
    surrogate (a \\udce9 escape) becomes text. JSON's keys are strings; ASCII strings need
    nothing, and are nearly all there is."""
    if all(type(v) is str and v.isascii() and k.isascii() for k, v in labels.items()):
        return labels
    return {unicode(str(k)): unicode(str(v)) for k, v in labels.items()}
