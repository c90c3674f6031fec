"""`hwinfo serve` (the Prometheus exporter) and `hwinfo export` (a node_exporter textfile)."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Mapping

import click

import hwinfo
from hwinfo.cli.listen import listen_options, load_web_config
from hwinfo.cli.options import (
    Command,
    F,
    Seconds,
    nvml_timeout_option,
    root_given,
    root_option,
    simulate_option,
    simulated,
)
from hwinfo.collect.errors import SetupError
from hwinfo.collect.gpu import accounting_state
from hwinfo.collect.snapshot import SnapshotCollector
from hwinfo.collect.sources import open_collector
from hwinfo.exporter.catalogue import SNAPSHOT_GROUPS
from hwinfo.exporter.daemon import Daemon, Options
from hwinfo.exporter.exposition import Selection, render
from hwinfo.exporter.http import ServerError
from hwinfo.exporter.status import DaemonStatus
from hwinfo.outputs import OutputError, check_target, write_output

# Prometheus's default port allocations list 9110 for the deprecated "Blackbox prober",
# superseded by blackbox_exporter on 9115: no well-known exporter listens there. (9100 is
# node_exporter, 9400 dcgm-exporter, 9835 nvidia_gpu_exporter.)
DEFAULT_PORT = 9110


def _selection_options(fn: F) -> F:
    fn = click.option(
        "--process-metrics", is_flag=True,
        help="Also export one series per GPU process (pid, user, command). PIDs churn, "
             "so this is off by default; per-user series are always on.",
    )(fn)
    return click.option(
        "--no-collector", "disabled", multiple=True, type=click.Choice(sorted(SNAPSHOT_GROUPS)),
        help="Leave out a group of metrics (repeatable).",
    )(fn)


def _collector(
    root: str, simulate: str | None, disabled: tuple[str, ...], between_samples: bool,
    nvml_timeout: float, accounting_resumed: Mapping[str, accounting_state.Judged] | None = None,
) -> SnapshotCollector:
    gpu_groups = {"gpu", "mig", "users", "jobs"}
    try:
        return open_collector(root, simulated(simulate), gpus=not gpu_groups <= set(disabled),
                              with_jobs="jobs" not in disabled,
                              between_samples=between_samples, nvml_timeout=nvml_timeout,
                              processes_below_root=root_given(),
                              accounting_resumed=accounting_resumed)
    except SetupError as exc:
        raise click.ClickException(str(exc)) from None


@click.command(cls=Command)
@listen_options(DEFAULT_PORT)
@click.option("--interval", type=Seconds(0.1), default=5.0, show_default=True,
              help="Seconds between samples (at most a day).")
@nvml_timeout_option(5.0, "past it the last GPU data is served, marked stale.")
@click.option("--state-dir", metavar="DIR", envvar="STATE_DIRECTORY", show_envvar=True,
              help="Keep here what a restart must not lose (the short jobs NVML accounting "
                   "kept while hwinfo was down); systemd's StateDirectory= sets it.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="info", show_default=True)
@_selection_options
@simulate_option
@root_option
def serve(
    address: str, port: int, web_config_file: str | None, interval: float,
    nvml_timeout: float, state_dir: str | None, log_level: str, process_metrics: bool,
    disabled: tuple[str, ...], simulate: str | None, root: str,
) -> None:
    """Serve this machine's state as Prometheus metrics."""
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    web_config = load_web_config(web_config_file)
    resumed = None
    if state_dir is not None:
        # systemd joins several StateDirectory= paths with ':'; hwinfo's unit names one.
        state_dir = state_dir.split(":")[0]
        if not os.path.isdir(state_dir):
            raise click.ClickException(f"--state-dir {state_dir}: not a directory")
        resumed = accounting_state.load(state_dir)
    collector = _collector(root, simulate, disabled, between_samples=True,
                           nvml_timeout=nvml_timeout, accounting_resumed=resumed)
    options = Options(interval, nvml_timeout, Selection(frozenset(disabled), process_metrics),
                      state_dir)
    try:
        stopped_by = Daemon(collector, options).run((address, port), web_config)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from None
    if stopped_by is not None:  # as a shell reports a command a signal ended: 143, 130
        sys.exit(128 + stopped_by)


@click.command(cls=Command)
@click.option("--textfile", type=click.Path(path_type=str, allow_dash=True), required=True,
              help="Write here, e.g. /var/lib/prometheus/node-exporter/hwinfo.prom, replacing it "
                   "atomically; only a regular file (or a new one) is replaced. '-': standard "
                   "output.")
@_selection_options
@nvml_timeout_option(10.0, "past it the GPU metrics are left out and the exit status is 1.")
@simulate_option
@root_option
def export(textfile: str, process_metrics: bool, disabled: tuple[str, ...], nvml_timeout: float,
           simulate: str | None, root: str) -> None:
    """Write the metrics once, atomically, for node_exporter's textfile collector."""
    what = f"--textfile {textfile}"
    try:
        check_target(textfile, what)  # before collecting: a wrong target wastes no NVML time
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    collector = _collector(root, simulate, disabled, between_samples=False, nvml_timeout=nvml_timeout)
    try:
        snapshot = collector.collect()
    finally:
        collector.close()
    status = DaemonStatus(hwinfo.__version__, time.time())
    rendered = render(snapshot, status, Selection(frozenset(disabled), process_metrics))
    try:
        # node_exporter may read the file at any moment: written beside it, renamed over it.
        write_output(textfile, rendered.text, what)
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    if snapshot.errors:  # the file holds what was read; the status says it is not all
        raise click.ClickException(
            "; ".join(f"{e.source} not read: {e.message}" for e in snapshot.errors))

