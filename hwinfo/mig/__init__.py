"""NVIDIA's MIG as documented for each board: profiles, placements and which boards have them.

Hardware knowledge, below the two that use it: the simulator, which answers NVML's MIG calls
from it, and the ledger, whose `--advise` weighs the profiles of models no GPU exports.
"""
