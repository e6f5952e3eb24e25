"""``graphlint.capture_region``: mark code that will run under CUDA-graph capture.

Usable as a decorator (``@graphlint.capture_region`` or ``@graphlint.capture_region()``)
and as a context manager (``with graphlint.capture_region():``). The static linter
treats the marked code as a capture region. At run time it does nothing, except under
``graphlint confirm``, where the marked function or block is captured on the GPU and
checked against eager execution.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar, overload

F = TypeVar("F", bound=Callable[..., Any])


class _CaptureRegion:
    """A no-op decorator and context manager; see the module docstring."""

    def __init__(self, fn: Callable[..., Any] | None = None, name: str | None = None):
        self.fn = fn
        self.name = name
        self.probe: Any = None  # under graphlint confirm: the block's BlockProbe
        if fn is not None:
            functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is None:
            # @capture_region() or @capture_region(name=...): decorate the function
            (fn,) = args
            return _runtime(fn)
        return self.fn(*args, **kwargs)

    def __enter__(self) -> _CaptureRegion:
        from graphlint.runtime import session  # noqa: PLC0415 - small, torch-free

        if session.active():
            from graphlint.runtime.capture import enter_block  # noqa: PLC0415

            self.probe = enter_block(sys._getframe(1))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.probe is not None:
            if exc is None:
                self.probe.exit(sys._getframe(1))
            else:  # the body raised: nothing to compare, nothing kept in force
                self.probe.abandon()
        return None


@overload
def capture_region(fn: F) -> F: ...
@overload
def capture_region(fn: None = None, *, name: str | None = None) -> Any: ...
def capture_region(
    fn: Callable[..., Any] | None = None, *, name: str | None = None
) -> Any:
    """Mark a function (decorator) or a block (context manager) as a capture region."""
    if fn is not None:
        return _runtime(fn)
    return _CaptureRegion(None, name)


def _runtime(fn: F) -> F:
    """Under ``graphlint confirm`` a marked function is captured for real."""
    from graphlint.runtime import session  # noqa: PLC0415 - small, torch-free

    if not session.active():
        return fn
    from graphlint.runtime.capture import FunctionProbe  # noqa: PLC0415 - torch

    return FunctionProbe(fn)  # type: ignore[return-value]
