"""The storage and network sources on the fixture GPU node's sysfs with files made hostile:
binary, empty, huge, FIFOs, link loops, links to /dev/zero, links out of the tree, missing.
Each case reads a typed section, or the source fails in one line (a mountinfo no procfs
holds); the report renders what was read; nothing waits on a FIFO or reads without end."""

from __future__ import annotations

import os
import shutil

from fixtures.machines_devices import gpu_node
from fuzz.mutations import fuzz_settings, one_line_or_valid, scratch_dir
from hypothesis import example, given
from hypothesis import strategies as st

from hwinfo.collect.network import NetworkCollector
from hwinfo.collect.storage import StorageCollector
from hwinfo.collect.sysfs import ATTRIBUTE_LIMIT_BYTES, Root, RootError
from hwinfo.escape import to_json
from hwinfo.model.network import Network
from hwinfo.model.serialize import to_dict
from hwinfo.model.storage import Storage
from hwinfo.render.text.network import render_network
from hwinfo.render.text.storage import render_storage
from hwinfo.render.text.style import Style

DEVICES = gpu_node()
PATHS = sorted([*DEVICES.files, *DEVICES.links])
WORKDIR = scratch_dir("hwinfo-fuzz-sysfs-")
HOSTILE = st.one_of(
    st.binary(max_size=300).map(lambda data: ("bytes", data)),
    st.sampled_from([("bytes", b""), ("bytes", b"-1\n"), ("bytes", b"99999999999999999999\n"),
                     ("bytes", b"4: \n"), ("bytes", b" / \n"), ("bytes", "٣\n".encode()),
                     ("huge", b""), ("fifo", b""), ("loop", b""), ("zero", b""),
                     ("outside", b""), ("missing", b""), ("directory", b"")]),
)


def _spoil(root: str, rel: str, kind: str, data: bytes) -> None:
    path = os.path.join(root, rel)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):  # a file, a link, or a FIFO an earlier spoiling made
        os.unlink(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if kind == "bytes":
        with open(path, "wb") as file:
            file.write(data)
    elif kind == "huge":
        with open(path, "wb") as file:
            file.truncate(ATTRIBUTE_LIMIT_BYTES * 300)  # sparse: past the bound, no disk used
    elif kind == "fifo":
        os.mkfifo(path)  # no writer: a plain read would wait for ever
    elif kind == "loop":
        os.symlink(os.path.basename(path), path)
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    elif kind == "outside":
        os.symlink("/nonexistent/sys/devices", path)
    elif kind == "directory":
        os.mkdir(path)


@fuzz_settings(40)
@example([("sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda/size",
           ("fifo", b"")),
          ("sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda/size",
           ("bytes", b"1\n"))])  # a path spoiled twice: the FIFO goes before it is written
@given(st.lists(st.tuples(st.sampled_from(PATHS), HOSTILE), min_size=1, max_size=6))
def test_a_hostile_device_tree_is_read_or_one_line(spoiled: list[tuple[str, tuple[str, bytes]]]
                                                   ) -> None:
    case = WORKDIR / "case"
    shutil.rmtree(case, ignore_errors=True)
    DEVICES.write(case)
    for rel, (kind, data) in spoiled:
        _spoil(str(case), rel, kind, data)
    root = Root(case)
    storage = one_line_or_valid(lambda: StorageCollector(root).collect(), RootError)
    network = one_line_or_valid(lambda: NetworkCollector(root).collect(), RootError)
    assert storage is None or isinstance(storage, Storage)
    assert network is None or isinstance(network, Network)
    render_storage(storage, Style(color=True))
    render_network(network, Style(color=True))
    for section in (storage, network):
        if section is not None:
            to_json(to_dict(section))  # what the JSON report and /api/v1/snapshot write
