"""Scenario documents and files: a Scenario, or one ScenarioError line; nothing else, ever."""

from __future__ import annotations

import json
from pathlib import Path

from fuzz.mutations import JSON_VALUES, fuzz_settings, mutated, one_line_or_valid, scratch_dir
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.sim import ScenarioError, load_scenario
from hwinfo.sim.scenario import SCENARIO_DIR, parse_scenario
from hwinfo.sim.scenario_model import Scenario

BUILTIN = Path(__file__).resolve().parents[2] / "hwinfo" / "sim" / SCENARIO_DIR
# A MIG machine, a faulty one and a consumer board: every structured field appears in one.
BASES = [json.loads((BUILTIN / f"{name}.json").read_text())
         for name in ("dgx-a100-mig", "faults-demo", "workstation-geforce")]
WORKDIR = scratch_dir("hwinfo-fuzz-scenario-")


def parses(document: object) -> Scenario | None:
    return one_line_or_valid(lambda: parse_scenario(document, "fuzz.json", "fuzz"), ScenarioError)


@fuzz_settings(300)
@given(st.one_of(*(mutated(base) for base in BASES)))
def test_a_mutated_scenario_loads_or_is_refused_in_one_line(document: object) -> None:
    scenario = parses(document)
    if scenario is not None:
        assert len(scenario.gpus) <= 255
        for gpu in scenario.gpus:
            assert gpu.temperature_c is None or 0 <= gpu.temperature_c <= 255
            assert gpu.cpu_affinity is None or len(gpu.cpu_affinity) <= 65536


@fuzz_settings(100)
@given(JSON_VALUES)
def test_any_json_value_is_refused_in_one_line(document: object) -> None:
    parses(document)


@fuzz_settings(100)
@given(st.one_of(st.binary(max_size=300),
                 st.text(max_size=300).map(str.encode),
                 st.integers(1, 50_000).map(lambda depth: b"[" * depth),
                 mutated(BASES[0]).map(lambda doc: json.dumps(doc).encode())))
def test_any_file_content_is_refused_in_one_line(content: bytes) -> None:
    path = WORKDIR / "scenario.json"
    path.write_bytes(content)
    one_line_or_valid(lambda: load_scenario(path), ScenarioError)
