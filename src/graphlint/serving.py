"""Whether this process runs check after check (a language server), its workers
and its runs kept between them: a flag of its own, which the run cache's lookup
and the runner read without importing each other."""

from __future__ import annotations

import threading

# this process runs check after check, its workers kept between them (a language
# server: ``runner.keep_workers``); it keeps its runs in memory too
_KEEPING = threading.Event()


def keep_between_runs() -> None:
    """This process runs check after check (``runner.keep_workers`` says so)."""
    _KEEPING.set()


def kept_between_runs() -> bool:
    """Whether this process runs check after check, with its workers kept."""
    return _KEEPING.is_set()


__all__ = ["keep_between_runs", "kept_between_runs"]
