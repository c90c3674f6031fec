"""GPU processes' owners as the process table names them."""

from __future__ import annotations

import pytest

from hwinfo.collect.gpu.owners import ProcessOwner


@pytest.mark.parametrize(("command", "executable", "name"), [
    ("/usr/bin/python3 train.py", None, "python3"),
    ("   ", None, None),  # a process that set its title to blanks (setproctitle, exec -a)
    ("", None, None),
    (None, r"C:\Program Files\NVIDIA Corporation\NVIDIA Overlay.exe", "NVIDIA Overlay.exe"),
])
def test_the_command_name(command: str | None, executable: str | None, name: str | None) -> None:
    assert ProcessOwner("alice", command, executable).name == name


def test_a_bad_uid_or_passwd_below_root_costs_the_name_only(tmp_path) -> None:
    import os

    from hwinfo.collect.gpu.owners import _user_name
    from hwinfo.collect.sysfs import Root

    (tmp_path / "etc").mkdir()
    os.mkfifo(tmp_path / "etc" / "passwd")  # never waited on, never fatal
    assert _user_name(Root(str(tmp_path)), "²") == "²"


def test_a_tree_s_oversized_status_costs_that_process_its_owner_only(tmp_path) -> None:
    from hwinfo.collect.gpu.owners import STATUS_MAX_BYTES, tree_owners
    from hwinfo.collect.sysfs import Root

    for pid, padding in ((10, 0), (11, STATUS_MAX_BYTES)):
        (tmp_path / "proc" / str(pid)).mkdir(parents=True)
        (tmp_path / "proc" / str(pid) / "status").write_text(
            "Name:\tpython3\nUid:\t0\t0\t0\t0\n" + "x" * padding)
        (tmp_path / "proc" / str(pid) / "cmdline").write_bytes(b"python3\x00train.py\x00")
    scenario = ProcessOwner("from-the-scenario", None)
    owner_of = tree_owners(Root(str(tmp_path)), lambda pid: scenario)
    assert owner_of(10).command == "python3 train.py"
    # Past the bound: not a process the kernel shows, so the scenario's owner stands.
    assert owner_of(11) is scenario
