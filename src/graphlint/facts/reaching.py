"""Which binding of a name each read sees: reaching definitions, per function.

A name rebound to a different value is a different value. ``x = torch.rand(4)`` in
one loop and ``x, dy = static[i]`` inside a capture are two values that share a
name; a read sees only the bindings that can reach it along the code's paths. So
"the region reads ``x``" is true only of a read that can see a binding made before
the region, and "``y`` holds the graph's output" only of a read that can see the
binding made under capture.

Computed on first use, one function (or the module's own code) at a time, by one
structured pass over its statements: branches join, loops repeat until nothing
changes, ``break``/``continue``/``return``/``raise`` end a path, a handler of a
``try`` sees anything its body bound. What the pass cannot order answers None
(unknown), and callers then keep their flow-insensitive answer: reads in nested
functions, lambdas and generator expressions (they run later), names another scope
declares ``global`` or ``nonlocal``, and a function whose loops do not settle.

A function's answers are a function of its parameters and body alone: which names
it owns is decided by what they bind and declare. A worker that keeps its parses'
pieces (``keep``) keeps them from one analysis to the next, by those two nodes: an
edit leaves the nodes of every top-level statement it did not change as they were
(``graphlint.reparse``), so the next analysis of the file takes the answers of
every function the edit left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, TypeAlias

import libcst as cst

from graphlint.facts.scopes import Scope
from graphlint.facts.walk import children

# name -> the nodes that bound it (a store target, a Param, a def, an import alias);
# None: no path reaches here
State: TypeAlias = "dict[str, frozenset[cst.CSTNode]] | None"
_ROUNDS: Final = 8  # passes over a loop before its function is given up as unknown


# a function's answers: each read's bindings, and what each binding binds
Answers: TypeAlias = (
    "tuple[dict[cst.Name, frozenset[cst.CSTNode] | None], "
    "dict[cst.CSTNode, cst.BaseExpression]]"
)
# the parameters and body the answers are of: the key is their ids, which holding
# them keeps from being reused
_Kept: TypeAlias = (
    "dict[tuple[int, int], tuple[cst.Parameters, cst.BaseSuite, Answers]]"
)
_RECENT: list[_Kept] = []  # the answers of the last analyses' trees, newest last
# analyses whose answers are kept (``keep``): the answers hold their trees' nodes,
# and a tree of Megatron-LM's ``cuda_graphs.py`` (148 KB) takes 12.7 MiB; an edit's
# analyses in one worker are one or two, and an unchanged function's nodes are
# shared by every version of its file the worker parsed since
_TREES = 4
_keeping = False


def keep() -> None:
    """Keep functions' answers from one analysis to the next (a worker that lives
    between runs and keeps its parses' pieces): those of the last ``_TREES`` trees."""
    global _keeping
    _keeping = True


class _Unsettled(Exception):
    """A loop whose bindings kept growing past ``_ROUNDS`` passes."""


class Reaching:
    """Reaching bindings of the file's reads of local names, by read."""

    def __init__(
        self, module: cst.Module, scope_of: Mapping[cst.CSTNode, Scope]
    ) -> None:
        self.module = module
        self.scope_of = scope_of
        self._seen: dict[Scope, dict[cst.Name, frozenset[cst.CSTNode] | None]] = {}
        self._shared: set[tuple[int, str]] | None = None
        self._assigned: dict[cst.CSTNode, cst.BaseExpression] = {}
        # the answers this tree's functions got, kept for the next analyses
        self._kept: _Kept | None = None
        if _keeping:
            self._kept = {}
            _RECENT.append(self._kept)
            del _RECENT[:-_TREES]

    def of(self, name: cst.Name) -> frozenset[cst.CSTNode] | None:
        """The bindings a read of ``name`` can see, or None when unknown."""
        scope = self.scope_of.get(name)
        owner = scope.owner(name.value) if scope is not None else None
        if scope is None or owner is None or owner.kind == "class":
            return None
        if (id(owner), name.value) in self._declared_elsewhere():
            return None
        known = self._seen.get(owner)
        if known is None:
            known = self._seen[owner] = self._analyse(owner)
        return known.get(name)

    def value(self, binding: cst.CSTNode) -> cst.CSTNode | None:
        """What a binding that ``of`` returned binds: the right-hand side of
        ``name = value``, ``a, b = value`` or a walrus, the definition itself for a
        ``def`` or ``class``; None for anything else (a loop target, an import)."""
        if type(binding) is cst.FunctionDef or type(binding) is cst.ClassDef:
            return binding
        return self._assigned.get(binding)

    def _analyse(self, owner: Scope) -> dict[cst.Name, frozenset[cst.CSTNode] | None]:
        node = owner.node
        if type(node) is cst.FunctionDef:
            answers, assigned = self._function(owner, node)
        elif type(node) is cst.Module:
            answers, assigned = self._answer(owner, node.body, None)
        else:  # a lambda or a comprehension: one expression, read in place
            return {}
        self._assigned.update(assigned)
        return answers

    def _function(self, owner: Scope, node: cst.FunctionDef) -> Answers:
        """A function's answers: those an earlier tree's analysis found for these
        very parameters and body (``keep``), else its own."""
        if self._kept is None:
            return self._answer(owner, _statements(node.body), node.params)
        key = (id(node.params), id(node.body))
        for kept in reversed(_RECENT):
            found = kept.get(key)
            if found is not None and found[0] is node.params and found[1] is node.body:
                answers = found[2]
                break
        else:
            answers = self._answer(owner, _statements(node.body), node.params)
        self._kept[key] = (node.params, node.body, answers)
        return answers

    def _answer(
        self,
        owner: Scope,
        body: Sequence[cst.CSTNode],
        params: cst.Parameters | None,
    ) -> Answers:
        walker = _Walker(owner, self.scope_of)
        start: dict[str, frozenset[cst.CSTNode]] = {}
        for param in _every_param(params) if params is not None else ():
            start[param.name.value] = frozenset({param})
        try:
            walker.block(body, start)
        except _Unsettled:
            return {}, {}
        answers = {
            name: None if name in walker.unknown or not defs else defs
            for name, defs in walker.seen.items()
        }
        return answers, walker.assigned

    def _declared_elsewhere(self) -> set[tuple[int, str]]:
        """(scope id, name) of names that an inner scope binds through ``global``
        or ``nonlocal``: their writes happen where the pass does not look."""
        if self._shared is None:
            self._shared = {
                (id(owner), name)
                for scope in {id(s): s for s in self.scope_of.values()}.values()
                for name, owner in scope.declared.items()
            }
        return self._shared


def _statements(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    return suite.body


def _join(*states: State) -> State:
    live = [s for s in states if s is not None]
    if not live:
        return None
    if len(live) == 1:
        return dict(live[0])
    joined: dict[str, frozenset[cst.CSTNode]] = {}
    for state in live:
        for name, defs in state.items():
            joined[name] = joined.get(name, frozenset()) | defs
    return joined


class _Loop:
    def __init__(self) -> None:
        self.breaks: list[State] = []
        self.continues: list[State] = []


class _Walker:
    """The pass over one function's statements."""

    def __init__(self, owner: Scope, scope_of: Mapping[cst.CSTNode, Scope]) -> None:
        self.owner = owner
        self.scope_of = scope_of
        self.seen: dict[cst.Name, frozenset[cst.CSTNode]] = {}
        self.unknown: set[cst.Name] = set()  # read by code that runs later
        self.assigned: dict[cst.CSTNode, cst.BaseExpression] = {}
        self._loops: list[_Loop] = []
        self._tries: list[dict[str, frozenset[cst.CSTNode]]] = []

    # -- statements --------------------------------------------------------------------
    def block(self, body: Iterable[cst.CSTNode], state: State) -> State:
        for statement in body:
            if state is None:
                break  # unreachable: after return, raise, break or continue
            state = self.statement(statement, state)
        return state

    def statement(self, node: cst.CSTNode, state: State) -> State:
        if type(node) is cst.SimpleStatementLine:
            return self.block(node.body, state)
        if type(node) is cst.Expr or type(node) is cst.Assert:
            self.reads(node, state)
            return state
        if type(node) is cst.Assign:
            self.reads(node.value, state)
            for target in node.targets:
                state = self.store(target.target, state, node.value)
            return state
        if type(node) is cst.AnnAssign:
            self.reads(node.annotation, state)
            if node.value is None:
                return state
            self.reads(node.value, state)
            return self.store(node.target, state, node.value)
        if type(node) is cst.AugAssign:
            self.reads(node.value, state)
            self.reads(node.target, state)
            return self.store(node.target, state)
        if type(node) is cst.Del:
            return self.delete(node.target, state)
        if type(node) is cst.Return or type(node) is cst.Raise:
            for part in children(node):
                self.reads(part, state)
            return None
        if type(node) is cst.Break:
            if self._loops:
                self._loops[-1].breaks.append(state)
            return None
        if type(node) is cst.Continue:
            if self._loops:
                self._loops[-1].continues.append(state)
            return None
        if type(node) is cst.Import or type(node) is cst.ImportFrom:
            return self.imports(node, state)
        if type(node) is cst.If:
            return self.branch(node, state)
        if type(node) is cst.For:
            return self.for_loop(node, state)
        if type(node) is cst.While:
            return self.while_loop(node, state)
        if type(node) is cst.With:
            for item in node.items:
                self.reads(item.item, state)
                if item.asname is not None:
                    state = self.store(item.asname.name, state)
            return self.block(_statements(node.body), state)
        if type(node) is cst.Try or type(node) is cst.TryStar:
            return self.attempt(node, state)
        if type(node) is cst.FunctionDef or type(node) is cst.ClassDef:
            return self.define(node, state)
        if type(node) is cst.Match:
            return self.match(node, state)
        # pass, global, nonlocal, and anything newer: read what it holds
        self.reads(node, state)
        return state

    def branch(self, node: cst.If, state: State) -> State:
        self.reads(node.test, state)
        taken = self.block(_statements(node.body), state)
        other = node.orelse
        if type(other) is cst.If:
            skipped = self.branch(other, state)
        elif type(other) is cst.Else:
            skipped = self.block(_statements(other.body), state)
        else:
            skipped = state
        return _join(taken, skipped)

    def for_loop(self, node: cst.For, state: State) -> State:
        self.reads(node.iter, state)
        return self.loop(node, state, lambda head: self.store(node.target, head))

    def while_loop(self, node: cst.While, state: State) -> State:
        def enter(head: State) -> State:
            self.reads(node.test, head)
            return head

        return self.loop(node, state, enter)

    def loop(self, node: cst.For | cst.While, state: State, enter: _Enter) -> State:
        head = state
        for _ in range(_ROUNDS):
            loop = _Loop()
            self._loops.append(loop)
            try:
                end = self.block(_statements(node.body), enter(head))
            finally:
                self._loops.pop()
            again = _join(head, end, *loop.continues)
            if again == head:
                break
            head = again
        else:
            raise _Unsettled
        done = head
        if node.orelse is not None:
            done = self.block(_statements(node.orelse.body), done)
        return _join(done, *loop.breaks)

    def attempt(self, node: cst.Try | cst.TryStar, state: State) -> State:
        """A handler may start anywhere in the body: it sees what the body bound."""
        self._tries.append({})
        try:
            body = self.block(_statements(node.body), state)
        finally:
            bound = self._tries.pop()
        anywhere = dict(state or {})
        for name, defs in bound.items():
            anywhere[name] = anywhere.get(name, frozenset()) | defs
        ends = []
        for handler in node.handlers:
            start: State = anywhere
            if handler.type is not None:
                self.reads(handler.type, start)
            if handler.name is not None:
                start = self.store(handler.name.name, start)
            ends.append(self.block(_statements(handler.body), start))
        if node.orelse is not None:
            body = self.block(_statements(node.orelse.body), body)
        done = _join(body, *ends)
        if node.finalbody is not None:
            # it also runs on the way out of a return or an exception
            self.block(_statements(node.finalbody.body), _join(anywhere, done))
            done = self.block(_statements(node.finalbody.body), done)
        return done

    def match(self, node: cst.Match, state: State) -> State:
        self.reads(node.subject, state)
        ends: list[State] = [state]  # no case matched
        for case in node.cases:
            start = state
            for name in _pattern_names(case.pattern):
                start = self.store(name, start)
            if case.guard is not None:
                self.reads(case.guard, start)
            ends.append(self.block(_statements(case.body), start))
        return _join(*ends)

    def define(self, node: cst.FunctionDef | cst.ClassDef, state: State) -> State:
        """Decorators, defaults and bases run now; a function's body later, a
        class's body now (its own names belong to the class)."""
        for decorator in node.decorators:
            self.reads(decorator.decorator, state)
        if isinstance(node, cst.FunctionDef):
            for param in _every_param(node.params):
                if param.default is not None:
                    self.reads(param.default, state)
            self.later(node.body)
        else:
            for arg in (*node.bases, *node.keywords):
                self.reads(arg.value, state)
            self.block(_statements(node.body), dict(state or {}))
        return self.bind(node.name.value, node, state)

    def imports(self, node: cst.Import | cst.ImportFrom, state: State) -> State:
        if type(node) is cst.ImportFrom and type(node.names) is cst.ImportStar:
            return state
        for alias in node.names:  # type: ignore[union-attr]
            target = alias.asname.name if alias.asname else alias.name
            while type(target) is cst.Attribute:  # ``import a.b`` binds ``a``
                target = target.value
            if type(target) is cst.Name:
                state = self.bind(target.value, alias, state)
        return state

    # -- bindings --------------------------------------------------------------------
    def store(
        self,
        target: cst.BaseExpression,
        state: State,
        value: cst.BaseExpression | None = None,
    ) -> State:
        """Bind a target; ``value``: the right-hand side of an assignment, which
        each name of an unpacked tuple is taken from."""
        if type(target) is cst.Name:
            if value is not None:
                self.assigned[target] = value
            return self.bind(target.value, target, state)
        if type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                state = self.store(element.value, state, value)
            return state
        if type(target) is cst.StarredElement:
            return self.store(target.value, state, value)
        self.reads(target, state)  # ``obj.attr = v``, ``d[k] = v`` read obj, d, k
        return state

    def bind(self, name: str, node: cst.CSTNode, state: State) -> State:
        if state is None or not self._mine(node, name):
            return state
        after = dict(state)
        after[name] = frozenset({node})
        for bound in self._tries:
            bound[name] = bound.get(name, frozenset()) | {node}
        return after

    def delete(self, target: cst.BaseExpression, state: State) -> State:
        if type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                state = self.delete(element.value, state)
            return state
        if type(target) is cst.Name and state is not None:
            after = dict(state)
            after.pop(target.value, None)
            return after
        self.reads(target, state)
        return state

    def _mine(self, node: cst.CSTNode, name: str) -> bool:
        scope = self.scope_of.get(node)
        return scope is not None and scope.owner(name) is self.owner

    # -- reads -----------------------------------------------------------------------
    def reads(self, node: cst.CSTNode, state: State) -> None:
        """Record what each read of a local name in ``node`` sees (an expression,
        evaluated now; a walrus inside it is seen by the reads after it)."""
        todo: list[cst.CSTNode] = [node]
        while todo:
            current = todo.pop()
            if type(current) is cst.Name:  # by exact type: every node of the file
                self.read(current, state)
            elif type(current) is cst.Attribute or type(current) is cst.Arg:
                todo.append(current.value)  # not ``.attr``, not ``kw=``
            elif type(current) is cst.Lambda or type(current) is cst.GeneratorExp:
                self.later(current)
            elif type(current) is cst.NamedExpr:
                self.reads(current.value, state)
                self.assigned[current.target] = current.value
                if type(current.target) is cst.Name and state is not None:
                    walrus = self.bind(current.target.value, current.target, state)
                    if walrus is not None:
                        state.update(_join(state, walrus) or {})
            elif type(current) is cst.FunctionDef or type(current) is cst.ClassDef:
                self.define(current, state)
            else:
                todo.extend(reversed(list(children(current))))

    def read(self, name: cst.Name, state: State) -> None:
        """A read of a name of this function sees what reaches it on this path, and
        on every other path it was walked on (a loop's rounds, a ``finally``)."""
        scope = self.scope_of.get(name)
        if state is None or scope is None or scope.owner(name.value) is not self.owner:
            return
        defs = state.get(name.value, frozenset())
        self.seen[name] = self.seen.get(name, frozenset()) | defs

    def later(self, node: cst.CSTNode) -> None:
        """Code that runs later (a nested function, a lambda, a generator): its reads
        of this function's names may see any binding."""
        todo: list[cst.CSTNode] = [node]
        while todo:
            current = todo.pop()
            if type(current) is cst.Name:
                scope = self.scope_of.get(current)
                if scope is not None and scope.owner(current.value) is self.owner:
                    self.unknown.add(current)
                    self.seen.setdefault(current, frozenset())
            todo.extend(children(current))


_Enter: TypeAlias = "Callable[[State], State]"


def _every_param(params: cst.Parameters) -> list[cst.Param]:
    found = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            found.append(star)
    return found


def _pattern_names(pattern: cst.MatchPattern) -> list[cst.Name]:
    found: list[cst.Name] = []
    todo: list[cst.CSTNode] = [pattern]
    while todo:
        current = todo.pop()
        if (
            type(current) is cst.MatchAs or type(current) is cst.MatchStar
        ) and current.name:
            found.append(current.name)
        elif type(current) is cst.MatchMapping and current.rest is not None:
            found.append(current.rest)
        todo.extend(children(current))
    return found


__all__ = ["Reaching"]
