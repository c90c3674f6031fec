"""What a scenario gets for a value it leaves out, where no board gives one."""

from __future__ import annotations

# CUDA version a driver branch ships with, for the default of driver.cuda_version.
CUDA_BY_BRANCH = {
    450: 11000,
    455: 11010,
    460: 11020,
    465: 11030,
    470: 11040,
    495: 11050,
    510: 11060,
    515: 11070,
    520: 11080,
    525: 12000,
    530: 12010,
    535: 12020,
    545: 12030,
    550: 12040,
    555: 12050,
    560: 12060,
    565: 12070,
    570: 12080,
    575: 12090,
    580: 13000,
    590: 13010,
}

# What every real capture shows as "Accounting Mode Buffer Size" (captures/, drivers 525-610).
DEFAULT_ACCOUNTING_BUFFER = 4000

# NVML's profile IDs and memory-slice sizes by compute slices on the 8-slice boards.
# Unknown: both for boards outside the catalogue (A30 differs); a described GPU instance can
# give them (`profile_id`, `memory_slices`).
PROFILE_ID_GUESS = {1: 19, 2: 14, 3: 9, 4: 5, 7: 0}
MEMORY_SLICES_GUESS = {3: 4, 7: 8}
