"""What a health rule reports: how bad it is, about what, and the facts behind it."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.Enum):
    """A verdict; the value is the exit status monitoring plugins use."""

    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3

    @property
    def exit_code(self) -> int:
        return self.value

    @property
    def rank(self) -> int:
        """Higher is worse. A fault found outranks a fact that could not be read, as
        monitoring-plugins' max_state_alt orders them: CRITICAL, WARNING, UNKNOWN, OK."""
        return _RANK[self]


_RANK = {Severity.OK: 0, Severity.UNKNOWN: 1, Severity.WARNING: 2, Severity.CRITICAL: 3}


@dataclass(frozen=True)
class Problem:
    """What one rule saw in one subject; the runner adds the rule's name and the subject."""

    severity: Severity
    message: str  # the fact in words, for a person
    facts: dict[str, Any] = field(default_factory=dict)  # the same, for scripts (base units)


@dataclass(frozen=True)
class Finding:
    severity: Severity
    rule: str  # the rule function's name, e.g. "pcie_link_below_max"
    subject: str  # "gpu 2", "gpus" (the driver and GPU set), "host"
    message: str
    facts: dict[str, Any] = field(default_factory=dict)
    uuid: str | None = None  # the GPU's, when the subject is one and NVML named it


def worst(findings: Iterable[Finding]) -> Severity:
    return max((f.severity for f in findings), key=lambda s: s.rank, default=Severity.OK)
