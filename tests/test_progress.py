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


def test_a_long_run_shows_a_bar_on_the_terminal_only(tmp_path: Path) -> None:
    tree = _slow_tree(tmp_path / "slow", files=80)
    out, shown = _run(tree)
    assert "graphlint: checking" in shown and "/80" in shown
    assert "graphlint: checking" not in out and out.startswith(str(tree))
    assert "Found 160 diagnostics" in out


def test_no_bar_under_ci_or_a_dumb_terminal(tmp_path: Path) -> None:
    tree = _slow_tree(tmp_path / "slow", files=80)
    assert _run(tree, CI="true")[1] == ""
    assert _run(tree, TERM="dumb")[1] == ""


def test_no_bar_for_a_short_run(tmp_path: Path) -> None:
    tree = _slow_tree(tmp_path / "fast", files=2)
    assert _run(tree)[1] == ""
