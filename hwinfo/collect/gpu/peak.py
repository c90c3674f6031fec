"""Theoretical peak throughput of a GPU from its CUDA cores, rated clock and architecture.

FP32 is cores x clock x 2 (one fused multiply-add per core per clock). The clock is the
board's rated boost clock where we know it (RATED_CLOCKS), because NVML's maximum SM clock
can be a factory overclock (an RTX 4090 reads 3120 MHz against its rated 2520 MHz) or a
clock the datasheet's tensor rates are not quoted at; elsewhere NVML's maximum. The other
precisions are multiples of that FP32 rate per compute capability: dense (no 2:4
sparsity), on tensor cores where the architecture has them, FP16/BF16 with FP32
accumulate (what mixed-precision training uses). The ratios are worked out from NVIDIA's
published figures:
- Pascal: Tesla P100 datasheet (FP64 5.3 / FP32 10.6 / FP16 21.2 TFLOPS); GP104/GP102
  (P4, P40) FP64 1/32 and INT8 dp4a 4x FP32 (Tesla P4 datasheet: 5.5 TFLOPS FP32, 22 TOPS INT8).
- Volta: V100 SXM2 datasheet (FP64 7.8 / FP32 15.7 / tensor 125 TFLOPS).
- Turing: Tesla T4 datasheet (FP32 8.1, FP16 tensor 65, INT8 130 TOPS); FP64 1/32.
- Ampere GA100: A100 datasheet (FP64 9.7, FP32 19.5, TF32 156, FP16/BF16 312, INT8 624).
- Ampere GA10x: RTX A5000 datasheet (FP32 27.8, TF32 55.6 sparse, FP16 222.2 sparse,
  INT8 444.4 sparse TOPS); GA102 whitepaper: GeForce halves FP16/BF16 with FP32 accumulate.
- Ada: L40S datasheet (FP32 91.6, TF32 366 sparse, FP16 733 sparse, INT8 1466 sparse);
  RTX 4090 (Ada whitepaper): FP16 FP32-acc 165.2, TF32 82.6, INT8 660.6 dense.
- Hopper: H100 SXM datasheet (FP64 34, FP32 67, dense TF32 494.7, FP16 989.4, INT8 1979).
  Its CUDA-core rates are quoted at the 1980 MHz boost clock and its tensor rates at 1830
  MHz; per clock the tensor rates are 8x, 16x and 32x FP32.
Compute capabilities not in the table (Blackwell and later) give FP32 only: we do not
guess ratios we cannot source.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwinfo.model.gpu import PeakThroughput


@dataclass(frozen=True)
class Ratios:
    """Rates as multiples of the FP32 CUDA-core rate; None: no such unit."""

    fp64: float
    fp16: float | None
    bf16: float | None
    tf32: float | None
    int8: float | None


RATIOS: dict[tuple[int, int], Ratios] = {
    (6, 0): Ratios(fp64=1 / 2, fp16=2, bf16=None, tf32=None, int8=None),
    (6, 1): Ratios(fp64=1 / 32, fp16=1 / 64, bf16=None, tf32=None, int8=4),
    (7, 0): Ratios(fp64=1 / 2, fp16=8, bf16=None, tf32=None, int8=None),
    (7, 5): Ratios(fp64=1 / 32, fp16=8, bf16=None, tf32=None, int8=16),
    (8, 0): Ratios(fp64=1 / 2, fp16=16, bf16=16, tf32=8, int8=32),
    (8, 6): Ratios(fp64=1 / 64, fp16=4, bf16=4, tf32=1, int8=8),
    (8, 9): Ratios(fp64=1 / 64, fp16=4, bf16=4, tf32=2, int8=8),
    (9, 0): Ratios(fp64=1 / 2, fp16=16, bf16=16, tf32=8, int8=32),
}

# GeForce boards run tensor FP16/BF16 with FP32 accumulate at half rate (and on Ada TF32 too).
GEFORCE_RATIOS: dict[tuple[int, int], Ratios] = {
    (7, 5): Ratios(fp64=1 / 32, fp16=4, bf16=None, tf32=None, int8=16),
    (8, 6): Ratios(fp64=1 / 64, fp16=2, bf16=2, tf32=1, int8=8),
    (8, 9): Ratios(fp64=1 / 64, fp16=2, bf16=2, tf32=1, int8=8),
}

@dataclass(frozen=True)
class RatedClocks:
    """The clocks, in MHz, a board's datasheet rates are quoted at."""

    cuda_cores: float
    tensor: float  # Hopper datasheets quote tensor rates at a lower clock than FP32


# By NVML product name without "NVIDIA "; each clock is the datasheet's rate divided by the
# per-clock rate (cores x 2, times the ratio above), which is the board's rated boost clock.
RATED_CLOCKS: dict[str, RatedClocks] = {
    # A100 datasheet: FP32 19.5 TFLOPS = 6912 cores x 2 x 1410 MHz, FP16 312 at the same.
    "A100-SXM4-40GB": RatedClocks(1410, 1410),
    "A100-SXM4-80GB": RatedClocks(1410, 1410),
    "A100-PCIE-40GB": RatedClocks(1410, 1410),
    "A100 80GB PCIe": RatedClocks(1410, 1410),
    # H100 SXM and H200 datasheets: FP32 67 at 1980 MHz, FP16 989.4 at 1830 MHz.
    "H100 80GB HBM3": RatedClocks(1980, 1830),
    "H200": RatedClocks(1980, 1830),
    # H100 PCIe datasheet: FP32 51 (14592 cores: 1755 MHz), FP16 756 (1620 MHz).
    "H100 PCIe": RatedClocks(1755, 1620),
    # H100 NVL datasheet: FP32 60 (16896 cores: 1785 MHz), FP16 835 (1545 MHz).
    "H100 NVL": RatedClocks(1785, 1545),
    # Ada whitepaper: RTX 4090 FP32 82.6 = 16384 x 2 x 2520 MHz; L40S datasheet 91.6 (18176).
    "GeForce RTX 4090": RatedClocks(2520, 2520),
    "L40S": RatedClocks(2520, 2520),
    # GeForce RTX 4080 SUPER: 10240 cores, 2550 MHz boost (NVIDIA's specifications page).
    "GeForce RTX 4080 SUPER": RatedClocks(2550, 2550),
    # GA102: RTX 3090 FP32 35.6 = 10496 x 2 x 1695 MHz; RTX A5000 27.8 = 8192 x 2 x 1695.
    "GeForce RTX 3090": RatedClocks(1695, 1695),
    "RTX A5000": RatedClocks(1695, 1695),
    # Turing: Tesla T4 FP32 8.1 = 2560 x 2 x 1590 MHz; RTX 2080 SUPER 3072 cores at 1815 MHz.
    "Tesla T4": RatedClocks(1590, 1590),
    "GeForce RTX 2080 SUPER": RatedClocks(1815, 1815),
}

# Every memory type NVML reports a clock for moves data on both clock edges.
_TRANSFERS_PER_CLOCK = 2


def _times(rate: float, ratio: float | None) -> float | None:
    return None if ratio is None else rate * ratio


def peak_throughput(
    name: str | None,
    compute_capability: tuple[int, int] | None,
    cuda_cores: int | None,
    max_sm_clock_hertz: float | None,
    memory_bus_width_bits: int | None,
    max_memory_clock_hertz: float | None,
) -> PeakThroughput | None:
    bandwidth = None
    if memory_bus_width_bits and max_memory_clock_hertz:
        bandwidth = memory_bus_width_bits / 8 * max_memory_clock_hertz * _TRANSFERS_PER_CLOCK
    rated = RATED_CLOCKS.get((name or "").removeprefix("NVIDIA "))
    if rated is not None:
        clock, tensor_clock, source = rated.cuda_cores * 1e6, rated.tensor * 1e6, "rated"
    elif max_sm_clock_hertz:
        clock = tensor_clock = max_sm_clock_hertz
        source = "nvml_max"
    else:
        clock = tensor_clock = None
        source = None
    fp32 = cuda_cores * clock * 2 if cuda_cores and clock else None
    if fp32 is None and bandwidth is None:
        return None
    ratios = RATIOS.get(compute_capability) if compute_capability else None
    if ratios is not None and name and "GeForce" in name:
        ratios = GEFORCE_RATIOS.get(compute_capability, ratios)
    if fp32 is None or ratios is None or tensor_clock is None:
        return PeakThroughput(None, fp32, None, None, None, None, bandwidth,
                              clock if fp32 else None, None, source if fp32 else None)
    # Tensor (and half-precision) rates scale with the clock they are quoted at.
    tensor = fp32 * tensor_clock / clock
    return PeakThroughput(
        fp64_flops=_times(fp32, ratios.fp64),
        fp32_flops=fp32,
        fp16_flops=_times(tensor, ratios.fp16),
        bf16_flops=_times(tensor, ratios.bf16),
        tf32_flops=_times(tensor, ratios.tf32),
        int8_ops=_times(tensor, ratios.int8),
        memory_bandwidth_bytes_per_second=bandwidth,
        clock_hertz=clock,
        tensor_clock_hertz=tensor_clock,
        clock_source=source,
    )
