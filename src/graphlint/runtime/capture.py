"""Real captures on the GPU, in the process that runs the user's script.

- A function marked ``@graphlint.capture_region`` (``FunctionProbe``) and a block
  marked ``with graphlint.capture_region():`` (``BlockProbe``) are captured by the
  checker itself, when the run targets them: warm-up on a side stream, capture on
  a copy of the inputs, then at each call a replay on the live inputs compared with
  the eager run of the same call. The program always gets the eager result.
- The program's own ``torch.cuda.graph`` blocks, ``capture_begin()`` /
  ``capture_end()`` pairs and ``make_graphed_callables`` calls are observed
  (``install``): a failed capture is recorded and attributed instead of crashing the
  run, and in a run that targets one, each ``replay()`` of a block or a pair is
  compared with its statements run eagerly (``ObservedCapture``), each call of a
  graphed callable with the code it was made from (``CallComparison``).
  ``torch.compile``'s CUDA graphs are observed by ``graphlint.runtime.compiled``.
- In a variant run (``graphlint.runtime.neutral``) eager runs to compare with reuse
  what the moved statements gave the capture; a region no run outside the capture
  computed them for runs eagerly once first (``_prime``).

A comparison snapshots the state the region reaches and restores it between the
replay and the eager run, so an update in place is not applied twice. torch is
imported only here, only under ``graphlint confirm``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from graphlint.runtime import attribution, compiled, lines, neutral, session
from graphlint.runtime.attribution import is_user_file
from graphlint.runtime.sites import Capture, Site, Status
from graphlint.runtime.source import Block, block_at, span_at
from graphlint.runtime.tensors import (
    Bindings,
    Snapshot,
    compare,
    named_tensors,
    reachable,
    reached_values,
)

ORIGINAL: dict[str, Any] = {}  # torch's own graph, replay, make_graphed_callables
OBSERVED: dict[int, tuple[Any, ObservedCapture]] = {}  # id(CUDAGraph) -> capture
BLOCKS: dict[str, BlockProbe] = {}  # site key -> the probe of a marked block
# id(CUDAGraph) -> the capture open on it in the user's code: its capture_begin(), or
# a torch.cuda.graph entered and not yet exited
OPEN: dict[int, Site] = {}
# id(CUDAGraph) -> where the moved statements' values of its open capture begin
# (``neutral.mark``), the statements up to its capture_end() (None: not a block),
# and what the names they bind held when the capture began (``entry``)
PAIRS: dict[int, tuple[int, Block | None, Entry]] = {}
CAPTURED: set[int] = set()  # id(CUDAGraph) of every capture that ended well
TIMED_RUNS = 20


def _torch() -> Any:
    import torch  # noqa: PLC0415 - the runtime extra

    return torch


def _graph_context() -> Any:
    return ORIGINAL.get("graph") or _torch().cuda.graph


def _replay(graph: Any) -> None:
    (ORIGINAL.get("replay") or type(graph).replay)(graph)


def _static(value: Any) -> Any:
    """A copy of a call's inputs whose tensors the graph may own."""
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_static(v) for v in value)
    if isinstance(value, dict):
        return {k: _static(v) for k, v in value.items()}
    return value


def _feed(static: Any, live: Any) -> bool:
    """Copy the live inputs into the graph's copies; False if their shapes differ."""
    targets = [t for _, t in named_tensors(static, "")]
    sources = [t for _, t in named_tensors(live, "")]
    if len(targets) != len(sources) or any(
        t.shape != s.shape for t, s in zip(targets, sources, strict=True)
    ):
        return False
    with _torch().no_grad():
        for target, source in zip(targets, sources, strict=True):
            target.copy_(source)
    return True


def _time_ms(run: Callable[[], Any], repeat: int = TIMED_RUNS) -> float:
    """Milliseconds a call of ``run`` takes, with the line trace off (it slows the
    eager run's Python, not the replay)."""
    torch = _torch()
    trace = sys.gettrace()
    sys.settrace(None)
    try:
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeat):
            run()
        torch.cuda.synchronize()
    finally:
        sys.settrace(trace)
    return (time.perf_counter() - start) * 1000 / repeat


def _warm_up(run: Callable[[], Any], times: int) -> None:
    torch = _torch()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(times):
            run()
    torch.cuda.current_stream().wait_stream(side)


def _capture(site: Site, run: Callable[[], Any], roots: Mapping[str, Any]) -> Any:
    """Warm up, capture and time ``run``; the graph, its output and what moved
    statements gave the capture (``neutral.pinned``), or None after a warm-up error.

    The state ``roots`` reach is put back afterwards: warm-ups and timed runs must
    not change what the program computes next. A failed capture raises StopRun.
    """
    torch = _torch()
    before, rng = Snapshot(reachable(roots)), torch.cuda.get_rng_state()
    try:
        _warm_up(run, int(session.settings()["warmup"]))
    except Exception as error:  # fails without any capture: not a graph problem
        before.restore(bindings=False)
        session.fail(site, Status.WARMUP_ERROR, error)
        return None
    graph = torch.cuda.CUDAGraph()
    start = neutral.mark()
    try:
        with _graph_context()(graph):
            output = run()
    except Exception as error:
        _stood_in(site, start)
        session.fail(site, Status.CAPTURE_ERROR, error)  # raises StopRun
    _stood_in(site, start)
    pins = neutral.values_since(start)
    with neutral.pinned(pins):
        site.eager_ms = _time_ms(run)
    site.replay_ms = _time_ms(lambda: _replay(graph))
    before.restore(bindings=False)
    torch.cuda.set_rng_state(rng)
    return graph, output, pins


def _stood_in(site: Site, start: int) -> None:
    """Record the moved statements that the capture of ``site`` since
    ``neutral.mark()`` gave a stand-in (no run outside the capture kept a value)."""
    found = neutral.stand_ins_since(start)
    site.stand_ins = list(dict.fromkeys([*site.stand_ins, *found]))


def _judge(
    site: Site, replayed: Mapping[str, Any], eager: Mapping[str, Any], when: str
) -> None:
    settings = session.settings()
    site.compared += 1
    difference = compare(replayed, eager, settings["atol"], settings["rtol"])
    if difference is not None:
        site.status = Status.SILENT_WRONG
        site.tensors = list(difference.tensors)
        site.detail = (
            f"replay differs from eager by up to {difference.largest:.3g} in "
            f"{difference.describe()} ({when})"
        )


def _wants_comparison(site: Site) -> bool:
    return (
        session.is_target(site)
        and not site.failed
        and site.compared < int(session.settings()["compare"])
    )


def _variant() -> bool:
    """Whether this run moves statements out of the capture (a variant). Its
    comparisons still hold: the eager run reuses what moved statements gave the
    capture (``neutral.pinned``), as a replay does."""
    return bool(session.settings()["neutralised"])


class FunctionProbe:
    """A function marked ``@graphlint.capture_region`` (or between
    ``# graphlint: capture-begin`` and ``capture-end`` comments, which begin its
    region at line ``first``: ``uncalled``)."""

    def __init__(self, fn: Callable[..., Any], first: int | None = None) -> None:
        functools.update_wrapper(self, fn)
        code = fn.__code__
        last = max((line for *_, line in code.co_lines() if line), default=0)
        self.fn = fn
        self.site = session.site_of(
            Capture.MARKED_FUNCTION,
            code.co_filename,
            first or code.co_firstlineno,
            max(last, code.co_firstlineno),
            f"{fn.__qualname__}()",
        )
        self.graph: Any = None
        self.output: Any = None
        self.pins: dict[str, Any] = {}  # what moved statements gave the capture
        self.static: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.site.calls += 1
        if not _wants_comparison(self.site):
            return self.fn(*args, **kwargs)
        if self.graph is None:
            self.static = (_static(args), _static(kwargs))
            static_args, static_kwargs = self.static
            captured = _capture(
                self.site,
                lambda: self.fn(*static_args, **static_kwargs),
                self.roots(args, kwargs),
            )
            if captured is None:  # warm-up error: the program's own call says why
                return self.fn(*args, **kwargs)
            self.graph, self.output, self.pins = captured
        return self.compare(args, kwargs)

    def roots(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        return function_roots(self.fn, args, kwargs)

    def compare(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        torch = _torch()
        static_args, static_kwargs = self.static
        if not (_feed(static_args, args) and _feed(static_kwargs, kwargs)):
            return self.fn(*args, **kwargs)  # another shape: one graph, one shape
        live = self.roots(args, kwargs)
        before, rng = Snapshot(reachable(live)), torch.cuda.get_rng_state()
        _replay(self.graph)
        replayed = reached_values(
            {**self.roots(static_args, static_kwargs), "return": self.output}
        )
        before.restore()
        torch.cuda.set_rng_state(rng)
        with neutral.pinned(self.pins):
            result = self.fn(*args, **kwargs)  # the program's own call
        self.site.random |= not torch.equal(rng, torch.cuda.get_rng_state())
        eager = reached_values({**live, "return": result})
        _judge(self.site, replayed, eager, f"call {self.site.calls}")
        return result


def function_roots(
    fn: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """What a call of ``fn`` can reach: its arguments by name, its closure and the
    globals it names (a module: itself and the arguments)."""
    found: dict[str, Any] = {}
    code = getattr(fn, "__code__", None)
    if code is None:  # a module, or another callable object
        return {"self": fn, "args": args, "kwargs": dict(kwargs)}
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    scope = fn.__globals__
    found.update({n: scope[n] for n in _global_names(code) if n in scope})
    if isinstance(fn, types.MethodType):  # a module's forward: the module too
        found["self"] = fn.__self__
    try:
        found.update(inspect.signature(fn).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        found.update(args=args, kwargs=kwargs)
    return found


class CallComparison:
    """The calls of a callable that torch made from the user's code (graphed
    callables, a ``torch.compile`` CUDA-graph function), each compared with that
    code run eagerly: first the eager run, on the call's inputs and the state it
    reaches (put back afterwards), then the program's own call, whose result and
    state are compared with the eager run's. The program keeps its call's result.
    ``random_differs``: code whose random numbers differ from eager's however the
    state is (compiled code draws its own), so a call that draws is not compared."""

    def __init__(
        self,
        site: Site,
        eager: Callable[..., Any],
        pins: Mapping[str, Any] | None = None,
        *,
        random_differs: bool = False,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self.site = site
        self.eager = eager
        self.pins = dict(pins or {})  # what moved statements gave the capture
        self.random_differs = random_differs
        self.active = active  # whether a call replays now (a graphed module: in
        # the training mode it was graphed in)
        self.off = False  # its code cannot be compared: the site says why
        self.calls = 0
        self.when = ""  # what the next comparison is, when not a program's call
        self.pending: list[dict[str, Any] | None] = []

    def roots(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        return function_roots(self.eager, args, kwargs)

    def before(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """Before a call: the eager run's values (None: not compared)."""
        self.calls += 1
        wanted = not self.off and self.active() and _wants_comparison(self.site)
        eager = None
        try:
            eager = self._eager(args, kwargs) if wanted else None
        except Exception as error:  # the checker's own failure: not the program's
            self._give_up(error)
        self.pending.append(eager)

    def _give_up(self, error: Exception) -> None:
        """The comparison itself failed (a bug of graphlint's, or a value it cannot
        copy): the program's calls go on, uncompared, and the site says why."""
        self.off = True
        self.site.detail = (
            "replays not compared: graphlint could not compare them "
            f"({attribution.first_line(error)})"
        )

    def _eager(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        torch = _torch()
        roots = self.roots(args, kwargs)
        before = Snapshot(reachable(roots))
        rng, host_rng = torch.cuda.get_rng_state(), torch.get_rng_state()
        values: dict[str, Any] | None = None
        try:
            with torch.no_grad(), neutral.pinned(self.pins):
                result = self.eager(*args, **kwargs)
            values = reached_values({**roots, "return": result})
        except Exception as error:
            self.off = True
            self.site.detail = (
                "replays not compared: its code fails when run again eagerly "
                f"({attribution.first_line(error)})"
            )
        drew = not (
            torch.equal(rng, torch.cuda.get_rng_state())
            and torch.equal(host_rng, torch.get_rng_state())
        )
        before.restore()
        torch.cuda.set_rng_state(rng)
        torch.set_rng_state(host_rng)
        self.site.random |= drew and values is not None
        if drew and values is not None and self.random_differs:
            self.off = True
            self.site.detail = (
                "replays not compared: it draws random numbers, which compiled "
                "code draws otherwise than eager code"
            )
            return None
        return values

    def after(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any], result: Any
    ) -> None:
        """After the program's call returned ``result``: compare."""
        eager = self.pending.pop() if self.pending else None
        if eager is None:
            return
        try:
            try:
                replayed = reached_values(
                    {**self.roots(args, kwargs), "return": result}
                )
            except RuntimeError:  # an input the call overwrote: an earlier output
                # of the same compiled graphs, which the program does not read again
                replayed = reached_values({"return": result})
                eager = {p: v for p, v in eager.items() if _returned(p)}
            _judge(self.site, replayed, eager, self.when or f"call {self.calls}")
        except Exception as error:  # the checker's own failure: not the program's
            self._give_up(error)

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (what torch made), its calls compared."""

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            self.before(args, kwargs)
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                self.pending.pop()
                raise
            self.after(args, kwargs, result)
            return result

        return call

    def hook(self, module: Any) -> None:
        """A module (what torch made, still a module): its calls compared."""

        def before(_: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            self.before(args, kwargs)

        def after(
            _: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
        ) -> None:
            self.after(args, kwargs, out)

        module.register_forward_pre_hook(before, with_kwargs=True)
        module.register_forward_hook(after, with_kwargs=True)

    def right_after(self, call: Callable[[], Any], roots: Mapping[str, Any]) -> None:
        """One call on the sample inputs, compared, before the program holds any
        output; the state is put back afterwards."""
        torch = _torch()
        before, rng = Snapshot(reachable(roots)), torch.cuda.get_rng_state()
        self.when = "a replay right after capture"
        try:
            with torch.no_grad():
                call()
        except Exception:  # the sample inputs alone do not make a call: the
            self.pending.clear()  # program's own calls are compared
        finally:
            self.when = ""
            self.calls = 0
            before.restore()
            torch.cuda.set_rng_state(rng)


def _returned(path: str) -> bool:
    return path == "return" or path.startswith(("return[", "return."))


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _roots(block: Block, env: Mapping[str, Any]) -> dict[str, Any]:
    return {name: env[name] for name in sorted(block.names) if name in env}


@dataclass(frozen=True)
class Entry:
    """A capture's block as its capture begins. ``names``: what the names it binds
    hold (the tensors the graph reads where the block reads a name before it
    rebinds it, ``x = x * 2``; after the capture the name holds the graph's
    output); ``bound``: what the state it reaches binds (``Bindings``)."""

    names: dict[str, Any]
    bound: Bindings | None


NO_ENTRY = Entry({}, None)


def entry(block: Block | None, frame: types.FrameType, site: Site | None) -> Entry:
    """``block`` as its capture at ``frame`` begins, where replays of ``site`` are
    compared (``ObservedCapture``)."""
    if block is None or site is None or not session.is_target(site):
        return NO_ENTRY
    env = {**frame.f_globals, **frame.f_locals}
    names = {name: env[name] for name in sorted(block.assigned) if name in env}
    return Entry(names, Bindings(reachable(_roots(block, env))))


class BlockProbe:
    """A block marked ``with graphlint.capture_region():``.

    Python runs the body itself; the probe captures a copy of it (compiled from
    the source) on entry, replays the graph there, and compares on exit.
    """

    def __init__(self, site: Site, block: Block) -> None:
        self.site = site
        self.block = block
        self.graph: Any = None
        self.env: dict[str, Any] = {}  # the names the captured body ran with
        self.static: dict[str, Any] = {}  # the graph's copies of the local inputs
        self.pins: dict[str, Any] = {}  # what moved statements gave the capture
        self.pending: tuple[dict[str, Any], Any] | None = None
        self.pinning = contextlib.ExitStack()  # the program's body, while compared

    def enter(self, frame: types.FrameType) -> None:
        self.site.calls += 1
        self.pending = None
        self.pinning.close()  # a body that raised last time was not compared
        code = self.block.code
        if not _wants_comparison(self.site):
            return
        if code is None:
            self.site.detail = f"not captured: {self.block.reason}"
            return
        torch = _torch()
        local = dict(frame.f_locals)
        env = {**frame.f_globals, **local}
        if self.graph is None:
            self.static = {
                n: _static(v) for n, v in local.items() if n in self.block.names
            }
            base = {**env, **self.static}

            def run() -> dict[str, Any]:
                scope = dict(base)
                exec(code, scope)
                return scope

            captured = _capture(self.site, run, _roots(self.block, env))
            if captured is None:
                return
            self.graph, self.env, self.pins = captured  # the captured run's env
        if not all(_feed(s, local[n]) for n, s in self.static.items() if n in local):
            return
        before, rng = (
            Snapshot(reachable(_roots(self.block, env))),
            torch.cuda.get_rng_state(),
        )
        _replay(self.graph)
        self.pending = (reached_values(_roots(self.block, self.env)), rng)
        before.restore()
        torch.cuda.set_rng_state(rng)
        self.pinning.enter_context(neutral.pinned(self.pins))  # the body runs next

    def abandon(self) -> None:
        """The body raised: the values moved statements gave the capture stop
        standing in for them, and there is no replay to compare."""
        self.pinning.close()
        self.pending = None

    def exit(self, frame: types.FrameType) -> None:
        self.pinning.close()
        if self.pending is None:
            return
        replayed, rng = self.pending
        self.pending = None
        torch = _torch()
        self.site.random |= not torch.equal(rng, torch.cuda.get_rng_state())
        env = {**frame.f_globals, **frame.f_locals}
        eager = reached_values(_roots(self.block, env))
        _judge(self.site, replayed, eager, f"pass {self.site.calls}")


def enter_block(frame: types.FrameType) -> BlockProbe | None:
    """``with graphlint.capture_region():`` entered at ``frame``'s line."""
    filename = frame.f_code.co_filename
    block = block_at(filename, frame.f_lineno)
    if block is None:
        return None
    site = session.site_of(
        Capture.MARKED_BLOCK,
        filename,
        block.line,
        block.end_line,
        session.caller_name(frame),
    )
    if site.key not in BLOCKS:
        BLOCKS[site.key] = BlockProbe(site, block)
    probe = BLOCKS[site.key]
    probe.enter(frame)
    return probe


class ObservedCapture:
    """A ``torch.cuda.graph`` block of the program that captured. Right after the
    capture, and at each of the program's replays up to the limit, the graph is
    replayed and compared with the body run eagerly on the names it sees then:
    once on the values the program holds, once on varied inputs (an all-zeros
    input hides many wrong replays). The state is put back after each comparison,
    so the program goes on as it would have."""

    def __init__(
        self,
        site: Site,
        block: Block,
        frame: types.FrameType,
        pins: Mapping[str, Any] | None = None,
        entry: Entry | None = None,
    ) -> None:
        self.site = site
        self.block = block
        self.frame = frame
        self.env = {**frame.f_globals, **frame.f_locals}  # outputs bound
        self.pins = dict(pins or {})  # what moved statements gave the capture
        # the block as its capture began (``Entry``): until the program runs on,
        # the graph's inputs where it rebinds a name it reads, and the bindings
        self.entry = entry or NO_ENTRY
        self.replays = 0

    def replay(self, graph: Any) -> None:
        self.replays += 1
        if _wants_comparison(self.site):
            self.kept()
        self.check(graph, f"replay {self.replays}")
        _replay(graph)  # what the program asked for

    def kept(self) -> None:
        """Results kept across replays that alias one output: the same view of an
        output's memory held twice in the program's lists, tuples and dicts
        outside the block (a list of "results", one per replay), so this replay
        overwrites them all. Names and views of an output are not counted."""
        outputs = {
            _view(tensor): path
            for path, tensor in reachable(
                {n: self.env[n] for n in self.block.assigned if n in self.env}
            ).tensors.items()
            if tensor.numel()
        }
        env = {**self.frame.f_globals, **self.frame.f_locals}
        holders: dict[tuple[Any, ...], list[str]] = {}
        seen: set[int] = set()
        for name in sorted(set(env) - self.block.names):
            for path, tensor in _held(env[name], name, 0, seen):
                if tensor.numel() and _view(tensor) in outputs:
                    holders.setdefault(_view(tensor), []).append(path)
        for view, paths in holders.items():
            if len(paths) > 1:
                self.site.status = Status.SILENT_WRONG
                self.site.tensors = paths
                shown = ", ".join(f"`{p}`" for p in paths[:3])
                self.site.detail = (
                    f"{shown} all hold the graph's output `{outputs[view]}` "
                    f"(kept across replays): replay {self.replays} overwrites them"
                )
                return

    def check(self, graph: Any, when: str, *, first: bool = False) -> None:
        """Compare a replay with eager on the program's values, then on varied
        inputs; the state is as before afterwards. The ``first`` replay, right
        after the capture, runs the block eagerly on what its names held as the
        capture began (the program has not run on yet); a later one on what the
        program's names hold then, as a replay the program asks for should."""
        for vary in (False, True):
            if not (self.block.code and _wants_comparison(self.site)):
                break
            when_ = f"{when}, varied inputs" if vary else when
            self.compare(graph, when_, vary, self.entry if first else NO_ENTRY)
        if first:  # held no longer: the entry's tensors, its old gradients
            self.entry = NO_ENTRY

    def compare(self, graph: Any, when: str, vary: bool, entry: Entry) -> None:
        code = self.block.code
        assert code is not None
        torch = _torch()
        env = {**self.frame.f_globals, **self.frame.f_locals, **entry.names}
        live, captured = _roots(self.block, env), _roots(self.block, self.env)
        # the outputs too: the replay writes them, and the program keeps them
        kept = {f"output {name}": value for name, value in captured.items()}
        before = Snapshot(reachable({**kept, **live}))
        rng = torch.cuda.get_rng_state()
        start = before
        if vary:
            _vary(self.block, env, seed=self.site.compared, rebound=entry.names)
            start = Snapshot(reachable({**kept, **live}))
        _replay(graph)
        replayed = reached_values(captured)
        start.restore()
        torch.cuda.set_rng_state(rng)
        scratch = dict(env)
        program = entry.bound.now() if entry.bound else None
        try:
            with neutral.pinned(self.pins):
                if self.site.eager_ms is None:
                    self.site.eager_ms = _time_ms(lambda: exec(code, dict(env)))
                    self.site.replay_ms = _time_ms(lambda: _replay(graph))
                    start.restore()
                    torch.cuda.set_rng_state(rng)
                if entry.bound:  # from the bindings the capture began with
                    entry.bound.apply()
                exec(code, scratch)
        except Exception as error:
            self.block = replace(
                self.block,
                code=None,
                reason=f"its body fails when run again eagerly ({error})",
            )
            self.site.detail = f"replays not compared: {self.block.reason}"
        else:
            self.site.random |= not torch.equal(rng, torch.cuda.get_rng_state())
            eager = reached_values(_roots(self.block, scratch))
            _judge(self.site, replayed, eager, when)
        finally:  # the program goes on as it would have: its bindings, its values
            if program is not None:
                program.apply()
            before.restore()
            torch.cuda.set_rng_state(rng)


def _held(
    value: Any, path: str, depth: int, seen: set[int]
) -> Iterator[tuple[str, Any]]:
    """Every tensor held in the lists, tuples and dicts of ``value``, at every
    path that reaches it (the same tensor kept twice is two places); each
    container once."""
    if depth >= 3 or not isinstance(value, (list, tuple, dict)) or id(value) in seen:
        return
    seen.add(id(value))
    torch = _torch()
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        if isinstance(item, torch.Tensor):
            yield f"{path}[{key!r}]", item
        else:
            yield from _held(item, f"{path}[{key!r}]", depth + 1, seen)


def _view(tensor: Any) -> tuple[Any, ...]:
    """The memory a tensor shows: where, in what shape and strides."""
    return (tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()))


def _vary(
    block: Block, env: Mapping[str, Any], seed: int, rebound: Iterable[str] = ()
) -> None:
    """Fill the floating-point tensors the block reads and does not bind (its
    inputs, held by a name or a list, tuple or dict of them), and those of the
    ``rebound`` names it binds, with random values."""
    torch = _torch()
    generator: Any = None
    for name in sorted((block.names - block.assigned) | set(rebound)):
        for _, tensor in named_tensors(env.get(name), name):
            if not tensor.is_floating_point() or not tensor.numel():
                continue
            if generator is None or generator.device != tensor.device:
                generator = torch.Generator(device=tensor.device)
                generator.manual_seed(1234 + seed)
            noise = torch.randn(
                tensor.shape,
                generator=generator,
                device=tensor.device,
                dtype=tensor.dtype,
            )
            with torch.no_grad():
                tensor.copy_(noise)


def _fails_eagerly(run: Callable[[], Any], failure: BaseException) -> str | None:
    """The error ``run`` raises without capture, when it is the capture's own
    failure again (the same error, at the same line of the user's code): the
    region fails anyway, so the failure is not a capture hazard. A statement a
    variant moved that fails eagerly gives what it gave the capture. It runs while
    the capture's failure is handled: that failure is not part of the eager one's."""
    handled = sys.exc_info()[1]
    try:
        with neutral.eager_check():
            run()
    except Exception as error:
        again = attribution.first_line(error, since=handled)
        same = again == attribution.first_line(failure) and attribution.user_frame(
            error, since=handled
        ) == attribution.user_frame(failure)
        return again if same else None
    return None


# what enters a context on an exit stack (``stack.enter_context(torch.cuda.graph(g))``;
# ``AsyncExitStack`` inherits it)
_ENTER_CONTEXT = contextlib.ExitStack.enter_context.__code__


def _entering(frame: types.FrameType) -> types.FrameType:
    """The frame that enters a context: the caller of an exit stack's
    ``enter_context``, whose line the static analysis names the region by (a
    ``with`` block's or, without a block, the ``enter_context`` call's)."""
    if frame.f_code is _ENTER_CONTEXT and frame.f_back is not None:
        return frame.f_back
    return frame


def _observed_graph(base: type) -> type:
    """``torch.cuda.graph`` that records its capture instead of crashing the run."""

    class ObservedGraph(base):  # type: ignore[misc]
        def __enter__(self) -> Any:
            frame = _entering(sys._getframe(1))
            filename = frame.f_code.co_filename
            self._graphlint_site = None
            if not is_user_file(filename):  # make_graphed_callables
                return super().__enter__()
            self._graphlint_block = block_at(filename, frame.f_lineno)
            line = frame.f_lineno
            block = self._graphlint_block
            site = session.site_of(
                Capture.GRAPH_BLOCK,
                filename,
                block.line if block else line,
                block.end_line if block else line,
                session.caller_name(frame),
            )
            self._graphlint_site = site
            site.calls += 1
            self._graphlint_frame = frame
            if block is not None and site.key in session.settings()["warm"]:
                _warm_block(site, block, frame)
            elif block is not None:
                _prime(site, block, frame)
            self._graphlint_mark = neutral.mark()
            self._graphlint_entry = entry(block, frame, site)
            try:
                began = super().__enter__()
            except Exception as error:  # the capture could not begin
                self._graphlint_site = None
                site.error_path, site.error_line = site.path, line
                session.fail(site, Status.CAPTURE_ERROR, error)  # raises StopRun
            # open until its exit: an error that escapes the user's code before it
            # (an exit stack closed by ``stack.close()``) failed this capture
            OPEN[id(self.cuda_graph)] = site
            return began

        def __exit__(self, kind: Any, error: Any, trace: Any) -> Any:
            site: Site | None = self._graphlint_site
            if site is None:
                return super().__exit__(kind, error, trace)
            OPEN.pop(id(self.cuda_graph), None)
            _stood_in(site, self._graphlint_mark)
            if isinstance(error, session.StopRun):  # a probe inside already failed
                try:
                    super().__exit__(kind, error, trace)
                finally:
                    raise error
            try:
                suppressed = super().__exit__(kind, error, trace)
            except Exception as failure:
                first = error if isinstance(error, Exception) else failure
                self._fail(site, failure, first)
                raise
            if isinstance(error, Exception) and not suppressed:
                self._fail(site, error, error)
            block = self._graphlint_block
            if error is None and block is not None and session.is_target(site):
                graph = self.cuda_graph
                pins = neutral.values_since(self._graphlint_mark)
                observed = ObservedCapture(
                    site, block, self._graphlint_frame, pins, self._graphlint_entry
                )
                OBSERVED[id(graph)] = (graph, observed)
                observed.check(graph, "a replay right after capture", first=True)
            elif error is None and block is None and session.is_target(site):
                site.detail = (
                    "replays not compared: it was not entered by a with block "
                    "(an exit stack's enter_context)"
                )
            return suppressed

        def _fail(
            self, site: Site, failure: BaseException, first: BaseException
        ) -> None:
            """The capture failed (``first`` raised in its body, or the capture's
            end): say so, and whether the body fails the same way eagerly."""
            block = self._graphlint_block
            if block is not None and block.code is not None:
                code, frame = block.code, self._graphlint_frame
                env = {**frame.f_globals, **frame.f_locals}
                site.eager = _fails_eagerly(lambda: exec(code, env), first) or ""
            session.fail(site, Status.CAPTURE_ERROR, failure)  # raises StopRun

    ObservedGraph.__name__ = ObservedGraph.__qualname__ = "graph"
    return ObservedGraph


def _warm_block(site: Site, block: Block, frame: types.FrameType) -> None:
    """A variant run: warm the block up on a side stream before its capture, as a
    fix for a missing warm-up (GL703) would."""
    code = block.code
    if code is None:
        site.detail = f"not warmed up: {block.reason}"
        return
    env = {**frame.f_globals, **frame.f_locals}
    try:
        _warm_up(lambda: exec(code, dict(env)), int(session.settings()["warmup"]))
    except Exception as error:
        site.detail = f"its warm-up failed: {attribution.first_line(error)}"


def _prime(site: Site, block: Block, frame: types.FrameType) -> None:
    """A variant run: a statement moved out of this capture takes its value from an
    eager run of the region before the capture, when no run outside the capture
    kept one yet (a region the program never runs eagerly), instead of a stand-in
    that ends the region's trial early. That run warms the region up too, so the
    run says so (``warm``: a finding of a missing warm-up is not judged there).
    The state the region reaches is put back afterwards."""
    code = block.code
    if code is None or not neutral.missing(site.path, block.line, block.end_line):
        return
    torch = _torch()
    env = {**frame.f_globals, **frame.f_locals}
    before = Snapshot(reachable(_roots(block, env)))
    rng = torch.cuda.get_rng_state()
    try:
        _warm_up(lambda: exec(code, dict(env)), 1)
    except Exception:  # values computed before the error are kept: stand-ins after
        torch.cuda.synchronize()
    before.restore()
    torch.cuda.set_rng_state(rng)
    if site.key not in session.PRIMED:
        session.PRIMED.append(site.key)


def _observed_graphed_callables(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def make_graphed_callables(*args: Any, **kwargs: Any) -> Any:
        frame = sys._getframe(1)
        site = session.site_of(
            Capture.GRAPHED_CALLABLES,
            frame.f_code.co_filename,
            frame.f_lineno,
            frame.f_lineno,
            session.caller_name(frame),
        )
        site.calls += 1
        callables, samples = _graphed_arguments(args, kwargs)
        eager = [getattr(c, "forward", c) for c in callables]  # before torch's
        modes = [getattr(c, "training", None) for c in callables]
        start = neutral.mark()
        try:
            made = original(*args, **kwargs)
        except Exception as error:
            _stood_in(site, start)
            if attribution.user_frame(error) is None:  # raised by torch itself
                site.error_path, site.error_line = site.path, site.line
            else:
                again = _fails_eagerly(lambda: _call_each(*args, **kwargs), error)
                site.eager = again or ""
            session.fail(site, Status.CAPTURE_ERROR, error)
            raise
        _stood_in(site, start)
        if not session.is_target(site):
            return made
        pins = neutral.values_since(start)
        single = not isinstance(made, tuple)
        compared = [
            _compared_graphed(site, m, e, mode, sample, pins)
            for m, e, mode, sample in zip(
                (made,) if single else made, eager, modes, samples, strict=False
            )
        ]
        return compared[0] if single else tuple(compared)

    return make_graphed_callables


def _graphed_arguments(
    args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The callables and their sample arguments, as tuples, of a
    ``make_graphed_callables`` call."""
    callables = args[0] if args else kwargs.get("callables")
    samples = args[1] if len(args) > 1 else kwargs.get("sample_args")
    if not isinstance(callables, tuple):
        return (callables,), (samples,)
    return callables, tuple(samples or ())


def _compared_graphed(
    site: Site,
    made: Any,
    eager: Any,
    training: bool | None,
    sample: Any,
    pins: Mapping[str, Any],
) -> Any:
    """A graphed callable whose replays are compared with its code run eagerly:
    right after it is made (on its sample inputs), then at each call. A graphed
    module replays only in the training mode it was graphed in (torch runs its
    forward eagerly otherwise): calls in the other are not compared."""
    torch = _torch()
    inputs = tuple(sample) if isinstance(sample, (list, tuple)) else (sample,)
    if isinstance(made, torch.nn.Module):
        comparison = CallComparison(
            site, eager, pins, active=lambda: made.training == training
        )
        comparison.hook(made)
        comparison.right_after(lambda: made(*inputs), {"self": made, "args": inputs})
        return made
    comparison = CallComparison(site, eager, pins)
    graphed = comparison.wrap(made)
    comparison.right_after(lambda: graphed(*inputs), function_roots(eager, inputs, {}))
    return graphed


def _call_each(callables: Any, sample_args: Any, *args: Any, **kwargs: Any) -> None:
    """What ``make_graphed_callables(callables, sample_args)`` runs, run eagerly."""
    if not isinstance(callables, tuple):
        callables, sample_args = (callables,), (sample_args,)
    for run, inputs in zip(callables, sample_args, strict=False):
        run(*inputs)


def _capture_begin(graph: Any, *args: Any, **kwargs: Any) -> Any:
    """``g.capture_begin()`` called by the user's code (not by ``torch.cuda.graph``)
    opens a site that lasts until its ``capture_end()``."""
    frame = sys._getframe(1)
    site = None
    block = None
    if is_user_file(frame.f_code.co_filename):
        site = session.site_of(
            Capture.CAPTURE_PAIR,
            frame.f_code.co_filename,
            frame.f_lineno,
            frame.f_lineno,
            session.caller_name(frame),
        )
        site.calls += 1
        block = span_at(frame.f_code.co_filename, frame.f_lineno)
        if block is not None:
            _prime(site, block, frame)
    start = neutral.mark()
    try:
        began = ORIGINAL["capture_begin"](graph, *args, **kwargs)
    except Exception as error:
        if site is not None:  # it raises on its own line
            site.error_path, site.error_line = site.path, site.line
            session.fail(site, Status.CAPTURE_ERROR, error)  # raises StopRun
        raise
    if site is not None:
        OPEN[id(graph)] = site
        PAIRS[id(graph)] = (start, block, entry(block, frame, site))
    lines.begin_capture()
    attribution.SWALLOWED.clear()
    return began


def _capture_end(graph: Any) -> Any:
    lines.end_capture()
    site = OPEN.pop(id(graph), None)
    start, block, held = PAIRS.pop(id(graph), (neutral.mark(), None, NO_ENTRY))
    frame = sys._getframe(1)
    if site is not None:
        _stood_in(site, start)
        if os.path.realpath(frame.f_code.co_filename) == site.path:
            site.end_line = max(site.end_line, frame.f_lineno)
        else:  # it ends in another function: its statements are not one block
            block = None
    try:
        ended = ORIGINAL["capture_end"](graph)
    except Exception as error:
        if site is not None:
            session.fail(site, Status.CAPTURE_ERROR, error)  # raises StopRun
        raise
    attribution.SWALLOWED.clear()  # a capture that ended well: nothing to explain
    CAPTURED.add(id(graph))
    if site is not None and session.is_target(site):
        if block is None:
            site.detail = (
                "replays not compared: its capture_begin() and capture_end() "
                "are not in one block of statements"
            )
        else:  # compared as a torch.cuda.graph block is, the pair's statements
            pins = neutral.values_since(start)
            observed = ObservedCapture(site, block, frame, pins, held)
            OBSERVED[id(graph)] = (graph, observed)
            observed.check(graph, "a replay right after capture", first=True)
    return ended


def fail_open(error: BaseException) -> bool:
    """An error that escaped the user's code while a capture was open (a
    ``capture_begin()``, a ``torch.cuda.graph`` entered on an exit stack) failed
    that capture: record it there (False when no capture was open)."""
    if not OPEN:
        return False
    key, site = list(OPEN.items())[-1]
    _stood_in(site, PAIRS.get(key, (neutral.mark(), None, NO_ENTRY))[0])
    OPEN.clear()
    PAIRS.clear()
    with contextlib.suppress(session.StopRun):  # the run has ended already
        session.fail(site, Status.CAPTURE_ERROR, error)
    return True


def _handle_error(handler: logging.Handler, record: logging.LogRecord) -> None:
    """``logging`` prints a handler's failure instead of raising it: one while a
    graph is captured (formatting a tensor syncs) is kept for attribution."""
    error = sys.exc_info()[1]
    if lines.capturing() and error is not None:
        attribution.swallowed(error, sys._getframe(1))
    ORIGINAL["handle_error"](handler, record)


def _replay_hook(graph: Any) -> None:
    if id(graph) not in CAPTURED and _variant():
        return  # a variant run took its capture out: the code ran eagerly instead
    observed = OBSERVED.get(id(graph))
    if observed is None or observed[0] is not graph:
        ORIGINAL["replay"](graph)
    else:
        observed[1].replay(graph)


def install() -> None:
    """Observe the program's own captures (once per process)."""
    if ORIGINAL:
        return
    torch = _torch()
    cuda = torch.cuda
    ORIGINAL.update(
        graph=cuda.graph,
        replay=cuda.CUDAGraph.replay,
        graphed=cuda.make_graphed_callables,
        capture_begin=cuda.CUDAGraph.capture_begin,
        capture_end=cuda.CUDAGraph.capture_end,
    )
    cuda.graph = cuda.graphs.graph = _observed_graph(cuda.graph)
    wrapped = _observed_graphed_callables(cuda.make_graphed_callables)
    cuda.make_graphed_callables = cuda.graphs.make_graphed_callables = wrapped
    cuda.CUDAGraph.replay = _replay_hook
    cuda.CUDAGraph.capture_begin = _capture_begin
    cuda.CUDAGraph.capture_end = _capture_end
    ORIGINAL["handle_error"] = logging.Handler.handleError
    logging.Handler.handleError = _handle_error  # type: ignore[method-assign,assignment]
    compiled.install(torch)


__all__ = [
    "BlockProbe",
    "FunctionProbe",
    "ObservedCapture",
    "enter_block",
    "fail_open",
    "install",
]
