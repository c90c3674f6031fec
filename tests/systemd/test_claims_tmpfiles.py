"""systemd/hwinfo-claims.conf as systemd-tmpfiles applies it: the claims directory of
`hwinfo run` (docs/run.md), one that hwinfo trusts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import REPO, require_tool

from hwinfo.collect.claims import directory_path, open_directory


def test_the_claims_directory_the_tmpfiles_snippet_makes_is_one_hwinfo_trusts(
        tmp_path: Path) -> None:
    """Applied below a root of our own: sticky, world-writable, root's."""
    snippet = REPO / "systemd" / "hwinfo-claims.conf"
    subprocess.run([require_tool("systemd-tmpfiles"), "--create", f"--root={tmp_path}",
                    str(snippet)], check=True, timeout=120)
    made = Path(directory_path(str(tmp_path)))
    assert made == tmp_path / "run" / "hwinfo" / "claims"
    info = made.stat()
    assert (oct(info.st_mode & 0o7777), info.st_uid) == ("0o1777", 0)
    fd = open_directory(str(made))
    assert fd is not None
    os.close(fd)
