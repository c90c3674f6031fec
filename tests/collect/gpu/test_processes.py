"""GPU processes' owners as the process table names them."""

from __future__ import annotations

import pytest

from hwinfo.collect.gpu.processes import ProcessOwner


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

    from hwinfo.collect.gpu.processes import _user_name
    from hwinfo.collect.sysfs import Root

    (tmp_path / "etc").mkdir()
    os.mkfifo(tmp_path / "etc" / "passwd")  # never waited on, never fatal
    assert _user_name(Root(str(tmp_path)), "²") == "²"
