"""Runs every health rule over a snapshot (and drift rules against a baseline) into findings."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from hwinfo.health.drift import GPU_DRIFT_RULES, HOST_DRIFT_RULES, Change, gpu_changes
from hwinfo.health.findings import Finding, Problem
from hwinfo.health.rules_gpu import GPU_RULES, SYSTEM_RULES
from hwinfo.health.rules_host import HOST_RULES
from hwinfo.health.rules_sources import SOURCE_RULES, source_ages
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.gpu import Gpu
from hwinfo.model.snapshot import Snapshot

S = TypeVar("S")
Rule = Callable[[S, Thresholds], Iterable[Problem]]

RULE_NAMES = tuple(
    rule.__name__
    for rule in itertools.chain(SYSTEM_RULES, GPU_RULES, HOST_RULES, SOURCE_RULES, GPU_DRIFT_RULES,
                                HOST_DRIFT_RULES)
)


def _run(
    rules: Sequence[Rule[S]], subject: S, limits: Thresholds, name: str, uuid: str | None = None
) -> Iterable[Finding]:
    for rule in rules:
        if rule.__name__ in limits.disable:
            continue
        for problem in rule(subject, limits):
            yield Finding(problem.severity, rule.__name__, name, problem.message, problem.facts, uuid)


def _gpu_subject(change: Change[Gpu | None]) -> Gpu:
    """The GPU a drift finding is about: as it is now, or as the baseline had it."""
    gpu = change.after or change.before
    assert gpu is not None  # pair_gpus never pairs nothing with nothing
    return gpu


def _worst_first(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: -f.severity.rank)


def evaluate_gpu(gpu: Gpu, limits: Thresholds) -> list[Finding]:
    """The findings about one GPU, worst first."""
    return _worst_first(list(_run(GPU_RULES, gpu, limits, f"gpu {gpu.index}", gpu.uuid)))


def evaluate(
    snapshot: Snapshot, limits: Thresholds, baseline: Snapshot | None = None,
    now: float | None = None,
) -> list[Finding]:
    """Every finding, worst first, and otherwise in the order the rules ran.

    `now` (Unix time) is when the data's age is judged; by default when the snapshot was taken.
    """
    findings: list[Finding] = []
    if snapshot.gpu is not None:
        findings += _run(SYSTEM_RULES, snapshot.gpu, limits, "gpus")
        for gpu in snapshot.gpu.gpus:
            findings += evaluate_gpu(gpu, limits)
    findings += _run(HOST_RULES, snapshot, limits, "host")
    for source in source_ages(snapshot, snapshot.timestamp_seconds if now is None else now):
        findings += _run(SOURCE_RULES, source, limits, source.state.source)
    if baseline is not None:
        for change in gpu_changes(baseline, snapshot):
            gpu = _gpu_subject(change)
            findings += _run(GPU_DRIFT_RULES, change, limits, f"gpu {gpu.index}", gpu.uuid)
        findings += _run(HOST_DRIFT_RULES, Change(baseline, snapshot), limits, "host")
    return _worst_first(findings)
