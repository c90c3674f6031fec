"""Human units, and text made safe to print."""

from __future__ import annotations

from hwinfo.render.units import printable


def test_control_characters_are_escaped() -> None:
    assert printable("python -c 'x\ny'\t\r") == "python -c 'x\\ny'\\t\\r"
    assert printable("\x1b]0;pwned\x07\x1b[2J\x9b") == "\\x1b]0;pwned\\x07\\x1b[2J\\x9b"


def test_colour_is_kept_only_when_asked() -> None:
    red = "\x1b[31;1mLOST\x1b[0m"
    assert printable(red, keep_colour=True) == red
    assert printable(red) == "\\x1b[31;1mLOST\\x1b[0m"
    assert printable("zoë ユーザー") == "zoë ユーザー"
