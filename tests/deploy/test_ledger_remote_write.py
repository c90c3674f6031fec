"""The ledger on many sites: two site Prometheus servers remote-write to a central one (its own
remote-write receiver), which evaluates the ledger rules; the commands ask only the central."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.deploy.ledger_stack import LAB, answer, recorded_until, rules_every_second
from tests.deploy.prometheus_stack import prometheus_scraping, wait_for
from tests.exporter.serving import serving


def test_usage_and_fleet_answer_from_the_central_prometheus(tmp_path: Path) -> None:
    with ExitStack() as running:
        central = running.enter_context(prometheus_scraping(
            [], tmp_path / "central", rule_files=[rules_every_second(tmp_path)],
            flags=["--web.enable-remote-write-receiver"]))
        write = {"url": f"{central.prometheus}/api/v1/write",
                 "queue_config": {"batch_send_deadline": "1s"}}
        instances = {}
        for site in ("idle", "mig"):
            scenario = tmp_path / f"{site}.json"
            scenario.write_text(json.dumps(LAB[site]))
            daemon = running.enter_context(serving("--simulate", str(scenario), "--interval", "0.5"))
            instances[site] = daemon.removeprefix("http://")
            running.enter_context(prometheus_scraping(
                daemon, tmp_path / f"site-{site}", rule_files=(),
                config={"remote_write": [write]}))
        with central.logs_on_failure():
            def both_held() -> bool:
                held = central.query("count by (instance) "
                                     "(count_over_time(hwinfo:ledger_held:share[15s]) >= 12)")
                return {s["metric"]["instance"] for s in held} == set(instances.values())

            wait_for("the ledger rules to see both sites at the central", both_held, timeout=60)
            # A window both sites fill (one started seconds before the other), ending where
            # the central's records are whole.
            until = recorded_until(central)
            usage = answer("usage", "--prometheus", central.prometheus, "--since", "8s",
                           "--until", f"{until:.3f}", "--by", "host")
            by_host = {row["host"]: row for row in usage["rows"]}
            assert set(by_host) == set(instances.values())
            # erin holds a whole idle GPU, carol 3/7 of one (unknown: an A100's MIG device),
            # while their hosts are seen. A site's scrape can fail on a loaded machine (its
            # timeout is the 1 s interval): the central then counts that host's GPUs unseen
            # for the evaluation, never held. The idle host's evaluations: erin's GPU held or
            # both of its GPUs unseen; the MIG host's GPU is seen in the others.
            idle, mig = by_host[instances["idle"]], by_host[instances["mig"]]
            assert idle["idle_held_gpu_seconds"] == idle["held_gpu_seconds"] > 0
            assert mig["unknown_gpu_seconds"] == mig["held_gpu_seconds"] > 0
            evaluated = idle["held_gpu_seconds"] + idle["unseen_gpu_seconds"] / 2
            seen_mig = evaluated - mig["unseen_gpu_seconds"]
            assert mig["held_gpu_seconds"] / seen_mig == pytest.approx(3 / 7, rel=0.2)
            fleet = answer("fleet", "--prometheus", central.prometheus, "--need-memory", "9GiB")
            assert {h["instance"]: h["state"] for h in fleet["hosts"]} == {
                instances["idle"]: "up", instances["mig"]: "up"}
            kinds = {(f["instance"], f["kind"]) for f in fleet["fits"]}
            assert (instances["idle"], "gpu") in kinds and (instances["mig"], "mig_device") in kinds
