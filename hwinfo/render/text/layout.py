"""Sections of aligned label/value lines and simple tables, sized for an 80-column terminal."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hwinfo.escape import printable
from hwinfo.render.text.style import Style

WIDTH = 80
_SEP = " · "
LABEL_WIDTH = 14
INDENT = "  "
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def visible_len(text: str) -> int:
    return len(_ANSI.sub("", text))


def clip(text: str, width: int) -> str:
    """`text` within `width` columns: a longer one cut, its last column a "…" that says so."""
    return text if len(text) <= width else text[: width - 1] + "…"


def pad(text: str, width: int, right: bool = False, length: int | None = None) -> str:
    """`text` filled to `width` columns; `length`: its visible length, where known."""
    fill = " " * max(0, width - (visible_len(text) if length is None else length))
    return fill + text if right else text + fill


class Section:
    """A titled block of lines; renderers fill it and the report joins the blocks."""

    def __init__(self, title: str, style: Style) -> None:
        self.style = style
        self.lines: list[str] = [style.heading(printable(title))]

    def unavailable(self, what: str) -> str:
        """The section, saying that `what` could not be read."""
        self.line(self.style.dim(f"{what} information is not available"))
        return self.render()

    def _label_width(self, label: str, indent: int) -> int:
        return max(LABEL_WIDTH - len(INDENT) * (indent - 1), len(label) + 1)

    def field(self, label: str, value: str, indent: int = 1) -> None:
        """One aligned "label  value" line; a long value wraps at " · " separators, or at
        spaces when it has none (a long CPU model name)."""
        value = printable(value, keep_colour=True)
        prefix = len(INDENT) * indent + self._label_width(label, indent) + 1
        if prefix + visible_len(value) > WIDTH:
            sep = _SEP if _SEP in value else " "
            self.wrapped(label, value.split(sep), sep=sep, indent=indent)
            return
        self._field_line(label, value, indent)

    def _field_line(self, label: str, value: str, indent: int) -> None:
        self.lines.append(
            f"{INDENT * indent}{pad(label, self._label_width(label, indent))}"
            f" {self.style.value(value)}".rstrip()
        )

    def wrapped(self, label: str, items: list[str], sep: str = " ", indent: int = 1) -> None:
        """A field whose items continue on aligned lines instead of running past 80 columns."""
        prefix = len(INDENT) * indent + self._label_width(label, indent) + 1
        lines: list[str] = []
        current = ""
        for item in items:
            candidate = f"{current}{sep}{item}" if current else item
            # Room for the separator that ends a continued line.
            if current and prefix + visible_len(candidate) + len(sep.rstrip()) > WIDTH:
                lines.append(current + sep.rstrip())
                current = item
            else:
                current = candidate
        lines.append(current)
        self._field_line(label, lines[0], indent)
        for rest in lines[1:]:
            self.lines.append(" " * prefix + rest)

    def line(self, text: str, indent: int = 1) -> None:
        self.lines.append(f"{INDENT * indent}{printable(text, keep_colour=True)}".rstrip())

    def table(
        self,
        header: Sequence[str],
        rows: Sequence[Sequence[str]],
        right: Sequence[bool] | None = None,
        indent: int = 1,
        min_widths: Sequence[int] | None = None,
        keep_colour: bool = True,
    ) -> None:
        """Columns sized to their widest cell (and at least `min_widths`, so a refresh that
        loses a row keeps the layout); `right` marks numeric columns to right-align.
        keep_colour=False: the cells are data from elsewhere, colour sequences escaped too."""
        align = list(right) if right is not None else [False] * len(header)
        # Each distinct cell escaped, styled and measured once: a fleet's table is thousands
        # of rows of a few hundred texts.
        done: dict[str, tuple[str, int]] = {}

        def cell(text: str) -> tuple[str, int]:
            if text not in done:
                clean = printable(text, keep_colour=keep_colour)
                done[text] = (self.style.value(clean), visible_len(clean))
            return done[text]

        cells = [[cell(c) for c in row] for row in rows]
        widths = [max(visible_len(h), m) for h, m in
                  zip(header, min_widths or [0] * len(header))]
        for row in cells:
            for i, (_, length) in enumerate(row):
                widths[i] = max(widths[i], length)

        def fmt(row: Sequence[tuple[str, int]]) -> str:
            return "  ".join(pad(text, widths[i], align[i], length)
                             for i, (text, length) in enumerate(row)).rstrip()

        self.line(self.style.dim(fmt([(h, visible_len(h)) for h in header])), indent)
        for row in cells:
            self.line(fmt(row), indent)

    def render(self) -> str:
        return "\n".join(self.lines)
