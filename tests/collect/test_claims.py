"""The claims directory read as hostile input: what counts is a live, sound entry of its owner;
links, FIFOs, huge files, other users' files, garbage are left alone with a line, never followed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hwinfo.collect.claims import (
    MAX_ENTRIES,
    MAX_ENTRY_BYTES,
    ClaimsError,
    open_directory,
    read_claims,
)
from hwinfo.model.claims import Request
from hwinfo.run.claimdir import Directory

ME = os.geteuid()
ASKED = Request(1, None, None, False)
GPU = "GPU-4c14c4fb-efc8-5f42-9daf-2fb5771dd1e1"


@pytest.fixture
def claims(tmp_path: Path) -> Path:
    path = tmp_path / "claims"
    path.mkdir(mode=0o1777)
    path.chmod(0o1777)
    return path


def entry(directory: Path, text: str | bytes, name: str | None = None, mode: int = 0o644,
          uid: int = ME) -> Path:
    """A file as someone other than hwinfo run might write it (not locked: dead unless held)."""
    path = directory / (name or f"{uid}.{os.getpid()}.0123456789abcdef.claim")
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)
    os.chown(path, uid, -1)
    return path


def sound(devices: list[str]) -> str:
    return json.dumps({"devices": devices, "command": ["python", "train.py"],
                       "request": {"gpus": 1, "need_memory_bytes": None, "mig_profile": None,
                                   "share": False}})


def test_a_live_claim_is_read_with_its_owner_and_command(claims: Path) -> None:
    directory = Directory(str(claims))
    held = directory.add(".claim", ASKED, ["python", "train.py", "--secret=x"], [GPU])
    try:
        found = read_claims(str(claims))
        assert found.present and not found.ignored
        (claim,) = found.claims
        assert (claim.devices, claim.uid, claim.user, claim.pid, claim.name, claim.command) == (
            [GPU], ME, "root", os.getpid(), "python", None)
        # Its time is the kernel's (when it took its name), not one the file could claim.
        assert claim.since_seconds == (claims / held.name).stat().st_ctime_ns / 1e9
        assert read_claims(str(claims), with_commands=True).claims[0].command == \
            "python train.py --secret=x"
    finally:
        held.release()
        directory.close()
    assert read_claims(str(claims)).claims == [] and list(claims.iterdir()) == []


def test_a_claim_whose_process_is_gone_is_no_claim(claims: Path) -> None:
    """Its lock went with its process (a file nobody holds): not counted, no line either."""
    entry(claims, sound([GPU]))
    found = read_claims(str(claims))
    assert (found.claims, found.ignored) == ([], [])


def test_a_claim_given_a_second_name_counts_once_and_still_counts(claims: Path) -> None:
    """Where fs.protected_hardlinks is off, anyone may link another's live claim: it must not
    be doubled, nor refused (which would end it)."""
    directory = Directory(str(claims))
    held = directory.add(".claim", ASKED, ["job"], [GPU])
    try:
        os.link(claims / held.name, claims / f"{ME}.1.0123456789abcdef.claim")
        found = read_claims(str(claims))
        assert ([c.devices for c in found.claims], found.ignored) == ([[GPU]], [])
    finally:
        held.release()
        directory.close()


def test_a_claim_given_ticket_names_stays_a_claim(claims: Path) -> None:
    """A link named as a ticket must not turn a live claim into a waiter, which freed its
    device for the next run (two runs handed one GPU), whichever name the listing gives first."""
    directory = Directory(str(claims))
    held = directory.add(".claim", ASKED, ["job"], [GPU])
    try:
        for pid in range(1, 21):
            os.link(claims / held.name, claims / f"{ME}.{pid}.0123456789abcdef.wait")
        found = read_claims(str(claims))
        assert ([c.devices for c in found.claims], found.waiters, found.ignored) == (
            [[GPU]], [], [])
    finally:
        held.release()
        directory.close()


def test_waiters_are_in_the_order_they_came(claims: Path) -> None:
    directory = Directory(str(claims))
    tickets = [directory.add(".wait", Request(n, None, None, False), ["job"], sequence=n)
               for n in (1, 2, 3)]
    try:
        found = read_claims(str(claims))
        assert [(w.position, w.request.gpus) for w in found.waiters] == [(1, 1), (2, 2), (3, 3)]
    finally:
        for ticket in tickets:
            ticket.release()
        directory.close()


@pytest.mark.parametrize(("make", "says"), [
    (lambda d: (d / f"{ME}.1.0123456789abcdef.claim").symlink_to("/etc/passwd"),
     "is a symbolic link"),
    (lambda d: os.mkfifo(d / f"{ME}.1.0123456789abcdef.claim"), "is not a regular file"),
    (lambda d: (d / f"{ME}.1.0123456789abcdef.wait").mkdir(), "is not a regular file"),
    (lambda d: entry(d, "x" * (MAX_ENTRY_BYTES + 1)), f"more than a claim ({MAX_ENTRY_BYTES})"),
    (lambda d: entry(d, sound([GPU]), name=f"{ME}.1.0123456789abcdef.claim", uid=4242),
     "belongs to uid 4242, not to uid 0 its name gives"),
    (lambda d: entry(d, sound([GPU]), mode=0o666), "is writable by others than its owner"),
    (lambda d: (d / "notes.txt").write_text("hi"), "not a claim's name"),
])
def test_hostile_entries_are_ignored_with_a_line(claims: Path, make, says: str) -> None:
    make(claims)
    found = read_claims(str(claims))
    assert found.claims == [] and found.ignored and all(says in line for line in found.ignored), \
        found.ignored


@pytest.mark.parametrize(("content", "says"), [
    (b"\xff\xfe not json", "is not a claim (not a JSON object)"),
    (b"[" * 8000 + b"]" * 8000, "is not a claim (not a JSON object)"),
    (b'"a string"', "is not a claim (not a JSON object)"),
    (json.dumps({"devices": ["../../etc/passwd"], "command": ["x"]}).encode(),
     "devices that are not GPU or MIG UUIDs"),
    (json.dumps({"devices": [GPU] * 65, "command": ["x"]}).encode(),
     "devices that are not GPU or MIG UUIDs"),
    (json.dumps({"devices": [GPU], "command": ["x"], "sequence": -1}).encode(),
     "has no number in line"),
    (json.dumps({"devices": [GPU], "command": ["x"], "sequence": 2**60}).encode(),
     "has no number in line"),
    (json.dumps({"devices": [GPU], "command": []}).encode(), "has no command"),
    (json.dumps({"devices": [GPU], "command": ["x"],
                 "request": {"gpus": 10**9, "need_memory_bytes": None, "mig_profile": None,
                             "share": False}}).encode(), "asks for something no host has"),
])
def test_a_live_file_that_is_no_claim_is_ignored_with_a_line(claims: Path, content: bytes,
                                                             says: str) -> None:
    """Garbage held alive by its owner: refused, never taken for a claim of anything."""
    import fcntl
    import struct

    path = entry(claims, content)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0))
        found = read_claims(str(claims))
    finally:
        os.close(fd)
    assert found.claims == [] and len(found.ignored) == 1 and says in found.ignored[0], found.ignored


def test_a_directory_of_a_million_entries_costs_a_bounded_reading(claims: Path) -> None:
    for n in range(MAX_ENTRIES + 10):
        (claims / f"junk{n}").touch()
    found = read_claims(str(claims))
    assert len(found.ignored) == MAX_ENTRIES + 1
    assert f"more than {MAX_ENTRIES} entries" in found.ignored[-1]


def test_a_missing_directory_is_no_claims(tmp_path: Path) -> None:
    found = read_claims(str(tmp_path / "absent"))
    assert (found.present, found.claims, found.ignored) == (False, [], [])


@pytest.mark.parametrize(("setup", "says"), [
    (lambda p: (p.mkdir(), p.chmod(0o777)), "writable by others without the sticky bit"),
    (lambda p: (p.mkdir(), os.chown(p, 4242, -1)), "belongs to uid 4242"),
    (lambda p: (p.parent.joinpath("real").mkdir(mode=0o1777), p.symlink_to("real")),
     "is a symbolic link"),
    (lambda p: p.write_text("not a directory"), "is not a directory"),
])
def test_a_directory_anyone_could_tamper_with_is_refused(tmp_path: Path, setup, says: str) -> None:
    path = tmp_path / "claims"
    setup(path)
    with pytest.raises(ClaimsError, match=says):
        open_directory(str(path))
    with pytest.raises(ClaimsError, match=says):
        read_claims(str(path))
