"""NVIDIA GPUs through NVML (the `pynvml` module): the only package that calls NVML."""
