"""`hwinfo serve`, the Prometheus exporter: metrics rendered in the background, served over HTTP."""
