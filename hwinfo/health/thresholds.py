"""The thresholds file of `hwinfo check --config FILE`: YAML (so JSON too), every key optional.

Keys are flat and carry their unit, as scenario files do (`_percent`, `_mib`, `_celsius`);
a key this version does not know is an error, so a typo is caught instead of ignored.
Errors are one line naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from hwinfo import inputs

# NVIDIA's Xid catalogue sends these to a GPU reset or to service (double-bit ECC,
# micro-controller halt, row remap failure, NVLink, off the bus, uncontained ECC, GSP,
# unrecovered ECC, recovery action); the rest are usually the application's (13, 31, 43, ...).
DEFAULT_XID_CRITICAL = (48, 62, 64, 74, 79, 95, 119, 120, 140, 154)
# Sane bounds: no GPU runs this many degrees below its slowdown point, no machine has more
# GPUs than a scenario may (255) or a GPU more memory than 16 TiB, XIDs are unsigned ints.
MAX_TEMPERATURE_MARGIN_CELSIUS = 200.0
MAX_GPUS = 255
MAX_MIB = 1 << 24
MAX_XID = 0xFFFF_FFFF


class ConfigError(Exception):
    """The thresholds file cannot be used; str() is one line for a person."""


# A week: older data is as stale as it gets, and a larger threshold is a typo.
MAX_AGE_SECONDS = 7 * 86400


def _number(low: float, high: float) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number, got {inputs.shown(value)}")
        # NaN compares false with everything: it must be refused before the bounds are. An
        # int is compared as it is: one of 400 digits does not fit a float.
        if (isinstance(value, float) and not math.isfinite(value)) or not low <= value <= high:
            raise ValueError(f"expected a number from {low:g} to {high:g}, "
                             f"got {inputs.shown(value)}")
        return float(value)

    return parse


def _whole(value: Any, high: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and 0 <= value <= high


def _count(value: Any) -> int | None:
    if value is None:
        return None
    if not _whole(value, MAX_GPUS):
        raise ValueError(f"expected a whole number from 0 to {MAX_GPUS} or null, "
                         f"got {inputs.shown(value)}")
    return value


def _mib(value: Any) -> int:
    if not _whole(value, MAX_MIB):
        raise ValueError(f"expected a whole number of MiB from 0 to {MAX_MIB}, "
                         f"got {inputs.shown(value)}")
    return value


def _xids(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(_whole(x, MAX_XID) for x in value):
        raise ValueError(f"expected a list of XID numbers, got {inputs.shown(value)}")
    return tuple(value)


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ValueError(f"expected a list of rule names, got {inputs.shown(value)}")
    return tuple(value)


def _key(default: Any, parse: Callable[[Any], Any]) -> Any:
    return field(default=default, metadata={"parse": parse})


@dataclass(frozen=True)
class Thresholds:
    """Every limit a rule compares with; the defaults are what `hwinfo check` uses without --config."""

    # GPUs the machine should have (`--expect-gpus` overrides); None: no expectation.
    expect_gpus: int | None = _key(None, _count)
    # WARNING within this many degrees below the GPU's slowdown temperature; CRITICAL at it.
    temperature_margin_celsius: float = _key(5.0, _number(0, MAX_TEMPERATURE_MARGIN_CELSIUS))
    # Share of system memory still available (MemAvailable) below which memory is short.
    memory_available_warning_percent: float = _key(10.0, _number(0, 100))
    memory_available_critical_percent: float = _key(5.0, _number(0, 100))
    # Share of swap in use from which swapping is a finding.
    swap_used_warning_percent: float = _key(50.0, _number(0, 100))
    swap_used_critical_percent: float = _key(90.0, _number(0, 100))
    # A GPU at or below this utilization is idle; holding this much memory then is a finding.
    idle_gpu_utilization_percent: float = _key(0.0, _number(0, 100))
    idle_gpu_memory_mib: int = _key(1024, _mib)
    # XIDs that are CRITICAL; every other XID is a WARNING, except those ignored.
    xid_critical: tuple[int, ...] = _key(DEFAULT_XID_CRITICAL, _xids)
    xid_ignore: tuple[int, ...] = _key((), _xids)
    # Baseline drift: a system memory size within this share of the baseline's is unchanged
    # (the kernel's reservations move by a few MiB between boots).
    memory_drift_percent: float = _key(1.0, _number(0, 100))
    # Data older than this (a daemon's snapshot with a hung NVML, or a stopped sampler) is
    # a WARNING, then CRITICAL (`check --from`).
    stale_data_warning_seconds: float = _key(60.0, _number(0, MAX_AGE_SECONDS))
    stale_data_critical_seconds: float = _key(600.0, _number(0, MAX_AGE_SECONDS))
    # Rules (by name, as findings show them) not to run.
    disable: tuple[str, ...] = _key((), _names)


KEYS = tuple(f.name for f in dataclasses.fields(Thresholds))


def parse_thresholds(doc: Any, rule_names: Collection[str], where: str) -> Thresholds:
    """Thresholds from a parsed document; `where` starts every error ("config FILE")."""
    if doc is None:  # an empty file: every default
        return Thresholds()
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping of threshold keys, got {type(doc).__name__}")
    values: dict[str, Any] = {}
    parsers = {f.name: f.metadata["parse"] for f in dataclasses.fields(Thresholds)}
    for key, value in doc.items():
        if key not in parsers:
            raise ConfigError(f"{where}: unknown key {inputs.shown(key)} "
                              f"(known: {', '.join(KEYS)})")
        try:
            values[key] = parsers[key](value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: {key}: {exc}") from None
    limits = Thresholds(**values)
    _check_consistent(limits, rule_names, where)
    return limits


def _check_consistent(limits: Thresholds, rule_names: Collection[str], where: str) -> None:
    unknown = [name for name in limits.disable if name not in rule_names]
    if unknown:
        raise ConfigError(f"{where}: disable: unknown rule {inputs.shown(unknown[0])} "
                          f"(rules: {', '.join(sorted(rule_names))})")
    # Less available memory is worse; more swap in use is worse.
    if limits.memory_available_critical_percent > limits.memory_available_warning_percent:
        raise ConfigError(f"{where}: memory_available_critical_percent "
                          f"({limits.memory_available_critical_percent:g}) is above "
                          f"memory_available_warning_percent "
                          f"({limits.memory_available_warning_percent:g})")
    if limits.stale_data_critical_seconds < limits.stale_data_warning_seconds:
        raise ConfigError(f"{where}: stale_data_critical_seconds "
                          f"({limits.stale_data_critical_seconds:g}) is below "
                          f"stale_data_warning_seconds ({limits.stale_data_warning_seconds:g})")
    if limits.swap_used_critical_percent < limits.swap_used_warning_percent:
        raise ConfigError(f"{where}: swap_used_critical_percent "
                          f"({limits.swap_used_critical_percent:g}) is below "
                          f"swap_used_warning_percent ({limits.swap_used_warning_percent:g})")


def load_thresholds(path: str, rule_names: Collection[str]) -> Thresholds:
    """Read and check a thresholds file; every failure is one ConfigError line."""
    where = f"config {path}"
    try:
        doc = inputs.parse_yaml(inputs.read_text(path, where), where)
    except inputs.InputError as exc:
        raise ConfigError(str(exc)) from None
    return parse_thresholds(doc, rule_names, where)
