"""What `fleet` asks of every host and GPU (hwinfo/ledger/fleet.py), evaluated by Prometheus's
own engine (promtool) on series whose answer is known."""

from __future__ import annotations

from pathlib import Path

from hwinfo.ledger.fleet import FLAGS, HOSTS
from tests.deploy.promql import assert_answers, series

UP, SILENT, STALLED, GONE = (f'job="hwinfo", instance="{name}:9110"'
                             for name in ("up", "silent", "stalled", "gone"))


def test_hosts_are_seen_for_an_hour_and_up_only_while_their_gpus_answer(tmp_path: Path) -> None:
    # Evaluated at 80 minutes, a point a minute:
    facts = [
        # up: scraped throughout, its GPU data read 30 s before each scrape.
        series("up", UP, "1x80"), series("hwinfo_gpus", UP, "8x80"),
        series("hwinfo_collection_stalled", f'{UP}, source="gpu"', "0x80"),
        series("hwinfo_last_success_timestamp_seconds", f'{UP}, source="gpu"', "-30+60x80"),
        # silent: its hwinfo stopped answering at 40 minutes; Prometheus says up 0 since.
        series("up", SILENT, "1x40 0x40"), series("hwinfo_gpus", SILENT, "4x40"),
        # stalled: NVML hangs; the last success stays at 70 minutes.
        series("up", STALLED, "1x80"), series("hwinfo_gpus", STALLED, "2x80"),
        series("hwinfo_collection_stalled", f'{STALLED}, source="gpu"', "0x70 1x10"),
        series("hwinfo_last_success_timestamp_seconds", f'{STALLED}, source="gpu"',
               "0+60x70 4200x10"),
        # gone: last heard of at 10 minutes, more than FORGET_AFTER (an hour) ago.
        series("up", GONE, "1x10"), series("hwinfo_gpus", GONE, "1x10"),
    ]
    measures = [
        (UP, "seen", 8), (UP, "up", 1), (UP, "stalled", 0), (UP, "age", 30),
        (SILENT, "seen", 4),
        (STALLED, "seen", 2), (STALLED, "up", 1), (STALLED, "stalled", 1), (STALLED, "age", 600),
    ]
    # By what hosts_seen reads of each sample: the host and the measure (the metric names
    # that the engine keeps or drops vary between versions).
    assert_answers(tmp_path, facts, "80m", [(
        f"sum by (job, instance, measure) ({HOSTS})",
        [(f'{{{host}, measure="{measure}"}}', value) for host, measure, value in measures])])


def test_flags_are_the_gpus_set_on_any_copy(tmp_path: Path) -> None:
    facts = [  # an HA pair holds each fact twice, with its replica label
        *(series("hwinfo_gpu_mig_enabled", f'{UP}, gpu="{gpu}", replica="{replica}"', value)
          for gpu, value in (("0", "0x10"), ("1", "1x10")) for replica in "AB"),
        series("hwinfo_gpu_lost", f'{UP}, gpu="2", replica="A"', "0x10"),
        series("hwinfo_gpu_lost", f'{UP}, gpu="2", replica="B"', "1x10"),
        series("hwinfo_gpu_lost", f'{UP}, gpu="3", replica="A"', "0x10"),
    ]
    assert_answers(tmp_path, facts, "10m", [(FLAGS, [
        (f'hwinfo_gpu_mig_enabled{{{UP}, gpu="1"}}', 1),
        (f'hwinfo_gpu_lost{{{UP}, gpu="2"}}', 1)])])
