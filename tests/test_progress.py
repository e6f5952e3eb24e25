"""The progress bar: on a terminal's stderr for a run longer than a second, never in
a pipe or under CI, and gone before the report."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from graphlint.progress import AFTER, _Bar
from tests.conftest import GRAPHLINT
from tests.test_hostile import _slow_tree

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="a pseudo-terminal"
)


def _run(tree: Path, **env: str) -> tuple[str, str]:
    """Check ``tree`` with stderr on a pseudo-terminal: (stdout, what the terminal
    showed)."""
    import pty  # noqa: PLC0415 - POSIX only

    main, child = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k != "CI"}
    shown = bytearray()

    def read() -> None:  # as a terminal does, while the run goes on
        with contextlib.suppress(OSError):
            while chunk := os.read(main, 65536):
                shown.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    done = subprocess.run(
        [*GRAPHLINT, "check", "--no-cache", "--exit-zero", str(tree)],
        stdout=subprocess.PIPE,
        stderr=child,
        env={**environment, "TERM": "xterm", **env},
        check=True,
        timeout=120,
    )
    os.close(child)
    reader.join(timeout=10)
    os.close(main)
    return done.stdout.decode(), shown.decode("utf-8", "replace")


# When the bar appears is decided by the run's clock: these tests set the delay so
# that the answer does not depend on how busy the machine is (test_the_delay has
# the clock itself)
LONG = {"GRAPHLINT_PROGRESS_AFTER": "0"}  # every run is long enough
SHORT = {"GRAPHLINT_PROGRESS_AFTER": "3600"}  # no run is


def test_a_long_run_shows_a_bar_on_the_terminal_only(tmp_path: Path) -> None:
    tree = _slow_tree(tmp_path / "slow", files=80)
    out, shown = _run(tree, **LONG)
    assert "graphlint: checking" in shown and "/80" in shown
    assert "graphlint: checking" not in out and out.startswith(str(tree))
    assert "Found 80 diagnostics" in out  # GL101; the region needs no warm-up


def test_no_bar_under_ci_or_a_dumb_terminal(tmp_path: Path) -> None:
    tree = _slow_tree(tmp_path / "slow", files=80)
    assert _run(tree, CI="true", **LONG)[1] == ""
    assert _run(tree, TERM="dumb", **LONG)[1] == ""


def test_no_bar_for_a_short_run(tmp_path: Path) -> None:
    tree = _slow_tree(tmp_path / "fast", files=2)
    assert _run(tree, **SHORT)[1] == ""


def test_the_delay() -> None:
    """No bar before ``AFTER`` seconds of the run's clock, a bar from then on."""
    now = [100.0]
    bar = _Bar(clock=lambda: now[0])
    now[0] += AFTER / 2
    bar(1, 10)
    assert bar.shown is None
    now[0] += AFTER
    bar(2, 10)
    assert bar.shown is not None
    bar.stop()
