"""Bounds on every number a scenario gives, and the oldest driver with MIG."""

from __future__ import annotations

# MIG arrived with R450 (the MIG User Guide's driver requirements); a scenario cannot ask for
# MIG on an older driver.
MIG_MIN_DRIVER = (450,)

# Bounds on every number a scenario gives. A value past them is no GPU's, and would not fit
# the C type NVML returns it in (ctypes would wrap it silently), so it is refused, naming the
# field; docs/scenario-format.md lists them.
MAX_GPUS = 255  # default bus ids are 00000000:01:00.0 ... 00000000:FF:00.0
MAX_TEMPERATURE_C = 255
MAX_POWER_W = 4000.0  # NVML gives power in mW in an unsigned int (4294 W)
MAX_ENERGY_J = 1e15  # 31 years at 1 MW; NVML's mJ counter is 64-bit
MAX_CLOCK_MHZ = 100_000
MAX_MEMORY_MIB = 1 << 24  # 16 TiB
MAX_COUNT = 0xFFFF_FFFF  # counters, ids and samples: NVML's unsigned int
MAX_DELAY_SECONDS = 86_400.0  # a day: longer than any deadline a hang is meant to trip
MAX_PCIE_GEN = 16
MAX_PCIE_WIDTH = 32
MAX_NUMA_NODE = 1023  # the kernel's MAX_NUMNODES at its largest (NODES_SHIFT 10)
MAX_MINOR_NUMBER = 254  # /dev/nvidia0../dev/nvidia254; 255 is /dev/nvidiactl
MAX_CUDA_CORES = 1 << 20
MAX_BUS_WIDTH_BITS = 1 << 16
MAX_SYMBOLS = 4096  # a real libnvidia-ml exports about 420
MAX_SMS = 4096  # streaming multiprocessors of one GPU or instance (B200: 148)
MAX_ACCOUNTING_BUFFER = 1 << 20
MAX_RUN_MS = 10**12  # 31 years
MAX_TEXT_BYTES = 4096  # any string: a GPU job's command line is rarely past a few KiB
MAX_NAME_BYTES = 95  # NVML_DEVICE_NAME_V2_BUFFER_SIZE (96) less its NUL
MAX_USER_BYTES = 256  # LOGIN_NAME_MAX on Linux, with its NUL (useradd takes 32)
