"""The lab ledger: who held which GPU, busy or idle, and where a job fits now.

Everything here is answered from Prometheus's HTTP API: Prometheus keeps the history that
`hwinfo serve` exports and the recording rules of prometheus/hwinfo-ledger.yml do the
apportioning, so the ledger grows with Prometheus (or Thanos, Mimir, VictoriaMetrics) and
never keeps data of its own.
"""
