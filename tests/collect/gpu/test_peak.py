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
