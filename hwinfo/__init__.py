"""hwinfo: hardware inventory and telemetry for NVIDIA GPU servers."""

__version__ = "0.1.0"
