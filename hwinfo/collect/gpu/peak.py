"""Theoretical peak throughput of a GPU from its CUDA cores, max SM clock and architecture.

FP32 is cores x max SM clock x 2 (one fused multiply-add per core per clock). The other
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
  Those tensor rates are quoted at 1830 MHz, below the 1980 MHz maximum SM clock NVML
  reports; per clock they are 8x, 16x and 32x FP32, so our H100 tensor figures, taken at
  the maximum clock, are 8% above the datasheet's.
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
    fp32 = None
    if cuda_cores and max_sm_clock_hertz:
        fp32 = cuda_cores * max_sm_clock_hertz * 2
    if fp32 is None and bandwidth is None:
        return None
    ratios = RATIOS.get(compute_capability) if compute_capability else None
    if ratios is not None and name and "GeForce" in name:
        ratios = GEFORCE_RATIOS.get(compute_capability, ratios)
    if fp32 is None or ratios is None:
        return PeakThroughput(None, fp32, None, None, None, None, bandwidth)
    return PeakThroughput(
        fp64_flops=_times(fp32, ratios.fp64),
        fp32_flops=fp32,
        fp16_flops=_times(fp32, ratios.fp16),
        bf16_flops=_times(fp32, ratios.bf16),
        tf32_flops=_times(fp32, ratios.tf32),
        int8_ops=_times(fp32, ratios.int8),
        memory_bandwidth_bytes_per_second=bandwidth,
    )
