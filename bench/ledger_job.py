"""How `hwinfo job` and the per-user rollup grow with what one GPU holds: linear, not quadratic.

    .venv/bin/python bench/ledger_job.py             # about a minute

1. `hwinfo job 42 --format json` as a fresh process against an engine on loopback that
   answers its queries with one GPU and N users of it (the engine's side costs nothing here:
   the answers are made once). Medians of 5 runs at N = 2,500 to 20,000.
2. The collector's per-user rollup (`user_rollup`) of one user with N Slurm jobs on one GPU,
   in-process, medians of 5 calls at N = 10,000 to 80,000.

Each doubling of N should take about twice the time (the ratio column); a quadratic step
took four times as long (20,000 users: 128 s; 8,000 jobs: 5.3 s).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from common import median_call, median_wall

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fixtures.loopback import serving  # the tests' fake server, on loopback

from hwinfo.collect.gpu.processes import user_rollup
from hwinfo.ledger.queries import ATTRIBUTED_HELD_RECORD
from hwinfo.model.attribution import Attribution
from hwinfo.model.gpu import GpuProcess

USERS = (2_500, 5_000, 10_000, 20_000)
JOBS = (10_000, 20_000, 40_000, 80_000)


def engine(users: int) -> Callable[[str], tuple[int, str, bytes]]:
    """An engine's answers to `hwinfo job`: one GPU, `users` users of it."""
    device = {"job": "j", "instance": "h", "gpu": "0", "uuid": "GPU-1"}
    result = [{"metric": {**device, "measure": "held", "model": "M"}, "value": [0, "1"]}]
    result += [{"metric": {**device, "measure": "users", "user": f"u{i}"}, "value": [0, "1"]}
               for i in range(users)]
    vector = json.dumps({"status": "success",
                         "data": {"resultType": "vector", "result": result}}).encode()
    rules = json.dumps({"status": "success", "data": {"groups": [
        {"name": "hwinfo-ledger", "interval": 60,
         "rules": [{"name": ATTRIBUTED_HELD_RECORD}]}]}}).encode()
    return lambda path: (200, "application/json", rules if "rules" in path else vector)


def rollup_of(jobs: int) -> Callable[[], object]:
    procs = [GpuProcess(pid=i, used_memory_bytes=1, type="compute", gpu_instance_id=None,
                        compute_instance_id=None, visible=True, user="u", name="x",
                        attribution=Attribution("slurm", slurm_job=str(i), slurm_step="0"))
             for i in range(jobs)]
    gpu = SimpleNamespace(index=0, all_processes=lambda: procs)
    return lambda: user_rollup([gpu])  # type: ignore[list-item]


def table(title: str, sizes: tuple[int, ...], seconds: Callable[[int], float]) -> None:
    print(title)
    before: tuple[int, float] | None = None
    for n in sizes:
        took = seconds(n)
        ratio = "" if before is None else f"  x{took / before[1]:.2f} for x{n / before[0]:g}"
        print(f"  {n:>7,}  median {took * 1000:8.1f} ms{ratio}")
        before = n, took


def main() -> None:
    def job(users: int) -> float:
        with serving(engine(users)) as url:
            return median_wall([sys.executable, "-m", "hwinfo", "job", "42", "--prometheus", url,
                                "--format", "json", "--timeout", "600"], runs=5)[0]

    table("hwinfo job, one GPU with N users (fresh process)", USERS, job)
    table("per-user rollup, one user with N jobs on one GPU (in-process)", JOBS,
          lambda jobs: median_call(rollup_of(jobs), runs=5)[0])


if __name__ == "__main__":
    main()
