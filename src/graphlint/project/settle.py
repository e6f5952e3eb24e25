"""What the calls under capture settle about the functions they reach
(``Settling``, the part of the reach that ``reach.Project`` inherits): whether a
parameter holds None there, a value that cannot be None, a constant flag or a device
tensor, and so which of its tests are settled (``guards.Settled``); which project
helpers say whether a capture is under way; which reached functions run eagerly
(``eager``, ``torch.compiler.disable``) or keep their results (``functools.cache``).

It is a union over the calls followed, not per call: where every call followed
passes None (or omits it, with a default of None), or every one passes a value that
cannot be None, a test of it is settled: a call behind ``if grid is None:`` is not
followed when the capturing callers always pass a grid, and the lines there are not
reported (the facts travel with ``RegionRef``). A function whose parameter gets a
new kind of argument is followed again (``_stale``, which the reach reads).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from graphlint.diagnostics import (
    HOST_MARK,
    MODULE_MARK,
    TENSORS_MARK,
    Entry,
    RegionRef,
)
from graphlint.facts import guards
from graphlint.library import Library
from graphlint.project import dynamo
from graphlint.project.index import Loader
from graphlint.project.resolve import (
    MAX_PASSED,
    Cls,
    Fn,
    Param,
    Resolver,
    positional_params,
)
from graphlint.project.summary import (
    CALLER,
    FALSE,
    FIELD,
    MAYBE,
    NEW,
    NONE,
    OR,
    SOME,
    TRUE,
    UNLESS,
    WHEN,
    CallSite,
    FunctionSummary,
    ModuleSummary,
    Nullness,
    rewritten,
)

_V = TypeVar(
    "_V", str, bool
)  # what a parameter is passed (``Settling._through_callers``)


# what each call on a way passes its callee's parameters, as (name, text) pairs
_Hops = tuple[tuple[tuple[str, str], ...], ...]


# decorators that keep what the function returned for each argument list
_MEMOISERS = frozenset({"functools.cache", "functools.lru_cache"})


@dataclass(frozen=True)
class _Null:
    """Whether an argument a call passes may be None (a ``summary.Nullness``
    code), with the code it is passed from."""

    code: str
    module: ModuleSummary
    fn: FunctionSummary | None
    # for a value None exactly when a test fails or holds (``WHEN``, ``UNLESS``):
    # what the same call passes the callee's other parameters, as text
    env: tuple[tuple[str, str], ...] = ()


_TENSOR = "tensor"  # an argument that is a device tensor (``pass_tensors``)
_TENSORS = "tensors"  # a container of device tensors
_HOST = "host"  # a tensor made on the host
_MODULE = "module"  # an ``nn.Module``: what calling it returns is a device tensor
# how ``tensor_params`` and ``Entry.tensors`` (written by the engine) mark each
# kind of slot after its position or keyword: "1*", "mask!", "0~"
_SLOT_MARKS = {
    _TENSOR: "",
    _TENSORS: TENSORS_MARK,
    _HOST: HOST_MARK,
    _MODULE: MODULE_MARK,
}
_SLOT_CODES = {mark: code for code, mark in _SLOT_MARKS.items() if mark}
# the characters that mark a slot's kind
MARKS = "".join(_SLOT_CODES)


class Settling(Resolver):
    """Resolution (``Resolver``) with what the calls followed pass each
    parameter: whether it may be None (``_nulls``) or is a device tensor
    (``_tensors``), and the reached functions that read it (``_readers``), to be
    followed again when it gets something new (``_stale``)."""

    def __init__(
        self,
        roots: Iterable[Path],
        load: Loader,
        *,
        eager: frozenset[str] = frozenset(),
        checks: frozenset[str] = frozenset(),
        prefetch: Callable[[list[tuple[Path, str]]], None] | None = None,
        sources: Sequence[Path] = (),
        read: Callable[[Path], bytes | None] = lambda path: None,
        handoffs: bool = False,
        library: Library | None = None,
    ) -> None:
        super().__init__(
            roots,
            load,
            prefetch=prefetch,
            sources=sources,
            read=read,
            handoffs=handoffs,
            library=library,
        )
        self.eager = eager
        self.known = guards.CAPTURING_CHECKS | guards.TRUE_WHILE_CAPTURING | checks
        self._helpers: set[str] = set()  # project functions that return the check
        # the reached functions that read each parameter (followed again when it
        # gets a new argument), and those to follow again
        self._readers: dict[Param, set[tuple[str, str]]] = {}
        self._stale: dict[tuple[str, str], RegionRef | None] = {}
        # whether what each call followed passes a parameter may be None
        self._nulls: dict[Param, set[_Null]] = {}
        # what the calls followed pass each parameter: ``_TENSOR``, a caller's
        # parameter (``CALLER``), or anything else ("")
        self._tensors: dict[Param, set[_Null]] = {}
        # the functions that hold regions (or hand a parameter on to one that
        # does), and those they are nested in: what their parameters hold under
        # capture is up to every caller, under capture or not
        self._holders: set[tuple[str, str]] = set()
        self._classes: dict[tuple[str, str, str], bool] = {}  # ``Config(...)``
        self._memoised: dict[tuple[str, str], bool] = {}  # by (file, function)

    # -- guards and eager functions ----------------------------------------------------
    def is_check(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        depth: int = 0,
        at: tuple[int, int] = (1, 0),
    ) -> bool:
        """Whether calling ``callee`` (in a condition of the call at ``at``) is
        true whenever the stream is capturing: a capture check, directly or
        through a project helper whose return value is one (``return
        torch.cuda.is_current_stream_capturing()``, not ``return not
        torch.cuda.is_available()``)."""
        if self.qualify(module, callee) in self.known:
            return True
        if depth > 3:
            return False
        for target in self.resolve(module, fn, callee, at, guard=True):
            if not target.fn.returns:
                continue

            def inner(name: str, target: Fn = target) -> bool:
                return self.is_check(target.module, target.fn, name, depth + 1, at)

            if guards.under_capture(guards.decode(target.fn.returns), inner) is True:
                name = target.fn.path
                self._helpers.update({f"{target.module.name}.{name}", name})
                return True
        return False

    def guarded(self, target: Fn, site: CallSite) -> bool:
        """Whether a call ``target`` makes never runs while capturing, by its
        guards (capture checks, and parameters known to be None or not)."""
        if not site.guards:
            return False
        at = (site.line, site.col)
        path = (target.module.path, target.fn.path)
        formulas = [guards.decode(g) for g in site.guards]

        def is_check(name: str) -> bool:
            return self.is_check(target.module, target.fn, name, at=at)

        def is_none(param: str) -> bool | None:
            if param.startswith("self."):
                return self.settled_attribute(target, param[5:])
            return self.is_none((*path, param))

        def truth(param: str) -> bool | None:
            return self.truth((*path, param))

        return guards.never_under_capture(
            formulas, is_check, is_none, truth
        ) or self._correlated(target, formulas, is_check, is_none)

    def _correlated(
        self,
        target: Fn,
        formulas: list[guards.Formula],
        is_check: Callable[[str], bool],
        is_none: guards.IsNone,
    ) -> bool:
        """Whether the guards never hold under capture for any call followed, where
        a parameter is None exactly when a test of the caller fails (``n if
        cfg.size > 1 else None``) and the guards test the same thing through the
        call's other arguments (``n is None and cfg.size > 1``): a fallback the
        callee computes only when the caller did not."""
        params = [p for f in formulas for p in _tested_none(f)]
        for param in dict.fromkeys(params):
            origins = self._origins((target.module.path, target.fn.path, param))
            if not origins or not any(
                null.code.startswith((WHEN, UNLESS)) for null, _ in origins
            ):
                continue
            return all(
                self._never_from(null, hops, param, formulas, is_check, is_none)
                for null, hops in origins
            )
        return False

    def _origins(self, key: Param) -> list[tuple[_Null, _Hops]] | None:
        """The records of what the calls followed pass a parameter, through the
        callers that pass on a parameter of their own (``draft(counts)`` calling
        ``run(counts=counts)``), each with what the calls on the way pass their
        callees' other parameters, the callee's first; None where a caller is a
        region's own function (any caller) or the ways are too many to weigh."""
        found: list[tuple[_Null, _Hops]] = []
        todo: list[tuple[Param, _Hops]] = [(key, ())]
        seen: set[tuple[Param, _Hops]] = set()
        while todo:
            current, hops = todo.pop()
            if (current, hops) in seen:
                continue
            seen.add((current, hops))
            if len(seen) > MAX_PASSED or current[:2] in self._holders:
                return None
            if self._reading is not None:
                self._readers.setdefault(current, set()).add(self._reading)
            for null in self._nulls.get(current, ()):
                if null.code.startswith(CALLER) and OR not in null.code and null.fn:
                    caller = (null.module.path, null.fn.path, null.code[len(CALLER) :])
                    todo.append((caller, (*hops, null.env)))
                else:
                    found.append((null, hops))
        return found

    def _never_from(
        self,
        null: _Null,
        hops: _Hops,
        param: str,
        formulas: list[guards.Formula],
        is_check: Callable[[str], bool],
        is_none: guards.IsNone,
    ) -> bool:
        """Whether the guards never hold under capture for the calls that pass
        ``param`` what ``null`` says, whichever way the caller's test goes; the
        callee's texts are written in the caller's terms through ``hops`` (what
        each call on the way passes) and then ``null.env``."""
        if not null.code.startswith((WHEN, UNLESS)):
            value = self._null_value(null.code, null.module, null.fn)
            if not isinstance(value, bool):
                return False
            cases: list[tuple[bool | None, str, bool]] = [(value, "", False)]
        else:
            test = null.code[1:]
            properties = self._properties(null.module, null.fn)
            if properties:  # those of bases in other modules (the summary has its own)
                test = rewritten(test, (), properties) or test
            # the test holds: not None for ``WHEN``; fails: the other way round
            when = null.code.startswith(WHEN)
            cases = [
                (not holds if when else holds, test, holds) for holds in (True, False)
            ]
        for none, test, holds in cases:

            def settled(name: str, none: bool | None = none) -> bool | None:
                return none if name == param else is_none(name)

            def known(text: str, test: str = test, holds: bool = holds) -> bool | None:
                if not test:
                    return None
                written: str | None = text
                for env in (*hops, null.env):
                    written = rewritten(written, env) if written else None
                return holds if written == test else None

            if not any(
                guards.under_capture(f, is_check, settled, known) is False
                for f in formulas
            ):
                return False
        return True

    def _properties(
        self, module: ModuleSummary, fn: FunctionSummary | None
    ) -> tuple[tuple[str, str], ...]:
        """The properties returning one expression of the class whose method is or
        encloses ``fn`` and of its bases, the class's own first."""
        scope = fn.path if fn is not None else ""
        while scope and scope not in module.classes:
            scope = scope.rpartition(".")[0]
        cls = module.classes.get(scope) if scope else None
        if cls is None:
            return ()
        found: dict[str, str] = {}
        for _, each in reversed([(module, cls), *self.bases(module, cls)]):
            found.update(each.properties)
        return tuple(found.items())

    def settled_attribute(self, target: Fn, attr: str) -> bool | None:
        """``self.attr is None`` in a method: False (not None) when the class's
        set-up settles the attribute (``ClassSummary.settled``), else unknown."""
        cls = self.class_of(target.module, target.fn)
        if cls is None:
            return None
        hierarchy = [(target.module, cls), *self.bases(target.module, cls)]
        return False if any(attr in c.settled for _, c in hierarchy) else None

    # -- None under capture --------------------------------------------------------
    def pass_nullness(
        self,
        target: Fn,
        call: CallSite | None,
        module: ModuleSummary,
        fn: FunctionSummary | None,
    ) -> None:
        """Record whether what a call of ``target`` made in ``fn`` passes each of
        its parameters may be None (``call``: the summary's record of the call,
        None when not known); the reached functions whose guards read one of them
        are followed again."""
        callee = target.fn
        given: dict[str, str] = {}
        nullness = (call.nullness or Nullness()) if call is not None else None
        if nullness is not None:
            given.update(
                zip(positional_params(callee), nullness.positional, strict=False)
            )
            given.update((k, v) for k, v in nullness.keywords if k in callee.omitted)
        # what the call passes the others, where a test may be weighed through it:
        # a value None as a test goes, or a parameter passed on
        conditional = any(c.startswith((WHEN, UNLESS, CALLER)) for c in given.values())
        env = tuple(
            (name, text) for name, c in given.items() if (text := _text(c)) is not None
        )
        for name, omitted in callee.omitted.items():
            if name in given:
                code = given[name]
            else:  # ``*args`` or ``**kwargs`` may fill it
                code = omitted if nullness is not None and not nullness.open else MAYBE
            key = (target.module.path, callee.path, name)
            found = self._nulls.setdefault(key, set())
            null = _Null(code, module, fn, env if conditional else ())
            if null not in found:
                found.add(null)
                for reader in self._readers.get(key, ()):
                    self._stale.setdefault(reader, None)

    # -- device tensors under capture ------------------------------------------------
    def pass_tensors(
        self,
        target: Fn,
        site: CallSite | Entry,
        call: CallSite | None,
        module: ModuleSummary,
        fn: FunctionSummary | None,
    ) -> None:
        """Record, for each parameter of ``target``, whether a call made under
        capture passes it a device tensor: a region's own call says so from the
        values of its file (``Entry.tensors``); a call in reached code passes on
        what its function was passed (``CALLER``), else nothing known."""
        callee = target.fn
        given: dict[str, str] = {}
        slots = dict(enumerate(positional_params(callee)))

        def give(slot: str, code: str) -> None:
            given[slots.get(int(slot), "") if slot.isdigit() else slot] = code

        if isinstance(site, Entry):
            for slot in site.tensors:
                code = _SLOT_CODES.get(slot[-1], _TENSOR)
                give(slot.rstrip(MARKS), code)
        elif call is not None and call.nullness is not None:
            nullness = call.nullness
            passed = zip(positional_params(callee), nullness.positional, strict=False)
            for name, code in [*passed, *nullness.keywords]:
                if code.startswith(CALLER) and OR not in code:
                    given[name] = code
        if call is not None:
            for slot in call.host:
                give(slot, _HOST)
        for name in callee.params:
            key = (target.module.path, callee.path, name)
            self._tensors.setdefault(key, set()).add(
                _Null(given.get(name, ""), module, fn)
            )

    def tensor_params(self, target: Fn) -> tuple[str, ...]:
        """The parameters of ``target`` that every call followed passes a device
        tensor (``x``), a container of them (``xs*``), a tensor made on the host
        (``mask!``) or an ``nn.Module`` (``model~``), also through the parameters
        of its callers."""
        found = []
        for name in target.fn.params:
            if name in target.fn.annotated:
                continue
            code = self._tensor_code((target.module.path, target.fn.path, name))
            if code is not None:
                found.append(name + _SLOT_MARKS[code])
        return tuple(found)

    def _tensor_code(self, key: Param) -> str | None:
        """``_TENSOR``, ``_TENSORS`` or ``_HOST`` where every call passes that,
        else None."""

        def value(null: _Null) -> list[str | Param | None]:
            if null.code in _SLOT_MARKS:
                return [null.code]
            if null.code.startswith(CALLER) and null.fn is not None:
                return [(null.module.path, null.fn.path, null.code[len(CALLER) :])]
            return [None]

        found = self._through_callers(key, self._tensors, value)
        return found.pop() if found is not None and len(found) == 1 else None

    def truth(self, key: Param) -> bool | None:
        """The truth of the constant every call followed passes the parameter
        (``fused=True``), also through callers that pass on their own parameter;
        None when the calls pass anything else or not the same."""

        def value(null: _Null) -> list[bool | Param | None]:
            if null.code in (TRUE, FALSE):
                return [null.code == TRUE]
            if null.code.startswith(CALLER) and OR not in null.code and null.fn:
                return [(null.module.path, null.fn.path, null.code[len(CALLER) :])]
            return [None]

        found = self._through_callers(key, self._nulls, value)
        return found.pop() if found is not None and len(found) == 1 else None

    def is_none(self, key: Param) -> bool | None:
        """Whether every call followed passes the parameter None (True), or every
        one a value that cannot be None (False); None when it is not known. What
        a caller passes on from its own parameters counts as what its own callers
        pass. The function being followed reads each parameter it asks about."""

        def value(null: _Null) -> list[bool | Param | None]:
            return [
                self._null_value(code, null.module, null.fn)
                for code in null.code.split(OR)
            ]

        found = self._through_callers(key, self._nulls, value)
        return found.pop() if found is not None and len(found) == 1 else None

    def _through_callers(
        self,
        key: Param,
        table: dict[Param, set[_Null]],
        value: Callable[[_Null], list[_V | Param | None]],
    ) -> set[_V] | None:
        """What the calls followed pass the parameter ``key`` (as ``value`` reads
        each record of ``table``: a value, a caller's parameter to follow, or None
        for unknown), also through callers that pass on their own parameter; None
        when something is not known. The function being followed reads each
        parameter asked about."""
        seen: set[Param] = set()
        todo = [key]
        found: set[_V] = set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if self._reading is not None:
                self._readers.setdefault(current, set()).add(self._reading)
            passed = table.get(current)
            if not passed or current[:2] in self._holders:
                return None  # a region's own function: it runs under any caller
            for null in passed:
                for each in value(null):
                    if each is None:
                        return None
                    if isinstance(each, tuple):
                        todo.append(each)
                    else:
                        found.add(each)
        return found

    def _null_value(
        self, code: str, module: ModuleSummary, fn: FunctionSummary | None
    ) -> bool | Param | None:
        """An argument is None (True), cannot be None (False), is the caller's
        parameter (its key), or is not known (None)."""
        if code in (NONE, SOME, TRUE, FALSE):
            return code == NONE
        if code.startswith((WHEN, UNLESS)):
            return None  # as the test goes: ``guarded`` weighs it with the callee's
        if code.startswith(NEW):
            return False if self._makes_instance(module, fn, code[len(NEW) :]) else None
        if code.startswith(FIELD):
            return False if self._declared(module, fn, code[len(FIELD) :]) else None
        if not code.startswith(CALLER) or fn is None:
            return None
        name = code[len(CALLER) :]
        if self._not_none(module, fn.annotated.get(name, MAYBE)):
            return False  # ``cfg: Config``
        return (module.path, fn.path, name)

    def _not_none(self, module: ModuleSummary, annotated: str) -> bool:
        """Whether an annotation (a ``FunctionSummary.annotated`` code, in
        ``module``) rules None out."""
        if annotated in (SOME, MAYBE):
            return annotated == SOME
        return self._makes_instance(module, None, annotated)

    def _declared(
        self, module: ModuleSummary, fn: FunctionSummary | None, dotted: str
    ) -> bool:
        """Whether the class of each value the object in ``dotted`` ("meta.grid")
        may be declares the attribute not None (a dataclass field)."""
        owner, _, attr = dotted.rpartition(".")
        values = self._budgeted(
            lambda: self.dotted(module, fn, owner), None, lambda _: []
        )
        if not values:
            return False
        for value in values:
            if not (isinstance(value, Cls) and value.instance):
                return False
            classes = [(value.module, value.cls), *self.bases(value.module, value.cls)]
            declared = next(
                ((m, c.fields[attr]) for m, c in classes if attr in c.fields), None
            )
            if declared is None or not self._not_none(*declared):
                return False
        return True

    def _makes_instance(
        self, module: ModuleSummary, fn: FunctionSummary | None, name: str
    ) -> bool:
        """Whether ``name`` is a project class: calling it makes an instance, and
        a parameter annotated with it is not None."""
        key = (module.path, fn.path if fn is not None else "", name)
        if key not in self._classes:
            values = self._budgeted(
                lambda: self.dotted(module, fn, name), None, lambda _: []
            )
            self._classes[key] = bool(values) and all(
                isinstance(v, Cls) and not v.instance for v in values
            )
        return self._classes[key]

    def settled(self, target: Fn) -> tuple[guards.Settled, ...]:
        """The parameters that ``target`` tests for None or for their truth and
        that the calls followed settle."""
        found: list[guards.Settled] = []
        for name in target.fn.tested:
            key = (target.module.path, target.fn.path, name)
            none, truth = self.is_none(key), self.truth(key)
            if none is not None or truth is not None:
                until = target.fn.rebound.get(name, 0)
                found.append(guards.Settled(name, bool(none), until, truth))
        return tuple(found)

    def checks(self) -> frozenset[str]:
        """Qualified and local names of the project's capture-check helpers found."""
        return frozenset(self._helpers)

    def is_eager(self, target: Fn) -> bool:
        if not self.eager:
            return False
        if f"{target.module.name}.{target.fn.path}" in self.eager:
            return True
        return any(
            self.qualify(target.module, d) in self.eager for d in target.fn.decorators
        )

    def memoised(self, target: Fn) -> bool:
        """Whether a decorator of ``target`` memoises it (``functools.cache``,
        ``lru_cache``, or a project decorator whose wrappers call it only in a block
        that settles its own test: ``if key not in memo: memo[key] = fn(*args)``).
        Its body then runs at warm-up; the capture takes the result kept then, as
        for any block that settles its test. Not under torch.compile, which traces
        what the first call runs."""
        key = (target.module.path, target.fn.path)
        known = self._memoised.get(key)
        if known is None:
            known = self._memoised[key] = any(
                self._memoiser(target.module, d) for d in target.fn.decorators
            )
        return known

    def _memoiser(self, module: ModuleSummary, decorator: str) -> bool:
        if self.qualify(module, decorator) in _MEMOISERS:
            return True
        values = self._budgeted(
            lambda: self.dotted(module, None, decorator), None, lambda _: []
        )
        return bool(values) and all(isinstance(v, Fn) and _memoises(v) for v in values)

    def untraced(self, target: Fn) -> bool:
        """Whether ``target`` is decorated ``@torch.compiler.disable``: a compiled
        caller graph-breaks at its call and runs it eagerly."""
        return any(
            self.qualify(target.module, d) in dynamo.DISABLED
            for d in target.fn.decorators
        )


def _text(code: str) -> str | None:
    """The source text of an argument, where its ``Nullness`` code says it: an
    attribute (``self.config``), the caller's name, None."""
    if code == NONE:
        return "None"
    if code in (TRUE, FALSE):
        return str(code == TRUE)
    if code.startswith(FIELD):
        return code[len(FIELD) :]
    if code.startswith(CALLER) and OR not in code:
        return code[len(CALLER) :]
    return None


def _tested_none(formula: guards.Formula) -> Iterator[str]:
    """The parameters a formula tests for None."""
    if formula and formula[0] == "none":
        yield str(formula[1])
        return
    for part in formula[1:]:
        if isinstance(part, list):
            yield from _tested_none(part)


def _memoises(decorator: Fn) -> bool:
    """Whether a decorator ``def cache_once(fn)`` calls what it decorates only in
    blocks of its nested functions that settle their own test (``if key not in
    memo: memo[key] = fn(*args)``), and at least once."""
    params = decorator.fn.params
    if not params:
        return False
    prefix = f"{decorator.fn.path}."
    calls = [
        site
        for path, inner in decorator.module.functions.items()
        if path.startswith(prefix)
        for site in inner.calls
        if site.callee == params[0]
    ]
    return bool(calls) and all(site.settled for site in calls)


__all__ = ["MARKS", "Settling"]
