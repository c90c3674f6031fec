"""`report --watch` on a real terminal (tmux): it fits the screen, follows a resize, and a
`--from` watch keeps trying while its daemon is away."""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from conftest import require_tool

COMMAND = f"{shlex.quote(sys.executable)} -m hwinfo report"


@pytest.fixture
def terminal() -> Iterator[Callable[..., Callable[[], list[str]]]]:
    """Run a command in a detached tmux session of a given size, on a tmux server of this
    test's own (no other test's session ending can take it down); yields a screen reader."""
    tmux = [require_tool("tmux"), "-L", f"hwinfo-test-{time.monotonic_ns()}"]

    def start(command: str, rows: int = 24, columns: int = 80) -> Callable[[], list[str]]:
        subprocess.run([*tmux, "new-session", "-d", "-s", "watch", "-x", str(columns),
                        "-y", str(rows), f"NO_COLOR=1 {command}"], check=True)

        def screen() -> list[str]:
            shown = subprocess.run([*tmux, "capture-pane", "-p", "-t", "watch"],
                                   capture_output=True, text=True, check=False).stdout
            return shown.rstrip("\n").split("\n")

        def joined() -> list[str]:
            """The screen with the lines the terminal wrapped itself joined again (-J): what
            the program printed as one line, however the terminal showed it."""
            shown = subprocess.run([*tmux, "capture-pane", "-p", "-J", "-t", "watch"],
                                   capture_output=True, text=True, check=False).stdout
            return shown.rstrip("\n").split("\n")

        screen.joined = joined  # type: ignore[attr-defined]
        screen.resize = lambda rows: subprocess.run(  # type: ignore[attr-defined]
            [*tmux, "resize-window", "-t", "watch", "-y", str(rows)], check=True)
        return screen

    yield start
    subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)


def _wait_for(screen: Callable[[], list[str]], ready: Callable[[list[str]], bool],
              timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = screen()
        if ready(lines):
            return lines
        time.sleep(0.1)
    raise AssertionError("the screen never showed it:\n" + "\n".join(screen()))


def test_the_summary_stays_on_top_and_the_rest_is_cut_to_the_screen(terminal) -> None:
    screen = terminal(f"{COMMAND} --simulate dgx-a100-mig --watch 0.5")
    lines = _wait_for(screen, lambda s: "more lines" in s[-1])
    assert lines[0] == "GPUs (8)" and lines[3].split()[:2] == ["0", "A100-SXM4-80GB"]
    assert len(lines) <= 24 and max(len(line) for line in lines) <= 80
    assert lines[-1].startswith("… ") and lines[-1].endswith("more lines (resize or use --brief)")
    screen.resize(40)
    taller = _wait_for(screen, lambda s: len(s) > 30 and "more lines" in s[-1])
    assert taller[0] == "GPUs (8)" and len(taller) <= 40
    assert int(taller[-1].split()[1]) < int(lines[-1].split()[1])  # fewer lines left out


def test_brief_watch_fits_24_rows_whole(terminal) -> None:
    screen = terminal(f"{COMMAND} --simulate dgx-a100-mig --brief --watch 0.5")
    lines = _wait_for(screen, lambda s: any(line.startswith("GPUs  8") for line in s))
    assert len(lines) <= 24 and not any("more lines" in line for line in lines)
    assert sum(1 for line in lines if line.split()[:2][1:] == ["A100-SXM4-80GB"]) == 8


def test_a_from_watch_keeps_trying_until_the_daemon_answers(terminal) -> None:
    with socket.socket() as probe:  # a free port, nothing listening on it yet
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    screen = terminal(f"{COMMAND} --from http://127.0.0.1:{port} --watch 0.5")
    _wait_for(screen, lambda s: any("trying again" in line for line in s))
    # The retry message (about 110 characters) fits the 80 columns by itself, broken between
    # words: no line the terminal had to wrap.
    said = [line for line in screen.joined() if line.strip()]
    assert len(said) >= 2 and max(len(line) for line in said) <= 80, said
    assert " ".join(said).endswith("connection refused (is hwinfo serve running there?); "
                                   "trying again")
    daemon = subprocess.Popen([sys.executable, "-m", "hwinfo", "serve", "--address",
                               "127.0.0.1", "--port", str(port), "--simulate", "cloud-t4",
                               "--interval", "0.5"], stderr=subprocess.DEVNULL)
    try:
        lines = _wait_for(screen, lambda s: s[0] == "GPUs (1)")
        assert "Tesla T4" in lines[3]
    finally:
        daemon.terminate()
        daemon.wait(60)
