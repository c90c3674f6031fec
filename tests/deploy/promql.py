"""PromQL the ledger sends, evaluated by Prometheus's own engine on known series (promtool)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from conftest import require_tool

# One instant query, evaluated at eval_time, and every sample it must answer: labels in
# PromQL's selector form, value.
Expect = tuple[str, list[tuple[str, float]]]


def series(name: str, labels: str, values: str) -> dict[str, str]:
    """An input series in promtool's notation ("1x5", "_x3 0x2", ...), one point a minute."""
    return {"series": f"{name}{{{labels}}}", "values": values}


def assert_answers(tmp_path: Path, input_series: list[dict[str, str]], eval_time: str,
                   expected: list[Expect]) -> None:
    """promtool evaluates each query on input_series and finds exactly the expected samples."""
    tests = tmp_path / "promql.test.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [], "tests": [{
        "interval": "1m", "input_series": input_series,
        "promql_expr_test": [{"expr": expr, "eval_time": eval_time,
                              "exp_samples": [{"labels": labels, "value": value}
                                              for labels, value in samples]}
                             for expr, samples in expected]}]}))
    done = subprocess.run([require_tool("promtool"), "test", "rules", str(tests)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
