"""Which MIG facts a simulated machine's import inferred rather than read.

Real NVML never guesses; a scenario imported from a dump that names no MIG profile or lists
no MIG device UUID carries plausible ones, and says so per GPU instance (its `guessed`).
The simulated machine tells the collector, as it tells process owners, so reports mark them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from hwinfo.model.gpu import Mig

# MIG device UUID -> the scenario's guessed facts of its GPU instance.
GuessLookup = Callable[[str], Collection[str]]

# Scenario fact -> the model fields it stands for, on a MIG device and on a GPU instance.
_DEVICE_FIELDS = {"profile": ("profile",), "uuid": ("uuid",)}
_INSTANCE_FIELDS = {
    "profile": ("profile", "profile_id"),  # a catalogue board's id follows from the name
    "profile_id": ("profile_id",),
    "placement": ("placement_start", "placement_size"),
}


def mark_guesses(mig: Mig, guessed_of: GuessLookup) -> None:
    """Fill the `guessed` lists of a MIG tree's devices and GPU instances."""
    by_instance: dict[int | None, set[str]] = {}
    for dev in mig.devices:
        facts = set(guessed_of(dev.uuid)) if dev.uuid else set()
        dev.guessed = _fields(facts, _DEVICE_FIELDS)
        by_instance.setdefault(dev.gpu_instance_id, set()).update(facts)
    for gi in mig.gpu_instances or ():
        gi.guessed = _fields(by_instance.get(gi.id, set()), _INSTANCE_FIELDS)


def _fields(facts: set[str], fields: dict[str, tuple[str, ...]]) -> list[str]:
    return sorted({name for fact in facts for name in fields.get(fact, ())})
