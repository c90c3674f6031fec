"""Hypothesis strategies for hostile documents: any JSON-like value, and a valid document mutated.

Random documents mostly fail at the first check; a real document with a few values replaced,
removed or added reaches every validator behind it, which is where the bounds live.
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fixtures.machines import shared_tree
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


# Each fuzz file runs `examples` cases, without a per-case deadline (tests/conftest.py's
# profile); nothing is stored between runs. Under CI the cases are derived from the
# test itself, so a run there is repeatable and a submission does not pass or fail by luck;
# elsewhere each run explores new cases, and what they find is pinned with @example.
def fuzz_settings(examples: int) -> settings:
    return settings(max_examples=examples, database=None,
                    derandomize=os.environ.get("CI") == "true",
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# Numbers at the edges of every C type and JSON parser, beside ordinary ones.
EDGE_INTEGERS = st.sampled_from([0, 1, -1, 100, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1,
                                 2**32, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63) - 1,
                                 # past a float: float() and math.isfinite() raise on them
                                 10**310, -(10**310)])
NUMBERS = st.one_of(st.integers(), EDGE_INTEGERS, st.floats(allow_nan=True, allow_infinity=True))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=24),
                    st.sampled_from(["", "0-99999999", "N/A", "0x20B010DE", "P0", "550.54.15", "٣",
                                    # a JSON escape that is no character, and a title escape
                                    "caf\udce9", "\x1b]0;x\x07"]))
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=12), children, max_size=4)),
    max_leaves=16,
)


def _slots(value: Any) -> Iterator[tuple[dict[str, Any] | list[Any], Any]]:
    """Every (container, key) in a document, depth first."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                yield node, key
                stack.append(item)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                yield node, index
                stack.append(item)


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Another value of the same JSON kind: a number for a number, a string for a string."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.one_of(st.integers(), EDGE_INTEGERS)
    if isinstance(value, float):
        return NUMBERS
    if isinstance(value, str):
        return st.one_of(st.text(max_size=24), SCALARS.filter(lambda v: isinstance(v, str)))
    if isinstance(value, list):
        return st.just(value[: len(value) // 2] + value) if value else st.lists(JSON_VALUES, max_size=2)
    if isinstance(value, dict):
        return st.just({})
    return SCALARS


@st.composite
def mutated(draw: Callable[..., Any], base: Any, max_changes: int = 3) -> Any:
    """`base` with one to `max_changes` values replaced, removed, or added under a new key."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, max_changes))):
        slots = list(_slots(document))
        if not slots:
            return draw(JSON_VALUES)
        container, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(["same kind", "same kind", "replace", "remove", "add"]))
        if action == "same kind":  # passes the type checks, so the bounds behind them are reached
            container[key] = draw(_like(container[key]))
        elif action == "replace":
            container[key] = draw(JSON_VALUES)
        elif action == "remove":
            del container[key]
        elif isinstance(container, dict):
            container[draw(st.text(max_size=12))] = draw(JSON_VALUES)
        else:
            container.append(draw(JSON_VALUES))
    return document


# The most one case may take at its peak, beyond what the process held before it. The
# bounds of hwinfo/inputs.py keep any hostile document to a few MiB of work; a parser that
# builds as much as its input asks for (a CPU list "0-99999999", aliases multiplying a YAML
# tree) passes this long before it runs out of time.
MEMORY_LIMIT_BYTES = 48 << 20


def _status_bytes(field: str) -> int:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise LookupError(field)


def _reset_peak() -> bool:
    """Start VmHWM (the resident peak) anew from now; False where the kernel cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


@contextmanager
def bounded_memory(limit: int = MEMORY_LIMIT_BYTES) -> Iterator[None]:
    """Fails the case when the memory it takes peaks more than `limit` above where it began.

    Measured as the kernel's resident peak (Linux), which counts C allocations (OpenSSL,
    PyYAML's C parts) and costs nothing; tracemalloc, the fallback elsewhere, slows a
    deeply nested YAML case from 4 s to 48 s, past the fuzz deadline.
    """
    if _reset_peak():
        before = _status_bytes("VmRSS")
        yield
        peak = _status_bytes("VmHWM") - before
    else:
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        try:
            yield
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            if started:
                tracemalloc.stop()
    assert peak <= limit, f"one case took {peak / (1 << 20):.0f} MiB at its peak"


def one_line_or_valid(call: Callable[[], Any], error: type[Exception]) -> Any:
    """The call's result, or None after it raised exactly `error` with a one-line message;
    either way in bounded memory (bounded_memory).

    Any other exception propagates, and fails the property with its traceback.
    """
    try:
        with bounded_memory():
            return call()
    except error as exc:
        message = str(exc)
        assert message and "\n" not in message, repr(message)
        assert len(message) < 2000, f"an error line of {len(message)} characters"
        return None


def real_report(scenario: str) -> dict[str, Any]:
    """`hwinfo report --format json` of a simulated machine on a fixture host, as a document."""
    out = subprocess.run([sys.executable, "-m", "hwinfo", "report", "--format", "json", "--simulate",
                          scenario, "--root", str(shared_tree("x86-2s-smt"))],
                         capture_output=True, check=True, timeout=120).stdout
    return json.loads(out)


def scratch_dir(prefix: str) -> Path:
    """A directory for one fuzz module's files, removed when the test process ends."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
