"""The command the `hwinfo run` tests run: it proves nobody else holds its devices meanwhile.

    python holder.py WORK ID HOLD

It takes an exclusive flock on WORK/locks/<uuid> of each device in CUDA_VISIBLE_DEVICES: a
lock it cannot have means another command was handed the same device at the same time, and
it says so in WORK/violations. It then writes WORK/started/ID (JSON: its devices, its claim's
number, its pid), and holds for HOLD seconds, or, with HOLD "release", until WORK/release/ID
exists.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time


def main(work: str, ident: str, hold: str) -> None:
    devices = os.environ["CUDA_VISIBLE_DEVICES"].split(",")
    assert os.environ["NVIDIA_VISIBLE_DEVICES"] == os.environ["CUDA_VISIBLE_DEVICES"]
    with open(os.environ["HWINFO_CLAIM"]) as claim:
        sequence = json.load(claim)["sequence"]
    locks = []
    for uuid in devices:
        # Read-only: a flock needs no more, and the file may be another user's.
        fd = os.open(os.path.join(work, "locks", uuid), os.O_RDONLY | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with open(os.path.join(work, "violations"), "a") as out:
                out.write(f"{uuid} handed to {ident} while another held it\n")
        locks.append(fd)
    temp = os.path.join(work, "started", f".{ident}")
    with open(temp, "w") as out:
        json.dump({"id": ident, "devices": devices, "sequence": sequence, "pid": os.getpid()},
                  out)
    os.rename(temp, os.path.join(work, "started", ident))
    if hold == "release":
        give_up = time.monotonic() + 600  # against a hang only
        while not os.path.exists(os.path.join(work, "release", ident)):
            if time.monotonic() > give_up:
                sys.exit("never released")
            time.sleep(0.05)
    else:
        time.sleep(float(hold))


if __name__ == "__main__":
    main(*sys.argv[1:4])
