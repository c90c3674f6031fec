"""Real container runtimes for the deploy tests: a Docker daemon of its own (Debian's docker.io,
on its own socket, no network) and images made here of this host's programs."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import require_tool

from tests.deploy.prometheus_stack import stop, wait_for


def rootfs(bundle: Path, programs: tuple[str, ...] = ("sleep",)) -> None:
    """`programs` (sleep, and sh, nice or dd where a test needs them) and the libraries they
    load: all the container needs."""
    for program in programs:
        path = shutil.which(program)
        assert path is not None, program
        libraries = re.findall(r"(/\S+)", subprocess.run(["ldd", path], capture_output=True,
                                                         text=True, check=True).stdout)
        for source in [path, *libraries]:
            target = bundle / "rootfs" / source.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    (bundle / "rootfs" / "proc").mkdir(exist_ok=True)


@contextmanager
def dockerd(workdir: Path) -> Iterator[list[str]]:
    """A Docker daemon of its own (socket, data, no bridge or iptables); yields the client's
    command line."""
    daemon_program, docker = require_tool("dockerd"), require_tool("docker")
    workdir.mkdir(parents=True)
    sock = workdir / "docker.sock"
    with (workdir / "dockerd.log").open("wb") as log:
        daemon = subprocess.Popen(
            [daemon_program, f"--data-root={workdir / 'data'}", f"--exec-root={workdir / 'exec'}",
             f"--pidfile={workdir / 'dockerd.pid'}", f"--host=unix://{sock}",
             "--iptables=false", "--bridge=none"], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    client = [docker, f"--host=unix://{sock}"]
    try:
        wait_for("dockerd", lambda: subprocess.run([*client, "version"], capture_output=True,
                                                  timeout=10, check=False).returncode == 0,
                 timeout=60)
        yield client
    finally:
        stop(daemon)


def docker_image(client: list[str], root: Path, tag: str) -> None:
    """An image of the directory `root`, imported as `tag`."""
    tar = subprocess.run(["tar", "-C", str(root), "-c", "."], capture_output=True, check=True)
    subprocess.run([*client, "import", "-", tag], input=tar.stdout, capture_output=True,
                   check=True, timeout=60)
