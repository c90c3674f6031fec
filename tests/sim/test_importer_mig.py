"""A MIG GPU's instances rebuilt from a dump's MIG devices (hwinfo/sim/importer_mig.py), on
hand-written dumps and listings; the real captures' MIG GPUs are test_importer.py's."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CAPTURES, require_captures
from fixtures.smi_dumps import dump_xml, lgi_section, mig_device

import hwinfo.sim
from hwinfo.sim.importer import DumpError, import_dump, import_nvidia_smi_xml


def test_split_gpu_instance_and_media_profile(tmp_path: Path) -> None:
    text = dump_xml(
        {"mig_mode/current_mig": "Enabled", "mig_mode/pending_mig": "Enabled"},
        mig_devices=[
            mig_device(2, 0, 14, 40192),  # 1c.3g.40gb
            mig_device(2, 1, 28, 40192),  # 2c.3g.40gb
            mig_device(7, 0, 14, 9856, engines="1/1/1"),  # 1g.10gb+me at slot 0
            mig_device(8, 0, 14, 9856, engines="0/0/0"),  # plain 1g.10gb at slot 1
        ],
        processes=[
            {
                "gpu_instance_id": "2",
                "compute_instance_id": "1",
                "pid": "4242",
                "type": "C",
                "process_name": "python serve.py",
                "used_memory": "3000 MiB",
            },
        ],
    )
    gpu = import_nvidia_smi_xml(text, "split.xml")["gpus"][0]
    instances = gpu["mig"]["gpu_instances"]
    assert [(gi["profile"], gi["id"], gi["start"]) for gi in instances] == [
        ("3g.40gb", 2, 4),
        ("1g.10gb+me", 7, 0),
        ("1g.10gb", 8, 1),
    ]
    assert [ci["slices"] for ci in instances[0]["compute_instances"]] == [1, 2]
    assert gpu["processes"][0] == {
        "pid": 4242,
        "type": "compute",
        "gpu_instance_id": 2,
        "compute_instance_id": 1,
        "name": "python serve.py",
        "used_memory_mib": 3000,
        "command": "python serve.py",  # Linux: NVML's name is the command line
    }
    path = tmp_path / "split.json"
    path.write_text(json.dumps(import_nvidia_smi_xml(text, "split.xml")))
    loaded = hwinfo.sim.load_scenario(str(path))  # through the real loader, as --simulate FILE
    split = loaded.gpus[0].mig.gpu_instances[0]
    assert [ci.profile.name for ci in split.compute_instances] == ["1c.3g.40gb", "2c.3g.40gb"]


@pytest.mark.parametrize(
    ("product", "device", "message"),
    [
        ("NVIDIA A100-SXM4-80GB", mig_device(1, 0, 42, 12345), "matches no MIG profile"),
        ("NVIDIA A100-SXM4-80GB", mig_device(1, 1, 42, 40192), "compute instance ids [1]"),
        (
            "NVIDIA A100-SXM4-80GB",
            {k: v for k, v in mig_device(1, 0, 42, 40192).items() if "multiprocessor" not in k},
            "mig_device 0: no <device_attributes/shared/multiprocessor_count> value",
        ),
    ],
)
def test_mig_devices_that_cannot_be_expressed(
    product: str, device: dict[str, str], message: str
) -> None:
    text = dump_xml({"product_name": product, "mig_mode/current_mig": "Enabled"}, mig_devices=[device])
    with pytest.raises(DumpError, match=re.escape(message)):
        import_nvidia_smi_xml(text, "mig.xml")


# https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h100-mig__590.48.01.txt:
# GI 2 is a 3g.40gb (60 SMs, 40448 MiB), GI 3 a 2g.20gb, GIs 9 and 10 1g.10gb (16 SMs, 9984 MiB).
H100_MIG = CAPTURES / "text" / "linux-x86_64__nvidia-h100-mig__590.48.01.txt"
# The placements a real H100 with these profiles can have, as -lgi lists them.
H100_LGI = [("3g.40gb", 9, 2, "4:4"), ("2g.20gb", 14, 3, "0:2"), ("1g.10gb", 19, 9, "2:1"),
            ("1g.10gb", 19, 10, "3:1")]


@pytest.mark.parametrize(("listings", "message"), [
    # -lgi names GI 2 a 1g.10gb, at a free 1-slice placement: a 1g.10gb with 60 SMs and
    # 40 GB, on a GPU whose four GIs then take four of its eight slices and all its memory.
    (lambda text: text + lgi_section([("1g.10gb", 19, 2, "0:1"), ("1g.10gb", 19, 3, "1:1"),
                                      *H100_LGI[2:]]),
     "GPU instance 2 is a 1g.10gb (16 SMs, 9984 MiB) by -lgi, but -q shows 60 SMs and 40448 MiB"),
    # -L does the same.
    (lambda text: text.replace("MIG 3g.40gb     Device  0", "MIG 1g.10gb     Device  0"),
     "GPU instance 2 is a 1g.10gb (16 SMs, 9984 MiB) by -L, but -q shows 60 SMs and 40448 MiB"),
    # -lgi's own columns disagree with its profile: a 3g.40gb of 1 memory slice.
    (lambda text: text + lgi_section([("3g.40gb", 9, 2, "4:1"), *H100_LGI[1:]]),
     "GPU instance 2 (3g.40gb) is listed by -lgi with profile id 9 and 1 memory slices"),
    (lambda text: text + lgi_section([*H100_LGI[:3], ("1g.10gb", 12345, 10, "3:1")]),
     "GPU instance 10 (1g.10gb) is listed by -lgi with profile id 12345 and 1 memory slices"),
])
def test_a_listing_that_contradicts_the_query_is_refused(
        listings: Callable[[str], str], message: str) -> None:
    require_captures(H100_MIG)
    text = H100_MIG.read_text()
    import_dump(text + lgi_section(H100_LGI), "h100.txt")  # the listings as the GPU is: imported
    with pytest.raises(DumpError, match=re.escape(message)) as caught:
        import_dump(listings(text), "h100.txt")
    assert "\n" not in str(caught.value)
