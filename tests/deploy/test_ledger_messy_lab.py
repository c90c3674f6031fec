"""The ledger on a shared, messy lab whose truth is known, against a real engine
(Prometheus, and VictoriaMetrics with vmalert) evaluating the shipped rules every second:

  shared    GPU 0: ana holds 1000 MiB at 0 % SM, ben 3000 MiB at 60 % (the GPU at 60 %);
            GPU 1 (50 %): cy's two processes have no memory figure, dan holds 1000 MiB in
            Slurm job 7000;
            GPU 2 in MIG mode: on a 3g.40gb, eve's two processes have no memory figure, fin
            holds 1000 MiB;
            GPU 3 (40 %): hal's Slurm job 6161 alone, two processes with no memory figure
            (the processes' cgroups are read from a fixture tree, --root)
  stops     fay holds an idle GPU; her daemon is stopped mid-window
  hangs     gus holds an idle GPU; NVML hangs after a few samples (stale, still answering),
            and the daemon waits 30 s on it (--nvml-timeout)
  restarts  erin holds an idle A100 40 GB beside an empty one; her daemon is restarted while
            her idle-holder alert fires
  probe     GPU 0, an H100 with MIG off (as on every H100 here) at 20 %: ivy holds 12000 MiB at
            20 % SM, pia's probe 512 MiB with no SM sample; GPU 1, an RTX 4090 (no MIG) at
            50 %: joe holds 2000 MiB with no SM sample

Figures are compared with the truth computed by hand, to within one rule evaluation at each
edge of the window (and of a host's stop, where a scrape adds one more second). The window is
the minute records' alone: its roll-ups (tests/deploy/test_ledger_rollups.py) would be an hour
long. It ends at an evaluation whose records have all arrived (on VictoriaMetrics they are
written a little after the instant they describe, docs/ledger-engines.md)."""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hwinfo.ledger.queries import UNSEEN_RECORD
from hwinfo.sim.driver_load import STATE_DIR_VAR
from tests.deploy.artifacts import (
    LAB_DASHBOARD,
    dashboard,
    panels,
    substitute,
    variable_query,
    variables,
)
from tests.deploy.ledger_stack import (
    A100,
    ENGINES,
    alert_of,
    answer,
    hwinfo,
    idle_in_history,
    lab,
    recorded_until,
    restart_under_alert,
)
from tests.deploy.prometheus_stack import Stack, wait_for
from tests.exporter.serving import Daemon
from tests.fixtures.cgroups import write_process
from tests.fixtures.machines import MACHINES, write_tree

INTERVAL = 1.0  # the rules' evaluation interval in this lab
SCRAPE = 1.0  # Prometheus's scrape interval here
FOR = "3s"  # the idle-holder alert's `for`, shortened
SAMPLE = 0.5  # the daemons' sampling interval
UNSEEN_EVALUATIONS = 5  # of the stopped and the hung host's GPUs, before the window ends
NVML_DEADLINE = 120  # how long the hung host's daemon waits on NVML before giving up
MIB = 2**20


def _process(pid: int, user: str, mib: int | None, sm: int | None = None) -> dict[str, Any]:
    proc: dict[str, Any] = {"pid": pid, "used_memory_mib": mib, "user": user, "command": "python job.py"}
    return proc if sm is None else {**proc, "sm_percent": sm}


def _idle_host(user: str, pid: int, **more: Any) -> dict[str, Any]:
    return {"format": 1, "description": f"{user} holds an idle GPU", "gpus": [
        {"board": A100, "utilization_gpu_percent": 0, "power_draw_w": 60,
         "processes": [_process(pid, user, 1000)]}], **more}


HOSTS = {
    "shared": {"format": 1, "description": "a shared GPU; processes without memory", "gpus": [
        {"board": A100, "utilization_gpu_percent": 60, "power_draw_w": 300,
         "processes": [_process(100, "ana", 1000, sm=0), _process(101, "ben", 3000, sm=60)]},
        {"board": A100, "utilization_gpu_percent": 50, "power_draw_w": 200,
         "processes": [_process(200, "cy", None), _process(201, "cy", None),
                       _process(202, "dan", 1000)]},
        {"board": A100, "power_draw_w": 100,
         "mig": {"enabled": True, "gpu_instances": [{"profile": "3g.40gb", "start": 4, "id": 2}]},
         "processes": [{**_process(pid, user, mib), "gpu_instance_id": 2, "compute_instance_id": 0}
                       for pid, user, mib in ((210, "eve", None), (211, "eve", None),
                                              (212, "fin", 1000))]},
        {"board": A100, "utilization_gpu_percent": 40, "power_draw_w": 100,
         "processes": [_process(230, "hal", None), _process(231, "hal", None)]}]},
    "stops": _idle_host("fay", 300),
    # From the 20th sample (10 s at 0.5 s), every power reading blocks for 10 minutes.
    "hangs": _idle_host("gus", 400, faults=[
        {"call": "nvmlDeviceGetPowerUsage", "delay_seconds": 600, "after_samples": 20}]),
    "restarts": {"format": 1, "description": "erin idle on an A100 40 GB; an empty one", "gpus": [
        {"board": "A100-SXM4-40GB", "utilization_gpu_percent": 0, "power_draw_w": 60,
         "processes": [_process(500, "erin", 1000)]},
        {"board": "A100-SXM4-40GB", "utilization_gpu_percent": 0, "power_draw_w": 50,
         "processes": []}]},
    "probe": {"format": 1, "description": "a probe beside a job; MIG off; a board without MIG",
              "gpus": [
        {"board": "H100-SXM5-80GB", "utilization_gpu_percent": 20, "power_draw_w": 200,
         "processes": [_process(600, "ivy", 12000, sm=20), _process(601, "pia", 512)]},
        {"board": "RTX-4090", "utilization_gpu_percent": 50, "power_draw_w": 250,
         "processes": [_process(610, "joe", 2000)]}]},
}


# The shared host's Slurm jobs, as the kernel names them in each process's cgroup (Slurm's
# cgroup v2 layout, tests/fixtures/cgroups.py): dan's one process, hal's two.
JOBS = {202: ("dan", 1003, "7000"), 230: ("hal", 1004, "6161"), 231: ("hal", 1004, "6161")}


def _jobs_tree(directory: Path) -> Path:
    """A fixture machine whose /proc holds the shared host's job processes."""
    root = write_tree(MACHINES["x86-2s-smt"], directory)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/passwd").write_text("".join(
        f"{user}:x:{uid}:{uid}::/h:/bin/sh\n" for user, uid, _ in set(JOBS.values())))
    for pid, (_, uid, job) in JOBS.items():
        write_process(root, pid, uid, "python job.py",
                      f"0::/system.slice/slurmstepd.scope/job_{job}/step_0/user/task_0\n".encode())
    return root


@dataclass
class Run:
    """What happened in the lab, and when (Unix times)."""

    stack: Stack
    daemons: dict[str, Daemon]
    started: float = 0.0  # Prometheus started
    since: float = 0.0
    stopped_at: float = 0.0
    until: float = 0.0
    alert_states: list[tuple[str | None, str | None]] = field(default_factory=list)

    def usage(self, *args: str) -> Any:
        return answer("usage", "--prometheus", self.stack.prometheus,
                      "--since", self.span, "--until", f"{self.until:.3f}", *args)

    @property
    def span(self) -> str:
        return f"{round((self.until - self.since) * 1000)}ms"

    def seen(self, host: str) -> float:
        """The seconds of the window in which Prometheus saw a host's GPUs: on a loaded
        machine a scrape can time out (at the 1 s interval), and the rules then count the
        host's GPUs unseen for that evaluation, never held."""
        instance = self.daemons[host].removeprefix("http://")
        (row,) = [row for row in self.usage("--by", "host")["rows"] if row["host"] == instance]
        gpus = len(HOSTS[host]["gpus"])
        return self.until - self.since - row["unseen_gpu_seconds"] / gpus


@pytest.fixture(scope="module", params=ENGINES)
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    workdir = tmp_path_factory.mktemp("messy")
    with ExitStack() as running, pytest.MonkeyPatch.context() as env:
        # Simulated drivers of their own (the autouse fixture's are a test's, set up after a
        # module's): the other engine's lab runs the same hosts beside this one, and hung
        # gus's sample count is the driver's.
        env.setenv(STATE_DIR_VAR, str(tmp_path_factory.mktemp("sim-state")))
        started = time.time()
        stack, daemons = running.enter_context(lab(
            workdir, HOSTS, engine=request.param, options={"shared": ("--root", str(_jobs_tree(workdir / "root"))),
                                     "hangs": ("--nvml-timeout", str(NVML_DEADLINE))},
            rollup_seconds=3600, **{"for: 1h": f"for: {FOR}"}))
        result = Run(stack, daemons, started)
        with stack.logs_on_failure():
            wait_for("erin's idle-holder alert to fire",
                     lambda: alert_of(stack, "erin")[0] == "firing", timeout=120)
            wait_for("erin's idle hold to be found in the engine's history",
                     lambda: idle_in_history(stack, "erin"), timeout=60)
            result.since = time.time()
            _, result.alert_states = restart_under_alert(
                running, daemons["restarts"], workdir / "restarts.json", stack, "erin", INTERVAL)
            time.sleep(3)  # fay's hold is charged for a while in the window
            daemons["stops"].proc.terminate()
            daemons["stops"].proc.wait(timeout=60)
            result.stopped_at = time.time()
            result.until = wait_for(
                "the window to hold the stopped and the hung host unseen for a while",
                lambda: _unseen_until(stack, daemons, result.stopped_at), timeout=60)
            yield result


def _unseen_until(stack: Stack, daemons: dict[str, Daemon], stopped_at: float) -> float | None:
    """A window end up to which the engine holds every minute record, and by which it recorded
    the stopped and the hung host's GPUs unseen UNSEEN_EVALUATIONS times since `stopped_at`;
    None until then. The hosts are named: on a loaded machine the restarted host's two GPUs
    were unseen for as many evaluations, and a count of any two GPUs ended the window there."""
    until = recorded_until(stack, hourly=False)
    if until <= stopped_at:
        return None
    hosts = "|".join(daemons[name].removeprefix("http://") for name in ("stops", "hangs"))
    found = stack.api("/api/v1/query", {
        "query": f'count_over_time({UNSEEN_RECORD}{{instance=~"{hosts}"}}'
                 f"[{round((until - stopped_at) * 1000)}ms]) >= {UNSEEN_EVALUATIONS}",
        "time": f"{until:.3f}"}, post=True)["result"]
    return until if len(found) == 2 else None


def first_failed_scrape(stack: Stack, daemon: Daemon) -> float:
    """When Prometheus first failed to scrape the daemon: its own `up` samples."""
    data = stack.api("/api/v1/query", {"query": f'up{{instance="{daemon.removeprefix("http://")}"}}[10m]'},
                     post=True)
    (series,) = data["result"]
    return min(float(time) for time, value in series["values"] if value == "0")


def near(value: float, truth: float, edges: float = 2 * INTERVAL) -> bool:
    """Within `edges` seconds of GPU time (one evaluation at each edge)."""
    return abs(value - truth) <= edges + 1e-6


def test_a_shared_gpu_is_busy_or_idle_per_user(run: Run) -> None:
    rows = {row["user"]: row for row in run.usage()["rows"]}
    span = run.seen("shared")
    ana, ben = rows["ana"], rows["ben"]
    assert near(ana["held_gpu_seconds"], 0.25 * span, 0.25 * 2 * INTERVAL)
    assert near(ben["held_gpu_seconds"], 0.75 * span, 0.75 * 2 * INTERVAL)
    # ana's own processes do nothing: all her time is idle, though ben keeps the GPU at 60 %.
    assert ana["idle_held_gpu_seconds"] == ana["held_gpu_seconds"] and ana["busy_gpu_seconds"] == 0
    assert ana["mean_utilization_ratio"] == 0
    assert ben["busy_gpu_seconds"] == ben["held_gpu_seconds"]
    assert ben["mean_utilization_ratio"] == pytest.approx(0.6)
    assert ana["device_judged_gpu_seconds"] == ben["device_judged_gpu_seconds"] == 0


def test_processes_without_memory_still_hold_and_are_noted(run: Run) -> None:
    document = run.usage()
    rows = {row["user"]: row for row in document["rows"]}
    span = run.seen("shared")
    cy, dan = rows["cy"], rows["dan"]
    # Split by process count, 2 : 1, and judged by the GPU's 50 % (no per-process samples).
    assert near(cy["held_gpu_seconds"], 2 / 3 * span, 2 / 3 * 2 * INTERVAL)
    assert cy["held_gpu_seconds"] / dan["held_gpu_seconds"] == pytest.approx(2, rel=0.05)
    for row in (cy, dan):
        assert row["unmetered_gpu_seconds"] == row["held_gpu_seconds"]
        assert row["device_judged_gpu_seconds"] == row["held_gpu_seconds"]
        assert row["busy_gpu_seconds"] == row["held_gpu_seconds"]
    # The MIG device too: 2 : 1 of its 3/7, no activity signal (an A100): unknown, not idle.
    eve, fin = rows["eve"], rows["fin"]
    assert near(eve["held_gpu_seconds"], 2 / 7 * span, 2 / 7 * 2 * INTERVAL)
    assert eve["held_gpu_seconds"] / fin["held_gpu_seconds"] == pytest.approx(2, rel=0.05)
    for row in (eve, fin):
        assert row["unmetered_gpu_seconds"] == row["held_gpu_seconds"] == row["unknown_gpu_seconds"]
    assert any("NVML reported no memory" in note and "cy" in note and "eve" in note
               for note in document["notes"])
    assert any("judged by the device's activity" in note for note in document["notes"])
    fleet = hwinfo("fleet", "--prometheus", run.stack.prometheus)
    assert fleet.returncode == 0, fleet.stderr
    assert "cy n/a" in fleet.stdout and "eve n/a" in fleet.stdout


def test_jobs_are_charged_by_the_rule_that_charges_their_users(run: Run) -> None:
    """Over the window of S seconds (by hand, per evaluation, then times S):
    GPU 1 is split by process count (cy's have no memory figure): cy 2/3, dan 1/3, and dan's
    Slurm job 7000 is all of dan's: 1/3 (by memory alone it was 1000/1000 = 1, and the GPU
    charged 2/3 + 1 = 167 %). GPU 3: hal alone, two processes without memory: hal 1, and his
    job 6161 1 (it was charged nothing). Neither GPU samples its processes: every second of
    both jobs is judged by the GPU's activity (50 %, 40 %: busy) and split by process count.

    | job  | held    | busy    | idle | device-judged | unmetered | mean util |
    | 7000 | S/3     | S/3     | 0    | S/3           | S/3       | 0.5       |
    | 6161 | S       | S       | 0    | S             | S         | 0.4       |
    """
    span = run.until - run.since
    users = {row["user"]: row for row in run.usage()["rows"]}
    jobs = {row["job"]: row for row in run.usage("--by", "job")["rows"]}
    assert set(jobs) == {"7000", "6161"}
    for job, share, user, activity in (("7000", 1 / 3, "dan", 0.5), ("6161", 1.0, "hal", 0.4)):
        row = jobs[job]
        assert near(row["held_gpu_seconds"], share * span, share * 2 * INTERVAL), (job, row)
        # Evaluation by evaluation the job is what its user holds: the same figure.
        assert row["held_gpu_seconds"] == pytest.approx(users[user]["held_gpu_seconds"])
        for figure in ("busy_gpu_seconds", "device_judged_gpu_seconds", "unmetered_gpu_seconds"):
            assert row[figure] == pytest.approx(row["held_gpu_seconds"]), (job, figure)
        assert row["idle_held_gpu_seconds"] == 0
        assert row["mean_utilization_ratio"] == pytest.approx(activity)
    # GPU 1 adds up to one GPU: cy's 2/3 and job 7000's 1/3 (dan's), never more.
    assert near(users["cy"]["held_gpu_seconds"] + jobs["7000"]["held_gpu_seconds"], span, 2 * INTERVAL)
    document = answer("job", "6161", "--prometheus", run.stack.prometheus, "--since", run.span,
                      "--until", f"{run.until:.3f}")
    (gpu,) = document["gpus"]
    assert document["users"] == ["hal"] and gpu["gpu"] == "3"
    assert near(gpu["held_gpu_seconds"], span) and gpu["busy_ratio"] == 1
    assert gpu["peak_memory_bytes"] is None  # not reported: never 0
    assert gpu["device_judged_gpu_seconds"] == pytest.approx(gpu["held_gpu_seconds"])
    assert any("split among their holders by process count" in note for note in document["notes"])


def test_unseen_time_is_said_never_charged_never_lost(run: Run) -> None:
    span = run.until - run.since
    by_host = {row["host"]: row for row in run.usage("--by", "host")["rows"]}
    stops = by_host[run.daemons["stops"].removeprefix("http://")]
    hangs = by_host[run.daemons["hangs"].removeprefix("http://")]
    # Each GPU is held or unseen at every evaluation: none of the window is lost.
    for host in (stops, hangs):
        assert host["unseen_gpu_seconds"] > 0
        assert near(host["held_gpu_seconds"] + host["unseen_gpu_seconds"], span)
    # fay is charged up to her daemon's stop, and at most until the scrape that found it
    # gone (when Prometheus did, not a scrape interval after the stop: a loaded machine
    # scrapes late), not after.
    gone = first_failed_scrape(run.stack, run.daemons["stops"])
    assert run.stopped_at - run.since - 2 * INTERVAL - SCRAPE - 1e-6 <= stops["held_gpu_seconds"]
    assert stops["held_gpu_seconds"] <= gone - run.since + 2 * INTERVAL + 1e-6
    # Energy only while seen: 60 W times held time.
    assert stops["energy_joules"] == pytest.approx(60 * stops["held_gpu_seconds"])
    assert hangs["energy_joules"] == pytest.approx(60 * hangs["held_gpu_seconds"])
    by_user = run.usage()
    assert by_user["totals"]["unseen_gpu_seconds"] > stops["unseen_gpu_seconds"]
    assert all(row["unseen_gpu_seconds"] is None for row in by_user["rows"])
    # The note names the hosts that went down or stale (the restarted one was down for a few
    # scrapes), and no host that was seen throughout; those have no unseen time.
    note = next(n for n in by_user["notes"] if n.startswith("not seen"))
    assert set(re.findall(r"(127\.0\.0\.1:\d+) ", note)) == {
        run.daemons[name].removeprefix("http://") for name in ("stops", "hangs", "restarts")}, note
    for name in ("shared", "probe"):
        assert by_host[run.daemons[name].removeprefix("http://")]["unseen_gpu_seconds"] == 0, name
    table = list(csv.DictReader(io.StringIO(hwinfo(
        "usage", "--prometheus", run.stack.prometheus, "--since", run.span,
        "--until", f"{run.until:.3f}", "--by", "host", "--format", "csv").stdout)))
    assert float(table[-1]["unseen_gpu_seconds"]) == pytest.approx(
        by_user["totals"]["unseen_gpu_seconds"])
    text = hwinfo("usage", "--prometheus", run.stack.prometheus, "--since", run.span,
                  "--until", f"{run.until:.3f}")
    assert "UNSEEN" in text.stdout and "note: not seen (down or stale)" in text.stdout


def test_held_time_is_busy_idle_unknown_or_accounted(run: Run) -> None:
    """busy + idle-held + unknown + accounted = held (docs/ledger.md), for every user and
    host, a host that went down or stale included, and the total."""
    parts = ("busy_gpu_seconds", "idle_held_gpu_seconds", "unknown_gpu_seconds",
             "accounted_gpu_seconds")
    for by in ("user", "host"):
        document = run.usage("--by", by)
        for row in (*document["rows"], document["totals"]):
            assert sum(row[part] for part in parts) == pytest.approx(row["held_gpu_seconds"]), (
                by, row)


def test_a_hung_gpu_is_charged_from_its_second_missed_sample_not_its_deadline(run: Run) -> None:
    """gus's NVML hangs in a sample, and his daemon waits 120 s before it gives up. By hand:
    his last good sample began at T (hwinfo_last_success_timestamp_seconds); the hung one
    SAMPLE (0.5 s) later; two sampling intervals (1 s) on, his daemon flags its GPU data
    stalled; a scrape (1 s) and an evaluation (1 s) later no one is charged. gus's last held
    evaluation: by T + 3.5 s (the deadline's flag alone would have charged him to T + 122)."""
    hangs = run.daemons["hangs"].removeprefix("http://")
    (good,) = run.stack.query(f'max_over_time(hwinfo_last_success_timestamp_seconds{{instance="{hangs}",'
                              f'source="gpu"}}[10m])')
    (held,) = run.stack.query('hwinfo:ledger_held:share{user="gus"}[10m]')
    last_charged = float(held["values"][-1][0])
    last_good = float(good["value"][1])
    # A third of the deadline: room for a loaded machine's late scrapes and evaluations, and
    # far from what the deadline's flag would have charged.
    assert last_charged - last_good < NVML_DEADLINE / 3, (last_good, last_charged)
    assert last_charged - last_good > SAMPLE  # the hung sample's start was still seen


def test_the_idle_holder_alert_survives_a_daemon_restart(run: Run) -> None:
    during = run.alert_states
    assert len(during) >= 5
    # Firing all through the restart, and the same alert (it did not start its hour again).
    assert {state for state, _ in during} == {"firing"}, during
    assert len({active for _, active in during}) == 1, during
    # The restart was a real gap: Prometheus failed to scrape the daemon.
    port = run.daemons["restarts"].rsplit(":", 1)[1]
    assert run.stack.query(f'min_over_time(up{{instance="127.0.0.1:{port}"}}[2m]) == 0')


def test_fleet_offers_only_memory_a_job_can_get(run: Run) -> None:
    # The empty A100 40 GB: 40 GiB total, the driver reserves some: 39.4 GiB free.
    def whole_gpus(size: str) -> list[dict[str, Any]]:
        fits = answer("fleet", "--prometheus", run.stack.prometheus, "--need-memory", size)["fits"]
        return [f for f in fits if f["kind"] == "gpu"]  # not the MIG GPU's profiles

    for size in ("40GiB", "39.9GiB"):
        assert whole_gpus(size) == [], size
    fits = whole_gpus("39GiB")
    assert [(f["instance"], f["gpu"]) for f in fits] == [
        (run.daemons["restarts"].removeprefix("http://"), 1)]
    assert fits[0]["memory_bytes"] / 2**30 == pytest.approx(39.4, abs=0.05)


def test_short_windows_are_answered_or_refused(run: Run) -> None:
    two = answer("usage", "--prometheus", run.stack.prometheus, "--since", "2s",
                 "--until", f"{run.until:.3f}")
    ana = next(row for row in two["rows"] if row["user"] == "ana")
    assert near(ana["held_gpu_seconds"], 0.25 * 2, 0.25 * 2 * INTERVAL)
    short = hwinfo("usage", "--prometheus", run.stack.prometheus, "--since", "500ms")
    assert short.returncode == 2 and one_error_line(short.stderr).endswith(
        "the range (500ms) is shorter than the ledger rules' interval (1s): no figure can be told for it")
    # A window that began before the rules' first evaluation: the time they did not cover is
    # said, and charged to no one.
    lab_age = run.until - run.started
    longer = answer("usage", "--prometheus", run.stack.prometheus, "--since", f"{round(lab_age) + 60}s",
                    "--until", f"{run.until:.3f}")
    assert any(note.startswith("the rules evaluated") for note in longer["notes"]), longer["notes"]
    ana = next(row for row in longer["rows"] if row["user"] == "ana")
    assert ana["held_gpu_seconds"] <= 0.25 * (lab_age + INTERVAL)
    # A window before the rules' first evaluation (and before the lab's first scrape).
    before = hwinfo("usage", "--prometheus", run.stack.prometheus, "--since", "5s",
                    "--until", f"{run.since - 3600:.0f}")
    assert before.returncode in (1, 2), before.stderr
    one_error_line(before.stderr)


def one_error_line(stderr: str) -> str:
    """The one line that says what is wrong (click adds its usage lines to exit-2 errors)."""
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]


def test_a_partial_cost_is_marked_in_the_csv(run: Run, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yml"
    prices.write_text("currency: EUR\ngpu_hour:\n  NVIDIA H100 80GB HBM3: 3\nkwh: 0.3\n")
    done = hwinfo("usage", "--prometheus", run.stack.prometheus, "--since", "10s",
                  "--prices", str(prices), "--format", "csv")
    assert done.returncode == 0, done.stderr
    total = list(csv.DictReader(io.StringIO(done.stdout)))[-1]
    assert "NVIDIA A100-SXM4-80GB" in total["unpriced_models"]


def test_advice_per_hold_tells_idle_holders_to_release(run: Run) -> None:
    advice = run.usage("--advise")["advice"]
    erin = [a for a in advice if a["user"] == "erin"]
    assert len(erin) == 1 and erin[0]["verdict"] == "release" and erin[0]["gpu"] == "0"
    # ben at 60 %: only the whole GPU covers it (a 4g.40gb is 4/7); the MIG GPU gives the
    # A100's profiles.
    ben = next(a for a in advice if a["user"] == "ben")
    assert ben["verdict"] == "none" and ben["profile"] is None


def test_advice_weighs_the_catalogue_shared_holds_and_no_one_elses_activity(run: Run) -> None:
    """On the probe host over the window (W evaluations of 1 s), by hand:
    ivy holds 12000 / 12512 of the H100 at 20 % (her own samples). No H100 here is in MIG
    mode, so no GPU exports its profiles: hwinfo's catalogue gives them (1g.10gb is 1/7 and
    9984 MiB, too small for 20 %; 2g.20gb 2/7 and 20096 MiB). A 2g.20gb would hold her all W
    seconds: it costs 2/7 W GPU-s, and frees her held (12000 / 12512 W) less that.
    pia's probe (512 MiB, no sample of its own) is judged by the GPU's 20 %, ivy's work: no
    verdict. joe's RTX 4090 has no MIG at all.

    | user | verdict          | profile | from      | freed                          |
    | ivy  | profile          | 2g.20gb | catalogue | held x (1 - (2/7) / (12000/12512)) |
    | pia  | not_own_activity | -       | -         | 0                              |
    | joe  | no_mig           | -       | -         | 0                              |
    """
    document = run.usage("--advise")
    advice = {a["user"]: a for a in document["advice"] if a["user"] in ("ivy", "pia", "joe")}
    ivy, pia, joe = advice["ivy"], advice["pia"], advice["joe"]
    assert (ivy["verdict"], ivy["profile"], ivy["profile_source"]) == ("profile", "2g.20gb", "catalogue")
    assert ivy["mean_utilization_ratio"] == pytest.approx(0.2)
    assert ivy["freed_gpu_seconds"] == pytest.approx(
        ivy["held_gpu_seconds"] * (1 - (2 / 7) / (12000 / 12512)))
    assert (pia["verdict"], pia["freed_gpu_seconds"]) == ("not_own_activity", 0)
    assert (joe["verdict"], joe["profile_source"]) == ("no_mig", None)
    assert any(note.startswith("MIG profiles of NVIDIA H100 80GB HBM3 from hwinfo's catalogue")
               for note in document["notes"])
    text = hwinfo("usage", "--prometheus", run.stack.prometheus, "--since", run.span,
                  "--until", f"{run.until:.3f}", "--advise")
    assert "2g.20gb (hwinfo's MIG catalogue) would do" in text.stdout, text.stdout
    assert "joe on GPU 1 of" in text.stdout and "no MIG on this model" in text.stdout


def test_the_lab_dashboard_prices_each_model_and_lists_every_holder(run: Run, tmp_path: Path) -> None:
    """The Lab dashboard over the window (S s), at its example prices: 2 per GPU-hour of an
    A100 80GB, 4 of an H100, energy left out (0 per kWh). By hand: ben holds 3/4 of an A100,
    0.75 S / 3600 x 2; ivy 12000/12512 of an H100, 0.959 S / 3600 x 4 (one price for every
    model costed her at 2: half of that). `hwinfo usage --prices` with the same prices
    agrees to the evaluation. cy, whose processes have no memory figure, is in the user
    picker and in who holds each GPU."""
    board = dashboard(LAB_DASHBOARD)
    prices = tmp_path / "prices.yml"
    prices.write_text("gpu_hour:\n  NVIDIA A100-SXM4-80GB: 2\n  NVIDIA H100 80GB HBM3: 4\nkwh: 0\n")
    costs = {row["user"]: row["cost"] for row in run.usage("--prices", str(prices))["rows"]}
    span = run.until - run.since
    assert costs["ben"] == pytest.approx(0.75 * span / 3600 * 2, abs=0.75 * 2 * INTERVAL / 3600 * 2)
    assert costs["ivy"] == pytest.approx(12000 / 12512 * span / 3600 * 4,
                                         abs=2 * INTERVAL / 3600 * 4)

    def panel_query(title: str, ref: str = "A") -> str:
        (panel,) = [p for p in panels(board) if p["title"] == title]
        expr = next(t["expr"] for t in panel["targets"] if t["refId"] == ref)
        # As an admin sets the board for rules every second (its queries say 60 s).
        expr = expr.replace("* 60 /", "* 1 /").replace("$__range", run.span)
        return substitute(expr.replace("$price_per_kwh", "0"), board)

    def at_until(expr: str) -> list[dict[str, Any]]:
        return run.stack.api("/api/v1/query", {"query": expr, "time": f"{run.until:.3f}"},
                             post=True)["result"]

    shown = {s["metric"]["user"]: float(s["value"][1]) for s in at_until(panel_query("Cost by user"))}
    for user in ("ben", "ivy", "ana", "cy"):
        assert shown[user] == pytest.approx(costs[user]), user
    unpriced = {s["metric"]["model"]: float(s["value"][1])
                for s in at_until(panel_query("GPU-hours without a price, by model"))}
    assert unpriced["NVIDIA H100 80GB HBM3"] == 0 and unpriced["NVIDIA GeForce RTX 4090"] > 0
    picker = variable_query(variables(board)["user"])
    selector = substitute(picker.removeprefix("label_values(").rsplit(",", 1)[0], board)
    users = {s["user"] for s in run.stack.api("/api/v1/series", {"match[]": selector})}
    holders = {s["metric"]["user"] for s in run.stack.query(panel_query("Who holds each GPU"))}
    for user in ("cy", "eve", "hal", "pia"):  # processes without memory, or a probe's 512 MiB
        assert user in users and user in holders, user
