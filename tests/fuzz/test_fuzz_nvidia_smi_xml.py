"""`nvidia-smi -q -x` dumps, real ones mutated and random bytes: a scenario or one DumpError line.

A scenario the importer returns must then load, or be refused by the scenario's own checks
in one line (a dump can show values past the scenario bounds); nothing may raise otherwise.
"""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

from conftest import XML_CAPTURES, needs
from fuzz.mutations import fuzz_settings, one_line_or_valid
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.sim.importer import DumpError, import_nvidia_smi_xml
from hwinfo.sim.scenario import parse_scenario
from hwinfo.sim.scenario_model import ScenarioError

DUMPS = {path.name: path.read_bytes() for path in XML_CAPTURES}
# What nvidia-smi prints in place of values, and values no GPU has.
TEXTS = st.one_of(
    st.sampled_from(["N/A", "[Not Supported]", "[N/A]", "Requested functionality has been deprecated",
                     "99999999999999999999 MiB", "1e400 W", "-5 C", "٣٠ C", "P16", "P0", "0x", "0xZZ",
                     "Enabled", "Active", "Not Active", "12.", "99999.99999", "", "0" * 5000 + "1 MiB",
                     "18446744073709551616 %", "GPU-", "0000:07:00.0", "ffffffff:ff:ff.7"]),
    # What XML 1.0 can carry: ElementTree writes a control character it cannot read back.
    st.text(st.characters(exclude_categories=("Cc", "Cs", "Cn")), max_size=30),
)


def imports(data: bytes, name: str) -> None:
    scenario = one_line_or_valid(lambda: import_nvidia_smi_xml(data, name), DumpError)
    if scenario is not None:
        one_line_or_valid(lambda: parse_scenario(scenario, name, "fuzz"), ScenarioError)


@st.composite
def mutated_dump(draw: st.DrawFn) -> tuple[str, bytes]:
    """A real capture with a few elements' text replaced, elements removed or duplicated."""
    name = draw(st.sampled_from(sorted(DUMPS)))
    root = ET.fromstring(DUMPS[name])
    elements = list(root.iter())
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 6))):
        target = rng.choice(elements)
        action = draw(st.sampled_from(["text", "text", "remove", "duplicate"]))
        if action == "text":
            target.text = draw(TEXTS)
        else:
            parent = next((p for p in root.iter() if target in list(p)), None)
            if parent is None:
                continue
            if action == "remove":
                parent.remove(target)
            else:
                parent.append(ET.fromstring(ET.tostring(target)))
            elements = list(root.iter())
    return name, ET.tostring(root)


@needs(XML_CAPTURES)
@fuzz_settings(150)
@given(mutated_dump())
def test_a_mutated_capture_imports_or_is_refused_in_one_line(dump: tuple[str, bytes]) -> None:
    imports(dump[1], dump[0])


@needs(XML_CAPTURES)
@fuzz_settings(100)
@given(st.sampled_from(sorted(DUMPS)), st.integers(0, 10**9), st.binary(max_size=64))
def test_a_truncated_or_spliced_capture_is_refused_in_one_line(name: str, cut: int, junk: bytes) -> None:
    data = DUMPS[name]
    at = cut % (len(data) + 1)
    imports(data[:at] + junk + data[at + len(junk):], name)


@fuzz_settings(100)
@given(st.one_of(st.binary(max_size=400), st.text(max_size=400).map(str.encode),
                 st.integers(1, 20_000).map(lambda depth: b"<nvidia_smi_log>" + b"<gpu>" * depth)))
def test_random_bytes_are_refused_in_one_line(data: bytes) -> None:
    imports(data, "random.xml")


def test_entity_expansion_is_refused() -> None:
    laughs = b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">' + b"".join(
        b'<!ENTITY %c "%s">' % (98 + i, (b"&%c;" % (97 + i)) * 10) for i in range(9)
    ) + b"]><nvidia_smi_log><driver_version>&j;</driver_version></nvidia_smi_log>"
    try:
        import_nvidia_smi_xml(laughs, "laughs.xml")
    except DumpError as exc:
        assert "not XML" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("a billion laughs was expanded")
