"""A MIG GPU's instances rebuilt from a dump's MIG devices (hwinfo/sim/importer_mig.py), on
hand-written dumps; the real captures' MIG GPUs are test_importer.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixtures.smi_dumps import dump_xml, mig_device

import hwinfo.sim
from hwinfo.sim.importer import DumpError, import_nvidia_smi_xml


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
