"""The JSON report: the snapshot's dataclasses as they are, in base units."""

from __future__ import annotations

from hwinfo.escape import to_json
from hwinfo.model.serialize import to_dict
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.topology import build_topology


def render_json(snapshot: Snapshot, indent: int | None = 2) -> str:
    return to_json(to_dict(snapshot), indent=indent)


def render_topology_json(snapshot: Snapshot, indent: int | None = 2) -> str:
    """`report --topology`: the snapshot with its topology matrix (model/topology.py)."""
    return to_json({**to_dict(snapshot), "topology": to_dict(build_topology(snapshot))},
                   indent=indent)
