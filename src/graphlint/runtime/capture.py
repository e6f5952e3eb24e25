"""One real capture attempt of a marked region, on the GPU (``graphlint confirm``).

The call is run eagerly first (the reference and the result the program gets back),
then warmed up on a side stream, captured with ``torch.cuda.graph``, replayed, and
compared with the eager result. Failures are caught and attributed to the line of
the user's code that raised them. torch is imported only here, only when asked.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """What a capture attempt of one region did."""

    region: str  # "train.py:12 step()"
    path: str
    line: int
    status: str  # "ok", "capture-error", "silent-wrong", "warmup-error"
    detail: str = ""  # the first line of the error, or the largest difference
    error_line: int | None = None  # the user's line that failed, when known
    eager_ms: float | None = None
    replay_ms: float | None = None

    @property
    def speedup(self) -> float | None:
        if self.eager_ms and self.replay_ms:
            return self.eager_ms / self.replay_ms
        return None


def tensors(value: Any) -> Iterator[Any]:
    """The tensors in a (nested) result, in order."""
    import torch  # noqa: PLC0415 - the runtime extra

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors(item)


def largest_difference(replayed: Any, eager: Any) -> float:
    """The largest absolute difference between two results' tensors."""
    worst = 0.0
    for got, want in zip(tensors(replayed), tensors(eager), strict=False):
        if got.shape != want.shape:
            return float("inf")
        if got.numel():
            worst = max(worst, (got.double() - want.double()).abs().max().item())
    return worst


def user_line(error: BaseException, path: str) -> int | None:
    """The line of ``path`` where ``error`` (or the failure it hides) was raised.

    A sync under capture raises at its own line, but what surfaces from
    ``capture_end`` points at the ``with``; the original survives as ``__context__``.
    """
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__context__
    target = Path(path).resolve()
    for item in reversed(chain):  # the first failure first
        frames = traceback.extract_tb(item.__traceback__)
        for frame in reversed(frames):
            if Path(frame.filename).resolve() == target:
                return frame.lineno
    return None


def _time_ms(run: Callable[[], Any], repeat: int) -> float:
    import torch  # noqa: PLC0415

    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1000 / repeat


def _static(value: Any) -> Any:
    """A copy of a call's arguments whose tensors the graph may own."""
    import torch  # noqa: PLC0415

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_static(v) for v in value)
    if isinstance(value, dict):
        return {k: _static(v) for k, v in value.items()}
    return value


class Probe:
    """A marked region under the runtime checker.

    The first call runs eagerly (the program gets that result), then the region is
    warmed up on a side stream and captured on its own copy of the arguments. Every
    later call also runs eagerly; its tensor arguments are copied into the graph's
    inputs, the graph is replayed and compared with the eager result: a graph that
    froze a host value shows up as a difference on the live inputs.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        path: str,
        line: int,
        warmup: int = 3,
        atol: float = 1e-5,
        rtol: float = 1e-4,
    ) -> None:
        self.fn = fn
        self.warmup = warmup
        self.atol = atol
        self.rtol = rtol
        self.verdict = Verdict(f"{Path(path).name}:{line} {name}()", path, line, "ok")
        self.graph: Any = None
        self.inputs: Any = None
        self.output: Any = None
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        eager = self.fn(*args, **kwargs)
        if self.calls == 1:
            self.capture(args, kwargs)
        elif self.graph is not None and self.verdict.status == "ok":
            self.compare(args, kwargs, eager)
        return eager

    def capture(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        import torch  # noqa: PLC0415

        self.inputs = (_static(args), _static(kwargs))
        static_args, static_kwargs = self.inputs
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(self.warmup):
                    self.fn(*static_args, **static_kwargs)
            torch.cuda.current_stream().wait_stream(side)
        except Exception as error:  # fails without capture: not a graph problem
            self.fail("warmup-error", error)
            return
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                self.output = self.fn(*static_args, **static_kwargs)
        except Exception as error:
            self.fail("capture-error", error)
            return
        self.graph = graph
        eager_ms = _time_ms(lambda: self.fn(*static_args, **static_kwargs), 20)
        replay_ms = _time_ms(graph.replay, 20)
        self.verdict = replace(self.verdict, eager_ms=eager_ms, replay_ms=replay_ms)

    def compare(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], eager: Any
    ) -> None:
        static_args, static_kwargs = self.inputs
        for static, live in zip(
            tensors((static_args, static_kwargs)), tensors((args, kwargs)), strict=False
        ):
            if static.shape != live.shape:
                return  # another shape: a graph replays one shape only
            static.copy_(live)
        self.graph.replay()
        worst = largest_difference(self.output, eager)
        scale = max(
            (t.abs().max().item() for t in tensors(eager) if t.numel()), default=0.0
        )
        if worst > self.atol + self.rtol * scale:
            self.verdict = replace(
                self.verdict,
                status="silent-wrong",
                detail=f"replay differs from eager by up to {worst:.3g} "
                f"(call {self.calls})",
            )

    def fail(self, status: str, error: BaseException) -> None:
        self.verdict = replace(
            self.verdict,
            status=status,
            detail=_first(error),
            error_line=user_line(error, self.verdict.path),
        )


def _first(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


__all__ = ["Probe", "Verdict", "largest_difference", "user_line"]
