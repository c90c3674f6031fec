"""The entries `hwinfo run` writes stay ones every reader accepts, whatever command it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwinfo.collect.claims import MAX_COMMAND_ARGS, MAX_DEVICES, MAX_ENTRY_BYTES, read_claims
from hwinfo.model.claims import Request
from hwinfo.run.claimdir import Directory

MIG = "MIG-GPU-4c14c4fb-efc8-5f42-9daf-2fb5771dd1e1/{}/0"


@pytest.mark.parametrize("argv", [
    ["python", "train.py", *(f"data/shard-{n:05}.tar" for n in range(400))],  # a shell glob
    ["sh", "-c", "x" * 40000],
    ["python", *["é" * 3000] * 20],  # JSON writes each as six bytes
], ids=["many arguments", "one huge argument", "long non-ASCII arguments"])
def test_a_claim_of_a_long_command_is_still_a_claim(tmp_path: Path, argv: list[str]) -> None:
    """A command past what a reader takes (256 arguments, a 16 KiB file) made its claim one
    every other run ignored, which then handed out the same device. Its claim keeps the
    command's start, and says what was left out."""
    claims = tmp_path / "claims"
    claims.mkdir()
    claims.chmod(0o1777)
    devices = [MIG.format(n) for n in range(MAX_DEVICES)]  # the most a claim can name
    directory = Directory(str(claims))
    held = directory.add(".claim", Request(MAX_DEVICES, 2**50, None, True), argv, devices)
    try:
        assert (claims / held.name).stat().st_size <= MAX_ENTRY_BYTES
        found = read_claims(str(claims), with_commands=True)
        assert (found.ignored, [c.devices for c in found.claims]) == ([], [devices])
        (claim,) = found.claims
        assert claim.name == argv[0]
        assert claim.command is not None and claim.command.startswith(f"{argv[0]} ")
        assert claim.command.endswith(("…'", "more arguments)'"))
    finally:
        held.release()
        directory.close()


def test_a_short_command_is_kept_whole(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    claims.chmod(0o1777)
    argv = ["python", "train.py", *map(str, range(MAX_COMMAND_ARGS - 2))]
    directory = Directory(str(claims))
    held = directory.add(".claim", Request(1, None, None, False), argv, [MIG.format(1)])
    try:
        (claim,) = read_claims(str(claims), with_commands=True).claims
        assert claim.command == " ".join(argv)
    finally:
        held.release()
        directory.close()
