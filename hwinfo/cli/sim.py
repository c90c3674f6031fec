"""`hwinfo sim`: list the built-in machines, import nvidia-smi dumps, run other tools on them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from hwinfo.binding import too_old
from hwinfo.cli.options import Command, nvml_timeout_option, simulate_option, simulated
from hwinfo.collect.errors import SetupError
from hwinfo.collect.gpu.nvml import exported_functions
from hwinfo.collect.sources import open_collector
from hwinfo.escape import to_json
from hwinfo.inputs import InputError, decode_text, read_bytes
from hwinfo.outputs import OutputError, check_target, write_output
from hwinfo.sim import ScenarioError, list_scenarios, load_scenario
from hwinfo.sim.importer import DumpError, import_dump
from hwinfo.sim.nvml_symbols import SINCE
from hwinfo.sim.record import scenario_of
from hwinfo.sim.run import RunError, run
from hwinfo.sim.scenario import parse_scenario


@click.group()
def sim() -> None:
    """The simulated NVML: GPU machines described by scenario files."""


@sim.command("list", cls=Command)
def list_() -> None:
    """The built-in scenarios, for --simulate NAME."""
    scenarios = list_scenarios()
    width = max(len(name) for name, _ in scenarios)
    for name, description in scenarios:
        click.echo(f"{name:<{width}}  {description}")


@sim.command("import", cls=Command)
@click.argument("dump")
@click.option("-o", "--output", metavar="FILE", default="-",
              help="Write the scenario here ('-': standard output, the default).")
@click.option(
    "--section", metavar="LABEL",
    help="Which nvidia-smi -q section of a capture file (e.g. idle, load); default the last.",
)
def import_(dump: str, output: str, section: str | None) -> None:
    """Turn an nvidia-smi dump into a scenario file.

    DUMP is `nvidia-smi -q -x` XML, `nvidia-smi -q` text, or a capture file holding several
    commands' output (`# $ nvidia-smi -q` sections); the form is told from the content.
    """
    path = Path(dump)
    try:
        check_target(output, f"-o {output}")  # a wrong -o is said before the dump is read
        data = read_bytes(dump, dump)
        # PowerShell's `>` writes UTF-16 with a byte-order mark (Windows captures).
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            text = data.decode("utf-16", errors="replace")
        else:
            text = decode_text(data, dump)
        scenario = import_dump(text, path.name, section)
    except (InputError, OutputError, DumpError) as exc:
        raise click.ClickException(str(exc)) from None
    try:
        # The scenario must load; say so now, not at use (a dump can hold values a scenario
        # refuses, e.g. a utilization over 100 %).
        parse_scenario(scenario, path.name, path.stem)
    except ScenarioError as exc:
        raise click.ClickException(f"the imported scenario does not load: {exc}") from None
    _write_scenario(scenario, output)


def _write_scenario(scenario: dict[str, Any], output: str) -> None:
    """The scenario as JSON to -o: standard output for '-', else a file replaced atomically."""
    try:
        to_file = write_output(output, (to_json(scenario) + "\n").encode(),
                               f"-o {output}")
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    if to_file:
        click.echo(f"wrote {output}", err=True)


@sim.command("record", cls=Command)
@click.option("-o", "--output", metavar="FILE", default="-",
              help="Write the scenario here ('-': standard output, the default).")
@click.option("--full-command", is_flag=True,
              help="Record each GPU process's full command line (it may hold secrets), "
                   "not just its name.")
@nvml_timeout_option(10.0, "past it nothing is recorded and the exit status is 1.")
@simulate_option
def record(output: str, full_command: bool, nvml_timeout: float,
           simulate: str | None) -> None:
    """Write this machine's NVML state as a scenario, to attach to a bug report.

    GPUs, MIG layout, processes, health counters and the functions the driver's library
    exports; `hwinfo report --simulate FILE` replays it. --simulate records a simulated
    machine instead (what the round-trip tests do).
    """
    # A binding hwinfo cannot use would record an NVML that fails to start: say so instead.
    if (line := too_old()) is not None:
        raise click.ClickException(line)
    try:
        check_target(output, f"-o {output}")  # a wrong -o is said before NVML is touched
        collector = open_collector(machine=simulated(simulate), with_commands=full_command,
                                   nvml_timeout=nvml_timeout)
    except (OutputError, SetupError) as exc:
        raise click.ClickException(str(exc)) from None
    try:
        snapshot = collector.collect()
        gpu_errors = [e.message for e in snapshot.errors if e.source == "gpu"]
        if snapshot.gpu is None or gpu_errors:
            raise click.ClickException(
                f"GPUs not read, nothing recorded: {'; '.join(gpu_errors) or 'no GPU data'}")
        # While NVML is still started: which of the functions any driver has this one exports.
        symbols = exported_functions(SINCE) if snapshot.gpu.status == "ok" else None
    finally:
        collector.close()
    _write_scenario(scenario_of(snapshot.gpu, symbols, simulate or snapshot.host.hostname), output)


@sim.command("run", cls=Command, context_settings={"ignore_unknown_options": True})
@click.argument("scenario")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--live-processes", is_flag=True,
              help="Back each scenario process with a real placeholder process, so clients "
                   "that look PIDs up with psutil (gpustat, nvitop) see them.")
def run_(scenario: str, command: tuple[str, ...], live_processes: bool) -> None:
    """Run COMMAND (any pynvml client) with the simulator in place of the driver.

    Example: hwinfo sim run dgx-a100-mig -- gpustat --json
    """
    try:
        load_scenario(scenario)  # fail here with one line, not in the child's start-up
    except ScenarioError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        sys.exit(run(scenario, command, live=live_processes))
    except RunError as exc:
        raise click.ClickException(str(exc)) from None
