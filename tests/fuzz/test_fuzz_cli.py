"""The real command line on hostile scenario files: one line, the right exit status, bounded.

The other fuzz files call the parsers; this one runs `hwinfo` itself, as a user does, so a
failure that only the command line turns into a traceback or a wrong status is caught too.
Each case is a fresh process (few cases: a process costs about a second) under a wall-clock
deadline and an address-space limit, so a hang or an unbounded allocation fails the case.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

from fixtures.machines import shared_tree
from fuzz.mutations import JSON_VALUES, fuzz_settings, mutated, scratch_dir
from hypothesis import given
from hypothesis import strategies as st

BUILTIN = Path(__file__).resolve().parents[2] / "hwinfo" / "sim" / "scenarios"
BASE = json.loads((BUILTIN / "faults-demo.json").read_text())
WORKDIR = scratch_dir("hwinfo-fuzz-cli-")
# Far above what a report needs (about 100 MiB), far below what an unbounded parse reaches.
ADDRESS_SPACE_BYTES = 2 << 30

CONTENTS = st.one_of(
    mutated(BASE).map(lambda doc: json.dumps(doc).encode()),
    JSON_VALUES.map(lambda doc: json.dumps(doc).encode()),
    st.binary(max_size=200),
    st.sampled_from([b"[" * 100_000, b'{"format": 1, "gpus": [{"board": "T4", "power_draw_w": NaN}]}',
                     b'{"format": 1, "gpus": [{"board": "T4", "cpu_affinity": "0-99999999"}]}']),
)
# An --nvml-timeout as a user may type it: fine, or a usage error (NaN, a word, out of range).
TIMEOUTS = st.one_of(st.none(), st.sampled_from(["5", "nan", "inf", "0", "soon", "1e9", ""]))

# command -> exit statuses it may end with for this input; check says UNKNOWN (3) for its own
# trouble, the others 1 (runtime: the file) or 2 (usage: the option).
COMMANDS: dict[str, tuple[list[str], set[int]]] = {
    "report": (["report"], {0, 1, 2}),
    "check": (["check"], {0, 1, 2, 3}),  # 1 and 2 are WARNING and CRITICAL verdicts too
    "export": (["export", "--textfile", "-"], {0, 1, 2}),
}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


@fuzz_settings(6)
@given(content=CONTENTS, timeout=TIMEOUTS, command=st.sampled_from(sorted(COMMANDS)))
def test_a_hostile_scenario_is_one_line_and_the_right_status(
    content: bytes, timeout: str | None, command: str
) -> None:
    scenario = WORKDIR / "scenario.json"
    scenario.write_bytes(content)
    args, statuses = COMMANDS[command]
    extra = [] if timeout is None else ["--nvml-timeout", timeout]
    result = subprocess.run(
        [sys.executable, "-m", "hwinfo", *args, "--simulate", str(scenario),
         "--root", str(shared_tree("x86-2s-smt")), *extra],
        capture_output=True, text=True, timeout=60, check=False, preexec_fn=_limit_memory,
    )
    assert "Traceback" not in result.stderr
    assert result.returncode in statuses, (result.returncode, result.stderr)
    usage = timeout is not None and timeout not in ("5",)
    if command == "check":
        if result.returncode == 3:  # one UNKNOWN line on standard output, nothing on standard error
            assert result.stdout.startswith("HWINFO UNKNOWN - ") and result.stderr == ""
        assert not usage or result.returncode == 3
        return
    if usage:
        assert result.returncode == 2
    if result.stderr:
        # One error line; click puts its usage lines before a usage error's.
        error = result.stderr.strip().splitlines()[-1]
        assert error.startswith("Error: "), result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 or (result.returncode == 2 and lines[0].startswith("Usage: "))
    if result.returncode == 1 and not result.stdout:  # refused before any output: it says why
        assert result.stderr.startswith("Error: ")
