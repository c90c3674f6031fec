import pytest

from hwinfo.collect.gpu.peak import peak_throughput

TERA = 1e12


def test_a100_matches_its_datasheet() -> None:
    # A100-SXM4-80GB: 6912 cores, SM 1410 MHz, HBM2e 5120-bit at 1593 MHz.
    peak = peak_throughput("NVIDIA A100-SXM4-80GB", (8, 0), 6912, 1410e6, 5120, 1593e6)
    assert peak.fp32_flops / TERA == pytest.approx(19.5, rel=0.01)
    assert peak.fp64_flops == peak.fp32_flops / 2  # 9.7 TFLOPS without tensor cores
    assert peak.tf32_flops / TERA == pytest.approx(156, rel=0.01)
    assert peak.fp16_flops / TERA == pytest.approx(312, rel=0.01)
    assert peak.bf16_flops == peak.fp16_flops
    assert peak.int8_ops / TERA == pytest.approx(624, rel=0.01)
    assert peak.memory_bandwidth_bytes_per_second / 1e9 == pytest.approx(2039, rel=0.01)


def test_geforce_has_little_fp64_and_half_rate_fp16_accumulate() -> None:
    # RTX 3090: 10496 cores, 1695 MHz boost, GDDR6X 384-bit at 9751 MHz.
    peak = peak_throughput("NVIDIA GeForce RTX 3090", (8, 6), 10496, 1695e6, 384, 9751e6)
    assert peak.fp32_flops / TERA == pytest.approx(35.6, rel=0.01)
    assert peak.fp64_flops == peak.fp32_flops / 64
    assert peak.fp16_flops / TERA == pytest.approx(71, rel=0.01)
    assert peak.memory_bandwidth_bytes_per_second / 1e9 == pytest.approx(936, rel=0.01)


def test_same_chip_in_a_workstation_board_keeps_full_rate() -> None:
    peak = peak_throughput("NVIDIA RTX A5000", (8, 6), 8192, 1695e6, None, None)
    assert peak.fp16_flops == 4 * peak.fp32_flops
    assert peak.memory_bandwidth_bytes_per_second is None


def test_unknown_architecture_gives_fp32_only() -> None:
    peak = peak_throughput("NVIDIA B200", (10, 0), 18432, 1965e6, None, None)
    assert peak.fp32_flops is not None
    assert (peak.fp64_flops, peak.fp16_flops, peak.int8_ops) == (None, None, None)


def test_nothing_known_gives_none() -> None:
    assert peak_throughput("GRID P4-1Q", None, None, None, None, None) is None


def test_hopper_tensor_rates_at_the_clock_the_datasheet_quotes() -> None:
    # H100 SXM: NVML's max SM clock is 1980 MHz; the datasheet quotes tensor rates at 1830.
    peak = peak_throughput("NVIDIA H100 80GB HBM3", (9, 0), 16896, 1980e6, 5120, 2619e6)
    assert peak.fp32_flops / TERA == pytest.approx(66.9, rel=0.001)
    assert peak.fp16_flops / TERA == pytest.approx(989.4, rel=0.001)
    assert peak.tf32_flops / TERA == pytest.approx(494.7, rel=0.001)
    assert peak.int8_ops / TERA == pytest.approx(1979, rel=0.001)
    assert (peak.clock_hertz, peak.tensor_clock_hertz, peak.clock_source) == \
        (1980e6, 1830e6, "rated")


def test_factory_overclock_does_not_inflate_the_rates() -> None:
    # An RTX 4090 whose NVML max SM clock is a factory overclock of 3120 MHz.
    peak = peak_throughput("NVIDIA GeForce RTX 4090", (8, 9), 16384, 3120e6, 384, 10501e6)
    assert peak.fp32_flops / TERA == pytest.approx(82.6, rel=0.001)
    assert peak.clock_hertz == 2520e6 and peak.clock_source == "rated"


def test_board_without_a_rated_clock_uses_nvml_s_maximum() -> None:
    peak = peak_throughput("NVIDIA Some Future Board", (8, 0), 6912, 1500e6, None, None)
    assert peak.fp32_flops == 6912 * 1500e6 * 2
    assert (peak.clock_hertz, peak.clock_source) == (1500e6, "nvml_max")
