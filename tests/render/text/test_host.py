"""The report's header line."""

from __future__ import annotations

import dataclasses

from hwinfo.model.host import Host
from hwinfo.model.snapshot import SCHEMA_VERSION, Snapshot
from hwinfo.render.text.host import render_host
from hwinfo.render.text.style import Style


def _snapshot(hostname: str) -> Snapshot:
    host = Host(**{f.name: None for f in dataclasses.fields(Host)})
    host = dataclasses.replace(host, hostname=hostname, os_name="Debian GNU/Linux 12 (bookworm)",
                               kernel_release="6.1.0-28-amd64")
    return Snapshot(schema_version=SCHEMA_VERSION, hwinfo_version="t", timestamp_seconds=0.0,
                    host=host, cpu=None, memory=None, gpu=None)


def test_short_host_name_shares_the_line() -> None:
    first = render_host(_snapshot("gpu01"), Style()).splitlines()[0]
    assert first == "gpu01  Debian GNU/Linux 12 (bookworm) · kernel 6.1.0-28-amd64"


def test_long_host_name_puts_the_system_below_and_escapes_controls() -> None:
    name = "node-0042.rack-17.datacenter-west.research.example-university.edu\x1b]0;x\x07"
    lines = render_host(_snapshot(name), Style()).splitlines()
    assert lines[0] == name.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert lines[1] == "  Debian GNU/Linux 12 (bookworm) · kernel 6.1.0-28-amd64"
