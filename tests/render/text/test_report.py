"""The whole text report: how old the snapshot is, and sections that are stale or missing."""

from __future__ import annotations

import dataclasses

from health.factories import make_gpu, make_snapshot, make_system

from hwinfo.model.sources import SourceError, SourceState
from hwinfo.render.text.report import render_text
from hwinfo.render.text.style import Style

PLAIN = Style(color=False)


def _gpu_section(text: str) -> list[str]:
    return text.split("\nGPUs", 1)[1].splitlines()[1:]


def test_stale_gpu_data_is_shown_with_its_age_now() -> None:
    snapshot = make_snapshot(gpu=make_system(make_gpu()))
    taken = snapshot.timestamp_seconds
    snapshot.sources = [
        SourceState("host", "ok", taken, 0.0, None),
        SourceState("gpu", "stale", taken - 40, 40.0, "NVML did not answer within 5 s"),
    ]
    text = render_text(snapshot, PLAIN, now=taken + 80)
    assert "(1 min ago)" in text.splitlines()[2]  # the header: the snapshot's own age
    assert _gpu_section(text)[0] == "  stale: read 2 min ago, kept because NVML did not answer within 5 s"


def test_fresh_snapshot_has_no_age_and_no_note() -> None:
    snapshot = make_snapshot(gpu=make_system(make_gpu()))
    snapshot.sources = [SourceState("gpu", "ok", snapshot.timestamp_seconds, 0.0, None)]
    text = render_text(snapshot, PLAIN, now=snapshot.timestamp_seconds + 0.5)
    assert " ago" not in text and "stale" not in text
    assert text.splitlines()[2].startswith("  taken ")  # the header, without an age
    assert _gpu_section(text)[0].startswith("  Driver ")  # the GPU section, without a note


def test_gpu_not_read_is_said_in_the_gpu_section_once() -> None:
    snapshot = dataclasses.replace(make_snapshot(), gpu=None)
    snapshot.sources = [SourceState("gpu", "failed", None, None, "NVML did not answer within 10 s")]
    snapshot.errors = [SourceError("gpu", "NVML did not answer within 10 s")]
    text = render_text(snapshot, PLAIN)
    assert _gpu_section(text)[0] == "  not available: NVML did not answer within 10 s"
    assert text.count("NVML did not answer") == 1
