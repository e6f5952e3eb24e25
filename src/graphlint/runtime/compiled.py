"""``torch.compile``'s CUDA graphs (cudagraph trees), observed under ``graphlint
confirm``. What confirms a finding there follows the measurements
(ground-truth/README.md), not manual capture's:

- a sync or a data-dependent branch does not fail: Dynamo breaks the graph there, and
  the break (with the user's line) is recorded on the site;
- under ``fullgraph=True`` the same break fails compilation: the site fails, at the
  user's line the compiler names ("from user code: File ..., line N");
- reading an output that the next call overwrote raises "accessing tensor output of
  CUDAGraphs that has been overwritten": the site that made it is silently wrong;
- in a run that targets the site, each call is compared with the function (or
  module) run eagerly on the same inputs first (``capture.CallComparison``): a
  difference is silently wrong too;
- a compiled function the program never calls (a module of compiled kernels that
  only defines them) is called by the checker once the program has ended well,
  when every parameter it needs is annotated as a tensor: on random CUDA tensors
  (``drive``), and the verdicts it gives say so.

A site is the ``torch.compile(...)`` call (or decorator) of the user's code that asks
for CUDA graphs; its calls are counted through the callable it returns.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphlint.runtime import session
from graphlint.runtime.attribution import first_line, is_user_file
from graphlint.runtime.sites import Capture, Site, Status

CUDAGRAPH_MODES = frozenset({"reduce-overhead", "max-autotune"})
OVERWRITTEN = "accessing tensor output of CUDAGraphs that has been overwritten"
# Dynamo's messages name the user's code as a Python traceback does
_USER_LINE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
_BREAK_AT = re.compile(r"Graph break in user code at (?P<path>.+):(?P<line>\d+)")
_REASON = re.compile(r"(?:Graph Break Reason|Reason): *(?P<reason>.+)")
_ARTIFACT = "__graph_breaks"  # torch._logging's artifact logger for graph breaks
SITES: list[Site] = []  # compiled sites, in the order they were made
_CALLING: list[Site] = []  # the compiled callables running now, innermost last
_LAST: list[Site] = []  # the compiled site called last


@dataclass(frozen=True)
class Drivable:
    """A compiled callable the checker may call itself (``drive``)."""

    site: Site
    given: Callable[..., Any]  # what the program got from torch.compile
    eager: Callable[..., Any]  # what it compiled
    needs: tuple[str, ...]  # the tensor parameters it needs, passed by name
    name: str


DRIVABLE: dict[str, Drivable] = {}  # by site key
DRIVEN_SHAPE = (16, 16)  # each synthesized input: float32, on the current device
DRIVEN_CALLS = 3  # cudagraph trees warm up, record, then replay


def uses_cudagraphs(kwargs: dict[str, Any], torch: Any) -> bool:
    """Whether ``torch.compile(**kwargs)`` replays CUDA graphs (its own arguments,
    or Inductor's ``triton.cudagraphs`` switched on)."""
    if kwargs.get("backend") == "cudagraphs" or kwargs.get("mode") in CUDAGRAPH_MODES:
        return True
    options = kwargs.get("options") or {}
    if isinstance(options, dict) and options.get("triton.cudagraphs"):
        return True
    backend = kwargs.get("backend", "inductor")
    return backend == "inductor" and bool(torch._inductor.config.triton.cudagraphs)


def user_lines(text: str) -> list[tuple[str, int]]:
    """The user's files and lines a compiler message names, innermost last."""
    found = [(m["path"], int(m["line"])) for m in _BREAK_AT.finditer(text)]
    found += [(m["path"], int(m["line"])) for m in _USER_LINE.finditer(text)]
    return [
        (os.path.realpath(path), line) for path, line in found if is_user_file(path)
    ]


def record_break(text: str) -> None:
    """A graph break Dynamo logged while a compiled callable of the user ran."""
    if not _CALLING:
        return
    lines = user_lines(text)
    if not lines:
        return
    path, line = lines[0] if _BREAK_AT.search(text) else lines[-1]
    found = _REASON.search(text)
    reason = found["reason"].strip().rstrip(":") if found else None
    site = _CALLING[-1]
    for entry in site.breaks:  # one entry a line; the first reason given wins
        if entry[:2] == [path, line]:
            if entry[2] == "graph break" and reason:
                entry[2] = reason
            return
    site.breaks.append([path, line, reason or "graph break"])


class _BreakLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            record_break(record.getMessage())
        except Exception:  # observing must never break the run
            return


def _compile_error(error: BaseException) -> bool:
    """An error of Dynamo or Inductor (fullgraph=True failing), not the program's."""
    module = type(error).__module__
    return module.startswith(("torch._dynamo", "torch._inductor"))


def _failed(site: Site, error: BaseException) -> None:
    """Under ``fullgraph=True`` a graph break fails compilation: the site fails at
    the user's line the message names."""
    site.status = Status.CAPTURE_ERROR
    site.detail = first_line(error)
    lines = user_lines(str(error))
    if lines:
        site.error_path, site.error_line = lines[-1]


def escaped(error: BaseException) -> bool:
    """Record an error that ended the program, when it is about a compiled site:
    a read of an output that the next call overwrote (the sites that ran are
    silently wrong: their outputs alias reused memory), or a compile error."""
    if OVERWRITTEN in str(error):
        for site in SITES:
            if site.calls and site.status is not Status.CAPTURE_ERROR:
                site.status = Status.SILENT_WRONG
                site.detail = first_line(error)
        return True
    if _compile_error(error) and _LAST and _LAST[-1].status is not Status.CAPTURE_ERROR:
        _failed(_LAST[-1], error)
        return True
    return False


def _called(site: Site) -> None:
    site.calls += 1
    _LAST[:] = [site]


def _counted(site: Site, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (what ``torch.compile`` returned), counting calls on ``site``."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        _called(site)
        _CALLING.append(site)
        try:
            return fn(*args, **kwargs)
        finally:
            _CALLING.pop()

    return call


def _module_counted(site: Site, module: Any) -> Any:
    """A compiled module stays a module: a forward pre-hook counts its calls."""

    def before(*_: Any) -> None:
        _called(site)
        _CALLING[:] = [site]

    module.register_forward_pre_hook(before)
    return module


def _comparison(site: Site, target: Any) -> Any:
    """In a run that targets ``site``: its calls compared with ``target`` (the
    function or module compiled) run eagerly, as replays of the program's own CUDA
    graphs are. Compiled code draws other random numbers than eager code: a call
    that draws is not compared."""
    if not session.is_target(site):
        return None
    from graphlint.runtime.capture import CallComparison  # noqa: PLC0415 - a cycle

    return CallComparison(site, target, random_differs=True)


def _observed_compile(original: Callable[..., Any], torch: Any) -> Callable[..., Any]:
    @functools.wraps(original)
    def compile(model: Any = None, **kwargs: Any) -> Any:
        frame = sys._getframe(1)
        if not is_user_file(frame.f_code.co_filename) or not uses_cudagraphs(
            kwargs, torch
        ):
            return original(model, **kwargs)
        site = session.site_of(
            Capture.COMPILED,
            frame.f_code.co_filename,
            frame.f_lineno,
            frame.f_lineno,
            session.caller_name(frame),
        )
        if site not in SITES:
            SITES.append(site)

        def wrap(target: Any) -> Any:
            code = getattr(getattr(target, "forward", target), "__code__", None)
            if code is not None:  # Dynamo runs it: its lines raise no line events
                last = max((n for *_, n in code.co_lines() if n), default=0)
                site.body = [os.path.realpath(code.co_filename), code.co_firstlineno]
                site.body.append(max(last, code.co_firstlineno))
            made = original(target, **kwargs)
            comparison = _comparison(site, target)
            needs = _tensor_parameters(getattr(target, "forward", target), torch)
            if isinstance(made, torch.nn.Module):
                if comparison is not None:
                    comparison.hook(made)
                given = _module_counted(site, made)
            else:
                if comparison is not None:
                    made = comparison.wrap(made)
                given = _counted(site, made)
            if needs:  # a function of no parameters is not guessed at
                name = getattr(target, "__qualname__", type(target).__qualname__)
                DRIVABLE[site.key] = Drivable(site, given, target, needs, name)
            return given

        return wrap if model is None else wrap(model)

    return compile


def _tensor_parameters(target: Any, torch: Any) -> tuple[str, ...] | None:
    """The parameters ``target`` needs (those without a default), when each is
    annotated as a tensor (``torch.Tensor``, as an object or as words) and can be
    passed by name; None when one is not, or when its signature cannot be read."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    needed: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.default is not inspect.Parameter.empty or parameter.kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            continue
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            return None
        annotation = parameter.annotation
        if isinstance(annotation, str):  # postponed: "'torch.Tensor'" when quoted
            annotation = annotation.strip("'\"")
        if annotation is not torch.Tensor and annotation not in (
            "torch.Tensor",
            "Tensor",
        ):
            return None
        needed.append(parameter.name)
    return tuple(needed)


def drive() -> None:
    """Call each compiled callable the program made and never called, when its
    parameters are all tensors (``DRIVABLE``): ``DRIVEN_CALLS`` times on random
    float32 CUDA tensors of ``DRIVEN_SHAPE``, once it has run eagerly on them (an
    input it cannot take is its error, not the compiler's). The site says so
    (``Site.driven``); inputs the function rejects leave the site as not run."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    shape = "x".join(map(str, DRIVEN_SHAPE))
    for drivable in list(DRIVABLE.values()):
        site = drivable.site
        if site.calls or site.status is not Status.CAPTURED:
            continue
        site.driven = (
            f"`{drivable.name}` is never called by the program: graphlint confirm "
            f"called it {DRIVEN_CALLS} times on random {shape} float32 CUDA tensors"
        )
        try:
            _drive(drivable, torch)
        except (session.StopRun, KeyboardInterrupt):
            raise
        except BaseException as error:  # the function's own: the run goes on
            site.calls = 0
            site.driven += f", which it rejected ({first_line(error)})"


def _drive(drivable: Drivable, torch: Any) -> None:
    inputs = {n: torch.randn(*DRIVEN_SHAPE, device="cuda") for n in drivable.needs}
    drivable.eager(**inputs)  # raises what these inputs do to it
    torch.cuda.synchronize()
    try:
        for _ in range(DRIVEN_CALLS):
            drivable.given(**inputs)
        torch.cuda.synchronize()
    except Exception as error:
        # Dynamo's run of the graph on fake tensors failing is these inputs' doing
        if type(error).__name__ == "TorchRuntimeError" or not escaped(error):
            raise


def install(torch: Any) -> None:
    """Observe ``torch.compile`` and Dynamo's graph breaks (once per process). The
    graph-break log goes to graphlint only, not to the program's stderr."""
    torch.compile = _observed_compile(torch.compile, torch)
    importlib.import_module("torch._dynamo")  # creates the artifact loggers
    torch._logging.set_logs(graph_breaks=True)
    handler = _BreakLog()
    names = [n for n in logging.root.manager.loggerDict if n.endswith(_ARTIFACT)]
    for name in names:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False
    if not names:  # another PyTorch: read them where they pass, printed or not
        logging.getLogger("torch._dynamo").addHandler(handler)


__all__ = ["SITES", "drive", "escaped", "install", "record_break", "user_lines"]
