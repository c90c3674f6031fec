from __future__ import annotations

import json

from health.factories import make_gpu, make_snapshot, make_system

from hwinfo.health.findings import Finding, Severity
from hwinfo.render.check import finding_line, render_error, render_json, render_text, summary_line
from hwinfo.render.text.style import Style

LOST = Finding(Severity.CRITICAL, "gpu_lost", "gpu 2", "NVML reports the GPU fell off the bus",
               {"lost": True}, "GPU-00000002")
MISMATCH = Finding(Severity.CRITICAL, "driver_mismatch", "gpus", "versions differ")
UNREAD = Finding(Severity.UNKNOWN, "collection_failed", "host", "cpu not read: boom")


def test_summary_of_a_healthy_machine() -> None:
    assert summary_line([], make_snapshot(make_system(make_gpu()))) == (
        "HWINFO OK - 1 GPU, no findings | critical=0 warning=0 unknown=0 gpus=1")
    assert summary_line([], make_snapshot()) == (
        "HWINFO OK - GPUs not collected, no findings | critical=0 warning=0 unknown=0")


def test_summary_counts_what_was_found_and_takes_the_worst() -> None:
    snapshot = make_snapshot(make_system(*(make_gpu(i) for i in range(4))))
    assert summary_line([LOST, MISMATCH, UNREAD], snapshot) == (
        "HWINFO CRITICAL - 2 critical, 1 unknown | critical=2 warning=0 unknown=1 gpus=4")
    assert summary_line([UNREAD], snapshot).startswith("HWINFO UNKNOWN - 1 unknown |")


def test_finding_line_names_the_gpu_by_index_and_uuid() -> None:
    assert finding_line(LOST) == (
        "CRITICAL gpu 2 (GPU-00000002): gpu_lost: NVML reports the GPU fell off the bus")
    assert finding_line(MISMATCH) == "CRITICAL gpus: driver_mismatch: versions differ"


def test_severity_is_coloured_only_when_asked() -> None:
    assert finding_line(LOST, Style(color=True)).startswith("\x1b[31;1mCRITICAL\x1b[0m gpu 2")
    assert "\x1b[" not in render_text([LOST, UNREAD], make_snapshot())


def test_json_verdict() -> None:
    doc = json.loads(render_json([LOST], make_snapshot(make_system(make_gpu(2)))))
    assert doc == {
        "schema_version": 1, "status": "CRITICAL", "exit_code": 2,
        "summary": "HWINFO CRITICAL - 1 critical | critical=1 warning=0 unknown=0 gpus=1",
        "error": None, "hostname": "gpu-node-1", "timestamp_seconds": 1_790_000_000.0,
        "counts": {"critical": 1, "warning": 0, "unknown": 0},
        "findings": [{"severity": "CRITICAL", "rule": "gpu_lost", "subject": "gpu 2",
                      "uuid": "GPU-00000002", "message": "NVML reports the GPU fell off the bus",
                      "facts": {"lost": True}}],
    }


def test_error_verdict_is_unknown() -> None:
    assert render_error("config x.yml: bad", "text") == "HWINFO UNKNOWN - config x.yml: bad\n"
    doc = json.loads(render_error("config x.yml: bad", "json"))
    assert (doc["status"], doc["exit_code"], doc["error"], doc["findings"]) == (
        "UNKNOWN", 3, "config x.yml: bad", [])
