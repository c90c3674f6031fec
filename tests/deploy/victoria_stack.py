"""A real VictoriaMetrics single-node and vmalert (Debian's `victoria-metrics`) on loopback,
scraping real `hwinfo serve` daemons: the ledger's second engine, set up as
docs/ledger-engines.md tells an admin to.

VictoriaMetrics scrapes and stores; vmalert evaluates the rule files against it and writes
the records back through its remote-write API; VictoriaMetrics answers `/api/v1/rules` and
`/api/v1/alerts` by asking vmalert (`-vmalert.proxyURL`), which `hwinfo usage` needs.
"""

from __future__ import annotations

import functools
import json
import subprocess
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from conftest import require_tool

from tests.deploy.prometheus_stack import Stack, free_ports, stop, tail, wait_for

LATENCY_OFFSET = "2s"  # VictoriaMetrics' -search.latencyOffset here, and vmalert's lookback


def _ready(url: str, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
    with urllib.request.urlopen(url + "/health", timeout=2) as answer:
        return answer.status == 200


@contextmanager
def victoria_scraping(hwinfo_urls: Sequence[str], workdir: Path,
                      rule_files: Sequence[Path]) -> Iterator[Stack]:
    """VictoriaMetrics scraping hwinfo every second and vmalert evaluating `rule_files`
    (their groups' intervals as written). Yields once both answer."""
    database, evaluator = require_tool("victoria-metrics"), require_tool("vmalert")
    workdir.mkdir(parents=True, exist_ok=True)
    scrape = workdir / "scrape.yml"
    scrape.write_text(json.dumps({"scrape_configs": [{
        "job_name": "hwinfo", "scrape_interval": "1s", "scrape_timeout": "1s",
        "static_configs": [{"targets": [url.removeprefix("http://") for url in hwinfo_urls]}],
    }]}))
    vm_port, vmalert_port, nobody = free_ports(3)
    vm, vmalert = f"http://127.0.0.1:{vm_port}", f"http://127.0.0.1:{vmalert_port}"
    log, vmalert_log = workdir / "victoria-metrics.log", workdir / "vmalert.log"
    with ExitStack() as running:
        processes = []
        for argv, path in (
            ([database, f"-httpListenAddr=127.0.0.1:{vm_port}",
              f"-storageDataPath={workdir / 'data'}", f"-promscrape.config={scrape}",
              f"-vmalert.proxyURL={vmalert}",
              # By default the last 30 s are hidden from queries (samples still arriving);
              # the tests' samples are a second apart and each is awaited. Two seconds: new
              # samples become searchable within one (VictoriaMetrics flushes them each second).
              f"-search.latencyOffset={LATENCY_OFFSET}"], log),
            ([evaluator, *(f"-rule={path}" for path in rule_files),
              f"-datasource.url={vm}", f"-remoteWrite.url={vm}", f"-remoteRead.url={vm}",
              # Every rule of an evaluation reads the same instant, that far back, as
              # docs/ledger-engines.md tells an admin to.
              f"-datasource.lookback={LATENCY_OFFSET}",
              f"-httpListenAddr=127.0.0.1:{vmalert_port}",
              # Alerts are read from its API here; nothing listens on this port.
              f"-notifier.url=http://127.0.0.1:{nobody}",
              "-remoteWrite.flushInterval=200ms"], vmalert_log),
        ):
            with path.open("wb") as out:
                process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL)
            running.callback(stop, process)
            processes.append(process)
        try:
            for url, process in ((vm, processes[0]), (vmalert, processes[1])):
                wait_for(f"{process.args[0]} to answer", functools.partial(_ready, url, process))
            yield Stack(hwinfo_urls[0] if hwinfo_urls else "", vm, len(hwinfo_urls), log,
                        processes[0])
        except BaseException:
            for path in (log, vmalert_log):
                print(f"--- the last lines of {path} ---\n{tail(path)}")
            raise

