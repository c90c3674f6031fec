"""The process table: what each process is doing (SM % from NVML's per-process samples, CPU %,
resident memory and run time from this host's process table), as nvitop shows it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import psutil

from hwinfo import sim
from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.collect.gpu.processes import local_owner
from hwinfo.render.text.gpu import render_gpus
from hwinfo.render.text.style import Style

SCENARIOS = Path(sim.__file__).parent / "scenarios"
# Above any Linux pid_max (at most 2**22): a PID no process here can have.
_NOWHERE = 2**22 + 1
# Burns a second of CPU, then sleeps: a process with a CPU %, a resident size and an age.
_BUSY = "import time\nend = time.process_time() + 1\nwhile time.process_time() < end: pass\ntime.sleep(60)"


_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def _cells(line: str) -> list[str]:
    """A table line split on spaces, a size's number and unit ("21.4 GiB") kept together."""
    cells: list[str] = []
    for word in line.split():
        if word in _UNITS and cells:
            cells[-1] += f" {word}"
        else:
            cells.append(word)
    return cells


def _table(text: str, gpu: int) -> list[list[str]]:
    """GPU `gpu`'s process table: the header's cells, then each row's."""
    block = text.split(f"\nGPU {gpu} ", 1)[1].split("\n\n", 1)[0].splitlines()
    start = block.index("  Processes") + 1
    return [_cells(line) for line in block[start:]]


def test_sm_cpu_rss_and_time_of_a_real_process(tmp_path: Path) -> None:
    # workstation-geforce's GPUs, with the RTX 3090's training job (96 % SM in the scenario)
    # played by a real process of this host, so psutil reads its CPU time, RSS and start; the
    # RTX 4090's processes get PIDs no process here has, as if in another PID namespace.
    doc = json.loads((SCENARIOS / "workstation-geforce.json").read_text())
    for i, proc in enumerate(doc["gpus"][0]["processes"]):
        proc["pid"] = _NOWHERE + i
    child = subprocess.Popen([sys.executable, "-c", _BUSY])
    try:
        owner = psutil.Process(child.pid)
        deadline = time.monotonic() + 120
        # Until it has burnt its second and sleeps: its CPU time stays what it is now.
        while not (owner.status() == psutil.STATUS_SLEEPING and sum(owner.cpu_times()[:2]) >= 0.9):
            assert time.monotonic() < deadline, "the busy child never went to sleep"
            time.sleep(0.05)
        cpu, started = sum(owner.cpu_times()[:2]), owner.create_time()
        doc["gpus"][1]["processes"][0]["pid"] = child.pid
        scenario = tmp_path / "workstation.json"
        scenario.write_text(json.dumps(doc))
        sim.install(sim.load_scenario(str(scenario)))
        collector = GpuCollector(local_owner)
        try:
            before = time.time()
            text = render_gpus(collector.collect(), Style(color=False))
            after = time.time()
        finally:
            collector.close()
            sim.uninstall()
        resident, user = owner.memory_info().rss, owner.username()
        age = time.time() - started
    finally:
        child.kill()
        child.wait()
    header, row = _table(text, 1)
    assert header == ["PID", "User", "Memory", "T", "SM", "CPU", "RSS", "Time", "Command"]
    cells = dict(zip(header, row, strict=False))
    assert cells["PID"] == str(child.pid) and cells["User"] == user
    assert cells["SM"] == "96%"
    # Its CPU time over its run so far (however long a loaded machine took to give it that
    # second), the run measured to a moment during the collection.
    shown = int(cells["CPU"].rstrip("%"))
    assert math.floor(100 * cpu / (after - started)) <= shown <= math.ceil(100 * cpu / (before - started))
    rss = float(cells["RSS"][:-1]) * 1024 ** "BKMG".index(cells["RSS"][-1])
    assert abs(rss - resident) <= 0.1 * resident
    assert cells["Time"].endswith("s") and 1 <= int(cells["Time"][:-1]) <= age + 1
    assert cells["Command"] == Path(sys.executable).name  # the name; --full-command: the line
    # The RTX 4090: no process of this host, so no CPU, RSS or Time column; the SM column
    # stays, since NVML sampled firefox (5 %), and the rest read n/a.
    header, *rows = _table(text, 0)
    assert header == ["PID", "User", "Memory", "T", "SM", "Command"]
    assert [row[4] for row in rows] == ["n/a", "n/a", "5%", "n/a"]
    assert all(row[1] == "?" for row in rows)


def test_long_names_are_cut_with_a_mark_not_widening_every_row(tmp_path: Path) -> None:
    """A 255-character unit and a 100,000-character user name (a tree's passwd) stay within
    their columns, cut with "…"; the other processes' rows keep the table's width."""
    from hwinfo.render.text.gpu_processes import NAME_WIDTH
    from tests.fixtures.cgroups import attributed_tree, write_process

    root = attributed_tree(tmp_path)
    long_user = "u" * 100_000
    (root / "etc/passwd").write_text((root / "etc/passwd").read_text() + f"{long_user}:x:1001:1001::/h:/bin/sh\n")
    unit = "x" * 247 + ".service"
    write_process(root, 2264, 1001, "/usr/bin/gnome-shell", f"0::/system.slice/{unit}\n".encode())
    done = subprocess.run([sys.executable, "-m", "hwinfo", "report", "--simulate", "workstation-geforce",
                           "--root", str(root), "--no-color"], capture_output=True, text=True,
                          timeout=60, check=False)
    lines = done.stdout.splitlines()
    row = next(line for line in lines if " 2264 " in line)
    assert f"{long_user[:NAME_WIDTH - 1]}…" in row and f"{unit[:NAME_WIDTH - 1]}…" in row
    assert long_user not in done.stdout and unit not in done.stdout
    # The two columns are NAME_WIDTH wide, so every row of the table is as before.
    header = lines[max(i for i, line in enumerate(lines[:lines.index(row)])
                       if line.lstrip().startswith("PID"))]
    assert header.index("Job") - header.index("User") == NAME_WIDTH + 2
    assert header.index("Memory") - header.index("Job") < NAME_WIDTH + 2 + len("Memory")
    users = done.stdout[done.stdout.index("GPU users"):]
    assert f"{long_user[:NAME_WIDTH - 1]}…" in users and long_user not in users


def test_each_process_s_job_cpu_beside_its_gpu_use(tmp_path: Path) -> None:
    """A Slurm job on cgroup v2 with 16 CPUs (tests/fixtures/job_cgroups.py), whose counter
    does not move between the report's two readings: 0 of 16 CPUs busy; a process without a
    job has no figure."""
    from tests.fixtures.job_cgroups import SLURM_V2, write_host
    from tests.fixtures.machines import MACHINES, write_tree

    root = write_host(SLURM_V2, write_tree(MACHINES["x86-2s-smt"], tmp_path))
    scenario = tmp_path / "job.json"
    scenario.write_text(json.dumps({"format": 1, "description": "a job", "gpus": [
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 30, "processes": [
            {"pid": SLURM_V2.pid, "used_memory_mib": 1024, "user": "nobody", "command": "python"},
            {"pid": _NOWHERE, "used_memory_mib": 1024, "user": "bob", "command": "python"}]}]}))
    done = subprocess.run([sys.executable, "-m", "hwinfo", "report", "--simulate", str(scenario),
                           "--root", str(root), "--no-color"], capture_output=True, text=True,
                          timeout=60, check=True)
    header, *rows = _table(done.stdout, 0)
    assert header[header.index("T") + 1:][:2] == ["Job", "CPU"]  # the "Job CPU" column
    by_pid = {row[0]: row for row in rows}
    assert "0.0/16" in by_pid[str(SLURM_V2.pid)] and "slurm:3385.0" in by_pid[str(SLURM_V2.pid)]
    assert "0.0/16" not in by_pid[str(_NOWHERE)]
