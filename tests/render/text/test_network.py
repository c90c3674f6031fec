"""The network section and the brief's network line."""

from __future__ import annotations

from fixtures.machines import shared_tree

from hwinfo.collect.network import NetworkCollector
from hwinfo.collect.sysfs import Root
from hwinfo.model.network import NetInterface, Network
from hwinfo.render.text.brief import network_text
from hwinfo.render.text.network import render_network
from hwinfo.render.text.style import Style

PLAIN = Style(color=False)


def _veth(n: int) -> NetInterface:
    return NetInterface(f"veth{n}", "virtual", None, "up", None, 1500, None, "ethernet", None,
                        None, None, "docker0")


def test_the_gpu_node_s_network() -> None:
    network = NetworkCollector(Root(shared_tree("x86-2s-smt"))).collect()
    lines = render_network(network, PLAIN).splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[1] == ("  bond0          bond 802.3ad of enp153s0f0np0, enp153s0f1np1 · up · "
                        "200 Gb/s ·")
    assert "    mlx5_0 port 1  InfiniBand · ACTIVE, LinkUp · 200 Gb/sec (4X HDR) ·" in lines
    # The bond backs the RoCE LAG, so it is counted with RDMA, not twice.
    assert network_text(network) == (
        "IB 1 of 2 active (200 Gb/s) · RoCE 1 of 1 active (100 Gb/s)")


def test_a_container_host_s_veths_are_one_line() -> None:
    network = Network(interfaces=[_veth(n) for n in range(40)])
    lines = render_network(network, PLAIN).splitlines()
    text = " ".join(" ".join(line.split()) for line in lines[1:])
    assert text.startswith("Virtual veth0 (up), veth1 (up),") and text.endswith(", +28 more")
    assert max(len(line) for line in lines) <= 80


def test_not_read_and_nothing_there() -> None:
    assert render_network(None, PLAIN).splitlines()[1].strip() == (
        "network information is not available")
    assert render_network(Network(), PLAIN).splitlines()[1].split() == [
        "Interfaces", "none", "but", "loopback"]
    assert network_text(Network()) == "no interface up"
    assert network_text(None) == "not available"
