"""Snapshot documents (a --from answer, a --baseline): a Snapshot every consumer can use, or one line.

A document that loads must also go through what `check --from` and `report --from` do with
it: the health rules (with itself as baseline), the text and JSON reports.
"""

from __future__ import annotations

from fuzz.mutations import JSON_VALUES, fuzz_settings, mutated, one_line_or_valid, real_report
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.health.evaluate import evaluate
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.serialize import SchemaError, snapshot_from_document
from hwinfo.render.check import render_text as render_findings
from hwinfo.render.json import render_json
from hwinfo.render.text.report import render_text
from hwinfo.render.text.style import Style

# Real documents: a MIG machine with processes, and one with faults and a lost GPU.
BASES = [real_report("dgx-a100-mig"), real_report("faults-demo")]


def loads_and_is_usable(document: object) -> None:
    snapshot = one_line_or_valid(lambda: snapshot_from_document(document, "fuzz"), SchemaError)
    if snapshot is None:
        return
    findings = evaluate(snapshot, Thresholds(), baseline=snapshot)
    render_findings(findings, snapshot)
    render_text(snapshot, Style(color=False))
    render_json(snapshot)


@fuzz_settings(150)
@given(st.one_of(*(mutated(base) for base in BASES)))
def test_a_mutated_snapshot_loads_and_is_usable_or_is_one_line(document: object) -> None:
    loads_and_is_usable(document)


@fuzz_settings(100)
@given(st.one_of(JSON_VALUES, JSON_VALUES.map(lambda v: {"schema_version": 1, "host": v})))
def test_any_json_value_is_refused_in_one_line(document: object) -> None:
    loads_and_is_usable(document)
