from fixtures.lscpu import lscpu_summary
from fixtures.machines import shared_tree

from hwinfo.collect.cpu import CpuCollector
from hwinfo.collect.cpu_flags import ML_FLAGS, ml_flags
from hwinfo.collect.cpu_info import parse_cpuinfo
from hwinfo.collect.sysfs import Root


def _flags(name: str) -> list[str]:
    (first, *_) = parse_cpuinfo(Root(shared_tree(name)).read_text("proc/cpuinfo") or "")
    return (first.get("flags") or first["Features"]).split()


def test_sapphire_rapids() -> None:
    assert ml_flags(_flags("x86-2s-smt")) == [
        "SSE4.2", "AVX", "AVX2", "FMA", "F16C",
        "AVX512F", "AVX512CD", "AVX512BW", "AVX512DQ", "AVX512VL", "AVX512IFMA", "AVX512VBMI",
        "AVX512VBMI2", "AVX512VNNI", "AVX512BITALG", "AVX512VPOPCNTDQ", "AVX512BF16", "AVX512FP16",
        "AVX-VNNI", "AMX-TILE", "AMX-BF16", "AMX-INT8",
    ]  # fmt: skip


def test_neoverse_v2() -> None:
    assert ml_flags(_flags("arm64-server")) == [
        "NEON", "DotProd", "FP16", "BF16", "I8MM", "SVE", "SVE2"
    ]  # fmt: skip


def test_order_is_fixed_whatever_the_kernel_order() -> None:
    assert ml_flags(["amx_fp16", "sme", "avx2", "sse4_2", "sve"]) == [
        "SSE4.2",
        "AVX2",
        "AMX-FP16",
        "SVE",
        "SME",
    ]


def test_other_flags_are_not_reported() -> None:
    assert ml_flags(["fpu", "sse4_1", "avx512_4vnniw", "fphp", "svebf16"]) == []
    assert ml_flags([]) == []


def test_names_are_unique() -> None:
    kernel_names = [k for k, _ in ML_FLAGS]
    names = [n for _, n in ML_FLAGS]
    assert len(set(kernel_names)) == len(kernel_names) and len(set(names)) == len(names)


def test_live_flags_as_lscpu_lists_them() -> None:
    # What the collector reports of this machine, against util-linux's reading of it.
    cpu = CpuCollector(Root("/")).inventory
    listed = lscpu_summary()["Flags"].split()
    assert set(cpu.flags) == set(listed)
    assert cpu.ml_flags == ml_flags(listed)
