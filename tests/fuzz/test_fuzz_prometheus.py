"""Answers to the ledger's queries from whatever sits at --prometheus: samples or one line."""

from __future__ import annotations

from fuzz.mutations import JSON_VALUES, fuzz_settings, mutated, one_line_or_valid
from hypothesis import given

from hwinfo.escape import to_json
from hwinfo.ledger.fits import _fit
from hwinfo.ledger.fleet import _fill, hosts_seen
from hwinfo.ledger.prometheus import LedgerError, Sample, _rule_groups, _samples

REAL = [  # the shape of Prometheus's instant vectors, as the fleet query gets them
    {"metric": {"__name__": "hwinfo_gpu_processes", "job": "hwinfo", "instance": "a:9110",
                "gpu": "0", "uuid": "GPU-1"}, "value": [1700000000.0, "0"]},
    {"metric": {"__name__": "hwinfo_mig_gpu_instance_memory_total_bytes", "job": "hwinfo",
                "instance": "a:9110", "gpu": "0", "uuid": "GPU-1", "gpu_instance_id": "2",
                "profile": "3g.40gb"}, "value": [1700000000.0, "42144366592"]},
    {"metric": {"measure": "seen", "job": "hwinfo", "instance": "a:9110"}, "value": [1, "NaN"]},
    {"metric": {"job": "hwinfo", "instance": "a:9110", "gpu": "1", "kind": "gpu"},
     "value": [1700000000.0, "85899345920"]},
]


def answer(result: object) -> list[Sample] | None:
    samples = one_line_or_valid(lambda: list(_samples(result, "http://p")), LedgerError)
    if samples is not None:
        # What the fleet does with any answer: hosts, or one line saying none; no exception.
        hosts = one_line_or_valid(lambda: hosts_seen(samples, "http://p"), LedgerError) or {}
        _fill(hosts, samples)
        for s in samples:  # and fleet --need-memory with any place
            _fit(s, 1, hosts, set(), ("GPU-1", "model"))
        to_json([s.labels for s in samples]).encode()  # as usage and fleet write them
    return samples


@fuzz_settings(200)
@given(mutated(REAL))
def test_a_mutated_vector_is_samples_or_one_line(result: object) -> None:
    answer(result)


@fuzz_settings(100)
@given(JSON_VALUES)
def test_any_value_is_samples_or_one_line(result: object) -> None:
    answer(result)


RULES = {"groups": [{"name": "hwinfo-ledger", "file": "/etc/prometheus/hwinfo-ledger.yml",
                     "interval": 60, "rules": [{"name": "hwinfo:ledger_held:share",
                                                "type": "recording"}]}]}


@fuzz_settings(200)
@given(mutated(RULES))
def test_mutated_rule_groups_are_groups_or_one_line(data: object) -> None:
    groups = one_line_or_valid(lambda: _rule_groups(data, "http://p"), LedgerError)
    for group in groups or ():
        assert 0 < group.interval_seconds <= 86400
        group.name.encode()
