"""Which code runs under CUDA-graph capture, and of which kind.

Computed once per file, from the scope walk's record: the region finder, replayed
at the nodes it acts on, finds region roots (``with torch.cuda.graph`` bodies,
``capture_begin``/``capture_end`` spans, functions handed to
``make_graphed_callables`` or compiled in a CUDA-graph mode, marked regions; each
kind recognised by its own module, ``facts.kinds``) and exclusions (branches that
do not run during capture); the region assignment, replayed at every node with
state and flow, gives every node its innermost region. Rules only ask
``region_of(node)``.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field, replace
from typing import TypeVar, cast, overload

import libcst as cst
from libcst.metadata import CodeRange

from graphlint.diagnostics import Confidence, RegionKind, RegionRef
from graphlint.facts import guards, kinds
from graphlint.facts.kinds.base import QUESTIONS, Decorated, Opened, asks
from graphlint.facts.region import Region
from graphlint.facts.scopes import ClassInfo, Scope, ScopeBuilder
from graphlint.facts.syntax import dotted, source
from graphlint.facts.torchapi import BUILTIN_MARKERS
from graphlint.facts.values import Kind, Value, Values, tensor_slots
from graphlint.facts.walk import (
    covers,
    node_types,
    parents,
    replay,
    subscribed,
    walk,
)

DECLARED_LABEL = "capture root"  # a function named in ``capture-roots``


Callable = cst.FunctionDef | cst.Lambda


class RegionFinder(cst.CSTVisitor):
    """Region roots and exclusions, from a replay of the scope walk's sites: what
    every kind of region shares (the loops over a ``with``'s items and a
    definition's decorators, the callables a call is given, the guards); each kind
    recognises its own syntax (``facts.kinds``), asked in their order."""

    def __init__(
        self,
        scopes: ScopeBuilder,
        values: Values,
        positions: Mapping[cst.CSTNode, CodeRange],
        markers: frozenset[str],
        checks: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.checks = checks
        self.scopes = scopes
        self.values = values
        self.positions = positions
        self.markers = BUILTIN_MARKERS | markers
        self.roots: dict[cst.CSTNode, Region] = {}
        self.excluded: set[cst.CSTNode] = set()
        # functions that regions elsewhere reach, with the parameters their calls
        # settle; what a test of those keeps out of capture, there only
        self.settled: dict[cst.CSTNode, dict[str, guards.Settled]] = {}
        self.settled_out: set[cst.CSTNode] = set()
        # the tests each block or statement runs under (``entry_conditions``)
        self.conditions: dict[cst.CSTNode, list[tuple[cst.BaseExpression, bool]]] = {}
        # statements between ``capture_begin()`` and ``capture_end()``
        self.spans: dict[cst.CSTNode, Region] = {}
        self.graphed_calls: list[cst.Call] = []  # resolvable targets or not
        # make_graphed_callables / compile targets not defined in this file
        self.unresolved: list[tuple[cst.Call, cst.BaseExpression, Region]] = []
        # what makes a CUDA-graph-compiled callable: the compile call, or the
        # function a compile decorator replaces
        self.compiled: dict[cst.CSTNode, Region] = {}
        recognisers = [kind(self) for kind in kinds.RECOGNISERS]
        # the kinds that answer each question, in their order
        self.asked = {
            question: [k for k in recognisers if asks(type(k), question)]
            for question in QUESTIONS
        }

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def end(self, node: cst.CSTNode) -> int:
        return self.positions[node].end.line

    def start(self, module: cst.Module) -> None:
        """The module is about to be replayed."""
        for kind in self.asked["module"]:
            kind.module(module)

    def statements(self, module: cst.Module) -> None:
        """The replay is done: the regions statements open and close."""
        for kind in self.asked["statements"]:
            kind.statements(module)

    def _entering(
        self, node: cst.CSTNode, expressions: Sequence[cst.BaseExpression]
    ) -> None:
        for kind in self.asked["entering"]:
            kind.entering(node, expressions)

    def _leaving(self, node: cst.CSTNode) -> None:
        for kind in self.asked["leaving"]:
            kind.leaving(node)

    # -- with torch.cuda.graph(...) / with graphlint.capture_region() ----------------
    def visit_With(self, node: cst.With) -> None:
        self._entering(node, [item.item for item in node.items])
        for item in node.items:
            found = self.capture_context(item.item, set())
            if found is not None:
                kind, label, confidence, graph = found
                self.roots.setdefault(
                    node.body,
                    Region(
                        RegionRef(kind, self.line(node), label, confidence=confidence),
                        end_line=self.end(node),
                        root=node,
                        graph=source(graph) if graph is not None else None,
                        graph_expr=graph,
                    ),
                )
                return

    def capture_context(
        self, expr: cst.BaseExpression, seen: set[cst.CSTNode]
    ) -> Opened | None:
        """What a context manager's expression opens: a call a kind recognises,
        through a conditional expression (of medium confidence) or a name bound to
        one; or an object that captures when entered (``with graph:``), whose
        graph it is: named by the expression (none for a call)."""
        if expr in seen:
            return None
        seen.add(expr)
        if type(expr) is cst.IfExp:
            found = self.capture_context(expr.body, seen) or self.capture_context(
                expr.orelse, seen
            )
            if found is not None:
                return found[0], found[1], Confidence.MEDIUM, found[3]
            return None
        if type(expr) is cst.Call:
            q = self.values.qualify(expr.func)
            for kind in self.asked["context"]:
                opened = kind.context(expr, q)
                if opened is not None:
                    return opened
        elif type(expr) is cst.Name:
            scope = self.values.scope_of.get(expr)
            for binding in (scope.lookup(expr.value) or []) if scope else []:
                if binding.how == "assign" and binding.value is not None:
                    found = self.capture_context(binding.value, seen)
                    if found is not None:
                        return found
        return self._entered(expr)

    def _entered(self, expr: cst.BaseExpression) -> Opened | None:
        """What an object that captures when entered opens, named by ``expr``."""
        cls = self.values.held_object(expr).cls if self.asked["entered"] else None
        if cls is None:
            return None
        for kind in self.asked["entered"]:
            opened = kind.entered(cls)
            if opened is not None:
                graph = None if type(expr) is cst.Call else expr
                return opened[0], opened[1], opened[2], graph
        return None

    # -- decorators ----------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._entering(node, [d.decorator for d in node.decorators])
        for decorator in node.decorators:
            found = self.decorator_region(decorator.decorator)
            if found is not None:
                kind, label, confidence = found
                region = Region(
                    RegionRef(kind, self.line(decorator), label, confidence=confidence),
                    end_line=self.end(node),
                    root=node,
                )
                self.mark(node, region)
                if kind is RegionKind.COMPILE:
                    self.compiled[node] = region
                return

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """A decorator of a class may make its ``forward`` a region (a marker:
        ``@support_torch_compile class Model(nn.Module)``)."""
        info = self.scopes.class_infos.get(node)
        self._entering(node, [d.decorator for d in node.decorators])
        forward = self.method(info, "forward") if info is not None else None
        if forward is None:
            return
        for decorator in node.decorators:
            expr = decorator.decorator
            q = self.values.qualify(expr.func if type(expr) is cst.Call else expr)
            for kind in self.asked["decorated_class"]:
                ref = kind.decorated_class(decorator, q)
                if ref is not None:
                    region = Region(ref, end_line=self.end(forward), root=forward)
                    self.mark(forward, region, inputs=False)
                    return

    def decorator_region(self, expr: cst.BaseExpression) -> Decorated | None:
        q = self.values.qualify(expr.func if type(expr) is cst.Call else expr)
        for kind in self.asked["decorator"]:
            found = kind.decorator(expr, q)
            if found is not None:
                return found
        return None

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._leaving(original_node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._leaving(original_node)

    def leave_With(self, original_node: cst.With) -> None:
        self._leaving(original_node)

    # -- make_graphed_callables(...), torch.compile(fn, mode=...), m.compile(...) ----
    def visit_Call(self, node: cst.Call) -> None:
        q = self.values.qualify(node.func)
        made = None
        for kind in self.asked["call"]:
            made = kind.call(node, q)
            if made is not None:
                break
        if made is None:
            return
        target, ref = made
        if target is None or ref is None:
            return
        region = Region(ref)
        if region.kind is RegionKind.COMPILE:
            self.compiled[node] = region
        if not self.callables(target):
            self.unresolved.append((node, target, region))
        for fn in self.callables(target):
            self.mark(
                fn,
                replace(region, end_line=self.end(fn), root=fn),
            )

    def callables(self, expr: cst.BaseExpression) -> list[Callable]:
        """The functions a callable or module expression stands for, when resolvable."""
        if type(expr) is cst.Tuple or type(expr) is cst.List:
            return [fn for el in expr.elements for fn in self.callables(el.value)]
        if type(expr) is cst.Lambda:
            return [expr]
        found: list[Callable] = []
        for value in self.candidates(expr):
            if value.function is not None:
                found.append(value.function)
            elif value.kind is Kind.MODULE and value.local is not None:
                forward = self.method(value.local, "forward")
                if forward is not None:
                    found.append(forward)
        return list(dict.fromkeys(found))

    def candidates(self, expr: cst.BaseExpression) -> list[Value]:
        """Each value a name was bound to, separately (``m = M(); m = graphed(m)``)."""
        if type(expr) is cst.Name:
            scope = self.values.scope_of.get(expr)
            bindings = scope.lookup(expr.value) if scope else None
            if bindings:
                return [self.values.binding(b) for b in bindings]
        return [self.values.of(expr)]

    def method(self, info: ClassInfo, name: str) -> cst.FunctionDef | None:
        for cls in self.values.bases(info):
            if name in cls.methods:
                return cls.methods[name]
        return None

    def mark(self, fn: Callable, region: Region, *, inputs: bool = True) -> None:
        """Make ``fn``'s body a region; ``inputs``: the capture API passes its
        arguments (only the graphed or compiled callable itself, not what it calls)."""
        if fn.body in self.roots:
            return
        self.roots[fn.body] = region
        if inputs:
            self.values.captured.setdefault(fn, region.kind)

    # -- capture guards: ``if not is_capturing():``, early exits ---------------------
    def visit_If(self, node: cst.If) -> None:
        self.guard(node)

    def visit_While(self, node: cst.While) -> None:
        self.guard(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.guard(node)

    def visit_Module(self, node: cst.Module) -> None:
        self.guard(node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        """``not is_capturing() and loss.item() > 0``: the right operand is not
        evaluated while capturing (``a and b and c`` nests: each level counts)."""
        self.exclude(node.right, node.left, type(node.operator) is cst.And)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        """``a.item() if grid is None else b``: one branch is evaluated."""
        self.exclude(node.body, node.test, True)
        self.exclude(node.orelse, node.test, False)

    def guard(self, node: cst.CSTNode) -> None:
        """Record the conditions under which the blocks and statements in ``node``
        run; one that cannot hold while capturing is excluded from capture."""
        for block, test, holds in entry_conditions(node):
            self.conditions.setdefault(block, []).append((test, holds))
            self.exclude(block, test, holds)

    def exclude(self, part: cst.CSTNode, test: cst.BaseExpression, holds: bool) -> None:
        """Keep ``part``, which runs only where ``test`` is ``holds``, out of capture
        when the test cannot be so while capturing: by the capture checks, or, in
        a function that regions elsewhere reach, by what their calls pass it."""
        value = self.under_capture(test)
        if value is not None:
            if value is not holds:
                self.excluded.add(part)
        elif self.settled and self.under_capture(test, settled=True) is (not holds):
            self.settled_out.add(part)

    def under_capture(
        self, test: cst.BaseExpression, *, settled: bool = False
    ) -> bool | None:
        return guards.under_capture(self.formula(test, settled=settled), self.is_check)

    def is_check(self, name: str) -> bool:
        return name in self.checks

    def formula(
        self, expr: cst.BaseExpression, depth: int = 0, *, settled: bool = False
    ) -> guards.Formula:
        """The guard formula of a test (see ``graphlint.facts.guards``); with
        ``settled``, a test of a settled parameter for None is a constant."""
        if depth > guards.MAX_DEPTH:
            return guards.UNKNOWN
        if type(expr) is cst.Call:
            name = self.values.qualify(expr.func) or dotted(expr.func)
            return ["call", name] if name else guards.UNKNOWN
        if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Not:
            return guards.negate(
                self.formula(expr.expression, depth + 1, settled=settled)
            )
        if type(expr) is cst.BooleanOperation:
            op = "and" if type(expr.operator) is cst.And else "or"
            return [
                op,
                self.formula(expr.left, depth + 1, settled=settled),
                self.formula(expr.right, depth + 1, settled=settled),
            ]
        tested = _tested_for_none(expr) if settled else None
        if tested is not None:
            none = self.is_none(tested[0])
            return guards.UNKNOWN if none is None else ["const", none is tested[1]]
        if type(expr) is cst.Name:
            if expr.value in ("True", "False"):
                return ["const", expr.value == "True"]
            truth = self.truth(expr) if settled else None
            if truth is not None:  # ``if fused:``, every call passing ``fused=True``
                return ["const", truth]
            # ``capturing = is_capturing()`` once, then ``if not capturing:``
            scope = self.values.scope_of.get(expr)
            bindings = scope.lookup(expr.value) if scope is not None else None
            if (
                bindings
                and len(bindings) == 1
                and bindings[0].how == "assign"
                and not bindings[0].path
                and bindings[0].value is not None
                and bindings[0].scope.kind != "module"
            ):
                return self.formula(bindings[0].value, depth + 1, settled=settled)
        return guards.UNKNOWN

    def is_none(self, name: cst.Name) -> bool | None:
        """Whether ``name``, read in a function that regions elsewhere reach, is a
        parameter that every call under capture passes None (True) or a value
        that cannot be None (False), and still holds it."""
        fact = self._settled_fact(name)
        return fact.none if fact is not None else None

    def truth(self, name: cst.Name) -> bool | None:
        """The truth of the constant that every call under capture passes the
        parameter ``name`` (``fused=True``), where it still holds it."""
        fact = self._settled_fact(name)
        return fact.truth if fact is not None else None

    def _settled_fact(self, name: cst.Name) -> guards.Settled | None:
        scope = self.values.scope_of.get(name)
        function = scope.function() if scope is not None else None
        if function is None or scope is None or scope.owner(name.value) is not function:
            return None
        fact = self.settled.get(function.node, {}).get(name.value)
        return fact if fact is not None and fact.holds(self.line(name)) else None


def _tested_for_none(expr: cst.BaseExpression) -> tuple[cst.Name, bool] | None:
    """The name in ``name is None`` (True) or ``name is not None`` (False)."""
    if not (type(expr) is cst.Comparison and len(expr.comparisons) == 1):
        return None
    target = expr.comparisons[0]
    if not (type(target.operator) is cst.Is or type(target.operator) is cst.IsNot):
        return None
    for name, other in ((expr.left, target.comparator), (target.comparator, expr.left)):
        if type(name) is cst.Name and type(other) is cst.Name and other.value == "None":
            return name, type(target.operator) is cst.Is
    return None


Condition = tuple[cst.CSTNode, cst.BaseExpression, bool]


def entry_conditions(node: cst.CSTNode) -> list[Condition]:
    """What must hold for each part of ``node`` to run: (part, test, value). The
    blocks of an ``if`` or ``while``; in a statement list, the statements after an
    early exit (``if test: return``, ``assert test``) run only when it did not exit."""
    if type(node) is cst.If or type(node) is cst.While:
        found: list[Condition] = [(node.body, node.test, True)]
        if node.orelse is not None:  # ``while ... else`` runs once the test fails
            found.append((node.orelse, node.test, False))
        return found
    if not (type(node) is cst.IndentedBlock or type(node) is cst.Module):
        return []
    found = []
    exits: list[tuple[cst.BaseExpression, bool]] = []
    for statement in node.body:
        found.extend((statement, test, holds) for test, holds in exits)
        exits.extend(_exit_of(statement))
    return found


def _exit_of(statement: cst.BaseStatement) -> list[tuple[cst.BaseExpression, bool]]:
    """The condition under which code after ``statement`` still runs."""
    if type(statement) is cst.SimpleStatementLine:
        return [(s.test, True) for s in statement.body if type(s) is cst.Assert]
    if type(statement) is cst.If:
        if leaves(statement.body):
            return [(statement.test, False)]
        if type(statement.orelse) is cst.Else and leaves(statement.orelse.body):
            return [(statement.test, True)]
    if (  # an exit inside ``with torch.cuda.device(d):`` leaves the block too
        type(statement) is cst.With
        and type(statement.body) is cst.IndentedBlock
        and not any(_suppresses(item.item) for item in statement.items)
    ):
        return [found for inner in statement.body.body for found in _exit_of(inner)]
    return []


def _suppresses(manager: cst.BaseExpression) -> bool:
    """``contextlib.suppress(...)``: a context manager that swallows an exception
    raised in its block, so the code after it runs anyway."""
    called = manager.func if type(manager) is cst.Call else manager
    name = called.attr if type(called) is cst.Attribute else called
    return type(name) is cst.Name and name.value == "suppress"


def leaves(block: cst.BaseSuite) -> bool:
    """Whether a block always ends by leaving it: ``return``, ``raise``, ``continue``
    or ``break`` (the rest of the enclosing block is then skipped)."""
    if type(block) is cst.SimpleStatementSuite:
        return any(isinstance(s, _LEAVE) for s in block.body)
    if type(block) is not cst.IndentedBlock or not block.body:
        return False
    last = block.body[-1]
    if type(last) is cst.SimpleStatementLine:
        return any(isinstance(s, _LEAVE) for s in last.body)
    return type(last) is cst.If and _every_branch_leaves(last)


def _every_branch_leaves(node: cst.If) -> bool:
    """``if``/``elif``/``else`` where each branch leaves."""
    orelse = node.orelse
    if not leaves(node.body) or orelse is None:
        return False
    if type(orelse) is cst.If:
        return _every_branch_leaves(orelse)
    return leaves(orelse.body)


_LEAVE = (cst.Return, cst.Raise, cst.Continue, cst.Break)


# where the region finder's walk visits and leaves, which the scope walk records
FINDER_SITES = subscribed(RegionFinder)


class Assignment(cst.CSTVisitor, Mapping[cst.CSTNode, Region]):
    """Every node under capture -> the innermost region it runs in.

    Not a walk of its own: the first visitor of the facts' shared replay of the
    scope walk (``facts.walk.replay_together``), it decides each node as the
    replay enters it, from the region its parent runs in. A node the replay has
    not reached yet (a write's target, a definition later in a loop) is decided
    on the spot, down from its nearest decided ancestor, as the replay will
    decide it. ``present``: the regions some node runs in, known before the
    replay, in the order of their lines.

    Being a ``Mapping``, it compares by its contents and cannot be hashed."""

    def __init__(
        self,
        module: cst.Module,
        finder: RegionFinder,
        pragmas: Sequence[tuple[int, int]],
    ) -> None:
        super().__init__()
        self.module = module
        self.finder = finder
        self.pragmas = pragmas
        # what each node decided runs there (a region, _EXCLUDED or None): its
        # children start from it
        self._tops: dict[cst.CSTNode, Region | object | None] = {}
        self._stack: list[Region | object | None] = [None]
        self._regions: dict[cst.CSTNode, Region] = {}  # in the walk's order
        self._complete = False
        self._parents: dict[int, cst.CSTNode] | None = None
        # the types of the nodes the finder decided something of: no other node
        # is looked up in its tables
        self._decided = frozenset(
            type(node)
            for table in (
                finder.roots,
                finder.excluded,
                finder.settled_out,
                finder.spans,
            )
            for node in table
        )
        self.present = self._candidates()
        if not self.present:  # nothing runs under capture: nothing to walk
            self._complete = True

    # -- the walk ----------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        top = self._tops.get(node, _UNDECIDED)
        if top is _UNDECIDED:
            top = self._tops[node] = self._decide(node, self._stack[-1])
        self._stack.append(top)
        if isinstance(top, Region):
            self._regions[node] = top
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        if original_node is self.module:  # every answer is in _regions now
            self._complete = True
            self._tops, self._parents = {}, None

    def needs_walk(self) -> bool:
        """Whether the shared replay must visit the file for this: some node runs
        under capture."""
        return not self._complete

    # -- the mapping -------------------------------------------------------------
    def __getitem__(self, node: cst.CSTNode) -> Region:
        found = self.get(node)
        if found is None:
            raise KeyError(node)
        return found

    @overload
    def get(self, node: cst.CSTNode, /) -> Region | None: ...

    @overload
    def get(self, node: cst.CSTNode, /, default: Region | _T) -> Region | _T: ...

    def get(self, node: cst.CSTNode, /, default: object = None) -> object:
        if self._complete:
            return self._regions.get(node, default)
        top = self._tops.get(node, _UNDECIDED)
        if top is _UNDECIDED:
            top = self._top(node)
        return top if isinstance(top, Region) else default

    def __contains__(self, node: object) -> bool:
        return self.get(cast(cst.CSTNode, node)) is not None

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def items(self) -> ItemsView[cst.CSTNode, Region]:
        return self._all().items()

    def values(self) -> ValuesView[Region]:
        return self._all().values()

    def _all(self) -> dict[cst.CSTNode, Region]:
        if not self._complete:  # asked before the walk: walk for it
            walk(self.module, self)
        return self._regions

    # -- deciding ------------------------------------------------------------------
    def _candidates(self) -> tuple[Region, ...]:
        """The regions some node runs in: those of the roots (each runs in its
        own), of the statements between ``capture_begin()`` and ``capture_end()``
        and of those in a marked span of lines, where nothing keeps them out; in
        the order of their lines."""
        finder = self.finder
        found: set[Region] = set(finder.roots.values())
        nodes: list[cst.CSTNode] = list(finder.spans)
        if self.pragmas:
            nodes.extend(
                node
                for node, place in finder.positions.items()
                if type(node) in _PRAGMA_TYPES
                and any(s < place.start.line < e for s, e in self.pragmas)
            )
        for node in nodes:
            region = self.get(node)
            if region is not None:
                found.add(region)
        return tuple(sorted(found, key=_region_order))

    def _top(self, node: cst.CSTNode) -> Region | object | None:
        """What ``node`` decides (``on_visit``), decided down from its nearest
        decided ancestor where the walk has not reached it."""
        tops = self._tops
        if node in tops:
            return tops[node]
        if self._parents is None:
            self._parents = parents()
        path = [node]
        parent = self._parents.get(id(node))
        while parent is not None and parent not in tops:
            path.append(parent)
            parent = self._parents.get(id(parent))
        if parent is None and path[-1] is not self.module:
            # an ancestor no walk has listed yet, or another tree's node
            return self._all().get(node)
        top = tops[parent] if parent is not None else None
        for step in reversed(path):
            top = tops[step] = self._decide(step, top)
        return top

    def _decide(
        self, node: cst.CSTNode, current: Region | object | None
    ) -> Region | object | None:
        """What runs in ``node``, where its parent runs in ``current``."""
        entry = self._entry(node, current)
        return current if entry is _KEEP else entry

    def _entry(
        self, node: cst.CSTNode, current: Region | object | None
    ) -> Region | object | None:
        finder = self.finder
        kind = type(node)  # by exact type: this runs at every node of the file
        if kind in self._decided:
            if node in finder.roots:
                return finder.roots[node]
            if node in finder.excluded:
                return _EXCLUDED
            if (
                node in finder.settled_out
                and isinstance(current, Region)
                and current.via  # settled by the calls from other regions only
            ):
                return _EXCLUDED
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            # a nested definition runs when called, not where it is written;
            # a pragma span may still cover it as a whole
            return self._pragma(node)
        if current is _EXCLUDED:
            return _KEEP  # spans and pragmas do not reach into a guarded block
        if kind in self._decided and node in finder.spans:
            return finder.spans[node]
        if self.pragmas and kind in _STATEMENTS:
            found = self._pragma(node)
            if found is not None:
                return found
        return _KEEP

    def _pragma(self, node: cst.CSTNode) -> Region | None:
        if not self.pragmas:
            return None
        line = self.finder.positions[node].start.line
        for start, end in self.pragmas:
            if start < line < end:
                return Region(
                    RegionRef(RegionKind.MARKED, start, "marked"), end_line=end
                )
        return None


_KEEP = object()  # the node runs where its parent runs
_EXCLUDED = object()  # a guarded block: never under capture
_UNDECIDED = object()  # not decided yet
_T = TypeVar("_T")


def _region_order(region: Region) -> tuple[int, int, str, str, str]:
    return (
        region.line,
        region.end_line,
        region.kind.value,
        region.label,
        region.graph or "",
    )


_STATEMENTS = node_types(cst.SimpleStatementLine, cst.BaseCompoundStatement)
# the nodes a marked span of lines covers when they start inside it
_PRAGMA_TYPES = _STATEMENTS | {cst.FunctionDef, cst.ClassDef}


@dataclass(frozen=True)
class Found:
    """What the region finder finds in one file, and where each node runs."""

    regions: Assignment  # every node under capture -> its region
    # make_graphed_callables calls: their set-up matters even when their targets
    # cannot be resolved
    graphed_calls: list[cst.Call]
    # graphed or compiled targets not defined in this file (the project pass
    # follows them)
    unresolved: list[tuple[cst.Call, cst.BaseExpression, Region]]
    # the tests each block or statement runs under, and the value each must have
    # (``entry_conditions``)
    conditions: dict[cst.CSTNode, list[tuple[cst.BaseExpression, bool]]]
    # compile calls and compile-decorated functions: their results replay CUDA graphs
    compiles: dict[cst.CSTNode, Region] = field(default_factory=dict)


def typed_by_callers(
    regions: Iterable[Region], scopes: ScopeBuilder, values: Values
) -> dict[cst.CSTNode, frozenset[str]]:
    """The parameters of each function that makes a capture (``with
    torch.cuda.graph(g): y = model(x)`` in ``def capture(model, x)``) that every
    call of it in this file passes a device tensor, a container of them, a host
    tensor or a module: what the captured code is given, marked as
    ``Entry.tensors`` marks them ("x", "xs*", "mask!", "model~")."""
    found: dict[cst.CSTNode, frozenset[str]] = {}
    for region in regions:
        if region.kind is not RegionKind.MANUAL or region.root is None or region.via:
            continue
        scope = scopes.scope_of.get(region.root)
        owner = scope.function() if scope is not None else None
        function = owner.node if owner is not None else None
        if owner is None or type(function) is not cst.FunctionDef:
            continue
        if function in found:
            continue
        marks = [
            _passed(call, function, owner, values)
            for call in scopes.calls.get(function.name.value, ())
            if values.of(call.func).function is function
        ]
        common = set.intersection(*marks) if marks else set()
        if common:
            found[function] = frozenset(common)
    return found


def _passed(
    call: cst.Call, function: cst.FunctionDef, scope: Scope, values: Values
) -> set[str]:
    """The parameters of ``function`` that ``call`` passes what ``tensor_mark``
    marks, each with its mark."""
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if scope.self_name is not None and type(call.func) is cst.Attribute:
        positional = positional[1:]  # ``self.capture(x)``: ``self`` is bound
    found: set[str] = set()
    for slot, mark in tensor_slots(call, values):
        if not slot.isdigit():
            found.add(slot + mark)
        elif int(slot) < len(positional):
            found.add(positional[int(slot)] + mark)
    return found


def find_regions(
    module: cst.Module,
    scopes: ScopeBuilder,
    values: Values,
    positions: Mapping[cst.CSTNode, CodeRange],
    pragmas: Sequence[tuple[int, int]],
    markers: frozenset[str],
    external: Mapping[str, Region] | None = None,
    checks: frozenset[str] = frozenset(),
    declared: frozenset[str] = frozenset(),
) -> Found:
    """Find the file's capture regions. ``external`` names functions (by path,
    "Cls.method") that a region in other code reaches; ``checks`` adds project
    functions that ask whether the stream is capturing, by their qualified or local
    names; ``declared`` names the file's functions that the configuration declares
    capture roots (``capture-roots``)."""
    finder = RegionFinder(scopes, values, positions, markers, checks)
    finder.checks = checks | local_checks(finder, scopes)
    for function, path in scopes.paths.items():
        how = external.get(path) if external else None
        if how is not None and how.settled:
            finder.settled[function] = {fact.name: fact for fact in how.settled}
        if how is not None and how.tensors:
            values.tensor_params[function] = frozenset(how.tensors)
    if not covers(scopes.recorded, FINDER_SITES):
        raise ValueError("scopes built without the sites of FINDER_SITES")
    finder.start(module)
    replay(scopes.sites, finder)  # the finder's walk, from what the scope walk saw
    for function, path in scopes.paths.items():
        if path in declared:
            region = Region(
                RegionRef(
                    RegionKind.MARKED, finder.line(function.name), DECLARED_LABEL
                ),
                end_line=finder.end(function),
                root=function,
            )
            finder.mark(function, region, inputs=False)
        if external and path in external:
            region = replace(
                external[path], root=function, end_line=finder.end(function)
            )
            finder.mark(function, region, inputs=False)
    finder.statements(module)
    return Found(
        Assignment(module, finder, pragmas),
        finder.graphed_calls,
        finder.unresolved,
        finder.conditions,
        finder.compiled,
    )


def local_checks(finder: RegionFinder, scopes: ScopeBuilder) -> frozenset[str]:
    """Functions of this file that return a capture check (``def capturing():
    return torch.cuda.is_current_stream_capturing()``), by the names calls use."""
    found: set[str] = set()
    for function, path in scopes.paths.items():
        body = function.body
        if type(body) is not cst.IndentedBlock:
            continue
        statements = list(body.body)
        if len(statements) == 2 and _is_docstring(statements[0]):
            statements = statements[1:]
        if len(statements) != 1:
            continue
        line = statements[0]
        if type(line) is not cst.SimpleStatementLine:
            continue
        returned = line.body[0]
        if (
            type(returned) is cst.Return
            and returned.value is not None
            and finder.under_capture(returned.value) is True
        ):
            name = function.name.value
            method = scopes.functions[function].cls is not None
            found.update({path, f"self.{name}"} if method else {path, name})
    return frozenset(found)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        type(statement) is cst.SimpleStatementLine
        and type(statement.body[0]) is cst.Expr
        and isinstance(
            statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)
        )
    )


__all__ = ["Found", "entry_conditions", "find_regions", "leaves"]
