"""The instruction-set extensions that ML libraries dispatch on, under the names users search for."""

from __future__ import annotations

from collections.abc import Iterable

# (kernel flag, common name) in report order: x86 as the kernel names them in
# arch/x86/include/asm/cpufeatures.h, arm64 as its hwcap strings
# (Documentation/arch/arm64/elf_hwcaps.rst). The common names are the ones compilers and
# vendor datasheets use: -mavx512vnni is AVX512VNNI, arm64 "asimd" is NEON, "asimddp" is the
# DotProd extension, and "asimdhp" is FP16 (FEAT_FP16 brings it together with scalar "fphp").
ML_FLAGS: tuple[tuple[str, str], ...] = (
    ("sse4_2", "SSE4.2"),
    ("avx", "AVX"),
    ("avx2", "AVX2"),
    ("fma", "FMA"),
    ("f16c", "F16C"),
    ("avx512f", "AVX512F"),
    ("avx512cd", "AVX512CD"),
    ("avx512bw", "AVX512BW"),
    ("avx512dq", "AVX512DQ"),
    ("avx512vl", "AVX512VL"),
    ("avx512ifma", "AVX512IFMA"),
    ("avx512vbmi", "AVX512VBMI"),
    ("avx512_vbmi2", "AVX512VBMI2"),
    ("avx512_vnni", "AVX512VNNI"),
    ("avx512_bitalg", "AVX512BITALG"),
    ("avx512_vpopcntdq", "AVX512VPOPCNTDQ"),
    ("avx512_bf16", "AVX512BF16"),
    ("avx512_fp16", "AVX512FP16"),
    ("avx_vnni", "AVX-VNNI"),
    ("amx_tile", "AMX-TILE"),
    ("amx_bf16", "AMX-BF16"),
    ("amx_int8", "AMX-INT8"),
    ("amx_fp16", "AMX-FP16"),
    ("asimd", "NEON"),
    ("asimddp", "DotProd"),
    ("asimdhp", "FP16"),
    ("bf16", "BF16"),
    ("i8mm", "I8MM"),
    ("sve", "SVE"),
    ("sve2", "SVE2"),
    ("sme", "SME"),
)


def ml_flags(flags: Iterable[str]) -> list[str]:
    """The ML-relevant extensions among the kernel's flags, renamed, in ML_FLAGS order."""
    present = set(flags)
    return [name for kernel_name, name in ML_FLAGS if kernel_name in present]
