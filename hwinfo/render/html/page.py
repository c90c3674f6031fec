"""Markup that escapes what it is given, and the page around it.

Every name on a page is the machine's (a process, a user, a job, a GPU, a host), so any user
chose it. `el` escapes each text child and every attribute value (escape.html_text); only
`Markup`, which `el` and `raw` make, goes in as it is. A renderer that builds its page with
these cannot put a name anywhere but in text.
"""

from __future__ import annotations

from collections.abc import Sequence

from hwinfo.escape import html_text
from hwinfo.render.html.assets import ICON, SCRIPT, STYLESHEET

# Elements without content or end tag that the pages use.
_VOID = frozenset({"input", "meta", "link"})


class Markup(str):
    """HTML written by hwinfo: put in a page as it is."""


def raw(html: str) -> Markup:
    """Markup from a literal of hwinfo's own (never from data)."""
    return Markup(html)


def el(tag: str, *children: str | Markup | None, **attrs: str | int | bool | None) -> Markup:
    """`<tag attrs>children</tag>`. Text children and attribute values are escaped; None
    children and None or False attributes are left out; `cls` is the class attribute, a
    trailing underscore is dropped (`for_`) and any other underscore is a dash (`data_live`)."""
    parts = [f"<{tag}"]
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = "class" if name == "cls" else name.rstrip("_").replace("_", "-")
        parts.append(f" {name}" if value is True else f' {name}="{html_text(str(value))}"')
    parts.append(">")
    if tag in _VOID:
        assert not children, f"<{tag}> has no content"
        return Markup("".join(parts))
    parts += [child if isinstance(child, Markup) else html_text(child)
              for child in children if child is not None]
    parts.append(f"</{tag}>")
    return Markup("".join(parts))


def join(items: list[Markup], separator: str = "") -> Markup:
    return Markup(html_text(separator).join(items))


def bar(ratio: float | None, hot_above: float = 0.9) -> Markup:
    """A horizontal bar filled to `ratio` (0..1) in steps of 5 %; empty when unknown."""
    if ratio is None:
        return el("span", el("i"), cls="bar p0")
    step = max(0, min(20, round(ratio * 20))) * 5
    return el("span", el("i"), cls=f"bar p{step}" + (" hot" if ratio > hot_above else ""))


def document(title: str, body: Markup, refresh_seconds: int, *, footer: Markup | None = None,
             header: Markup | None = None) -> bytes:
    """A whole page: head (stylesheet, hashed script, a meta refresh for browsers without
    JavaScript), `header`, the offline note the script fills, `body` in <main>, `footer`."""
    head = "".join((
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html_text(title)}</title>",
        f'<link rel="stylesheet" href="{STYLESHEET.link}">',
        f'<link rel="icon" type="image/svg+xml" href="{ICON.link}">',
        f'<script src="{SCRIPT.link}" integrity="{SCRIPT.integrity}" defer></script>',
        f'<noscript><meta http-equiv="refresh" content="{int(refresh_seconds)}"></noscript>',
        "</head>",
    ))
    page = el("body", header, el("p", id="offline", cls="offline-note", hidden=True),
              el("main", body), footer, data_refresh=int(refresh_seconds))
    return (head + page + "</html>\n").encode("utf-8")


def cell(heading: str, state: str, word: str, who: str | None, memory: str | None,
         slots: Sequence[tuple[str, str, str | None]] = (), title: str | None = None,
         href: str | None = None) -> Markup:
    """One GPU in a grid of GPUs, coloured by `state` (free, held, idle, down, lost,
    unknown): its heading (a link to `href`), the state in a `word`, who holds it, its memory,
    and for a MIG GPU a slot per MIG device or profile, each (state, label, title)."""
    return el("li",
              el("span", el("a", heading, href=href, cls="g") if href else el("span", heading, cls="g"),
                 el("span", word, cls="s"), cls="ch"),
              el("span", who, cls="h") if who else None,
              el("span", memory, cls="m") if memory else None,
              el("span", *(el("span", label, cls=f"slot {kind}", title=tip)
                           for kind, label, tip in slots), cls="slots") if slots else None,
              cls=f"cell {state}", title=title)
