from __future__ import annotations

import pytest
from fixtures.simulated import simulated_system as _system

from hwinfo.render.text.gpu import render_gpus
from hwinfo.render.text.style import Style


@pytest.mark.parametrize("name", ["dgx-a100-mig", "faults-demo", "workstation-geforce", "vgpu-guest"])
def test_fits_80_columns(name: str) -> None:
    text = render_gpus(_system(name), Style(color=False))
    assert max(len(line) for line in text.splitlines()) <= 80


def test_summary_lists_every_gpu_once() -> None:
    text = render_gpus(_system("dgx-a100-mig"), Style())
    summary = text.split("\n\n")[0].splitlines()[3:]
    assert [row.split()[0] for row in summary] == [str(i) for i in range(8)]


def test_mig_tree_and_warnings() -> None:
    text = render_gpus(_system("dgx-a100-mig"), Style())
    assert "1c.3g.40gb" in text and "2c.3g.40gb" in text
    assert "MIG is enabled but no instances exist" in text
    assert "change to enabled pending reset" in text
    assert "(not in this PID namespace, or exited)" in text


def test_faults_are_visible() -> None:
    text = render_gpus(_system("faults-demo", samples=4), Style(color=False))
    assert "  2  A100-SXM4-40GB" in text and text.split("  2  A100-SXM4-40GB")[1].split()[0] == "lost"
    assert "GPU is lost: no data from NVML" in text
    assert "gen3 x8 of gen4 x16 (degraded)" in text
    assert "remapped rows: 0 correctable, 1 uncorrectable, remap pending" in text
    assert "sw_power_cap" in text


def test_unprivileged_mig_says_why_capacity_is_missing() -> None:
    text = render_gpus(_system("h200-mig"), Style())
    assert "free capacity: not available (needs privileges)" in text


def test_no_driver_is_a_single_line() -> None:
    text = render_gpus(_system("no-driver"), Style())
    assert text.splitlines()[1:] == ["  no NVIDIA driver installed (libnvidia-ml.so.1 not found)"]


def test_colour_only_when_asked() -> None:
    system = _system("faults-demo", samples=4)
    assert "\x1b[" not in render_gpus(system, Style(color=False))
    assert "\x1b[31;1m" in render_gpus(system, Style(color=True))


def test_gpm_activity_per_gpu_instance_and_per_gpu() -> None:
    mig = render_gpus(_system("h200-mig"), Style(color=False))
    assert "per GPU instance: SM active in the MIG table (GPM)" in mig
    rows = {line.split()[2]: line.split()[-1] for line in mig.splitlines()
            if line.strip().startswith(("0 ", "1 ", "2 ", "3 ")) and "g." in line}
    assert rows == {"2": "62%", "3": "85%", "9": "0%", "10": "35%"}
    whole = render_gpus(_system("dgx-h100"), Style(color=False))
    assert "SM active 78% · occupancy 39% · tensor 61%" in whole
    assert max(len(line) for line in whole.splitlines()) <= 80
    assert "SM active" not in render_gpus(_system("dgx-a100-mig"), Style(color=False))


def test_control_characters_never_break_a_table(tmp_path) -> None:
    import json

    scenario = tmp_path / "evil.json"
    scenario.write_text(json.dumps({"format": 1, "gpus": [{
        "board": "T4", "name": "Tesla\nT4\x1b[2J",
        "processes": [{"pid": 7, "used_memory_mib": 10, "user": "a\tb\x1b[8m",
                       "command": "py\x1b]0;pwned\x07thon -c 'x\ny'"}],
    }]}))
    text = render_gpus(_system(str(scenario)), Style(color=False))
    assert "\x1b" not in text and "\t" not in text
    assert "Tesla\\nT4\\x1b[2J" in text
    assert "py\\x1b]0;pwned\\x07thon" in text
    assert "a\\tb\\x1b[8m" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_summary_keeps_its_columns_when_a_gpu_is_lost() -> None:
    def header(samples: int) -> str:
        return render_gpus(_system("faults-demo", samples=samples), Style()).splitlines()[2]

    # faults-demo loses GPU 2 at sample 3: the header row is laid out the same before and after.
    assert header(1) == header(4)


def _procs_of_gpu_0(text: str) -> str:
    """The Procs cell of GPU 0's row in the summary table (a right-aligned column)."""
    lines = text.splitlines()
    header = next(line for line in lines if "Procs" in line)
    end = header.index("Procs") + len("Procs")
    row = next(line for line in lines if line.startswith("  0 "))
    return row[:end].split()[-1]


def test_process_counts_show_without_the_lists_and_refused_ones_are_not_none() -> None:
    system = _system("cloud-t4")
    count = len(system.gpus[0].all_processes())
    assert count and _procs_of_gpu_0(render_gpus(system, Style())) == str(count)
    assert _procs_of_gpu_0(render_gpus(system, Style(), show_processes=False)) == str(count)
    system.gpus[0].process_count = None  # NVML refused the list
    assert _procs_of_gpu_0(render_gpus(system, Style())) == "n/a"


def test_memory_error_reporting_refused_is_not_available_not_absent() -> None:
    system = _system("workstation-geforce")
    gpu = system.gpus[0]
    assert gpu.ecc is None and gpu.remapped_rows is None and gpu.retired_pages is None
    assert "no ECC or memory-error reporting on this board" in render_gpus(system, Style())
    gpu.unavailable["ecc"] = "Insufficient Permissions"
    health = next(line for line in render_gpus(system, Style()).splitlines()
                  if line.startswith("  Health "))
    assert health.split("Health", 1)[1].strip() == "not available (Insufficient Permissions)"


def test_a_reason_sits_on_the_fact_it_belongs_to() -> None:
    # h200-mig's framebuffer memory query is refused (Insufficient Permissions) while BAR1 is
    # read: the reason belongs on the Memory figure, and BAR1 keeps its values.
    lines = render_gpus(_system("h200-mig"), Style(color=False)).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  Memory "))
    field = [lines[at].split("Memory", 1)[1].strip()]
    field += [line.strip() for line in lines[at + 1:] if line.startswith(" " * 17)][:1]
    memory, bar1 = " ".join(field).split(" · ", 1)
    assert memory == "not available (Insufficient Permissions)"
    assert bar1 == "BAR1 1.00 MiB / 256 GiB"


def test_colour_sequences_in_names_are_shown_not_obeyed(tmp_path) -> None:
    """A GPU or MIG profile name holding SGR sequences (our own colours' form) is escaped
    even when the report is in colour."""
    import json

    scenario = tmp_path / "sgr.json"
    scenario.write_text(json.dumps({"format": 1, "gpus": [
        {"board": "T4", "name": "Tesla T4\x1b[8m\x1b[31m"}]}))
    text = render_gpus(_system(str(scenario)), Style(color=True))
    assert "Tesla T4\\x1b[8m\\x1b[31m" in text and "\x1b[8m" not in text
    mig = _system("dgx-a100-mig")
    next(g for g in mig.gpus if g.mig and g.mig.devices).mig.devices[0].profile = "1g.10gb\x1b[5m"
    free = next(c for g in mig.gpus if g.mig for c in g.mig.capacity if c.instances_free)
    free.profile = "7g.80gb\x1b[5m"
    assert "\x1b[5m" not in render_gpus(mig, Style(color=True))
    text = render_gpus(mig, Style(color=False))
    assert "1g.10gb\\x1b[5m" in text and "7g.80gb\\x1b[5m" in text
