"""`hwinfo check`'s verdict as a monitoring plugin prints it (a summary line, then one line per
finding), or JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hwinfo.escape import printable, to_json
from hwinfo.health.findings import Finding, Severity, worst
from hwinfo.health.rules_gpu import lists_gpus
from hwinfo.model.snapshot import Snapshot
from hwinfo.render.text.style import Style

# Bumped when a key of the JSON verdict is renamed or removed; adding keys keeps it.
SCHEMA_VERSION = 1

_COUNTED = (Severity.CRITICAL, Severity.WARNING, Severity.UNKNOWN)
_PLAIN = Style()


def _counts(findings: list[Finding]) -> dict[str, int]:
    return {s.name.lower(): sum(f.severity is s for f in findings) for s in _COUNTED}


def _gpus(snapshot: Snapshot) -> str:
    system = snapshot.gpu
    if system is None:
        state = snapshot.source("gpu")
        return f"GPUs not read: {state.error}" if state and state.error else "GPUs not collected"
    if system.status == "ok":
        return f"{len(system.gpus)} GPU" + ("" if len(system.gpus) == 1 else "s")
    return system.message or f"NVML status {system.status}"


def summary_line(findings: list[Finding], snapshot: Snapshot) -> str:
    """`HWINFO CRITICAL - 1 critical, 5 warning | critical=1 warning=5 unknown=0 gpus=4`."""
    counts = _counts(findings)
    text = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
    perfdata = " ".join(f"{name}={n}" for name, n in counts.items())
    if snapshot.gpu is not None and lists_gpus(snapshot.gpu):
        perfdata += f" gpus={len(snapshot.gpu.gpus)}"
    verdict = text or printable(_gpus(snapshot)) + ", no findings"
    return f"HWINFO {worst(findings).name} - {verdict} | {perfdata}"


def _painter(style: Style) -> dict[Severity, Callable[[str], str]]:
    return {Severity.CRITICAL: style.bad, Severity.WARNING: style.warn,
            Severity.UNKNOWN: style.heading, Severity.OK: style.good}


def finding_line(finding: Finding, style: Style = _PLAIN) -> str:
    """`CRITICAL gpu 2 (GPU-...): gpu_lost: NVML reports the GPU fell off the bus (GpuIsLost)`."""
    subject = f"{finding.subject} ({finding.uuid})" if finding.uuid else finding.subject
    severity = _painter(style)[finding.severity](finding.severity.name)
    return f"{severity} {printable(subject)}: {finding.rule}: {printable(finding.message)}"


def render_text(findings: list[Finding], snapshot: Snapshot, style: Style = _PLAIN) -> str:
    lines = [summary_line(findings, snapshot), *(finding_line(f, style) for f in findings)]
    return "\n".join(lines) + "\n"


def _document(status: Severity, summary: str, findings: list[Finding], **rest: Any) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "status": status.name,
        "exit_code": status.exit_code,
        "summary": summary,
        **rest,
        "counts": _counts(findings),
        "findings": [
            {"severity": f.severity.name, "rule": f.rule, "subject": f.subject, "uuid": f.uuid,
             "message": f.message, "facts": f.facts}
            for f in findings
        ],
    }


def render_json(findings: list[Finding], snapshot: Snapshot) -> str:
    document = _document(worst(findings), summary_line(findings, snapshot), findings,
                         error=None, hostname=snapshot.host.hostname,
                         timestamp_seconds=snapshot.timestamp_seconds)
    return to_json(document) + "\n"


def render_error(message: str, fmt: str) -> str:
    """The verdict when nothing could be checked (a bad option, file or URL): UNKNOWN, one line."""
    summary = f"HWINFO UNKNOWN - {printable(message)}"
    if fmt != "json":
        return summary + "\n"
    document = _document(Severity.UNKNOWN, summary, [], error=message, hostname=None,
                         timestamp_seconds=None)
    return to_json(document) + "\n"
