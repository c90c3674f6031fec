"""The README's commands and schema are the ones the code and CI use."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path

from hwinfo.model.snapshot import Snapshot

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", README, re.DOTALL)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci in _blocks(), ".ci/run must run the README's test command as written"


def _paths(cls: type, prefix: str = "") -> set[str]:
    """Every JSON key path of a dataclass tree: "gpu.gpus[].mig.devices[].uuid"."""
    paths = set()
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        paths.add(path)
        tp = hints[f.name]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):  # X | None
            (tp,) = [a for a in typing.get_args(tp) if a is not type(None)]
        if typing.get_origin(tp) is list:
            (item,) = typing.get_args(tp)
            if dataclasses.is_dataclass(item):
                paths |= _paths(item, f"{path}[].")
        elif dataclasses.is_dataclass(tp):
            paths |= _paths(tp, f"{path}.")
    return paths


def test_readme_documents_every_json_field() -> None:
    schema = README.split("### JSON schema", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z0-9_.\[\]]+)` \|", schema, re.MULTILINE))
    fields = _paths(Snapshot)
    assert fields - documented == set(), "fields missing from the README's JSON schema"
    assert documented - fields == set(), (
        "the README documents JSON fields that do not exist"
    )
