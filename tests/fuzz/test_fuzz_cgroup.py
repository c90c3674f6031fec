"""/proc/PID/cgroup files mutated from real ones: a known attribution or "none", never an
exception, and a job, container or pod only where its id has the runtime's shape."""

from __future__ import annotations

import re

from fuzz.mutations import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from hwinfo.collect.cgroup import parse
from hwinfo.model.attribution import KINDS
from tests.fixtures.cgroups import CASES

SEGMENTS = st.sampled_from(["slurm", "slurm_n1", "uid_0", "job_12", "step_0", "step_batch",
                            "slurmstepd.scope", "n1_slurmstepd.scope", "docker", "libpod_parent",
                            "kubepods", "kubepods.slice", "burstable", "besteffort",
                            "pod" + "a" * 32, "docker-" + "b" * 64 + ".scope", "c" * 64,
                            "x.service", "session-1.scope", "", ".", "..", ":", "\x00", "٣"])


@st.composite
def cgroup_files(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(CASES)).text.splitlines()
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        path = "/".join(draw(st.lists(SEGMENTS, max_size=12)))
        kind = draw(st.sampled_from(["replace", "insert", "cut", "garble"]))
        if kind == "replace" and lines:
            lines[i] = f"{draw(st.integers(0, 20))}:{draw(st.text(max_size=8))}:/{path}"
        elif kind == "insert":
            lines.insert(i, f"0::/{path}")
        elif kind == "cut" and lines:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif lines:
            lines[i] = draw(st.text(max_size=60))
    return "\n".join(lines)


@fuzz_settings(400)
@given(cgroup_files())
def test_a_mutated_cgroup_file_is_known_or_none(text: str) -> None:
    found = parse(text)
    assert found.kind in KINDS
    if found.slurm_job is not None:
        assert re.fullmatch(r"\d{1,12}", found.slurm_job)
    if found.container_id is not None:
        assert re.fullmatch(r"[0-9a-f]{64}", found.container_id)
    if found.pod_uid is not None:
        assert re.fullmatch(r"[0-9a-f-]{32,36}", found.pod_uid)
    assert isinstance(found.label, str)
