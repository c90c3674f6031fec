"""Network inventory series: NICs, bonds and VLANs, never a container's veth or bridge."""

from __future__ import annotations

from health.factories import make_snapshot

from hwinfo.exporter.metrics_network import METRICS
from hwinfo.model.network import NetInterface, Network


def _interface(name: str, kind: str, operstate: str | None) -> NetInterface:
    return NetInterface(name, kind, None, operstate, None, 1500, None, "ethernet", None, None,
                        None, None)


def test_only_interfaces_that_outlive_containers_are_series() -> None:
    snapshot = make_snapshot()
    snapshot.network = Network(interfaces=[
        _interface("eno1", "physical", "up"), _interface("bond0", "bond", "down"),
        _interface("eno1.100", "vlan", None), _interface("docker0", "bridge", "up"),
        _interface("veth9a1c", "virtual", "up")])
    series = {m.name: list(m.read(snapshot)) for m in METRICS}
    assert [labels[0] for labels, _ in series["network_info"]] == ["eno1", "bond0", "eno1.100"]
    # An operstate not read is no sample, never 0.
    assert series["network_up"] == [(("eno1",), 1.0), (("bond0",), 0.0)]
    assert all(list(m.read(make_snapshot())) == [] for m in METRICS)
