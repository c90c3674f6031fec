"""The README's commands and schema are the ones the code and CI use."""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from pathlib import Path

import click

from hwinfo.cli import main
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.topology import Topology

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
# The README and the reference pages it links: their examples are all the program's output.
DOCUMENTATION = "\n".join(path.read_text() for path in
                          [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])


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
    schema = (REPO / "docs" / "json-schema.md").read_text()
    documented = set(re.findall(r"^\| `([a-z0-9_.\[\]]+)` \|", schema, re.MULTILINE))
    # `report --topology` adds the matrix to the snapshot (model/topology.py).
    fields = _paths(Snapshot) | {"topology"} | _paths(Topology, "topology.")
    assert fields - documented == set(), "fields missing from docs/json-schema.md"
    assert documented - fields == set(), (
        "docs/json-schema.md documents JSON fields that do not exist"
    )


# An example is a ```text block whose first line is "$ hwinfo ...", or that follows an
# "<!-- output: hwinfo ... -->" line (for output shown without its command). A line "..."
# stands for any number of lines left out; every other line is the program's, in order.
_EXAMPLE = re.compile(r"(?:<!-- output: (hwinfo [^\n]*?) -->\n)?```text\n(.*?)\n```", re.DOTALL)


def _examples() -> list[tuple[str, list[str]]]:
    found = []
    for marked, body in _EXAMPLE.findall(DOCUMENTATION):
        lines = body.split("\n")
        if " --prometheus " in lines[0]:
            continue  # the ledger's need a Prometheus: tests/deploy/test_ledger_end_to_end.py
        if lines[0].startswith("$ hwinfo "):
            found.append((lines[0][2:], lines[1:]))
        else:
            assert marked, f"a README example has no command: {lines[0]!r}"
            found.append((marked, lines))
    return found


def _shown_in(expected: list[str], output: list[str]) -> bool:
    """Whether the example's lines occur in the output in order, each run between "..." lines
    contiguous (an example may show a fragment: what it shows must be there as shown)."""
    parts: list[list[str]] = [[]]
    for line in expected:
        if line.strip() == "...":
            parts.append([])
        else:
            parts[-1].append(line.rstrip())
    at = 0
    for part in filter(None, parts):
        start = next((s for s in range(at, len(output) - len(part) + 1)
                      if output[s:s + len(part)] == part), None)
        if start is None:
            return False
        at = start + len(part)
    return True


def test_readme_examples_are_the_program_s_output(tmp_path: Path) -> None:
    import os
    import shlex
    import subprocess
    import sys

    from fixtures.machines import shared_tree

    examples = _examples()
    assert len(examples) >= 3
    hwinfo = Path(sys.executable).parent / "hwinfo"
    for command, expected in examples:
        argv = shlex.split(command)
        argv = [str(shared_tree(a.split(":", 1)[1].rstrip("}"))) if a.startswith("{fixture:")
                else a for a in argv[1:]]
        run = subprocess.run([str(hwinfo), *argv], check=False, capture_output=True, text=True,
                             timeout=120,
                             # `hwinfo run`'s claims in a directory of the test's own
                             env={**os.environ, "NO_COLOR": "1", "HWINFO_CLAIMS_DIR": str(tmp_path)},
                             cwd=REPO)
        output = [line.rstrip() for line in run.stdout.split("\n")]
        assert _shown_in(expected, output), (
            f"README example of `{command}` differs from its output:\n{run.stdout}{run.stderr}"
        )


def test_the_readme_is_a_newcomer_s_page() -> None:
    assert len(README.splitlines()) <= 400, "reference material belongs in docs/"


def test_every_relative_link_of_the_documentation_resolves() -> None:
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to {target}, not there"


def _commands(group: click.Group = main, prefix: str = "") -> dict[str, click.Command]:
    """Every command of the command line by its full name ("sim record"), loaded."""
    found: dict[str, click.Command] = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found |= _commands(command, f"{prefix}{name} ")
        elif command is not None:
            found[f"{prefix}{name}"] = command
    return found


def test_the_documentation_names_every_command_that_takes_simulate() -> None:
    takes = {name for name, command in _commands().items()
             if any(p.name == "simulate" for p in command.params)}
    for page in (README, (REPO / "docs" / "simulator.md").read_text()):
        (sentence,) = re.findall(r"`--simulate NAME\|FILE` (?:works )?on ([^;.(]*)", page)
        assert set(re.findall(r"`([a-z ]+)`", sentence)) == takes, sentence


def test_the_trial_lab_recipe_changes_what_it_says(tmp_path: Path) -> None:
    """docs/ledger-commands.md's trial lab: each value it names is in the shipped files once,
    and its sed command leaves no query of the Lab dashboard at the old interval."""
    import subprocess

    page = (REPO / "docs" / "ledger-commands.md").read_text()
    recipe = page[page.index("### A trial lab that answers in minutes"):]
    recipe = recipe[:recipe.index("\n## ")]
    ledger = (REPO / "prometheus" / "hwinfo-ledger.yml").read_text()
    assert ledger.count("interval: 1m") == 2 and "`interval: 1m` becomes `interval: 15s`" in recipe
    # The jobs group's rate windows go with its interval, by the recipe's own command.
    (rules_sed,) = re.findall(r"`(sed -i '[^']*' prometheus/hwinfo-ledger\.yml)`", recipe)
    (tmp_path / "prometheus").mkdir()
    (tmp_path / "prometheus" / "hwinfo-ledger.yml").write_text(ledger)
    subprocess.run(["sh", "-c", rules_sed], cwd=tmp_path, check=True, timeout=60)
    trial = (tmp_path / "prometheus" / "hwinfo-ledger.yml").read_text()
    assert "interval: 1m" not in trial and "[1m]" not in trial and trial.count("interval: 15s") == 2
    assert ledger.count("for: 1h") == 1 and "`for: 1h` becomes `for: 5m`" in recipe
    (sed,) = re.findall(r"`(sed -i '[^']*' grafana/lab\.json)`", recipe)
    (tmp_path / "grafana").mkdir()
    (tmp_path / "grafana" / "lab.json").write_text((REPO / "grafana" / "lab.json").read_text())
    subprocess.run(["sh", "-c", sed], cwd=tmp_path, check=True, timeout=60)

    def times(dashboard: Path, interval: int) -> int:
        """How often the queries multiply by `interval` seconds (GPU-hours, kWh)."""
        text = json.dumps([p["targets"] for p in json.loads(dashboard.read_text())["panels"]
                           if "targets" in p])
        return text.count(f"* {interval} / 3600")

    shipped = times(REPO / "grafana" / "lab.json", 60)
    assert shipped > 0
    assert (times(tmp_path / "grafana" / "lab.json", 60),
            times(tmp_path / "grafana" / "lab.json", 15)) == (0, shipped)
