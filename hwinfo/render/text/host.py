"""The report's header: which host, what it runs, when the snapshot was taken."""

from __future__ import annotations

import time

from hwinfo.escape import printable, printable_copy
from hwinfo.model.snapshot import Snapshot
from hwinfo.render.text.layout import WIDTH
from hwinfo.render.text.style import Style
from hwinfo.units import NA, duration, or_na

# A snapshot younger than this is "now": a fresh local report does not print its age.
_FRESH_SECONDS = 2.0


def render_host(snapshot: Snapshot, style: Style, age_seconds: float = 0.0) -> str:
    """`age_seconds`: how old the snapshot is (a daemon's, fetched with --from)."""
    host = printable_copy(snapshot.host)
    platform = ", ".join(
        part
        for part in (
            host.virtualization and f"{host.virtualization} guest",
            host.container and f"in {host.container}",
        )
        if part
    )
    taken = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(snapshot.timestamp_seconds))
    hostname = host.hostname
    system = f"{host.os_name or NA} · kernel {host.kernel_release or NA}"
    # A long host name (a FQDN) puts the system on a line of its own.
    fits = len(hostname) + 2 + len(system) <= WIDTH
    if age_seconds >= _FRESH_SECONDS:
        taken += f" ({duration(age_seconds)} ago)"
    lines = [
        style.heading(hostname) + (f"  {system}" if fits else ""),
        *([] if fits else [f"  {system}"]),
        f"  up {or_na(host.uptime_seconds, duration)}" + (f" · {platform}" if platform else ""),
        style.dim(f"  taken {taken} · hwinfo {printable(snapshot.hwinfo_version)}"),
    ]
    return "\n".join(lines)
