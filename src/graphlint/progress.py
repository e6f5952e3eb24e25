"""A progress bar on stderr for a long run, as people at a terminal expect and logs
do not: shown once a run has taken ``AFTER`` seconds, only when stderr is a terminal
and the environment is no CI's, and gone when the run ends (the report follows).
rich is imported only when the bar is drawn; nothing draws it between jobs (no
thread: the runner forks its workers from a process with one)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

AFTER = 1.0  # seconds before a bar appears (GRAPHLINT_PROGRESS_AFTER: tests' choice)
EVERY = 0.1  # seconds between two drawings


class _Bar:
    def __init__(
        self, after: float = AFTER, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.after = after
        self.clock = clock
        self.start = clock()
        self.shown: Any = None  # rich's Progress, once drawn
        self.task: Any = None
        self.drawn = 0.0

    def __call__(self, done: int, asked: int) -> None:
        if self.shown is None:
            if self.clock() - self.start < self.after:
                return
            from rich.console import Console  # noqa: PLC0415 - only for a long run
            from rich.progress import (  # noqa: PLC0415
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.shown = Progress(
                TextColumn("graphlint: checking"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.shown.start()
            self.task = self.shown.add_task("check", total=asked)
        now = self.clock()
        if now - self.drawn >= EVERY or done == asked:
            self.shown.update(self.task, completed=done, total=asked)
            self.shown.refresh()
            self.drawn = now

    def stop(self) -> None:
        if self.shown is not None:
            self.shown.stop()


def wanted() -> bool:
    """A terminal on stderr, outside CI (``CI`` is set by GitHub Actions, GitLab,
    and most others), and a terminal that can draw (not ``TERM=dumb``)."""
    return (
        sys.stderr.isatty()
        and not os.environ.get("CI")
        and os.environ.get("TERM") != "dumb"
    )


def after() -> float:
    """Seconds before the bar appears: ``AFTER``, or what
    ``GRAPHLINT_PROGRESS_AFTER`` says (a test's way to decide without a clock)."""
    try:
        return max(0.0, float(os.environ.get("GRAPHLINT_PROGRESS_AFTER", AFTER)))
    except ValueError:
        return AFTER


@contextmanager
def progress_bar() -> Iterator[_Bar | None]:
    """The callable to give ``lint`` as ``progress``; None where no bar is wanted."""
    if not wanted():
        yield None
        return
    bar = _Bar(after())
    try:
        yield bar
    finally:
        bar.stop()
