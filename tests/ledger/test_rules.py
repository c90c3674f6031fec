"""The ledger's rule file is what hwinfo/ledger/rules.py composes (what the rules mean:
tests/deploy/test_ledger_rules.py, and promtool's tests in prometheus/)."""

from __future__ import annotations

from pathlib import Path

from hwinfo.ledger.rules import compose
from hwinfo.ledger.rules_file import render

SHIPPED = Path(__file__).resolve().parents[2] / "prometheus" / "hwinfo-ledger.yml"


def test_the_shipped_rule_file_is_what_the_generator_writes() -> None:
    assert SHIPPED.read_text() == render(), (
        "prometheus/hwinfo-ledger.yml differs from hwinfo/ledger/rules.py: regenerate it with "
        "`python -m hwinfo.ledger.rules_file > prometheus/hwinfo-ledger.yml`")


def test_a_fragment_is_spelled_out_in_parentheses_under_the_line_that_names_it() -> None:
    inner = compose("""
        a
        or
        b
    """)
    assert compose("""
        x
          and on(gpu) {inner}
        unless y{gpu=""}
    """, inner=inner) == "x\n  and on(gpu) (\n    a\n    or\n    b\n  )\nunless y{gpu=\"\"}"
    # A one-line fragment stays on its line; a label matcher is no placeholder.
    assert compose('sum by (gpu) {one} > scalar(t{a="b"})', one="up") == (
        'sum by (gpu) (up) > scalar(t{a="b"})')
