"""Any bytes in a simulated driver's state file (hwinfo/sim/driver_load.py): a later client
takes a load moment that can be true (since boot, not in the future) and leaves it there."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hwinfo.sim import load_scenario
from hwinfo.sim.driver_load import STATE_DIR_VAR, DriverLoad, scenario_key

SCENARIO = load_scenario("cloud-t4")


@settings(max_examples=150)
@given(junk=st.binary(max_size=200) | st.from_regex(rb"\A-?[0-9.e+-]{0,30}\n?\Z"))
def test_any_state_file_content(junk: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        previous = os.environ.get(STATE_DIR_VAR)
        os.environ[STATE_DIR_VAR] = directory
        try:
            first = DriverLoad(SCENARIO)
            state = Path(directory) / f"{scenario_key(SCENARIO)}.load"
            state.write_bytes(junk)
            later = DriverLoad(SCENARIO)
            # A moment since boot is kept (it may be true); anything else is replaced by now.
            assert later.shared and 0 <= later.loaded_at <= time.monotonic()
            assert float(state.read_text()) == later.loaded_at
            first.release()
            later.release()
        finally:
            if previous is None:
                os.environ.pop(STATE_DIR_VAR, None)
            else:
                os.environ[STATE_DIR_VAR] = previous
