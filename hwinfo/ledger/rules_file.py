"""prometheus/hwinfo-ledger.yml as it is shipped: the records of hwinfo/ledger/rules.py with
the comments that explain them, and the idle-holder alert.

    python -m hwinfo.ledger.rules_file > prometheus/hwinfo-ledger.yml
"""

from __future__ import annotations

import textwrap

from hwinfo.ledger.rules import HOURLY, IDLE_HELD, JOBS, MINUTE, Record

HEADER = """\
# Recording rules for the lab ledger: who holds which GPU, busy or idle, at each evaluation.
#
#   promtool check rules prometheus/hwinfo-ledger.yml
#   promtool test rules prometheus/hwinfo-ledger.test.yml
#
# Written by hwinfo/ledger/rules.py (`python -m hwinfo.ledger.rules_file > this file`), which
# composes each expression from named fragments: seen, a holder's weight, held, activity.
# Every record of the minute group is computed from the exporter's raw series alone (and the
# constant idle threshold), never from another record of the same evaluation: vmalert writes
# a rule's results back through remote write, after the next rule has read its input, so a
# record read in the evaluation that writes it was that record's previous sample there
# (docs/ledger-engines.md). That is why each expression spells out what it is made of, as
# long as it is: the one concept is the same text in every record that reads it.
#
# A "device" is a whole GPU not in MIG mode, or a MIG device. Every :share series below is a
# share of one GPU held at that instant (0..1), labelled with the user, the device (job,
# instance, gpu, uuid, gpu_instance_id and compute_instance_id, the last two empty for whole
# GPUs) and the GPU's model; docs/ledger.md says what each figure means:
#   held     a user holds a device while one of their processes is on it, or while `hwinfo
#            run` claims it for them with no process on it; users of one device
#            split it by their GPU memory, or by their process counts where NVML reports no
#            memory for a holder's processes; a MIG device counts as its compute slices' share
#            of the GPU (a 3g.40gb on an A100 is 3/7). Only while the GPU is seen: its host
#            answers, and its GPU data is under 60 s old and not stalled
#   busy     held while the holder is busy: their own processes' SM utilization (whole GPUs,
#            where NVML samples them), else the device's activity (utilization, or GPM SM
#            activity of a MIG device's GPU instance), above the idle threshold (5 %)
#   idle     held while that activity is at or below the idle threshold
#   unknown  held where no activity signal exists (MIG before Hopper): never counted as idle
#   device_judged  the part of held whose busy/idle was judged by the device's activity
#   unmetered      the part of held on GPUs split by process count (memory not reported)
#   unseen   each GPU seen in the last hour that cannot be seen now (host down, data stale):
#            charged to no one
# GPU-seconds over a range R are sum_over_time(series[R]) * the group's interval (1m here);
# hwinfo:ledger_evaluations:count is 1 at each evaluation, so that a range's coverage shows.
# The idle threshold is one record, hwinfo:ledger_idle_threshold:ratio: change its 0.05, and
# busy, idle, the idle-holder alert, jobs' shares and `hwinfo usage --advise` follow. It is
# the one record the others read: a constant, the same at every evaluation, so reading its
# previous sample (vmalert) changes nothing but the first evaluation, which has none: that
# evaluation's holds are unknown, never dropped.
# Every `and` and `unless` names the labels it matches on: MetricsQL (VictoriaMetrics) keeps
# a compared series' metric name and matches on it where no labels are named, so an unnamed
# `held and (activity > 0.05)` matched nothing there (docs/ledger-engines.md).
groups:
  - name: hwinfo-ledger
    interval: 1m
    rules:
"""

ALERT_COMMENT = """\
Tell the user who holds a GPU (or MIG device) that does nothing. `for` is how long
before they hear of it, and the summary and description say that time: change the
three together. The example Alertmanager configuration (alertmanager.yml) mails each
user by the `user` label, and holders that are not people (containers, pods, root) to
the admins. A hold of a Slurm job, pod or container (hwinfo:ledger_attributed_idle:share)
is an alert of its own, labelled with its slurm_job, pod_uid and container_id; a user's
other processes on that device then add nothing to it. A GPU that cannot be seen for a
while (its daemon restarting, a scrape gap, stale data) keeps the state it had when
last seen idle for the past 10 minutes, so a restart neither resolves the alert nor
starts its hour again; busy or released ends it at once. Whether a hold is idle now is
computed from raw series, as the records are; only an unseen GPU's past is read from
the records of earlier evaluations, so a GPU seen again is judged at once on both
engines."""

ALERT_TAIL = r"""        for: 1h
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.user }}{{ with $labels.slurm_job }} (Slurm job {{ . }}){{ end }}{{ with $labels.pod_uid }} (pod {{ . }}){{ else }}{{ with $labels.container_id }} (container {{ reReplaceAll \"^(.{12}).*$\" \"$1\" . }}){{ end }}{{ end }} holds {{ if $labels.gpu_instance_id }}MIG device GI {{ $labels.gpu_instance_id }} CI {{ $labels.compute_instance_id }} of {{ end }}GPU {{ $labels.gpu }} on {{ $labels.instance }}, which has been idle for 1h"
          description: >-
            Processes of {{ $labels.user }}{{ with $labels.slurm_job }} in Slurm job {{ . }}{{ end }}{{ with $labels.pod_uid }} in pod {{ . }}{{ else }}{{ with $labels.container_id }} in container {{ . }}{{ end }}{{ end }}
            hold memory on GPU {{ $labels.gpu }} ({{ $labels.uuid }}) of {{ $labels.instance }},
            and the GPU (or the MIG device they use) has done at most 5 % work for 1h. While it
            is held, nobody else can use it: if the job is done or waiting on something else,
            end it (`hwinfo report --gpu {{ $labels.gpu }}` lists the processes){{ if $labels.gpu_instance_id }};
            a MIG device is already a small slice: release it{{ else }}, or move the work to a
            smaller MIG slice{{ end }}.
"""

JOBS_HEADER = """\

  # --- Jobs' own resources (docs/jobs.md): each Slurm job's, pod's and container's CPU, host
  # memory, I/O and pressure, from its own cgroup, beside its GPU time above.
  # Every rule of this group reads the exporter's series only (rate() over them), never a
  # record, as the records above do. A series exists while the job has a process on a GPU (the
  # exporter stops serving it after, and `and` on the raw series ends each rate with it, where
  # rate()'s window would run on). Sums over a range times the interval are CPU-seconds and
  # bytes; a ratio's sum over its count of evaluations is its mean. Each rate's window ([1m])
  # is the group's interval, so that the windows tile the job's time: a longer one would count
  # the job's first and last minutes short (rate() divides by the window, of which a starting
  # series fills part). Change the two together (a trial lab's 15s); a window must hold two
  # scrapes.
  - name: hwinfo-ledger-jobs
    interval: 1m
    rules:
"""

HOURLY_HEADER = """\

  # Hourly roll-ups, so that a long range reads hours and only its edges read minutes
  # (docs/ledger-engines.md). Each sums (or takes the peak of) what the minute rules above
  # recorded in the hour that ends half an interval (30 s) before its evaluation, summed by
  # exactly what `hwinfo usage` groups by: by user and model (`_by_user_1h`, for --by user
  # and --by model), by host and model (`_by_host_1h`, for --by host), and the attributed
  # shares by user, model, job, pod and container (`_1h`). A month's cost is in
  # its series: a 100-host lab of 40 users has 40 series a figure by user, where one by
  # host and user would be 4,000. The window never begins or ends on a minute record,
  # whatever the two groups' phases (live or backfilled), and holds only records written at
  # least 30 s earlier. `hwinfo usage` reads the roll-ups of the whole hours inside its range
  # and the minute records around them, and checks each run of hours against the minute
  # evaluations it should hold (a roll-up made before late data arrived is not used). Keep a
  # year of them past raw retention as docs/ledger-engines.md says.
  - name: hwinfo-ledger-hourly
    interval: 1h
    rules:
"""


def _comment(text: str) -> str:
    return "".join(f"      # {line}".rstrip() + "\n" for line in text.split("\n")) if text else ""


def _expr(expr: str) -> str:
    if "\n" not in expr:
        return f"        expr: {expr}\n"
    return "        expr: |\n" + textwrap.indent(expr, " " * 10) + "\n"


def _record(record: Record) -> str:
    return _comment(record.comment) + f"      - record: {record.name}\n" + _expr(record.expr)


def render() -> str:
    """The whole file."""
    minute = "".join(_record(record) for record in MINUTE)
    alert = (_comment(ALERT_COMMENT) + "      - alert: HwinfoGpuIdleHeld\n" + _expr(IDLE_HELD)
             + ALERT_TAIL)
    jobs = "".join(_record(measure.record) for measure in JOBS)
    return (HEADER + minute + "\n" + alert + JOBS_HEADER + jobs
            + HOURLY_HEADER + "".join(_record(r) for r in HOURLY))


if __name__ == "__main__":
    print(render(), end="")
