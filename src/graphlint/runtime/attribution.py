"""Which line of the user's code a failure comes from.

A sync under capture raises at its own line; what surfaces from ``capture_end``
points at the ``with``, and the original failure survives as ``__context__``
(../shared/ground-truth/README.md). The first failure of the chain is searched
for its innermost frame outside torch, graphlint and the standard library.
"""

from __future__ import annotations

import functools
import os
import sysconfig
import traceback
from types import FrameType

_NOT_USER = tuple(
    os.path.realpath(p) + os.sep
    for p in {
        *(sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")),
        os.path.dirname(os.path.dirname(__file__)),  # graphlint
    }
)


@functools.cache
def torch_dir() -> str | None:
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    return os.path.realpath(os.path.dirname(str(torch.__file__))) + os.sep


def is_user_file(filename: str) -> bool:
    """Whether ``filename`` is the user's code, not torch, graphlint or a library."""
    if filename.startswith("<"):
        return False
    real = os.path.realpath(filename)
    torch_files = torch_dir()
    if torch_files is not None and real.startswith(torch_files):
        return False
    return not real.startswith(_NOT_USER)


def _chain(
    error: BaseException, since: BaseException | None = None
) -> list[BaseException]:
    """``error`` and the failures it hides, the first failure last. ``since``: the
    failure being handled when ``error``'s code began (Python chains it as
    ``__context__``); it and what it hides are not ``error``'s."""
    before = _chain(since) if since is not None else []
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain and current not in before:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


SWALLOWED: list[tuple[str, int, BaseException]] = []  # in the capture under way


def swallowed(error: BaseException, frame: FrameType | None) -> None:
    """A failure that a library caught and did not raise (``logging`` prints the
    failures of its handlers): it still breaks the capture under way, which then
    fails at its end with no line of its own. Kept with the innermost line of the
    user's code that called in, to attribute that failure."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is not None:
        path = os.path.realpath(frame.f_code.co_filename)
        SWALLOWED.append((path, frame.f_lineno, error))


def user_frame(
    error: BaseException, since: BaseException | None = None
) -> tuple[str, int] | None:
    """The user's file and line where ``error``, or the failure it hides, was raised
    (``since``: as in ``_chain``)."""
    for item in reversed(_chain(error, since)):  # the first failure first
        for frame in reversed(traceback.extract_tb(item.__traceback__)):
            if frame.lineno is not None and is_user_file(frame.filename):
                return os.path.realpath(frame.filename), frame.lineno
    if SWALLOWED:  # no line of the user's: a failure caught and printed first
        path, line, _ = SWALLOWED[0]
        return path, line
    return None


def _names_user_line(error: BaseException, since: BaseException | None) -> bool:
    return any(
        frame.lineno is not None and is_user_file(frame.filename)
        for item in _chain(error, since)
        for frame in traceback.extract_tb(item.__traceback__)
    )


def first_line(error: BaseException, since: BaseException | None = None) -> str:
    """``RuntimeError: Cannot copy ...``: the first line of the first failure (one
    a library swallowed during the capture, when the error names no user line;
    ``since``: as in ``_chain``)."""
    first = _chain(error, since)[-1]
    if SWALLOWED and not _names_user_line(error, since):
        first = SWALLOWED[0][2]
    text = str(first).strip().splitlines()
    return f"{type(first).__name__}: {text[0] if text else ''}"
