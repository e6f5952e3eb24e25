"""Which lines of the user's code ran under ``graphlint confirm``, and which of them
ran while a CUDA graph was being captured.

A finding whose line never ran gets no verdict ("not executed"); host work that
ran during a capture is, by that fact, work that a replay will not repeat. The
lines come from a trace function that follows the user's files only (torch, the
standard library and graphlint are not traced). torch-free.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from types import FrameType
from typing import Any

from graphlint.runtime.attribution import is_user_file

EXECUTED: set[tuple[str, int]] = set()  # (real path, line)
CAPTURED: set[tuple[str, int]] = set()  # the lines of EXECUTED run while capturing
_DEPTH = [0]  # captures under way (a capture inside a capture is an error, but told)


@functools.cache
def _user_path(filename: str) -> str | None:
    return os.path.realpath(filename) if is_user_file(filename) else None


def _line(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "line":
        path = _user_path(frame.f_code.co_filename)
        if path is not None:
            where = (path, frame.f_lineno)
            EXECUTED.add(where)
            if _DEPTH[0]:
                CAPTURED.add(where)
    return _line


def _call(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "call" and _user_path(frame.f_code.co_filename) is not None:
        return _line
    return None


def start() -> None:
    """Follow the user's lines from now on, in every thread."""
    threading.settrace(_call)
    sys.settrace(_call)


def begin_capture() -> None:
    """A capture began (``capture_begin``: every capture, the program's or torch's)."""
    _DEPTH[0] += 1


def capturing() -> bool:
    """Whether a CUDA graph is being captured now."""
    return _DEPTH[0] > 0


def end_capture() -> None:
    _DEPTH[0] = max(0, _DEPTH[0] - 1)


def by_file(lines: set[tuple[str, int]]) -> dict[str, list[int]]:
    """``lines`` as JSON can carry them: sorted line numbers by path."""
    found: dict[str, list[int]] = {}
    for path, line in lines:
        found.setdefault(path, []).append(line)
    return {path: sorted(numbers) for path, numbers in sorted(found.items())}
