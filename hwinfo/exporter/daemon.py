"""`hwinfo serve`: the sampler plus the HTTP routes that serve what it published."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import hwinfo
from hwinfo.collect.deadline import GuardedGpu
from hwinfo.collect.gpu.accounting_state import StateKeeper
from hwinfo.collect.snapshot import SnapshotCollector
from hwinfo.exporter.exposition import OPENMETRICS, TEXT_CONTENT_TYPE, Rendered, Selection, render
from hwinfo.exporter.http import Handler, Request, Response, Server, preferred_type
from hwinfo.exporter.pages import MachinePage, asset_routes
from hwinfo.exporter.sampler import Sampler
from hwinfo.exporter.signals import serve_until_stopped
from hwinfo.exporter.status import DaemonStatus
from hwinfo.exporter.webconfig import WebConfig
from hwinfo.logs import get_logger

log = get_logger("hwinfo.daemon")

_OPENMETRICS_TYPE = OPENMETRICS.partition(";")[0]

# SIGTERM and SIGINT end the daemon within a second: the server takes at most a quarter of
# it (http._STOP_GRACE), the sampler and NVML at most this.
_WIND_DOWN_SECONDS = 0.5


@dataclass
class Options:
    interval: float = 5.0
    nvml_timeout: float = 5.0
    selection: Selection = field(default_factory=Selection)
    state_dir: str | None = None  # where state is kept across restarts (accounting_state.py)


def _wants_openmetrics(request: Request) -> bool:
    """Whether the scraper weights OpenMetrics above the text format: Prometheus lists the
    formats of its scrape_protocols with falling q-values, and q=0 refuses one."""
    accept = request.headers.get("accept", "")
    return preferred_type(accept, ("text/plain", _OPENMETRICS_TYPE)) == _OPENMETRICS_TYPE


class Daemon:
    def __init__(self, collector: SnapshotCollector, options: Options) -> None:
        if collector.gpu is not None and not isinstance(collector.gpu, GuardedGpu):
            collector.gpu = GuardedGpu(collector.gpu, options.nvml_timeout)
        self.status = DaemonStatus(version=hwinfo.__version__, start_time_seconds=time.time())
        keeper = None
        if options.state_dir is not None and isinstance(collector.gpu, GuardedGpu):
            keeper = StateKeeper(options.state_dir, collector.gpu.inner)
        self.sampler = Sampler(collector, options.selection, options.interval, self.status,
                               keeper)
        self.collector = collector
        self.page = MachinePage(lambda: self.sampler.latest, options.interval,
                                options.nvml_timeout, hwinfo.__version__)
        # Served until the first sample is in: self-metrics only, so the target is up.
        self._empty: Rendered = render(None, self.status, options.selection)

    def routes(self) -> dict[str, Handler]:
        return {
            "/": self.page,
            "/metrics": self._metrics,
            "/-/healthy": lambda _: Response(body=b"OK\n"),
            "/-/ready": self._ready,
            "/api/v1/snapshot": self._snapshot,
            **asset_routes(),
        }

    def _metrics(self, request: Request) -> Response:
        latest = self.sampler.latest
        rendered = latest.metrics if latest is not None else self._empty
        if _wants_openmetrics(request):
            return Response(body=rendered.openmetrics, gzip_body=rendered.openmetrics_gzip,
                            content_type=OPENMETRICS, vary=("Accept",))
        return Response(body=rendered.text, gzip_body=rendered.text_gzip,
                        content_type=TEXT_CONTENT_TYPE, vary=("Accept",))

    def _ready(self, _: Request) -> Response:
        # Published, not just counted: status is updated before the sample's rendering is.
        if self.sampler.latest is not None and self.status.ready:
            return Response(body=b"Ready\n")
        return Response(503, b"Not ready: no successful sample yet\n")

    def _snapshot(self, _: Request) -> Response:
        latest = self.sampler.latest
        if latest is None:
            return Response(503, b'{"error": "no sample yet"}\n', "application/json")
        body, compressed = latest.json()
        return Response(body=body, gzip_body=compressed, content_type="application/json")

    def run(self, address: tuple[str, int], web_config: WebConfig | None) -> int | None:
        """Serve until SIGTERM or SIGINT, and say which; ServerError if the address cannot
        be used."""
        return self.serve(Server(address, self.routes(), web_config))

    def serve(self, server: Server) -> int | None:
        """Sample and serve on a bound server until SIGTERM or SIGINT (main thread only);
        the signal that stopped it (exporter/signals.py; SIGHUP reloads the web config)."""
        try:
            return serve_until_stopped(server, log, self.sampler.start)
        finally:
            self._wind_down(_WIND_DOWN_SECONDS)

    def _wind_down(self, seconds: float) -> None:
        """Stop the sampler, then close the collectors, waiting for that at most `seconds`.

        A sample can be waiting on a hung NVML call; the exit must not wait for it. Every
        thread left behind is a daemon thread, so the process still ends.
        """

        def finish() -> None:
            self.sampler.stop()
            self.collector.close()

        closing = threading.Thread(target=finish, name="hwinfo-stop", daemon=True)
        closing.start()
        closing.join(seconds)
        if closing.is_alive():
            log.info("sampler or NVML still busy after %.1f s: exiting without them", seconds)
