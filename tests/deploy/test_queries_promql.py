"""The ledger's PromQL building blocks (hwinfo/ledger/queries.py), evaluated by Prometheus's
own engine (promtool) on series whose answer is known."""

from __future__ import annotations

from pathlib import Path

from hwinfo.ledger import queries
from tests.deploy.promql import assert_answers, series

GPU = 'job="hwinfo", instance="a:9110", gpu="0", uuid="GPU-0"'
OTHER = 'job="hwinfo", instance="a:9110", gpu="1", uuid="GPU-1"'


def test_a_gpu_renamed_in_the_window_joins_one_model(tmp_path: Path) -> None:
    # A driver upgrade at 30 minutes renames GPU 0 ("A100-SXM4-40GB" to "NVIDIA
    # A100-SXM4-40GB"): both names are in the hour. Two model series of one GPU would make
    # every join by model refuse the query ("many-to-many matching not allowed").
    facts = [
        series("hwinfo_gpu_info", f'{GPU}, name="A100-SXM4-40GB"', "1x30"),
        series("hwinfo_gpu_info", f'{GPU}, name="NVIDIA A100-SXM4-40GB"', "_x30 1x30"),
        series("hwinfo_gpu_info", f'{OTHER}, name="NVIDIA H100 80GB HBM3"', "1x60"),
        series("hwinfo_gpu_processes", GPU, "2x60"),
        series("hwinfo_gpu_processes", OTHER, "3x60"),
    ]
    joined = queries.with_model("hwinfo_gpu_processes", "1h")
    assert_answers(tmp_path, facts, "60m", [
        (f"count by (gpu) ({queries.models('1h')})", [('{gpu="0"}', 1), ('{gpu="1"}', 1)]),
        # Which of its two names GPU 0 takes is the engine's choice; GPU 1 keeps its own.
        (f"count by (gpu) ({joined})", [('{gpu="0"}', 1), ('{gpu="1"}', 1)]),
        (f'{joined} and on(gpu) hwinfo_gpu_processes{{gpu="1"}}',
         [(f'{{{OTHER}, model="NVIDIA H100 80GB HBM3"}}', 3)]),
    ])
