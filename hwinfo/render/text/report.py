"""The whole text report: the sections of a snapshot, in reading order."""

from __future__ import annotations

from hwinfo.escape import printable
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.sources import FAILED, STALE, SourceState
from hwinfo.render.text.claims import render_claims
from hwinfo.render.text.cpu import render_cpu
from hwinfo.render.text.gpu import gpu_blocks
from hwinfo.render.text.host import render_host
from hwinfo.render.text.memory import render_memory
from hwinfo.render.text.network import render_network
from hwinfo.render.text.storage import render_storage
from hwinfo.render.text.style import Style
from hwinfo.units import duration


def source_note(state: SourceState | None, snapshot_age: float) -> str | None:
    """A line saying a section is older than the snapshot, or missing and why; None when fresh."""
    if state is None:
        return None
    if state.state == STALE:
        age = (state.age_seconds or 0.0) + snapshot_age
        return f"stale: read {duration(age)} ago, kept because {printable(state.error or '')}"
    if state.state == FAILED:
        return f"not available: {printable(state.error or '')}"
    return None


def render_text(
    snapshot: Snapshot, style: Style, show_processes: bool = True, now: float | None = None,
    summary_first: bool = False,
) -> str:
    """`now` (Unix time) adds the snapshot's age where it is old enough to matter;
    `summary_first` puts the GPU summary above everything (what --watch keeps on screen)."""
    age = 0.0 if now is None else snapshot.age_seconds(now)
    when = snapshot.timestamp_seconds + age
    gpu_note = source_note(snapshot.source("gpu"), age)
    gpus = gpu_blocks(snapshot.gpu, style, show_processes, gpu_note and style.warn(gpu_note),
                      snapshot.memory, snapshot.jobs)
    first = gpus[:1] if summary_first else []
    blocks = [
        *first,
        render_host(snapshot, style, age),
        render_cpu(snapshot.cpu, style),
        render_memory(snapshot.memory, style),
        *gpus[len(first):],
        render_claims(snapshot.claims, snapshot.gpu, style, when),
    ]
    # After the GPUs: the disks the data sits on and the network jobs talk over. A document
    # of an hwinfo that did not read them (report --from an older daemon) has neither.
    if snapshot.storage is not None or snapshot.source("storage") is not None:
        blocks.append(render_storage(snapshot.storage, style))
    if snapshot.network is not None or snapshot.source("network") is not None:
        blocks.append(render_network(snapshot.network, style))
    for error in snapshot.errors:
        if error.source != "gpu" or gpu_note is None:  # the GPU section said it already
            blocks.append(style.warn(printable(f"{error.source}: collection failed: "
                                               f"{error.message}")))
    return "\n\n".join(b for b in blocks if b) + "\n"


def fit_screen(text: str, rows: int) -> str:
    """The text cut to a terminal of `rows` lines, saying how much is left out."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) < rows:
        return text
    kept = max(rows - 2, 1)  # room for the note, and for the cursor's line
    return "\n".join([*lines[:kept],
                      f"… {len(lines) - kept} more lines (resize or use --brief)"]) + "\n"
