import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from fixtures.lscpu import lscpu_summary
from fixtures.machines import shared_tree

from hwinfo.collect.cpu_info import (
    CpuIdentity,
    architecture,
    arm_identity,
    parse_cpuinfo,
    read_identity,
)
from hwinfo.collect.sysfs import Root


def _blocks(name: str) -> list[dict[str, str]]:
    return parse_cpuinfo(Root(shared_tree(name)).read_text("proc/cpuinfo") or "")


def test_one_block_per_processor_in_file_order() -> None:
    blocks = _blocks("x86-2s-smt")
    assert [b["processor"] for b in blocks] == [str(n) for n in range(32)]
    assert blocks[16]["physical id"] == "0" and blocks[16]["core id"] == "0"  # cpu0's sibling


def test_blocks_without_a_processor_line_are_dropped() -> None:
    # 32-bit Arm kernels end /proc/cpuinfo with a machine-wide block.
    text = "processor\t: 0\nFeatures\t: fp asimd\n\nHardware\t: BCM2835\nRevision\t: c03111\n"
    assert parse_cpuinfo(text) == [{"processor": "0", "Features": "fp asimd"}]


def test_x86_identity() -> None:
    ident = read_identity(_blocks("x86-2s-smt"))
    assert (ident.vendor, ident.model_name) == ("GenuineIntel", "Intel(R) Xeon(R) Gold 6434")
    assert (ident.family, ident.model, ident.stepping) == (6, 143, 8)
    assert ident.microcode == "0x2b000590"
    assert ident.flags[:3] == ["fpu", "vme", "de"] and "amx_tile" in ident.flags


def test_arm_identity_from_midr_fields() -> None:
    ident = read_identity(_blocks("arm64-server"))
    assert (ident.vendor, ident.model_name) == ("ARM", "Neoverse-V2")
    assert (ident.family, ident.model, ident.stepping, ident.microcode) == (None, 0xD4F, 1, None)
    assert ident.flags[:2] == ["fp", "asimd"] and "sve2" in ident.flags


@pytest.mark.parametrize(
    ("implementer", "part", "vendor", "name"),
    [
        ("0x41", "0xd0c", "ARM", "Neoverse-N1"),  # Ampere Altra, Graviton2
        ("0x41", "0xd40", "ARM", "Neoverse-V1"),  # Graviton3
        ("0x41", "0xd49", "ARM", "Neoverse-N2"),
        ("0x41", "0xd4f", "ARM", "Neoverse-V2"),  # Grace, Graviton4
        ("0xc0", "0xac3", "Ampere", "Ampere-1"),
        ("0x46", "0x001", "FUJITSU", "A64FX"),
        ("0x41", "0xfff", "ARM", None),  # a part we do not know: no invented name
        ("0x99", "0xd4f", None, None),
    ],
)
def test_arm_names(implementer: str, part: str, vendor: str | None, name: str | None) -> None:
    ident = arm_identity({"processor": "0", "CPU implementer": implementer, "CPU part": part})
    assert (ident.vendor, ident.model_name) == (vendor, name)


def test_no_cpuinfo_on_a_fixture_root_leaves_everything_unknown() -> None:
    assert read_identity([]) == CpuIdentity()


def test_py_cpuinfo_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("cpuinfo")
    fake.get_cpu_info = lambda: {  # type: ignore[attr-defined]
        "vendor_id_raw": "",
        "brand_raw": "Apple M2",
        "flags": ["asimd", "bf16"],
    }
    monkeypatch.setitem(sys.modules, "cpuinfo", fake)
    assert read_identity([], use_py_cpuinfo=True) == CpuIdentity(
        model_name="Apple M2", flags=["asimd", "bf16"]
    )


def test_live_linux_never_imports_py_cpuinfo() -> None:
    # py-cpuinfo takes about a second per call; on Linux /proc/cpuinfo has all it would say.
    code = (
        "import sys\n"
        "from hwinfo.collect.cpu import CpuCollector\n"
        "from hwinfo.collect.sysfs import Root\n"
        "CpuCollector(Root('/'), 0).collect()\n"
        "print('cpuinfo' in sys.modules)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=repo, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_architecture(tmp_path: Path) -> None:
    assert architecture(_blocks("x86-2s-smt"), live=False) == "x86_64"
    assert architecture(_blocks("arm64-server"), live=False) == "aarch64"
    assert architecture([], live=False) is None
    assert architecture([], live=True) == os.uname().machine



def test_live_model_name_matches_lscpu() -> None:
    ident = read_identity(parse_cpuinfo(Root("/").read_text("proc/cpuinfo") or ""))
    assert ident.model_name == lscpu_summary()["Model name"]
