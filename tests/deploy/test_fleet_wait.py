"""`fleet --need-memory --wait` against a real Prometheus scraping a real `hwinfo serve`: a GPU
`hwinfo run` claims is not offered; when the claim ends, the waiting fleet prints it and exits
0. That fleet has looked is read from Prometheus's own query log, not guessed from time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from hwinfo.model.claims import Request
from hwinfo.run.claimdir import Directory
from tests.deploy.prometheus_stack import prometheus_scraping, wait_for
from tests.exporter.serving import serving
from tests.run.host import eight_idle_h100s

PATIENCE = 300


def _fleet(prometheus: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "hwinfo", "fleet", "--prometheus", prometheus,
                             "--need-memory", "40GiB", "--format", "json", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_waiting_fleet_sees_a_claimed_gpu_free_up(tmp_path: Path) -> None:
    scenario = tmp_path / "one.json"
    one = eight_idle_h100s()
    one["gpus"] = one["gpus"][:1]
    scenario.write_text(json.dumps(one))
    claims = tmp_path / "claims"
    claims.mkdir(mode=0o1777)
    directory = Directory(str(claims))
    env = {**os.environ, "HWINFO_CLAIMS_DIR": str(claims)}
    queries = tmp_path / "queries.log"
    with serving("--simulate", str(scenario), "--interval", "0.5", env=env) as daemon:
        uuid = json.loads(subprocess.run(
            [sys.executable, "-m", "hwinfo", "report", "--simulate", str(scenario), "--format",
             "json"], capture_output=True, text=True, env=env, check=True, timeout=PATIENCE,
        ).stdout)["gpu"]["gpus"][0]["uuid"]
        claim = directory.add(".claim", Request(1, None, None, False), ["python", "x.py"], [uuid])
        try:
            with prometheus_scraping(daemon, tmp_path / "prometheus", rule_files=(), config={
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                               "query_log_file": str(queries)}}) as stack:
                wait_for("the claim in Prometheus",
                         lambda: stack.query("hwinfo_gpu_claim_info"), PATIENCE)
                now = _fleet(stack.prometheus, "--wait", "1s", "--poll", "1")
                _, err = now.communicate(timeout=PATIENCE)
                assert (now.returncode, err) == (
                    75, "hwinfo fleet: nothing fit 40.0 GiB within 1 s (--wait)\n")
                # Ctrl-C ends a wait at once, as a shell reports it.
                looked = _looks(queries)
                stopped = _fleet(stack.prometheus, "--wait", "10m", "--poll", "600")
                wait_for("its first look", lambda: _looks(queries) > looked, PATIENCE)
                stopped.send_signal(signal.SIGINT)
                _, err = stopped.communicate(timeout=PATIENCE)
                assert stopped.returncode == 130 and "Traceback" not in err, err
                looked = _looks(queries)
                waiting = _fleet(stack.prometheus, "--wait", "10m", "--poll", "1")
                wait_for("the waiting fleet's first look", lambda: _looks(queries) > looked,
                         PATIENCE)
                claim.release()
                claim = None
                out, err = waiting.communicate(timeout=PATIENCE)
                assert waiting.returncode == 0, err
                (fit,) = json.loads(out)["fits"]
                assert (fit["kind"], fit["uuid"]) == ("gpu", uuid)
        finally:
            if claim is not None:
                claim.release()
            directory.close()


def _looks(log: Path) -> int:
    """How many times the whole-GPU fit query was asked (each look asks it once)."""
    if not log.exists():
        return 0
    return sum('"kind", "gpu"' in json.loads(line).get("params", {}).get("query", "")
               for line in log.read_text().splitlines() if line.strip())
