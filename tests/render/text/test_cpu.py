import dataclasses

from fixtures.machines import shared_tree

from hwinfo.collect.cpu import CpuCollector
from hwinfo.collect.sysfs import Root
from hwinfo.model.cpu import Cache, Cpu, NumaNode
from hwinfo.render.text.cpu import cache_lines, fill, render_cpu
from hwinfo.render.text.layout import visible_len
from hwinfo.render.text.style import Style

GiB = 1 << 30


def _collected(name: str) -> Cpu:
    return CpuCollector(Root(shared_tree(name)), min_window_seconds=0).collect()


def _unknown() -> Cpu:
    return Cpu(
        vendor=None, model_name=None, family=None, model=None, stepping=None, microcode=None,
        architecture=None, sockets=None, cores=None, logical_cpus=None, threads_per_core=None,
        frequency_base_hertz=None, frequency_min_hertz=None, frequency_max_hertz=None,
        frequency_current_hertz=None,
    )  # fmt: skip


def test_two_socket_server() -> None:
    cpu = dataclasses.replace(_collected("x86-2s-smt"), utilization_ratio=[0.25] * 31 + [0.75])
    assert (
        render_cpu(cpu, Style())
        == """\
CPU
  Model          Intel(R) Xeon(R) Gold 6434
  Vendor         GenuineIntel · family 6 · model 143 · stepping 8
  Microcode      0x2b000590
  Architecture   x86_64
  Topology       2 sockets · 16 cores · 32 threads · 2 threads per core
  Frequency      base 3.70 GHz · max 4.10 GHz · current 3.85 GHz
  Caches         L1d  48.0 KiB per core × 16 = 768 KiB
                 L1i  32.0 KiB per core × 16 = 512 KiB
                 L2   2.00 MiB per core × 16 = 32.0 MiB
                 L3   22.5 MiB per socket × 2 = 45.0 MiB
  ML flags       SSE4.2 AVX AVX2 FMA F16C AVX512F AVX512CD AVX512BW AVX512DQ
                 AVX512VL AVX512IFMA AVX512VBMI AVX512VBMI2 AVX512VNNI
                 AVX512BITALG AVX512VPOPCNTDQ AVX512BF16 AVX512FP16 AVX-VNNI
                 AMX-TILE AMX-BF16 AMX-INT8
  NUMA nodes     2
    node    total     free  CPUs
       0  251 GiB  231 GiB  0-7,16-23
       1  252 GiB  232 GiB  8-15,24-31
  Load average   12.43, 11.87, 10.02 (1, 5, 15 min)
  Utilization    27% overall · busiest CPU 75%"""
    )


def test_arm_server_identity_and_missing_clocks() -> None:
    lines = render_cpu(_collected("arm64-server"), Style()).splitlines()
    assert "  Vendor         ARM · part 0xd4f · revision 1" in lines
    assert "  Microcode      not available" in lines
    assert "  Topology       1 socket · 8 cores · 8 threads · 1 thread per core" in lines
    assert "  Frequency      not available" in lines
    assert "  ML flags       NEON DotProd FP16 BF16 I8MM SVE SVE2" in lines


def test_cache_line_as_lscpu_would_total_it() -> None:
    l2 = Cache(2, "unified", 2 << 20, instances=56, shared_by_cpus=2, scope="core")
    assert cache_lines([l2]) == ["L2   2.00 MiB per core × 56 = 112 MiB"]
    unknown = Cache(3, "unified", None, instances=2, shared_by_cpus=None, scope=None)
    assert cache_lines([unknown]) == ["L3   not available per instance × 2 = not available"]


def test_no_cpu_section() -> None:
    assert render_cpu(None, Style()) == "CPU\n  CPU information is not available"


def test_everything_unknown() -> None:
    lines = render_cpu(_unknown(), Style()).splitlines()
    assert lines[0] == "CPU"
    assert all(line.endswith("not available") for line in lines[1:]), lines
    assert len(lines) == 12


def test_flags_without_ml_extensions() -> None:
    cpu = dataclasses.replace(_unknown(), flags=["fpu", "sse2"], ml_flags=[])
    assert "  ML flags       none" in render_cpu(cpu, Style()).splitlines()


def test_long_numa_cpu_lists_wrap_inside_80_columns() -> None:
    # BIOSes that number CPUs round-robin across sockets give lists with no ranges at all.
    evens, odds = list(range(0, 224, 2)), list(range(1, 224, 2))
    nodes = [NumaNode(0, evens, 1024 * GiB, 1000 * GiB), NumaNode(1, odds, None, None)]
    cpu = dataclasses.replace(_unknown(), numa_nodes=nodes)
    assert max(visible_len(line) for line in render_cpu(cpu, Style(color=True)).splitlines()) <= 80
    lines = render_cpu(cpu, Style()).splitlines()
    assert max(map(len, lines)) <= 80
    header = next(
        i for i, line in enumerate(lines) if line.split() == ["node", "total", "free", "CPUs"]
    )
    column = lines[header].index("CPUs")
    rows = lines[header + 1 : lines.index(next(line for line in lines if "Load average" in line))]
    lists: list[str] = []
    for row in rows:
        if row[:column].strip():  # a node's first row; the others continue its CPU list
            lists.append("")
            assert "not available" in row or "GiB" in row
        lists[-1] += row[column:]
    assert [s.split(",") for s in lists] == [[str(n) for n in evens], [str(n) for n in odds]]
    assert len(rows) > 4


def test_fixture_reports_fit_80_columns() -> None:
    for name in ("x86-2s-smt", "arm64-server"):
        assert max(map(len, render_cpu(_collected(name), Style()).splitlines())) <= 80


def test_fill() -> None:
    assert fill(["aa ", "bb ", "cc"], 5) == ["aa bb", "cc"]
    assert fill(["0-3,", "8,", "10"], 80) == ["0-3,8,10"]
    assert fill([], 10) == []


def test_long_model_name_wraps_within_80_columns() -> None:
    name = "Intel(R) Xeon(R) Platinum 8480+ Engineering Sample with a very long marketing name v2"
    cpu = dataclasses.replace(_collected("x86-2s-smt"), model_name=name)
    lines = render_cpu(cpu, Style(color=False)).splitlines()
    assert max(visible_len(line) for line in lines) <= 80
    at = next(i for i, line in enumerate(lines) if line.startswith("  Model"))
    assert lines[at + 1].startswith(" " * 17)  # continued under the value, not cut
    assert " ".join(line.split("Model")[-1].strip() for line in lines[at:at + 2]) == name
