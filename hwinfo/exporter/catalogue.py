"""Every metric hwinfo exports, in exposition order, and the README's table of them."""

from __future__ import annotations

from hwinfo.exporter import (
    metrics_claims,
    metrics_gpu,
    metrics_host,
    metrics_jobs,
    metrics_mig,
    metrics_network,
    metrics_self,
    metrics_storage,
    metrics_users,
)
from hwinfo.exporter.metric import Metric

# Metrics read from a snapshot, by group; each group can be left out with --no-collector.
SNAPSHOT_GROUPS: dict[str, tuple[Metric, ...]] = {
    "host": metrics_host.METRICS,
    "storage": metrics_storage.METRICS,
    "network": metrics_network.METRICS,
    "gpu": metrics_gpu.METRICS,
    "mig": metrics_mig.METRICS,
    "users": metrics_users.METRICS,
    "claims": metrics_claims.METRICS,
    "jobs": metrics_jobs.METRICS,
}
# Metrics read from the daemon's own status.
SELF_METRICS: tuple[Metric, ...] = metrics_self.METRICS


def all_metrics() -> list[Metric]:
    return [m for group in SNAPSHOT_GROUPS.values() for m in group] + list(SELF_METRICS)


def markdown_table() -> str:
    """The catalogue as the README shows it (a test keeps the README equal to this)."""
    rows = [
        "| metric | type | unit | labels | meaning | report/JSON field |",
        "|---|---|---|---|---|---|",
    ]
    for m in all_metrics():
        labels = ", ".join(m.labels)
        meaning = " ".join(filter(None, (m.help, m.bound, "Off by default." if m.optional else "")))
        rows.append(
            f"| `{m.full_name}` | {m.type} | {m.unit} | {labels} | {meaning} | "
            f"{'`' + m.json + '`' if m.json else ''} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
