"""Terminal styling: ANSI colour only when asked for, plain text otherwise."""

from __future__ import annotations

from dataclasses import dataclass

from hwinfo.units import NA


@dataclass(frozen=True)
class Style:
    color: bool = False

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def heading(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def good(self, text: str) -> str:
        return self._sgr("32", text)

    def warn(self, text: str) -> str:
        return self._sgr("33", text)

    def bad(self, text: str) -> str:
        return self._sgr("31;1", text)

    def value(self, text: str) -> str:
        """A value, dimmed when it is the "not available" marker."""
        return self.dim(text) if text == NA else text
