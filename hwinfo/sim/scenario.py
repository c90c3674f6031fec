"""Scenario files: loading, validation, and the typed model the simulator runs on.

The format is docs/scenario-format.md. Every error is a ScenarioError whose text is one line
naming the file, the field by its path, and what is wrong. The model is in scenario_model.py,
its bounds and defaults in scenario_bounds.py and scenario_defaults.py, and reading it
in scenario_reader.py, scenario_gpu.py and scenario_mig.py; this module reads the top level.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from hwinfo import inputs
from hwinfo.sim.nvml_symbols import fault_name, known_fault_calls
from hwinfo.sim.scenario_bounds import MAX_DELAY_SECONDS, MAX_GPUS, MAX_SYMBOLS
from hwinfo.sim.scenario_defaults import CUDA_BY_BRANCH
from hwinfo.sim.scenario_gpu import parse_pci_bus_id, read_gpu
from hwinfo.sim.scenario_model import (
    ERROR_CODES,
    DriverSpec,
    FaultSpec,
    GpuSpec,
    Imported,
    Scenario,
    ScenarioError,
)
from hwinfo.sim.scenario_reader import Reader, kind, opt_str
from hwinfo.sim.scenario_topology import check_wiring, read_topology, wiring

SCENARIO_DIR = "scenarios"



def _read_driver(r: Reader, value: object) -> DriverSpec:
    data = r.obj("driver", value, ("version", "cuda_version", "nvml_version", "symbols"))
    version = r.str("driver.version", data.get("version", "550.54.15"))
    if not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,6}){1,3}", version):
        r.fail("driver.version",
               f"expected a version such as '550.54.15', got {inputs.shown(version)}")
    numbers = tuple(int(n) for n in version.split("."))
    branch = max((b for b in CUDA_BY_BRANCH if b <= numbers[0]), default=450)
    cuda = r.int(
        "driver.cuda_version", data.get("cuda_version", CUDA_BY_BRANCH[branch]), 1000, 99_990
    )
    nvml = r.str("driver.nvml_version", data.get("nvml_version", f"{cuda // 1000}.{version}"))
    symbols = None
    if "symbols" in data:
        names = r.list("driver.symbols", data["symbols"])
        if len(names) > MAX_SYMBOLS:
            r.fail("driver.symbols", f"at most {MAX_SYMBOLS} functions, got {len(names)}")
        for i, name in enumerate(names):
            if not re.fullmatch(r"nvml\w{1,100}", r.str(f"driver.symbols[{i}]", name)):
                r.fail(f"driver.symbols[{i}]", f"not an NVML function name: {inputs.shown(name)}")
        symbols = frozenset(names)  # type: ignore[arg-type]
    return DriverSpec(version, numbers, cuda, nvml, symbols)


def _read_fault(r: Reader, index: int, value: object, gpu_count: int) -> FaultSpec:
    path = f"faults[{index}]"
    keys = ("call", "gpu", "error", "delay_seconds", "after_samples", "for_samples")
    data = r.obj(path, value, keys, ("call",))
    call = r.str(inputs.member(path, "call"), data["call"])
    if fault_name(call) not in known_fault_calls():
        r.fail(inputs.member(path, "call"), f"unknown or unsimulated NVML function {inputs.shown(call)}")
    gpu = data.get("gpu")
    if gpu is not None:
        gpu = r.int(inputs.member(path, "gpu"), gpu, 0, max(gpu_count - 1, 0))
        if gpu_count == 0:
            r.fail(inputs.member(path, "gpu"), "the scenario has no GPUs")
    error = data.get("error")
    code = (
        None if error is None else ERROR_CODES[r.choice(inputs.member(path, "error"), error, ERROR_CODES)]
    )
    delay = r.number(inputs.member(path, "delay_seconds"), data.get("delay_seconds", 0), MAX_DELAY_SECONDS)
    if code is None and not delay:
        r.fail(path, "a fault needs an error or a delay_seconds")
    return FaultSpec(fault_name(call), gpu, code, delay, r.window(path, data))


def _read_imported(r: Reader, value: object) -> Imported | None:
    """The `imported` object: provenance of a scenario made from an nvidia-smi dump."""
    if value is None:
        return None
    keys = ("source", "kind", "attached_gpus", "timestamp", "guessed", "masked")
    data = r.obj("imported", value, keys, ("source", "kind"))
    attached = data.get("attached_gpus")
    for i, note in enumerate(r.list("imported.guessed", data.get("guessed", []))):
        r.str(f"imported.guessed[{i}]", note)
    return Imported(
        r.str("imported.source", data["source"]),
        r.choice("imported.kind", data["kind"], ("xml", "text", "capture", "record")),
        None if attached is None else r.int("imported.attached_gpus", attached),
        opt_str(r, "imported", data, "timestamp"),
        r.bool("imported.masked", data.get("masked", False)),
    )


def parse_scenario(data: object, source: str, name: str) -> Scenario:
    """Validate decoded JSON into a Scenario; `source` names the file in errors."""
    r = Reader(source)
    keys = (
        "format",
        "description",
        "driver",
        "privileged",
        "library",
        "init_error",
        "init_error_attempts",
        "faults",
        "gpus",
        "imported",
        "topology",
    )
    if not isinstance(data, dict):
        r.fail("(top level)", f"expected an object, got {kind(data)}")
    top = r.obj("", data, keys, ("format",))
    if top["format"] != 1 or isinstance(top["format"], bool):
        r.fail("format",
               f"unsupported format {inputs.shown(top['format'])} (this hwinfo reads format 1)")
    driver = _read_driver(r, top.get("driver", {}))
    init_error = top.get("init_error")
    attempts = top.get("init_error_attempts")
    if attempts is not None:
        if init_error is None:
            r.fail("init_error_attempts", "only meaningful with init_error")
        attempts = r.int("init_error_attempts", attempts, 1)
    gpu_items = r.list("gpus", top.get("gpus", []))
    if len(gpu_items) > MAX_GPUS:
        r.fail("gpus", f"at most {MAX_GPUS} GPUs, got {len(gpu_items)}")
    imported = _read_imported(r, top.get("imported"))
    gpus = tuple(
        read_gpu(r, name, driver.version_tuple, i, g, imported is not None)
        for i, g in enumerate(gpu_items)
    )
    identities: dict[str, Callable[[GpuSpec], object]] = {
        "uuid": lambda g: g.uuid.lower(),
        "pci_bus_id": lambda g: parse_pci_bus_id(g.pci_bus_id),
    }
    for what, identity in identities.items():
        seen: dict[object, int] = {}
        for gpu in gpus:
            key = identity(gpu)
            if key in seen:
                r.fail(f"gpus[{gpu.index}].{what}", f"same as gpus[{seen[key]}]")
            seen[key] = gpu.index
    bus_ids = {parse_pci_bus_id(g.pci_bus_id): g.index for g in gpus}
    topology = None if top.get("topology") is None else read_topology(
        r, top["topology"], bus_ids)  # type: ignore[arg-type]
    for gpu in gpus:
        own = parse_pci_bus_id(gpu.pci_bus_id)
        path = f"gpus[{gpu.index}].nvlink_remote" if gpu.nvlink_remote is not None \
            else "topology.nvlink"
        check_wiring(r, path, wiring(gpu.nvlink_remote, gpu.nvlink_links, topology),
                     own, gpu.nvlink_links or 0, topology, bus_ids)  # type: ignore[arg-type]
    return Scenario(
        name=name,
        source=source,
        description=r.str("description", top.get("description", "")),
        imported=imported,
        driver=driver,
        privileged=r.bool("privileged", top.get("privileged", True)),
        library_missing=r.choice("library", top.get("library", "present"), ("present", "missing"))
        == "missing",
        init_error=None
        if init_error is None
        else ERROR_CODES[r.choice("init_error", init_error, ERROR_CODES)],
        init_error_attempts=attempts,
        faults=tuple(
            _read_fault(r, i, f, len(gpus))
            for i, f in enumerate(r.list("faults", top.get("faults", [])))
        ),
        gpus=gpus,
        topology=topology,
    )


def _builtin_dir() -> Path:
    return Path(str(resources.files("hwinfo.sim").joinpath(SCENARIO_DIR)))


def read_document(source: str | os.PathLike[str]) -> tuple[Any, str, str]:
    """The decoded JSON of a built-in scenario NAME or a scenario file, how errors name it,
    and the name its GPUs' derived UUIDs are seeded with; ScenarioError if unreadable."""
    text_source = os.fspath(source)
    builtin = _builtin_dir() / f"{text_source}.json"
    if os.sep not in text_source and not text_source.endswith(".json") and builtin.is_file():
        path, label, name = builtin, text_source, text_source
    else:
        path, label, name = Path(text_source), text_source, Path(text_source).stem
    what = f"scenario {label}"
    try:
        return inputs.parse_json(inputs.read_text(path, what), what), label, name
    except inputs.InputError as exc:
        if not os.path.lexists(path):
            known = ", ".join(n for n, _ in list_scenarios()) or "none"
            raise ScenarioError(f"{what}: no such file, and no built-in scenario of that name "
                                f"(built-in: {known})") from None
        raise ScenarioError(str(exc)) from None


def load_scenario(source: str | os.PathLike[str]) -> Scenario:
    """A built-in scenario by NAME (hwinfo/sim/scenarios/NAME.json) or a scenario file path."""
    return parse_scenario(*read_document(source))


def list_scenarios() -> list[tuple[str, str]]:
    """(name, description) of every built-in scenario, by name."""
    out = []
    for path in sorted(_builtin_dir().glob("*.json")):
        try:
            description = json.loads(path.read_text(encoding="utf-8")).get("description", "")
        except (OSError, ValueError, AttributeError):
            description = "(unreadable)"
        out.append((path.stem, description if isinstance(description, str) else ""))
    return out
