"""The capture timeline: which host code runs before a capture, and which between
the capture and a later replay of its graph. Computed once per file, in one walk.

A capture freezes what the graph reads from host state, so a write is a hazard only
when it can run after the capture and before a replay of that graph. Rules ask here
instead of comparing line numbers, and get the evidence to print: the write, the
replay it precedes and, when the write runs in a called function, the call.

Each function (module code counts as one; a lambda belongs to the code around it)
becomes a list of sites in source order, each with its enclosing loops:

- *captures*: a ``with torch.cuda.graph(g):`` block or ``g.capture_begin()`` span;
- *replays*: ``g.replay()``, with ``g``'s host location (``state.Key``), so graphs
  are told apart by where they live, not by their source text;
- *writes*: every ``Write`` of ``state``;
- *calls* of functions defined in the file, which carry the captures, replays and
  writes of everything they call;
- *compiled calls*: calls of a callable compiled with CUDA graphs (cudagraph trees
  reuse its output memory at each call), with whether autograd is off there, and
  ``.backward()`` calls.

A function marked as a region (``@graphlint.capture_region``) captures at its first
call and replays at each call: its calls are its replays.

A write W of function F precedes a replay R of the graph when, in F: W comes before
R with no capture of the graph in between (a first binding before the capture is
set-up, not a change); or W and R share a loop that does not capture afresh before W
in each iteration (a loop that captures a new graph each time replays that one). A
write to a global or an attribute after the capture also precedes the replays made
by other functions. A write no such order reaches (import time, ``__init__``,
``setUp``, a setter nothing calls between capture and replay) is not evidence.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange

from graphlint.diagnostics import Confidence, RegionKind
from graphlint.facts.region import Region
from graphlint.facts.regions import Found
from graphlint.facts.scopes import Binding, ClassInfo
from graphlint.facts.setup import CaptureSetup
from graphlint.facts.state import (
    HostState,
    Key,
    Write,
    loose,
    same,
    subscript_index,
    within,
)
from graphlint.facts.steady import Settled, Steady
from graphlint.facts.syntax import argument_of, dotted, is_none
from graphlint.facts.values import Device, Values
from graphlint.facts.walk import node_types

Position = tuple[int, int]
Condition = tuple[cst.BaseExpression, bool]  # a test, and the value it must have
Function = cst.FunctionDef | cst.Module
_LOOPS = node_types(cst.For, cst.While)
_SMALL_STATEMENTS = node_types(cst.BaseSmallStatement)
_STORES = node_types(cst.Name, cst.Attribute, cst.Subscript)  # what state writes
_NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)
_FAR = 1 << 30  # a column past the end of any line
_CALLER_DEPTH = 8  # callers followed up from a capture, to find its set-up
# methods that run before anything else of their object: constructors and test set-up
SETUP_METHODS = frozenset(
    {"__init__", "__post_init__", "__new__", "setUp", "setup_method", "setup"}
)


@dataclass(frozen=True, eq=False)
class Site:
    """Where something happens: its function, position and enclosing loops. Its
    position is looked up when first asked (most sites' never are)."""

    node: cst.CSTNode
    function: Function
    positions: Mapping[cst.CSTNode, CodeRange] = field(repr=False)
    loops: tuple[cst.CSTNode, ...]  # outermost first
    grad_off: bool = False  # under ``torch.no_grad()``/``inference_mode()`` here
    until: Position | None = None  # its end, where not its node's: a region's

    @functools.cached_property
    def start(self) -> Position:
        where = self.positions[self.node].start
        return (where.line, where.column)

    @functools.cached_property
    def end(self) -> Position:
        if self.until is not None:
            return self.until
        where = self.positions[self.node].end
        return (where.line, where.column)

    @property
    def line(self) -> int:
        return self.start[0]


@dataclass(frozen=True)
class Change:
    """Evidence that a write runs between a capture and a replay of its graph."""

    write: Write
    replay: int  # the line of the replay it precedes
    call: int | None  # the line of the call the write runs in, if not written there
    confidence: Confidence

    def through(self) -> str:
        return f" (in the call at line {self.call})" if self.call else ""

    def describe(self, what: str = "") -> str:
        """``line 12 changes it before the replay at line 14`` (``what``: "it")."""
        changes = f"changes {what}" if what else "changes"
        return (
            f"line {self.write.line}{self.through()} {changes} before the replay at "
            f"line {self.replay}"
        )


@dataclass
class _Events:
    """One function's sites of interest, in source order."""

    captures: list[tuple[Site, Region]] = field(default_factory=list)
    replays: list[tuple[Site, Key | None]] = field(default_factory=list)
    calls: list[tuple[Site, tuple[cst.FunctionDef, ...]]] = field(default_factory=list)
    streams: list[Site] = field(default_factory=list)  # side-stream ``with`` blocks
    # calls made outside any capture, by dotted name (``model``, ``self.step``)
    named: list[tuple[Site, str]] = field(default_factory=list)
    # calls of CUDA-graph-compiled callables: each replays (or records) their graph
    compiled: list[tuple[Site, Region]] = field(default_factory=list)
    backwards: list[Site] = field(default_factory=list)  # ``loss.backward()``


@dataclass(frozen=True)
class _Graph:
    """A capture's graph: where it lives and where it is replayed."""

    key: Key | None
    replays: dict[Function, list[Site]]  # by function, only those that replay it
    replayers: frozenset[Function]
    capturing: frozenset[Function]  # functions that make this capture
    confidence: Confidence  # MEDIUM when the graph's location is vague
    first_replay: int  # the line of the first replay


@dataclass(frozen=True)
class _Point:
    """A capture, replay or write as seen from one function: directly, or in a call."""

    start: Position
    end: Position
    loops: tuple[cst.CSTNode, ...]
    call: int | None = None
    tests: tuple[Position, ...] = ()  # where the conditions it runs under are


class Flow(cst.CSTVisitor):
    """The walk, then the queries below."""

    def __init__(
        self,
        module: cst.Module,
        values: Values,
        state: HostState,
        found: Found,
        setup: CaptureSetup,
        positions: Mapping[cst.CSTNode, CodeRange],
        path: str | None = None,
        *,
        defined: Collection[str],
    ) -> None:
        """``defined``: the names the file's functions are defined under."""
        super().__init__()
        self.module = module
        self.values = values
        self.state = state
        self.positions = positions
        self.path = path
        self.regions = found.regions
        self._conditions = found.conditions
        # side-stream blocks (set-up records each before flow's walk reaches it),
        # and the functions that set the stream
        self._setup = setup
        self.events: dict[Function, _Events] = {}
        self.sites: dict[cst.CSTNode, Site] = {}
        # captures made in this file (not reached from elsewhere), by root
        self.captures: dict[cst.CSTNode, Region] = {
            r.root: r
            for r in found.regions.present
            if r.kind is RegionKind.MANUAL and not r.via and r.root is not None
        }
        # marked functions of this file: the first call captures, each call replays
        self.marked: dict[cst.CSTNode, Region] = {
            r.root: r
            for r in found.regions.present
            if r.kind is RegionKind.MARKED
            and not r.via
            and type(r.root) is cst.FunctionDef
        }
        # the node types of captures and of nodes under a test: no other is looked up
        self._captured = frozenset(type(root) for root in self.captures)
        self._tested = frozenset(type(tested) for tested in self._conditions)
        # both, by line (the first of a line): what code reached from one runs under
        self._capture_lines: dict[int, Region] = {}
        for capture in (*self.captures.values(), *self.marked.values()):
            self._capture_lines.setdefault(capture.line, capture)
        # the tests of the ``if``/``while`` blocks and early exits around a node
        # and the value each must have for the node to run
        self.guard_tests: dict[cst.CSTNode, tuple[Condition, ...]] = {}
        self._functions: list[Function] = [module]
        self._loops: list[list[cst.CSTNode]] = [[]]
        self._compiles = found.compiles
        self.compiled_calls: dict[cst.CSTNode, Region] = {}
        # and what compiled each: the ``torch.compile(...)`` call, or the function
        self.compiled_by: dict[cst.CSTNode, cst.CSTNode] = {}
        self._returns: dict[Function, list[cst.BaseExpression | None]] = {}
        self._grad_off: list[int] = [0]  # per function: no-grad scopes open
        self._grad_blocks: set[cst.CSTNode] = set()
        self._tests: list[tuple[Condition, ...]] = [()]
        self._pushed_tests: set[cst.CSTNode] = set()
        self._reach: dict[Function, frozenset[Function]] = {}
        self._eager: dict[Function, frozenset[Function]] = {}
        self._ways: dict[cst.CSTNode, frozenset[Function]] = {}  # by capture root
        self._skip: set[cst.CSTNode] = set()  # not references to functions
        self._defined = defined  # a name read can refer to a function only as one
        # the names of the methods of this file's classes: ``x.name`` may be one
        self._method_names = frozenset(
            name for c in values.class_infos.values() for name in c.methods
        )
        # ... and every other name their objects or bodies bind: ``x.name(...)``
        # runs a function of this file only where ``name`` is one of these
        # (``Values._attribute``), and no other call needs its value here
        self._member_names = self._method_names | frozenset(
            name
            for c in values.class_infos.values()
            for names in (c.attrs, c.class_attrs, c.scope.bindings)
            for name in names
        )
        # indexes and answers, built on first use
        self._callers: dict[cst.CSTNode, list[Site]] | None = None
        self._region_calls: dict[Region, list[cst.Call]] | None = None
        self._replays: dict[object, list[tuple[Function, Site, Key]]] | None = None
        self._every_replay: dict[Function, list[Site]] | None = None
        self._captured_in: dict[Region, list[tuple[Function, Region]]] | None = None
        self._ancestors: dict[Function, list[Function]] = {}
        self._written: dict[Function, set[Key]] | None = None
        self._graphs: dict[Region, _Graph] = {}
        self._changes: dict[tuple[Key, Region], Change | None] = {}
        self._steady: Steady | None = None
        self._settled: Settled | None = None

    # -- the walk --------------------------------------------------------------------
    def site(self, node: cst.CSTNode) -> Site:
        found = Site(
            node,
            self._functions[-1],
            self.positions,
            tuple(self._loops[-1]),
            self._grad_off[-1] > 0,
        )
        self.sites[node] = found
        return found

    def here(self) -> _Events:
        return self.events.setdefault(self._functions[-1], _Events())

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        tests = self._conditions.get(node) if kind in self._tested else None
        if tests:
            self._tests.append((*self._tests[-1], *tests))
            self._pushed_tests.add(node)
        # by exact type (``node_types``): this runs on every node of the file;
        # ``type(node) is X`` where a branch reads X's fields (mypy narrows it)
        if type(node) is cst.FunctionDef:
            self._functions.append(node)
            self._loops.append([])
            decorated = any(self._no_grad(d.decorator) for d in node.decorators)
            self._grad_off.append(int(decorated))
        elif kind in _LOOPS:
            self._loops[-1].append(node)
        elif type(node) is cst.With and any(
            self._no_grad(item.item) for item in node.items
        ):
            self._grad_off[-1] += 1
            self._grad_blocks.add(node)
        if kind in self._captured and node in self.captures:
            region = self.captures[node]
            site = self.site(node)
            end = (region.end_line, _FAR) if region.end_line else None
            site = Site(node, site.function, self.positions, site.loops, until=end)
            self.sites[node] = site
            self.here().captures.append((site, region))
            if self._tests[-1]:
                self.guard_tests[node] = self._tests[-1]
        if kind is cst.With and node in self._setup.stream_blocks:
            self.here().streams.append(self.site(node))
        if kind is cst.Call or (kind in _STORES and node in self.state.write_at):
            self.site(node)
            if self._tests[-1]:
                self.guard_tests[node] = self._tests[-1]
        elif kind in _SMALL_STATEMENTS and self._tests[-1]:
            self.guard_tests[node] = self._tests[-1]  # rules report statements too
        if type(node) is cst.Return:
            self._returns.setdefault(self._functions[-1], []).append(node.value)
        if type(node) is cst.Call:
            self._call(node)
            self._skip.add(node.func)
        elif (type(node) is cst.Name or type(node) is cst.Attribute) and (
            node not in self._skip
        ):
            self._reference(node)
        # names that do not refer to a value: ``.attr``, ``kw=``, definitions
        if type(node) is cst.Attribute:
            self._skip.add(node.attr)
        elif type(node) is cst.Arg and node.keyword is not None:
            self._skip.add(node.keyword)
        elif (
            type(node) is cst.FunctionDef
            or type(node) is cst.ClassDef
            or type(node) is cst.Param
        ):
            self._skip.add(node.name)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        kind = type(original_node)
        if kind is cst.FunctionDef:
            self._functions.pop()
            self._loops.pop()
            self._grad_off.pop()
        elif kind in _LOOPS:
            self._loops[-1].pop()
        elif kind is cst.With and original_node in self._grad_blocks:
            self._grad_off[-1] -= 1
        # a node's hash is a Python call (LibCST's): asked only of the types tested
        if kind in self._tested and original_node in self._pushed_tests:
            self._pushed_tests.discard(original_node)
            self._tests.pop()

    def callee_name(self, func: cst.BaseExpression) -> str | None:
        """A callee by name: dotted (``self.model``); an element of a collection by
        the collection, so that ``blocks[0]`` and ``blk`` of ``for blk in blocks``
        (or ``enumerate(blocks)``) both name ``blocks[]``."""
        if type(func) is cst.Subscript:
            base = dotted(func.value)
            return f"{base}[]" if base is not None else None
        if type(func) is cst.Name:
            scope = self.values.scope_of.get(func)
            bindings = scope.lookup(func.value) if scope is not None else None
            if bindings and len(bindings) == 1 and bindings[0].how == "iterate":
                it, path = bindings[0].value, bindings[0].path
                if (
                    type(it) is cst.Call
                    and dotted(it.func) == "enumerate"
                    and it.args
                    and path == (1,)
                ):
                    it, path = it.args[0].value, ()
                base = dotted(it) if it is not None and not path else None
                if base is not None:
                    return f"{base}[]"
        return dotted(func)

    def _call(self, node: cst.Call) -> None:
        func = node.func
        name = self.callee_name(func)
        if name is not None and node not in self.regions:
            self.here().named.append((self.sites[node], name))
        if type(func) is cst.Attribute and func.attr.value == "replay":
            self.here().replays.append(
                (self.sites[node], self.state.key_of(func.value))
            )
            return
        callees = self.callees(node)
        if callees:
            self.here().calls.append((self.sites[node], callees))
        if type(func) is cst.Attribute and func.attr.value == "backward":
            self.here().backwards.append(self.sites[node])
        compiled = self._compiled(func)
        if compiled is not None:
            self.compiled_calls[node] = compiled[1]
            self.compiled_by[node] = compiled[0]
            self.here().compiled.append((self.sites[node], compiled[1]))

    def _no_grad(self, expr: cst.BaseExpression) -> bool:
        """``torch.no_grad()``, ``torch.inference_mode()`` (or bare, as decorators)."""
        func = expr.func if type(expr) is cst.Call else expr
        return self.values.qualify(func) in _NO_GRAD

    def _compiled(self, func: cst.BaseExpression) -> tuple[cst.CSTNode, Region] | None:
        """The compile (the ``torch.compile(...)`` call or the decorated function)
        and region of a callable bound to a CUDA-graph ``torch.compile`` (``f =
        torch.compile(f, mode=...)``, ``self.model = torch.compile(...)``, a
        decorated function), when a binding the call can see is one."""
        if not self._compiles:
            return None
        made: list[cst.CSTNode] = []
        seen = self.state.reaching.of(func) if type(func) is cst.Name else None
        if seen is not None:  # the bindings this call can see, not every one
            made.extend(v for b in seen if (v := self.state.reaching.value(b)))
        elif type(func) is cst.Name:
            scope = self.values.scope_of.get(func)
            for binding in (scope.lookup(func.value) or []) if scope else []:
                if binding.how == "assign" and binding.value is not None:
                    made.append(binding.value)
                elif binding.how == "def" and binding.node is not None:
                    made.append(binding.node)
        elif type(func) is cst.Attribute:
            local = self.values.of(func.value).local
            for value, _ in local.attrs.get(func.attr.value, []) if local else []:
                made.append(value)
        for node in made:
            if node in self._compiles:
                return node, self._compiles[node]
        return None

    def _reference(self, node: cst.Name | cst.Attribute) -> None:
        """A function handed on or stored (``model.forward = self.step``) may run
        from there on: it counts as a call where it is referred to."""
        if isinstance(node, cst.Name):
            if node.value not in self._defined:
                return
            scope = self.values.scope_of.get(node)
            bindings = scope.lookup(node.value) if scope is not None else None
            if node in self.state.write_at or not any(
                b.how == "def" for b in bindings or ()
            ):
                return
        elif node.attr.value not in self._method_names:
            return
        function = self.values.of(node).function
        if type(function) is cst.FunctionDef:
            self.here().calls.append((self.site(node), (function,)))

    def callees(self, node: cst.Call) -> tuple[cst.FunctionDef, ...]:
        """The functions of this file a call runs, as far as values can tell."""
        func = node.func
        if type(func) is cst.Attribute and func.attr.value not in self._member_names:
            return ()  # no method or attribute of a class of this file
        value = self.values.of(func)
        found: list[cst.FunctionDef] = []
        inherited = self._super(node.func)
        if inherited is not None:
            found.append(inherited)
        elif type(value.function) is cst.FunctionDef:
            found.append(value.function)
            found.extend(self._overrides(node.func, value.function))
        elif value.local is not None:
            names = ("__init__",) if value.is_class else ("forward", "__call__")
            for name in names:
                method = value.local.methods.get(name)
                if method is not None:
                    found.append(method)
                    break
        return tuple(dict.fromkeys(found))

    def _super(self, func: cst.BaseExpression) -> cst.FunctionDef | None:
        """``super().name`` (or ``super(Cls, self).name``) in a method of a class of
        this file: the ``name`` of the nearest base of the file that defines it;
        ``Cls.name`` of a class of this file: its own or inherited ``name``."""
        if type(func) is not cst.Attribute:
            return None
        classes: list[ClassInfo] = []
        if type(func.value) is cst.Call and dotted(func.value.func) == "super":
            scope = self.values.scope_of.get(func)
            fn = scope.function() if scope is not None else None
            if fn is not None and fn.cls is not None:
                classes = self.values.bases(fn.cls)[1:]
        else:
            owner = self.values.of(func.value)
            if owner.is_class and owner.local is not None:
                classes = self.values.bases(owner.local)
        name = func.attr.value
        return next((c.methods[name] for c in classes if name in c.methods), None)

    def _overrides(
        self, func: cst.BaseExpression, method: cst.FunctionDef
    ) -> list[cst.FunctionDef]:
        """``self.prepare(x)`` in a method: the ``prepare`` of each subclass of this
        file that overrides it may run instead."""
        if not (type(func) is cst.Attribute and type(func.value) is cst.Name):
            return []
        scope = self.values.scope_of.get(func)
        fn = scope.function() if scope is not None else None
        if fn is None or fn.cls is None or fn.self_name != func.value.value:
            return []
        name = func.attr.value
        return [
            info.methods[name]
            for info in self.values.class_infos.values()
            if info is not fn.cls
            and name in info.methods
            and info.methods[name] is not method
            and any(base is fn.cls for base in self.values.bases(info))
        ]

    # -- reach -----------------------------------------------------------------------
    def reach(self, function: Function, *, eager: bool = False) -> frozenset[Function]:
        """``function`` and every function of this file it calls, transitively; with
        ``eager``, only through calls made outside captures (what it runs eagerly)."""
        cache = self._eager if eager else self._reach
        known = cache.get(function)
        if known is not None:
            return known
        seen: set[Function] = {function}
        todo: list[Function] = [function]
        while todo:
            events = self.events.get(todo.pop())
            for site, callees in events.calls if events else ():
                if eager and site.node in self.regions:
                    continue
                for callee in callees:
                    if callee not in seen:
                        seen.add(callee)
                        todo.append(callee)
        found = frozenset(seen)
        cache[function] = found
        return found

    def _points(
        self,
        function: Function,
        direct: Iterable[Site],
        holds: Iterable[Function],
    ) -> list[_Point]:
        """Where, in ``function``, something happens: at its own sites, or in a
        call of a function that (transitively) holds one."""
        found = [
            _Point(s.start, s.end, s.loops, None, self._conditions_at(s))
            for s in direct
        ]
        targets = set(holds)
        events = self.events.get(function)
        for site, callees in events.calls if events else ():
            if any(targets & self.reach(c) for c in callees):
                found.append(
                    _Point(
                        site.start,
                        site.end,
                        site.loops,
                        site.line,
                        self._conditions_at(site),
                    )
                )
        return found

    def _conditions_at(self, site: Site) -> tuple[Position, ...]:
        return tuple(
            (self.positions[t].start.line, self.positions[t].start.column)
            for t, _ in self.guard_tests.get(site.node, ())
        )

    def _precedes(
        self, write: _Point, replay: _Point, captures: list[_Point], entry: bool
    ) -> bool:
        """Whether, in one function, ``write`` can run after a capture and before
        ``replay`` with no capture of the graph in between. In code that runs first
        (``entry``: module code, a test, ``main``) a capture must be seen before the
        write: it happens somewhere in that code, maybe out of sight."""
        loop = _shared_loop(write, replay)
        if loop is not None:
            span = self.positions[loop]
            start = (span.start.line, span.start.column)
            end = (span.end.line, span.end.column)
            fresh = [
                c
                for c in captures
                if loop in c.loops and not any(start <= t <= end for t in c.tests)
            ]
            if fresh:  # a new graph each iteration: only a write after it counts
                return any(c.end < write.start < replay.start for c in fresh)
            # the replays of one iteration follow the writes of the one before
            return not captures or min(c.start for c in captures) < replay.start
        if not write.start < replay.start:
            return False
        if any(write.start < c.start and c.end < replay.start for c in captures):
            return False  # captured again after the write: the replay sees it
        if not captures:
            return not entry
        return any(c.end < write.start for c in captures)

    # -- queries ---------------------------------------------------------------------
    def capture_of(self, region: Region) -> Region | None:
        """The capture in this file that ``region`` runs under: itself, or for code
        reached from a capture, that capture when it is made in this file."""
        if not region.via:
            root = region.root
            return (self.captures.get(root) or self.marked.get(root)) if root else None
        if region.origin is not None and region.origin != self.path:
            return None
        return self._capture_lines.get(region.line)

    def changes(self, key: Key, region: Region) -> Change | None:
        """The first write to ``key`` that runs between ``region``'s capture and a
        replay of its graph (HIGH confidence first), or None without evidence."""
        memo = (key, region)
        if memo in self._changes:
            return self._changes[memo]
        self._changes[memo] = None  # a cycle of arguments ends here
        capture = self.capture_of(region)
        if capture is not None and self._selects(key, capture):
            return None
        best: Change | None = None
        for write in self.state.writes.get(key, ()):
            found = self.between_replays(write, region)
            if found is not None and found.confidence is Confidence.HIGH:
                best = found
                break
            best = best or found
        for passed in () if best is not None else self._passed_as(key):
            best = self.changes(passed, region)
            if best is not None:
                break
        self._changes[memo] = best
        return best

    def _passed_as(self, key: Key) -> list[Key]:
        """``cfg.use_bias`` read through a parameter ``cfg``: the same location as
        each caller in this file names it (``layer(x, cfg)``: the caller's
        ``cfg.use_bias``), so that a caller's write between replays counts."""
        root, path = key, []
        while root[0] in ("attr", "item"):
            path.append(root)
            root = root[1]  # type: ignore[assignment]
        if root[0] != "name" or not path:
            return []
        scope, name = root[1], root[2]
        function = getattr(scope, "node", None)
        if type(function) is not cst.FunctionDef:
            return []
        found: list[Key] = []
        for events in self.events.values():
            for site, callees in events.calls:
                call = site.node
                if function not in callees or type(call) is not cst.Call:
                    continue
                argument = argument_of(call, function, str(name))
                base = self.state.key_of(argument) if argument is not None else None
                for step in reversed(path) if base is not None else ():
                    base = (step[0], base, *step[2:])
                if base is not None:
                    found.append(base)
        return found

    def between_replays(self, write: Write, region: Region) -> Change | None:
        """Evidence that ``write`` runs after ``region``'s capture and before a
        replay of its graph; None when there is none."""
        capture = self.capture_of(region)
        site = self.sites.get(write.target)
        if write.region is not None or capture is None or site is None:
            return None
        graph = self._graph(capture)
        if not graph.replayers:
            return None
        # only the write's function and those that (transitively) call it can
        # order it against a capture and a replay; a local, only its own function
        # (each call has its own: a replay elsewhere never sees this one change)
        local = self._local(write.key, site.function)
        callers = () if local else self.ancestors(site.function)
        for function in (site.function, *callers):
            found = self._ordered(write, site, function, capture, graph)
            if found is not None:
                return found
        if self._public_setter(write, site, graph.key):
            return Change(write, graph.first_replay, None, Confidence.MEDIUM)
        return None

    def _ordered(
        self,
        write: Write,
        site: Site,
        function: Function,
        capture: Region,
        graph: _Graph,
    ) -> Change | None:
        """Evidence, in one function, that ``write`` runs between the capture and a
        replay (directly, or in the calls it makes)."""
        direct = [site] if site.function is function else []
        writes = self._points(function, direct, [site.function])
        if not writes:
            return None
        events = self.events.get(function, _Events())
        caps = self._points(
            function,
            [s for s, r in events.captures if r is capture],
            graph.capturing,
        )
        later = self._points(function, graph.replays.get(function, []), graph.replayers)
        confidence = graph.confidence
        entry = is_entry(function)
        marked = capture.root in self.marked
        for w in writes:
            for r in later:
                # a marked function captures at its first call: one before the
                # write makes the capture visible in code that runs first
                seen = marked and any(c.end < w.start for c in later)
                if self._precedes(w, r, caps, entry and not seen):
                    return Change(write, _line(r), w.call, confidence)
        if self._local(write.key, function):
            return None
        if later and not caps and not entry:
            # a function that replays a graph captured elsewhere runs again: what
            # it writes after one replay precedes the next
            return Change(write, _line(later[0]), writes[0].call, confidence)
        reached = self.reach(function)
        elsewhere = [
            s
            for f, sites in graph.replays.items()
            if f is not function and f not in reached
            for s in sites
        ]
        for w in writes if elsewhere else ():
            if any(c.end < w.start for c in caps) and not any(
                w.start < r.start for r in later
            ):
                return Change(write, elsewhere[0].line, w.call, confidence)
        return None

    def _graph(self, capture: Region) -> _Graph:
        """Where the graph a capture records into is replayed, once per capture."""
        found = self._graphs.get(capture)
        if found is not None:
            return found
        if type(capture.root) is cst.FunctionDef and capture.root in self.marked:
            found = self._marked_graph(capture.root)
            self._graphs[capture] = found
            return found
        expr = capture.graph_expr
        key = self.state.key_of(expr) if expr is not None else None
        replays = self._replays_of(key)
        for kept in self._kept_as(key):  # ``self.graphs[bs] = g``: replayed from there
            for function, sites in self._replays_of(kept).items():
                both = {id(s): s for s in (*replays.get(function, ()), *sites)}
                replays[function] = sorted(both.values(), key=lambda s: s.start)
        capturing = frozenset(
            f for f, region in self._capturing().get(capture, ()) if region is capture
        )
        exact = key is not None and not _vague(key)
        first = min((s.line for sites in replays.values() for s in sites), default=0)
        found = _Graph(
            key,
            replays,
            frozenset(replays),
            capturing,
            Confidence.HIGH if exact else Confidence.MEDIUM,
            first,
        )
        self._graphs[capture] = found
        return found

    def _selects(self, key: Key, capture: Region) -> bool:
        """Whether ``key`` is the index the captured graph is kept under
        (``graphs[bs] = g``): one graph per value, each with its own ``bs`` baked
        in, and the replay picks the graph by the value it has then."""
        graph = capture.graph_expr
        held = self.state.key_of(graph) if graph is not None else None
        if held is None:
            return False
        for write in self.state.writes_of_value(held):
            target = write.target
            index = subscript_index(target) if type(target) is cst.Subscript else None
            if index is not None and self.state.key_of(index) == key:
                return True
        return False

    def _kept_as(self, key: Key | None) -> list[Key]:
        """The other locations a graph at ``key`` is stored in (``self.graphs[bs] =
        g``): its replays through them replay it."""
        if key is None:
            return []
        return [w.key for w in self.state.writes_of_value(key) if w.key != key]

    def _replays_of(self, key: Key | None) -> dict[Function, list[Site]]:
        """The replays of the graph at ``key``, by function, in source order: those
        of the ``same`` location; for a graph not written as a location (None),
        every replay. Indexed once: not every replay for every capture."""
        if self._replays is None or self._every_replay is None:
            self._replays, self._every_replay = {}, {}
            for function, events in self.events.items():
                for site, replayed in events.replays:
                    self._every_replay.setdefault(function, []).append(site)
                    if replayed is not None:
                        entry = (function, site, replayed)
                        self._replays.setdefault(loose(replayed), []).append(entry)
        if key is None:
            return self._every_replay
        found: dict[Function, list[Site]] = {}
        for function, site, replayed in self._replays.get(loose(key), ()):
            if same(key, replayed):
                found.setdefault(function, []).append(site)
        return found

    def _capturing(self) -> dict[Region, list[tuple[Function, Region]]]:
        """The functions that make each capture: (function, the region as made)."""
        if self._captured_in is None:
            self._captured_in = {}
            for function, events in self.events.items():
                for _, region in events.captures:
                    entry = (function, region)
                    self._captured_in.setdefault(region, []).append(entry)
        return self._captured_in

    def _marked_graph(self, root: cst.FunctionDef) -> _Graph:
        """A marked function's graph: its calls replay it (the first captures)."""
        replays: dict[Function, list[Site]] = {}
        for site in self.callers(root):
            if type(site.node) is cst.Call:
                replays.setdefault(site.function, []).append(site)
        first = min((s.line for sites in replays.values() for s in sites), default=0)
        return _Graph(
            None, replays, frozenset(replays), frozenset(), Confidence.HIGH, first
        )

    def ancestors(self, function: Function) -> list[Function]:
        """The functions of this file that (transitively) call ``function``."""
        known = self._ancestors.get(function)
        if known is not None:
            return known
        seen: dict[Function, None] = {}
        todo = [function]
        while todo:
            for call in self.callers(todo.pop()):
                if call.function not in seen and call.function is not function:
                    seen[call.function] = None
                    todo.append(call.function)
        found = list(seen)
        self._ancestors[function] = found
        return found

    def _public_setter(self, write: Write, site: Site, graph: Key | None) -> bool:
        """Whether ``write`` changes the state of an object that owns the graph, in a
        method nothing in this file calls or refers to (not set-up): its users may
        call it between any two replays. The order is not visible: partial evidence.
        """
        method = site.function
        if not (
            type(method) is cst.FunctionDef
            and write.key[0] == "self"
            and graph is not None
            and graph[0] == "self"
            and graph[1] == write.key[1]
            and write.how != "delete"
            and not is_none(write.value)  # releasing state, not a new value
        ):
            return False
        if any(  # a method that also replaces or drops the graph resets it
            within(graph, key) for key in self._written_in(method)
        ):
            return False
        name = method.name.value
        return name not in SETUP_METHODS and not self.callers(method)

    def _written_in(self, function: Function) -> set[Key]:
        """The locations a function writes itself."""
        if self._written is None:
            self._written = {}
            for key, writes in self.state.writes.items():
                for w in writes:
                    site = self.sites.get(w.target)
                    if site is not None:
                        self._written.setdefault(site.function, set()).add(key)
        return self._written.get(function, set())

    def _local(self, key: Key, function: Function) -> bool:
        """Whether ``key`` is a local of ``function`` (dead once it returns)."""
        if key[0] != "name" or type(function) is cst.Module:
            return False
        owner = key[1]
        return getattr(owner, "node", None) is function

    def memo(self, node: cst.CSTNode, key: Key) -> bool:
        """Whether ``node`` runs only while ``key`` is not yet filled in: lazy
        initialisation (``if self.buf is None:``), a cache fill (``if k not in
        cache:``, or after ``if k in cache: return ...``), growing to a size
        (``while len(self.streams) < n:``). Warm-up runs it; the capture finds the
        work done. A test that the state is present (``if self.log is not None:``)
        or of its value (``if self.n < 10:``) is not a memo."""
        return any(
            self._absent(test, key) is holds
            for test, holds in self.guard_tests.get(node, ())
        )

    def _absent(self, test: cst.BaseExpression, key: Key) -> bool | None:
        """True when ``test`` holds exactly while ``key`` is missing or empty, False
        when it holds while ``key`` is present, None for any other test."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            inner = self._absent(test.expression, key)
            return None if inner is None else not inner
        if type(test) is cst.BooleanOperation:
            parts = {self._absent(test.left, key), self._absent(test.right, key)}
            parts.discard(None)  # ``if debug and self.buf is None:`` still fills it
            return parts.pop() if len(parts) == 1 else None
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            op = test.comparisons[0].operator
            right = test.comparisons[0].comparator
            if (type(op) is cst.In or type(op) is cst.NotIn) and self._about(
                right, key
            ):
                return type(op) is cst.NotIn  # ``k not in cache``
            equality = (
                type(op) is cst.Is
                or type(op) is cst.IsNot
                or type(op) is cst.Equal
                or type(op) is cst.NotEqual
            )
            if equality and is_none(right) and self._about(test.left, key):
                return type(op) is cst.Is or type(op) is cst.Equal  # ``x is None``
            if (type(op) is cst.LessThan or type(op) is cst.LessThanEqual) and _is_len(
                test.left
            ):  # ``len(x) < n``: grow to a size
                arg = test.left.args[0].value  # type: ignore[attr-defined]
                return True if self._about(arg, key) else None
            return None
        if type(test) is cst.Call and dotted(test.func) == "hasattr" and test.args:
            return False if self._about(test.args[0].value, key) else None
        return False if self._about(test, key) else None  # ``if x:``: present

    def _about(self, expr: cst.BaseExpression, key: Key) -> bool:
        """Whether ``expr`` reads ``key`` (or a location in or around it), directly
        or through a local bound once from it (``found = cache.get(k)``)."""
        if type(expr) is cst.Name:
            scope = self.values.scope_of.get(expr)
            bindings = scope.lookup(expr.value) if scope is not None else None
            if bindings and len(bindings) == 1 and bindings[0].how == "assign":
                value = bindings[0].value
                if type(value) is cst.Call and type(value.func) is cst.Attribute:
                    return self._about(value.func.value, key)  # cache.get(k)
                if type(value) is cst.Subscript:
                    return self._about(value.value, key)
        if type(expr) is cst.Call and dotted(expr.func) == "getattr" and expr.args:
            return self._about(expr.args[0].value, key)
        found = self.state.key_of(expr)
        return found is not None and (within(found, key) or within(key, found))

    def compiled_output(self, expr: cst.BaseExpression) -> tuple[Site, Region] | None:
        """The call of a CUDA-graph-compiled callable whose output ``expr`` is, or a
        view of it (``out[0]``, ``out.detach()``: measured, a detached output kept
        across training steps is overwritten too), through a name bound to that call."""
        expr = _viewed(expr)
        if type(expr) is cst.Call and expr in self.compiled_calls:
            return self.sites[expr], self.compiled_calls[expr]
        if type(expr) is not cst.Name:
            return None
        scope = self.values.scope_of.get(expr)
        for binding in (scope.lookup(expr.value) or []) if scope else []:
            made = _viewed(binding.value) if binding.value is not None else None
            if binding.how == "assign" and made in self.compiled_calls:
                return self.sites[made], self.compiled_calls[made]
        return None

    def overwritten(self, read: cst.Name) -> tuple[Site, Site, Region] | None:
        """``a = f(x1); b = f(x2); use(a)``: when the binding of ``read`` that comes
        last before it, in its function, is an output of a CUDA-graph-compiled call,
        that call, the later call of the same callable in between that overwrites
        it (measured: ``a`` silently holds ``b``'s values), and the region."""
        position = self.positions.get(read)
        if not self.compiled_calls or position is None:
            return None
        here = (position.start.line, position.start.column)
        for made in self._bound_values(read, here):
            while type(made) is cst.Subscript:  # ``f(x)[0]``: a view of it
                made = made.value
            if made not in self.compiled_calls:
                continue
            first, region = self.sites[made], self.compiled_calls[made]
            if self._host_only(region):
                continue
            for node, other in self.compiled_calls.items():
                later = self.sites[node]
                if (
                    other is region
                    and later.function is first.function
                    and first.end <= later.start
                    and later.end <= here
                ):
                    return first, later, region
        return None

    def _bound_values(self, read: cst.Name, here: Position) -> list[cst.CSTNode]:
        """The values a read of a local can hold: those of the bindings that reach
        it, or, where those are unknown, of the binding that comes last before it
        in its function."""
        seen = self.state.reaching.of(read)
        if seen is not None:
            return [v for b in seen if (v := self.state.reaching.value(b))]
        scope = self.values.scope_of.get(read)
        if scope is None:
            return []
        home = scope.function()
        while home is None and scope.parent is not None:  # module code
            scope = scope.parent
        if scope.owner(read.value) is not (home or scope):  # a global, a closure
            return []
        last: tuple[Position, Binding] | None = None
        for binding in scope.lookup(read.value) or []:
            node = binding.value if binding.value is not None else binding.node
            at = self.positions.get(node) if node is not None else None
            start = (at.start.line, at.start.column) if at is not None else None
            if start is not None and start < here and (last is None or start > last[0]):
                last = (start, binding)
        if last is None or last[1].how != "assign" or last[1].value is None:
            return []
        return [last[1].value]

    def _host_only(self, region: Region) -> bool:
        """A compiled function of this file that returns only CPU tensors
        (``return torch.rand(20)``): no CUDA graph holds its outputs."""
        root = region.root
        returns = self._returns.get(root) if type(root) is cst.FunctionDef else None
        return bool(returns) and all(
            value is not None and self.values.of(value).device is Device.CPU
            for value in returns or ()
        )

    def backward_in_loop(self, site: Site) -> bool:
        """Whether a ``.backward()`` shares a loop with ``site`` (a training step)."""
        events = self.events.get(site.function)
        loops = set(site.loops)
        return events is not None and any(
            loops & set(other.loops) for other in events.backwards
        )

    def without_grad(self, site: Site) -> bool:
        """Whether ``site`` runs with autograd off: in a ``no_grad``/``inference_mode``
        block or function, or called only from such places in this file (no way up
        to module code or an uncalled function avoids them)."""
        if site.grad_off:
            return True
        seen: set[Function] = {site.function}
        todo = [site.function]
        while todo:
            function = todo.pop()
            callers = self.callers(function) if function is not self.module else []
            if not callers:
                return False  # an entry point with autograd on
            for call in callers:
                if not call.grad_off and call.function not in seen:
                    seen.add(call.function)
                    todo.append(call.function)
        return True

    def steady(self, test: cst.BaseExpression, region: Region) -> bool | None:
        """The value a test under ``region`` has at its capture and at every replay
        after it, when a loop counter settles it (``if step == 0:`` in a capture
        made at ``step == K``); None otherwise."""
        capture = self.capture_of(region)
        if capture is None:
            return None
        if self._steady is None:
            self._steady = Steady(
                self.values,
                self.state,
                self.guard_tests,
                lambda node: self.sites[node].loops if node in self.sites else (),
            )
        return self._steady.value(test, capture)

    def never_captured(self, node: cst.CSTNode, region: Region) -> bool:
        """Whether ``node`` (a call or a write) lies behind a test inside ``region``
        that is false at capture: steadily (a loop counter), or because the block
        behind it settles it and warm-up ran that block first."""
        tests = self.guard_tests.get(node)
        if not tests:  # most nodes: asked of each the rules are called for
            return False
        if self._settled is None:
            self._settled = Settled(self.state, self._conditions)
        settled = self._settled
        return any(
            self.regions.get(test) is region
            and (self.steady(test, region) is (not want) or settled.settles(test, want))
            for test, want in tests
        )

    def in_replay_loop(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` (a call or a write) runs in a loop that also replays a
        graph."""
        site = self.sites.get(node)
        loops = set(site.loops) if site is not None else set()
        return bool(loops) and any(
            loops & set(replay.loops)
            for events in self.events.values()
            for replay, _ in events.replays
        )

    # -- set-up ----------------------------------------------------------------------
    def callers(self, function: Function) -> list[Site]:
        """Call sites in this file that run ``function`` (or hand it on)."""
        if self._callers is None:
            self._callers = {}
            for events in self.events.values():
                for site, callees in events.calls:
                    for callee in callees:
                        self._callers.setdefault(callee, []).append(site)
        return self._callers.get(function, [])

    def region_calls(self, capture: Region) -> list[cst.Call]:
        """The calls inside a capture made in this file, in source order."""
        if self._region_calls is None:  # once: not every site for every capture
            self._region_calls = {}
            for node in self.sites:
                region = self.regions.get(node)
                if region is not None and type(node) is cst.Call:
                    self._region_calls.setdefault(region, []).append(node)
        return list(self._region_calls.get(capture, ()))

    def unwarmed(self, capture: Region) -> Site | None:
        """Where a whole way to a capture that this file shows starts (module code, a
        test or ``main``, or a function that replays the graph after making it), when
        it runs none of the captured code before it, on any stream: no warm-up; None
        when there is no such way.
        A capture in a loop, or under a condition in a function that also runs the
        captured code eagerly, may follow an eager pass of the same code; one in a
        function this file never calls is a library's, set up by its callers."""
        way = self._way_ready(capture)
        return None if way is None else self._visible_without(*way, lazy=True)

    def called_elsewhere(self, capture: Region) -> list[cst.FunctionDef]:
        """The functions on the ways to a capture that this file shows, with none of
        the captured code run before them on the way, that other files may call
        (not entries): those callers warm it up or not."""
        way = self._way_ready(capture)
        return [] if way is None else list(dict.fromkeys(self._on_way(*way)))

    def _on_way(
        self, site: Site, ready: Callable[[Site], bool], depth: int = 0
    ) -> Iterator[cst.FunctionDef]:
        """``called_elsewhere``'s walk up from ``site``."""
        function = site.function
        if (
            ready(site)
            or depth >= _CALLER_DEPTH
            or type(function) is not cst.FunctionDef
        ):
            return
        if not is_entry(function):
            yield function
        for call in self.callers(function):
            yield from self._on_way(call, ready, depth + 1)

    def _way_ready(self, capture: Region) -> tuple[Site, Callable[[Site], bool]] | None:
        """The site of a capture, and whether a step of a way to it comes after a
        run of its code (a warm-up, as ``unwarmed`` says)."""
        root = self.sites.get(capture.root) if capture.root is not None else None
        if root is None:
            return None
        inside = self.region_calls(capture)
        names = {
            name
            for call in inside
            if (name := self.callee_name(call.func))
            and not (self.values.qualify(call.func) or "").startswith("torch.")
        }
        reached = {
            f for call in inside for c in self.callees(call) for f in self.reach(c)
        }

        def runs_code(call: cst.CSTNode, callees: tuple[Function, ...]) -> bool:
            """Whether ``call`` runs some of the captured code eagerly."""
            return call not in self.regions and any(
                self.reach(c, eager=True) & reached or self._calls_named(c, names)
                for c in callees
            )

        def runs_captured(call: cst.CSTNode, callees: tuple[Function, ...]) -> bool:
            """... or a side-stream block: a warm-up, when it comes before."""
            return runs_code(call, callees) or (
                call not in self.regions and any(self._has_stream(c) for c in callees)
            )

        eager = self._eager_runs(capture, runs_code, names)

        def ready(site: Site) -> bool:
            events = self.events.get(site.function, _Events())
            if site.loops:
                return True
            if self.guard_tests.get(site.node) and eager:
                return True  # the condition may hold only after those runs
            if any(
                s.end < site.start and not self._captures_in(s) for s in events.streams
            ):
                return True  # a side-stream block ran before
            if any(
                call.start < site.start and runs_captured(call.node, callees)
                for call, callees in events.calls
            ):
                return True
            return any(
                s.start < site.start and _named(name, names) for s, name in events.named
            )

        return root, ready

    def _eager_runs(
        self,
        capture: Region,
        runs_code: Callable[[cst.CSTNode, tuple[Function, ...]], bool],
        names: set[str],
    ) -> bool:
        """Whether this file runs some of ``capture``'s code eagerly where that can
        come before the capture: anywhere, except after a call that captures the
        first time it is made (``if self.graph is None: self._capture()``, every test
        on its way either that or the same on every call), in the same function. A
        call of a function on the way to the capture is not counted: what that
        function runs is, at its sites."""
        way = self._way_to(capture)
        for events in self.events.values():
            first = min(
                (
                    site.start
                    for site, callees in events.calls
                    if any(c in way for c in callees)
                    and all(_first_call(t) for t in self.way_tests(site, capture))
                ),
                default=None,
            )
            runs = [
                c
                for c, f in events.calls
                if not any(g in way for g in f) and runs_code(c.node, f)
            ]
            runs += [c for c, name in events.named if _named(name, names)]
            if any(first is None or c.start < first for c in runs):
                return True
        return False

    def way_tests(self, site: Site, capture: Region) -> list[tuple[Condition, ...]]:
        """The tests on the way from ``site`` down to ``capture``: those of ``site``
        and of every site that leads on to the capture in the functions it calls."""
        root = self.sites.get(capture.root) if capture.root is not None else None
        way = self._way_to(capture)
        found: list[tuple[Condition, ...]] = []
        seen: set[cst.CSTNode] = set()
        todo = [site]
        while todo:
            current = todo.pop()
            if current.node in seen:
                continue
            seen.add(current.node)
            found.append(self.guard_tests.get(current.node, ()))
            calls = self.events.get(current.function, _Events()).calls
            callees = next((f for s, f in calls if s.node is current.node), ())
            for callee in callees:
                if callee not in way:
                    continue
                events = self.events.get(callee, _Events())
                todo.extend(s for s, f in events.calls if any(g in way for g in f))
                todo.extend(
                    c
                    for c, _ in events.captures
                    if root is not None and c.node is root.node
                )
        return found

    def _way_to(self, capture: Region) -> frozenset[Function]:
        """The functions of this file whose calls can lead to ``capture``."""
        root = self.sites.get(capture.root) if capture.root is not None else None
        if root is None:
            return frozenset()
        known = self._ways.get(root.node)
        if known is not None:
            return known
        seen: set[Function] = {root.function}
        todo = [root.function]
        while todo:
            for site in self.callers(todo.pop()):
                if site.function not in seen:
                    seen.add(site.function)
                    todo.append(site.function)
        found = self._ways[root.node] = frozenset(seen)
        return found

    def replay_after(self, site: Site) -> Site | None:
        """The first replay of a graph in ``site``'s function after it, if any: the
        function makes the graph on its first call, and replays it on that call and
        the next ones."""
        events = self.events.get(site.function, _Events())
        return next((r for r, _ in events.replays if r.start > site.start), None)

    def _captures_in(self, block: Site) -> bool:
        """Whether a side-stream block is (or holds) a capture: not a warm-up."""
        events = self.events.get(block.function, _Events())
        return any(
            block.start <= capture.start and capture.start <= block.end
            for capture, _ in events.captures
        )

    def off_stream(self, capture: Region) -> bool:
        """Whether a whole way to ``capture_begin()`` is visible in this file and
        none of it is inside a side-stream block (or sets a stream)."""
        root = self.sites.get(capture.root) if capture.root is not None else None
        if root is None:
            return False

        def ready(site: Site) -> bool:
            function = site.function
            if type(function) is cst.FunctionDef and function.name.value == "__enter__":
                return True  # a context manager: entered in its users' set-up
            events = self.events.get(function, _Events())
            return (
                function in self._setup.stream_switches
                or any(  # begins inside the block
                    s.start <= site.start <= s.end for s in events.streams
                )
            )

        return self._visible_without(root, ready) is not None

    def _visible_without(
        self,
        site: Site,
        ready: Callable[[Site], bool],
        depth: int = 0,
        *,
        lazy: bool = False,
    ) -> Site | None:
        """The step of a way from an entry to ``site`` with no step ``ready`` where
        the way starts (in the entry), if one is visible; with ``lazy``, a function
        that replays after the step is an entry too."""
        if ready(site):
            return None
        function = site.function
        if is_entry(function) or (lazy and self.replay_after(site) is not None):
            return site
        if depth >= _CALLER_DEPTH:
            return None
        for call in self.callers(function):
            found = self._visible_without(call, ready, depth + 1, lazy=lazy)
            if found is not None:
                return found
        return None

    def _calls_named(self, function: Function, names: set[str]) -> bool:
        """Whether ``function`` or what it calls makes a call by one of ``names``."""
        return any(
            _named(name, names)
            for f in self.reach(function, eager=True)
            for _, name in self.events.get(f, _Events()).named
        )

    def _has_stream(self, function: Function) -> bool:
        """Whether ``function`` or what it calls runs a side-stream block that is not
        a capture: a warm-up."""
        return any(
            not self._captures_in(s)
            for f in self.reach(function)
            for s in self.events.get(f, _Events()).streams
        )


def _named(name: str, names: set[str]) -> bool:
    """Whether a call by ``name`` is one of the captured calls ``names``, also where
    the capture calls ``self.model`` and its caller ``runner.model``."""
    head, dot, rest = name.partition(".")
    return name in names or (bool(dot) and head != "self" and f"self.{rest}" in names)


def _first_call(tests: Iterable[Condition]) -> bool:
    """Whether a call under ``tests`` runs on the first call that reaches it: each
    of them holds when something is not made yet (``if self.graph is None:``, ``if
    not self.ready or ...``) or is the same on every call (a mode, a type, an
    ``assert``), not a count that grows."""
    return all(
        _when_not_made(test, holds) or _stable(test)
        for whole, value in tests
        for test, holds in _literals(whole, value)
    )


def _literals(
    test: cst.BaseExpression, holds: bool
) -> Iterator[tuple[cst.BaseExpression, bool]]:
    """A test and the value it has, as the parts that all have theirs: ``a and b``
    holding is ``a`` and ``b`` holding; ``not a`` holding is ``a`` failing."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        yield from _literals(test.expression, not holds)
    elif type(test) is cst.BooleanOperation and isinstance(
        test.operator, cst.And if holds else cst.Or
    ):
        yield from _literals(test.left, holds)
        yield from _literals(test.right, holds)
    else:
        yield test, holds


def _when_not_made(test: cst.BaseExpression, holds: bool) -> bool:
    """Whether ``test`` having the value ``holds`` says something is not made yet:
    ``a is None`` (or ``a is None or b``) or ``not a`` holding, ``a is not None`` or
    ``a`` failing, for an attribute ``a``."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _when_not_made(test.expression, not holds)
    if type(test) is cst.Attribute:
        return not holds
    if holds and type(test) is cst.BooleanOperation:
        return type(test.operator) is cst.Or and (
            _when_not_made(test.left, True) or _when_not_made(test.right, True)
        )
    return (
        type(test) is cst.Comparison
        and type(test.left) is cst.Attribute
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Is if holds else cst.IsNot)
        and is_none(test.comparisons[0].comparator)
    )


def _stable(test: cst.BaseExpression) -> bool:
    """A test of a mode, an identity or a local flag (``self.mode is Mode.FULL``,
    ``x.device.type == "cuda"``, ``not is_ddp``), not of a count."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _stable(test.expression)
    if type(test) is cst.BooleanOperation:
        return _stable(test.left) and _stable(test.right)
    if type(test) is cst.Name:
        return True
    if type(test) is cst.Comparison:
        return all(
            (
                type(c.operator) is cst.Is
                or type(c.operator) is cst.IsNot
                or type(c.operator) is cst.In
                or type(c.operator) is cst.NotIn
            )
            or (
                (type(c.operator) is cst.Equal or type(c.operator) is cst.NotEqual)
                and _constant(c.comparator)
            )
            for c in test.comparisons
        )
    return False


def _constant(expr: cst.BaseExpression) -> bool:
    """A string, or a named constant (``Mode.GRAPH``, ``FULL``)."""
    if type(expr) is cst.SimpleString:
        return True
    if type(expr) is cst.Attribute:
        expr = expr.attr
    return type(expr) is cst.Name and len(expr.value) > 1 and expr.value.isupper()


def _is_len(expr: cst.BaseExpression) -> bool:
    return (
        type(expr) is cst.Call
        and type(expr.func) is cst.Name
        and expr.func.value == "len"
        and len(expr.args) == 1
    )


def is_entry(function: Function) -> bool:
    """Code nothing in the project calls first: module code, a test, ``main``."""
    if isinstance(function, cst.Module):
        return True
    name = function.name.value
    return name.startswith("test") or name == "main"


def _line(point: _Point) -> int:
    return point.call if point.call is not None else point.start[0]


def _vague(key: Key) -> bool:
    """Whether a location has an unknown entry (``graphs[i]``)."""
    current: object = key
    while isinstance(current, tuple) and current[0] in ("attr", "item"):
        if current[0] == "item" and current[2] == "*":
            return True
        current = current[1]
    return False


def _viewed(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What ``expr`` is a view of: ``out[0]`` and ``out.detach()`` share ``out``'s
    memory."""
    while True:
        if type(expr) is cst.Subscript:
            expr = expr.value
        elif (
            type(expr) is cst.Call
            and not expr.args
            and type(expr.func) is cst.Attribute
            and expr.func.attr.value == "detach"
        ):
            expr = expr.func.value
        else:
            return expr


def _shared_loop(a: _Point, b: _Point) -> cst.CSTNode | None:
    shared = None
    for x, y in zip(a.loops, b.loops, strict=False):
        if x is not y:
            break
        shared = x
    return shared


__all__ = ["Change", "Flow", "Site", "is_entry"]
