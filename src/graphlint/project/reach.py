"""Phase two of the project analysis: from the calls made inside capture regions to
every project function they reach, with the chain of calls that reaches it.

Modules are summarised lazily, when a call first resolves into them, so a run reads
only what a region can reach. Resolution never guesses: a call whose target is not a
project function (a parameter nothing reached passes a value to, a library, dynamic
dispatch) ends the chain there, and the resolver says why (``Unfollowed``, for
``--show-reach`` and the summary line). Calls of PyTorch, the standard library and
builtins are not counted as not followed: the rules see those calls where they are
made.

A parameter holds what the calls that reach its function pass (``step(model,
loss_fn)`` in a region: ``model(x)`` in ``step`` runs the model's ``forward``), and
an ``__init__``'s parameters what the instances resolved were built with
(``Wrapper(fn)``: ``self.fn(x)`` runs ``fn``). This is a union over those calls, not
per call: a function reached again with a new argument is followed again.

The same union says whether a parameter is None under capture: where every call
followed passes None (or omits it, with a default of None), or every one passes a
value that cannot be None, a test of it is settled (``guards.Settled``): a call
behind ``if grid is None:`` is not followed when the capturing callers always pass
a grid, and the lines there are not reported (the facts travel with ``RegionRef``).
A function whose parameter gets a new kind of argument is followed again.
"""

from __future__ import annotations

import builtins
import itertools
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import islice
from pathlib import Path
from typing import TypeVar

from graphlint.diagnostics import (
    HOST_MARK,
    MODULE_MARK,
    TENSORS_MARK,
    CompileSite,
    Confidence,
    Entry,
    Hop,
    ReachedFunction,
    Reason,
    RegionKey,
    RegionKind,
    RegionReach,
    RegionRef,
    RegionSite,
    Unfollowed,
)
from graphlint.facts import guards
from graphlint.facts.torchapi import (
    AUTOGRAD_FUNCTIONS,
    MODULE_CONTAINERS,
    TENSOR_METHODS,
)
from graphlint.files import is_test_module
from graphlint.library import Library, library_of
from graphlint.project import dynamo, textsearch
from graphlint.project.bindings import Bindings
from graphlint.project.index import Loader, ModuleIndex
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
    Arguments,
    CallSite,
    ClassSummary,
    Compiler,
    FunctionSummary,
    ModuleSummary,
    Nullness,
    Ref,
    rewritten,
)
from graphlint.read import module_of
from graphlint.settings import Setter

T = TypeVar("T")
_V = TypeVar(
    "_V", str, bool
)  # what a parameter is passed (``Project._through_callers``)

_MAX_DEPTH = 24  # resolution steps for one name: ends chains too long to follow
BUDGET = 100_000  # steps for one call: real calls take tens


# at most this many overrides of a method are followed for an instance annotated
# with its class (more: the base is too common to say which runs)
_OVERRIDES = 8
_MAX_DERIVED = 64  # project classes derived from one library class, at most


class _OverBudget(Exception):
    """A resolution went over its budget."""


@dataclass(frozen=True)
class Dropped:
    """A call whose resolution went over the budget (``BUDGET``): not followed;
    or, with ``guard``, one in a condition of the call at ``line``, which was then
    not taken for a capture check."""

    path: str  # the file that makes it
    line: int
    col: int
    callee: str  # dotted, as written
    guard: bool = False


# -- values of the tiny resolver -------------------------------------------------------
# A value that came in through a hand-off (``Wrapper(step)`` elsewhere in the project,
# read as ``self.fn`` under capture) keeps the hand-offs it came through, outermost
# first, for its chain; they are not part of its identity.
_Handoff = tuple[Hop, ...]
# a call a lambda makes: the module and function that make the lambda, its record
_Through = tuple[ModuleSummary, FunctionSummary | None, CallSite]
# what each call on a way passes its callee's parameters, as (name, text) pairs
_Hops = tuple[tuple[tuple[str, str], ...], ...]


@dataclass(frozen=True)
class _Fn:
    module: ModuleSummary
    fn: FunctionSummary
    handoff: _Handoff = field(default=(), compare=False)
    # run by ``Fn.apply(...)`` of an autograd Function: its ``forward`` ("forward",
    # "forward()" where ``setup_context`` takes ``ctx`` instead), or its "backward";
    # by a library's callable, as its model says (``_LIBRARY``)
    applied: str = field(default="", compare=False)
    # called by a lambda's call (``lambda: fn(n, counts)``): that call, in the
    # function that makes the lambda, passes its parameters
    through: _Through | None = field(default=None, compare=False)


@dataclass(frozen=True)
class _Built:
    """Where an instance of a dataclass was made, and with what: its fields hold
    what these arguments are in that code."""

    module: ModuleSummary
    fn: FunctionSummary | None
    arguments: Arguments

    def argument(self, cls: ClassSummary, name: str) -> Ref | None:
        given = dict(self.arguments.keywords)
        if name in given:
            return given[name]
        if cls.bases:  # the fields of its bases come first: positions unknown
            return None
        at = cls.dataclass.index(name)
        positional = self.arguments.positional
        return positional[at] if at < len(positional) else None


@dataclass(frozen=True)
class _Cls:
    module: ModuleSummary
    cls: ClassSummary
    instance: bool
    handoff: _Handoff = field(default=(), compare=False)
    # ``self`` in a method of ``cls``: an instance of it or of any subclass, whose
    # overrides its methods' calls run too
    open: bool = False
    # open because a parameter or a return is annotated with ``cls``: the
    # overrides are followed only where few classes define one (``_OVERRIDES``)
    declared: bool = False
    # an instance of a dataclass made where resolution saw it (``Spec(module=M)``)
    built: _Built | None = None
    through: _Through | None = field(default=None, compare=False)  # as ``_Fn``'s


@dataclass(frozen=True)
class _Mod:
    module: ModuleSummary


@dataclass(frozen=True)
class _Items:
    items: tuple[object, ...]


def _handed(value: object, hops: _Handoff) -> object:
    """``value`` as passed through the hand-offs ``hops`` (outermost first)."""
    if isinstance(value, (_Fn, _Cls)):
        return replace(value, handoff=(*hops, *value.handoff))
    if isinstance(value, _Items):
        return _Items(tuple(_handed(item, hops) for item in value.items))
    return value


@dataclass(frozen=True)
class _Super:
    module: ModuleSummary
    cls: ClassSummary


@dataclass(frozen=True)
class _Opaque:
    """A value resolution cannot follow, and why: ``detail`` says where it stopped;
    ``qualified`` is its dotted name when it comes from outside the project
    (``torch.nn.Linear``, ``numpy.add``), else "". ``local``: the value of a local
    or parameter, whose common tensor methods (``h.add_``) count as PyTorch's.
    ``blocked``: the file of a project module that could not be summarised, where
    the value comes from it (its attributes too)."""

    reason: Reason
    detail: str
    qualified: str = ""
    local: bool = False
    blocked: Path | None = None
    # an instance of the library class ``qualified`` names (``Cls.()``) that a
    # parameter or a return annotation declares: of a project class derived from
    # it, maybe, whose overrides its methods' calls run (in preview)
    derived: bool = False
    # a library method of such an instance (``pl_module.optimizer_step``): the
    # instance, whose methods what the library runs (``self.training_step``) are;
    # and, where the method was installed on another object, that write
    bound: tuple[object, ...] = field(default=(), compare=False)
    handoff: _Handoff = field(default=(), compare=False)

    def attribute(self, attr: str) -> _Opaque:
        if self.local and attr in TENSOR_METHODS:
            return _Opaque(self.reason, self.detail, f"torch.Tensor.{attr}")
        qualified = f"{self.qualified}.{attr}" if self.qualified else ""
        return _Opaque(self.reason, self.detail, qualified, blocked=self.blocked)


# outside the project, but not "not followed": the rules check these calls where they
# are made (PyTorch), or they are Python itself
_CHECKED_AT_CALL = frozenset({"torch", "builtins", *sys.stdlib_module_names})
_BUILTINS = frozenset(dir(builtins))


def _is_opaque(value: object) -> bool:
    """A value resolution cannot follow into project code."""
    return isinstance(value, _Opaque)


def _checked_at_call(value: _Opaque) -> bool:
    return value.qualified.split(".", 1)[0] in _CHECKED_AT_CALL


@dataclass(frozen=True)
class _Compiler:
    """A module-level name bound to a CUDA-graph compiler: its label."""

    label: str


# a function and one of its parameters, by file and function path
_Param = tuple[str, str, str]


@dataclass(frozen=True)
class _Passed:
    """An argument a call passes, with the code it is resolved in; ``handoff``:
    the call, where it hands code over to a capture (not part of its identity)."""

    module: ModuleSummary
    fn: FunctionSummary | None
    ref: Ref
    handoff: _Handoff = field(default=(), compare=False)


# calls that return a copy of their first argument (``replace``: with some fields
# changed, so what the copy's fields hold is any construction's)
_COPIES = frozenset({"dataclasses.replace", "copy.copy", "copy.deepcopy"})
# decorators that keep what the function returned for each argument list
_MEMOISERS = frozenset({"functools.cache", "functools.lru_cache"})
_MAX_PASSED = 16  # arguments kept per parameter: a union, not a call-by-call trace
_PREFETCHED = 8  # files a text search has summarised together, at a time
_MAX_SUPER = 4  # ``super().__init__`` calls GL407 follows up from a constructor
_MAX_ROUNDS = 8  # rounds of hand-offs: a helper passing its parameter on is one more
_ENTRY = ""  # the file of a region call's reader key: (_ENTRY, its index)
_LIBRARY = "library"  # ``_Fn.applied`` of code a library's callable runs
# why a call ``x.attr(...)`` resolved to nothing that may be because the resolver
# cannot type ``x``: then what the project installs as ``attr`` is asked (preview)
_UNTYPED = frozenset(
    {Reason.PARAMETER, Reason.UNTRACKED, Reason.UNRESOLVED, Reason.ATTRIBUTE}
)
_MAX_INSTALLED = 4  # callables installed as one attribute, at most, to follow it


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


class Project:
    """The modules under the project's source roots, summarised on demand by
    ``load(path, module_name)``, which says None when a module cannot be summarised."""

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
        # the modules, found and summarised (``self.index.module(name)``)
        self.index = ModuleIndex(roots, load, prefetch, sources)
        # what library callables run of what they are given (``_library_runs``)
        self.library = library if library is not None else library_of(())
        self.eager = eager
        # preview: follow code handed over to a capture (``_hand_over``) and what a
        # factory returns
        self.handoffs = handoffs
        self.known = guards.CAPTURING_CHECKS | guards.TRUE_WHILE_CAPTURING | checks
        self._helpers: set[str] = set()  # project functions that return the check
        self._steps: int | None = None  # of the resolution under way
        self.abandoned: list[Dropped] = []  # calls over the budget, in order found
        # how regions reach what could not be analysed, for its GL0xx: the calls
        # into each module that could not be summarised, by its file, and the
        # calls over the budget in reached code, by the file that makes them
        self.blocked: dict[Path, list[RegionRef]] = {}
        self.abandoned_by: dict[str, list[RegionRef]] = {}
        # what ``reach`` saw: the calls it did not follow, and the project functions
        # each reached function calls (its edges), by (file, function path)
        self.edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.starts: dict[RegionKey, list[tuple[str, str]]] = {}
        self.lines: dict[tuple[str, str], int] = {}
        self.regions: set[tuple[str, str]] = set()  # reached, but regions themselves
        # the calls followed into project code: (file, line, callee as written)
        self.followed: set[tuple[str, int, str]] = set()
        # what an imported wrapper's name resolves to, from a source root
        self._wrappers: dict[tuple[str, Path | None], list[object]] = {}
        # the arguments passed to each parameter; the reached functions that read
        # one (followed again when it gets a new argument); the one being followed;
        # the parameters whose arguments are being resolved (a cycle ends there)
        self._passed: dict[_Param, list[_Passed]] = {}
        self._readers: dict[_Param, set[tuple[str, str]]] = {}
        self._reading: tuple[str, str] | None = None
        # a search of calls (``calls_of``) is under way: what the constructions it
        # resolves pass is not recorded, so that it changes nothing reach finds
        self._searching = False
        self._bindings = Bindings(_is_opaque)
        self._stale: dict[tuple[str, str], RegionRef | None] = {}
        self._unfollowed_in: dict[tuple[str, str], list[Unfollowed]] = {}
        # whether what each call followed passes a parameter may be None
        self._nulls: dict[_Param, set[_Null]] = {}
        self._library_subclasses: dict[
            str, list[tuple[ModuleSummary, ClassSummary]]
        ] = {}
        self._subclasses: dict[
            tuple[str, str, str], list[tuple[ModuleSummary, ClassSummary]]
        ] = {}
        # what the calls followed pass each parameter: ``_TENSOR``, a caller's
        # parameter (``CALLER``), or anything else ("")
        self._tensors: dict[_Param, set[_Null]] = {}
        # the functions that hold regions (or hand a parameter on to one that
        # does), and those they are nested in: what their parameters hold under
        # capture is up to every caller, under capture or not
        self._holders: set[tuple[str, str]] = set()
        self._classes: dict[tuple[str, str, str], bool] = {}  # ``Config(...)``
        self._memoised: dict[tuple[str, str], bool] = {}  # by (file, function)
        # hand-offs: the project's files (``sources``, screened by text with
        # ``read``); the functions whose calls capture (they hold a region, or hand
        # a parameter on to one that does) and the classes whose methods do; their
        # parameters read under capture (an ``__init__``'s: through ``self.fn``),
        # the functions whose callers were looked for, and the hand-offs each
        # reader followed (for ``survey``)
        self.sources = sources
        self._read = read
        self._entries: list[Entry] = []
        self._capturing: set[tuple[str, str | None]] | None = None
        self._entry_regions: dict[tuple[str, str], RegionKey] = {}
        self._holder_classes: set[tuple[str, str]] = set()
        self._demanded: dict[_Param, None] = {}
        # the constructions of dataclasses found in the project, by class
        self._built: dict[tuple[str, str], list[_Built]] = {}
        self._searched: set[tuple[str, str]] = set()
        self._rounds = 0
        # installed callables, by attribute (``_installed``), and the hand-offs
        # that installed them (what they reach is inferred: medium confidence)
        self._installs: dict[str, list[_Fn | _Opaque]] = {}
        self._installing: set[Hop] = set()
        self._writes: dict[bytes, list[Path]] | None = None  # by ``_scan``
        self.handed: dict[tuple[str, str], list[Hop]] = {}
        self._import_words: dict[Path, frozenset[bytes]] | None = None  # by ``_scan``

    # -- loading: ``self.index`` (``graphlint.project.index``) -----------------

    def function(
        self, module: ModuleSummary, qualname: str
    ) -> tuple[ModuleSummary, FunctionSummary] | None:
        """The function ``qualname`` ("step", "Model.forward", "Outer.Inner.run")
        names in ``module``: defined there, or a method a class there inherits."""
        if qualname in module.functions:
            return module, module.functions[qualname]
        for value in self.dotted(module, None, qualname):
            if isinstance(value, _Fn):
                return value.module, value.fn
        return None

    def setters(self, name: str, near: Path | None = None) -> list[Setter]:
        """How calling ``name`` (qualified: a function, or a class's method as the
        instance's class names it) sets hyper-parameters of an optimizer it is
        given (GL407): through a parameter, or through an attribute of ``self``
        that the class's ``__init__`` (its own or inherited) stores a parameter in."""
        parts = name.split(".")
        for end in range(len(parts) - 1, 0, -1):
            module = self.index.module(".".join(parts[:end]), prefer=near)
            if module is None:
                continue
            found = self.function(module, ".".join(parts[end:]))
            if found is None:
                return []
            home, fn = found
            cls = ".".join(parts[end:-1])  # the instance's class, if a method
            bound = bool(cls) and "staticmethod" not in fn.decorators
            setters: list[Setter] = []
            for holder, line in fn.sets_hyperparameters.items():
                shown = f"{home.path}:{line}"
                owner, _, attr = holder.partition(".")
                if not attr and holder in fn.params:
                    index = fn.params.index(holder) - int(bound)
                    limit = fn.positional - int(bound)
                    position = index if 0 <= index < limit else -1
                    setters.append(Setter(name, holder, position, False, shown))
                elif attr and bound and fn.params[:1] == [owner]:
                    init = self.function(module, f"{cls}.__init__")
                    if init is not None:
                        setters.extend(self._stored(*init, attr, name, shown))
            return setters
        return []

    def _stored(
        self,
        module: ModuleSummary,
        init: FunctionSummary,
        attr: str,
        name: str,
        shown: str,
        depth: int = 0,
    ) -> Iterator[Setter]:
        """A setter through ``self.attr``, for each parameter of ``init`` (an
        ``__init__`` of ``module``) that it stores there, or hands to a base's
        ``__init__`` that does (``super().__init__(optimizer)``; a few bases up)."""
        yield from _stored(module, init, attr, name, shown)
        if depth >= _MAX_SUPER:
            return
        for site in init.calls:
            arguments = _handed_up(site, init)
            if arguments is None:
                continue
            at = (site.line, site.col)
            for up in self.resolve(module, init, site.callee, at):
                for setter in self._stored(
                    up.module, up.fn, attr, name, shown, depth + 1
                ):
                    ref = _argument(arguments, setter.parameter, setter.position)
                    if ref is None or ref.kind != "name":
                        continue
                    if ref.target not in init.params:
                        continue
                    index = init.params.index(ref.target)
                    position = index - 1 if 0 < index < init.positional else -1
                    yield Setter(name, ref.target, position, True, shown)

    # -- resolution ------------------------------------------------------------------
    def qualify(self, module: ModuleSummary, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        base = module.imports.get(head)
        if base is None:
            defined = head in module.functions or head in module.classes
            return f"{module.name}.{dotted}" if defined else dotted
        return f"{base}.{rest}" if rest else base

    def lookup(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        name: str,
        depth: int = 0,
    ) -> list[object]:
        """What ``name`` refers to inside ``fn`` (or at module level)."""
        if depth > _MAX_DEPTH:
            return self._bindings.too_deep()
        if fn is not None:
            if name in ("self", "super()"):
                cls = self._self_class(module, fn)
                if cls is not None and name == "self":
                    return [_Cls(module, cls, True, open=True)]
                if cls is not None:
                    return [_Super(module, cls)]
                if name == "super()":
                    return []
                # else a nested function's own ``self`` parameter, looked up below
            scope: str | None = fn.path
            while scope:
                # a class body's names are not visible from its methods
                enclosing = module.functions.get(scope)
                if enclosing is not None and name in enclosing.shared:
                    return self._declared_global(module, enclosing, name, depth)
                if enclosing is not None:
                    nested = module.functions.get(f"{scope}.{name}")
                    if nested is not None:
                        return [_Fn(module, nested)]
                    local = module.classes.get(f"{scope}.{name}")
                    if local is not None:  # a class defined in the function
                        return [_Cls(module, local, False)]
                    if name in enclosing.names:  # also ``model: Transformer``
                        return self._bindings.values(
                            ("local", module, enclosing, name),
                            partial(self._local, module, enclosing, name, depth),
                            depth,
                        )
                    if name in enclosing.params:  # whatever the callers pass
                        return self.argument(module, enclosing, name, depth) or [
                            _untracked(enclosing, name)
                        ]
                scope = scope.rpartition(".")[0]
        if name in module.functions:
            return [_Fn(module, module.functions[name])]
        if name in module.classes:
            return [_Cls(module, module.classes[name], False)]
        if name in module.names:
            return self._global(module, name, depth)
        if name in module.imports:
            return self._imported(module, name, depth)
        return [self._unbound(module, fn, name)]

    def _declared_global(
        self, module: ModuleSummary, fn: FunctionSummary, name: str, depth: int
    ) -> list[object]:
        """What a name ``fn`` declares ``global`` holds: what ``fn`` binds it to
        and what the module does (``global fwd; fwd = torch.compile(fwd)``
        compiles the ``fwd`` the module imports)."""
        found = (
            self._bindings.values(
                ("local", module, fn, name),
                partial(self._local, module, fn, name, depth),
                depth,
            )
            if name in fn.names
            else []
        )
        bound = (module.functions, module.classes, module.names, module.imports)
        if any(name in names for names in bound):  # else nothing the module binds
            found.extend(self.lookup(module, None, name, depth + 1))
        return found or [self._unbound(module, fn, name)]

    def _local(
        self, module: ModuleSummary, fn: FunctionSummary, name: str, depth: int
    ) -> list[object]:
        """What a local name of ``fn`` is bound to, in all its bindings."""
        values = self.refs(module, fn, fn.names[name], depth)
        if name in fn.params:
            values.extend(self.argument(module, fn, name, depth))
        if name in fn.untracked:  # ``h = h.float()``
            values.append(_untracked(fn, name))
        return values

    def _global(self, module: ModuleSummary, name: str, depth: int) -> list[object]:
        """What a module-level name is bound to."""
        refs = module.names[name]
        return self._bindings.values(
            ("global", module, name),
            partial(self.refs, module, None, refs, depth),
            depth,
        )

    def _imported(self, module: ModuleSummary, name: str, depth: int) -> list[object]:
        """What a name a module imports is (``from .a import b``)."""
        dotted = module.imports[name]
        return self._bindings.values(
            ("import", module, name),
            partial(self.qualified, dotted, depth + 1, near=module),
            depth,
        )

    def argument(
        self, module: ModuleSummary, fn: FunctionSummary, name: str, depth: int
    ) -> list[object]:
        """What the calls followed so far pass to the parameter ``name`` of ``fn``:
        the values resolved where each call is made, or none when they are all
        values the summaries do not model."""
        key = (module.path, fn.path, name)
        if self._reading is not None:
            self._readers.setdefault(key, set()).add(self._reading)
            if self._captures(module, fn):  # its callers hand code to a capture
                self._demanded.setdefault(key)
        passed = self._passed.get(key)
        if not passed:
            return []
        return self._bindings.values(  # ``f(model)`` inside ``f``: a cycle
            ("parameter", module, fn, name),
            partial(self._passed_values, passed, depth),
            depth,
        )

    def _passed_values(self, passed: list[_Passed], depth: int) -> list[object]:
        values = [
            _handed(v, p.handoff)
            for p in passed
            for v in self.ref(p.module, p.fn, p.ref, depth + 1)
        ]
        if all(isinstance(v, _Opaque) and not v.qualified for v in values):
            return []
        return values

    def pass_arguments(
        self,
        target: _Fn,
        arguments: Arguments | None,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        chain: RegionRef | None = None,
        handoff: _Handoff = (),
    ) -> None:
        """Record what a call of ``target`` made in ``fn`` passes to its
        parameters; the reached functions that read one of them are followed again
        (``_stale``), ``target`` itself through this call (``chain``: how the call
        reaches it) so that what it then reaches says where the value came from.
        ``handoff``: the call, where it hands code over to a capture."""
        if arguments is None:
            return
        callee = target.fn
        named = [
            *zip(_positional(callee), arguments.positional, strict=False),
            *((k, r) for k, r in arguments.keywords if k in callee.params),
        ]
        for name, ref in named:
            if ref is None:
                continue
            key = (target.module.path, callee.path, name)
            passed = self._passed.setdefault(key, [])
            argument = _Passed(module, fn, ref, handoff)
            if argument in passed:  # the hand-off of a call already passed
                index = passed.index(argument)
                if not handoff or passed[index].handoff:
                    continue
                passed[index] = argument
            elif len(passed) >= _MAX_PASSED:
                continue
            else:
                passed.append(argument)
            self._bindings.changed()  # what the parameter holds
            for reader in self._readers.get(key, ()):
                mine = reader == (target.module.path, callee.path)
                if self._stale.get(reader) is None:
                    self._stale[reader] = chain if mine else None

    def _unbound(
        self, module: ModuleSummary, fn: FunctionSummary | None, name: str
    ) -> _Opaque:
        """Why ``name`` has no value the summaries model."""
        scope = fn.path if fn is not None else ""
        while scope:
            enclosing = module.functions.get(scope)
            if enclosing is not None and name in enclosing.untracked:
                return _untracked(enclosing, name)
            scope = scope.rpartition(".")[0]
        if name in _BUILTINS:
            return _Opaque(Reason.OUTSIDE, f"`{name}` is a builtin", f"builtins.{name}")
        if name in ("self", "super()"):
            detail = f"`{name}` where graphlint does not know the class"
            return _Opaque(Reason.UNRESOLVED, detail)
        detail = f"`{name}` is bound nowhere in `{module.name}` that graphlint sees"
        return _Opaque(Reason.UNRESOLVED, detail)

    def qualified(
        self,
        name: str,
        depth: int = 0,
        near: ModuleSummary | None = None,
        prefer: Path | None = None,
    ) -> list[object]:
        """A dotted name from an import: the longest prefix that is a project module,
        then attributes inside it. Where the whole name is a module of a package
        that binds the module's name to something else (``from .grads import
        grads`` in its ``__init__``), it is that, as ``from pkg import grads`` gives
        it in Python: the attribute, not the module."""
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            found = self.index.module(".".join(parts[:cut]), near, prefer=prefer)
            if found is not None:
                values: list[object] = [_Mod(found)]
                package = (  # ``from pkg import grads``: the module, or not
                    self.index.module(".".join(parts[: cut - 1]), near, prefer=prefer)
                    if 1 < cut == len(parts)
                    else None
                )
                if package is not None and _rebinds(package, found.name):
                    values = self.attribute(_Mod(package), parts[cut - 1], depth + 1)
                for attr in parts[cut:]:
                    values = [
                        v
                        for value in values
                        for v in self.attribute(value, attr, depth + 1)
                    ]
                return values
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in self.index.unsummarised:
                return [self._unsummarised_module(prefix)]
        detail = f"module `{parts[0]}` is not under the source roots"
        return [_Opaque(Reason.OUTSIDE, detail, name)]

    def _unsummarised_module(self, name: str) -> _Opaque:
        detail = f"module `{name}` could not be summarised"
        return _Opaque(
            Reason.UNSUMMARISED, detail, blocked=self.index.unsummarised[name]
        )

    def refs(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        refs: list[Ref],
        depth: int = 0,
    ) -> list[object]:
        return [v for ref in refs for v in self.ref(module, fn, ref, depth + 1)]

    def ref(
        self, module: ModuleSummary, fn: FunctionSummary | None, ref: Ref, depth: int
    ) -> list[object]:
        self._step()
        if depth > _MAX_DEPTH:
            return self._bindings.too_deep()
        if ref.kind == "name":
            return self.dotted(module, fn, ref.target, depth + 1)
        if ref.kind == "either":  # one of these bindings of a name
            return [v for r in ref.items for v in self.ref(module, fn, r, depth + 1)]
        if ref.kind == "scoped":  # a binding of ``self.x`` made in another method
            where = module.functions.get(ref.target)
            return self.ref(module, where, ref.items[0], depth + 1)
        if ref.kind in ("items", "calls"):  # a lambda is called as what it calls
            return [
                _Items(
                    tuple(
                        dict.fromkeys(
                            _by_lambda(v, module, fn, r)
                            for r in dict.fromkeys(ref.items)
                            for v in self.ref(module, fn, r, depth + 1)
                        )
                    )
                )
            ]
        if ref.kind == "declared":  # ``opt: BaseOptimizer``: its subclasses' too
            return [
                replace(v, open=True, declared=True)
                if isinstance(v, _Cls) and v.instance
                else replace(v, derived=True)
                if isinstance(v, _Opaque)
                and self.handoffs
                and v.qualified.endswith(".()")
                and not _checked_at_call(v)
                else v
                for v in self.ref(module, fn, replace(ref, kind="instance"), depth + 1)
            ]
        if ref.kind == "element":
            found: list[object] = []
            for value in self.ref(module, fn, ref.items[0], depth + 1):
                if isinstance(value, _Items):
                    found.extend(value.items)
                elif isinstance(value, _Opaque):  # ``x[0]``: the reason carries over
                    found.append(value.attribute("[]"))
            return found
        # an instance: of a project class, or a container of items
        partial_of = ref.arguments.positional[:1] if ref.arguments else ()
        qualified = self.qualify(module, ref.target)
        if partial_of and qualified == "functools.partial":
            first = partial_of[0]  # calling ``partial(step, x)`` runs ``step``
            return self.ref(module, fn, first, depth + 1) if first else []
        if partial_of and qualified in _COPIES:  # a copy of the same class
            first = partial_of[0]
            changed = bool(ref.arguments and ref.arguments.keywords)
            return [
                replace(v, built=None) if changed and isinstance(v, _Cls) else v
                for v in (self.ref(module, fn, first, depth + 1) if first else [])
            ]
        if ref.target == "dict" or qualified in MODULE_CONTAINERS:
            return [
                _Items(
                    tuple(
                        dict.fromkeys(
                            v
                            for r in dict.fromkeys(ref.items)
                            for v in self.ref(module, fn, r, depth + 1)
                        )
                    )
                )
            ]
        found = []
        for value in self.dotted(module, fn, ref.target, depth + 1):
            if (
                isinstance(value, _Cls)
                and not value.instance
                and ref.arguments
                and not self._searching
            ):
                for init in self.called(value):  # ``Wrapper(fn)``: its ``__init__``
                    self.pass_arguments(init, ref.arguments, module, fn)
                if value.cls.dataclass:  # ``Spec(module=M)``: its fields hold these
                    built = _Built(module, fn, ref.arguments)
                    found.append(replace(value, instance=True, built=built))
                    continue
            if self.handoffs and isinstance(value, _Fn) and value.fn.made:
                # a factory that makes what it is passed
                found.extend(self._made(value, ref.arguments, module, fn, depth))
                continue
            if self.handoffs and isinstance(value, _Fn) and value.fn.results:
                # what a factory returns (names, constructions, elements)
                returned = value.fn.results
                found.extend(self.refs(value.module, value.fn, returned, depth))
                continue
            declared = self._returned_class(value, depth)
            if declared:  # ``-> MegatronOptimizer``: it, or a class derived from it
                found.extend(declared)
                continue
            result = self._result(value, ref.target)
            if result is not None:
                found.append(result)
        return found

    def _returned_class(self, value: object, depth: int) -> list[object]:
        """What calling ``value`` returns by its return annotation, where that names
        a project class: an instance of it or of a class derived from it."""
        if not isinstance(value, _Fn) or not value.fn.returns_class:
            return []
        declared = Ref("declared", value.fn.returns_class)
        found = self.ref(value.module, None, declared, depth + 1)
        return found if all(isinstance(v, _Cls) for v in found) else []

    def _made(
        self,
        factory: _Fn,
        arguments: Arguments | None,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        depth: int,
    ) -> list[object]:
        """What a call of ``factory`` makes from what this call passes it
        (``build(spec)`` returning ``spec.module(...)``): instances of the classes
        it calls, and what it returns as passed, but for a class that it calls
        (that return is for functions)."""
        if arguments is None:
            return []
        passed: dict[str, Ref | None] = dict(
            zip(_positional(factory.fn), arguments.positional, strict=False)
        )
        passed.update(arguments.keywords)
        made = [(m.removesuffix("()"), m.endswith("()")) for m in factory.fn.made]
        instantiated = {path for path, called in made if called}
        found: list[object] = []
        for path, called in made:
            head, _, rest = path.partition(".")
            given = passed.get(head)
            if given is None:
                continue
            values = self.ref(module, fn, given, depth + 1)
            for attr in rest.split(".") if rest else ():
                values = [v for x in values for v in self.attribute(x, attr, depth)]
            for value in values:
                if isinstance(value, _Cls) and not value.instance:
                    if called:
                        found.append(replace(value, instance=True))
                    elif path not in instantiated:
                        found.append(value)
                elif not called:
                    found.append(value)
                elif isinstance(value, _Opaque):
                    found.append(value.attribute("()") if value.qualified else value)
        return found

    def _field(
        self,
        value: _Cls,
        module: ModuleSummary,
        cls: ClassSummary,
        attr: str,
        depth: int,
    ) -> list[object]:
        """What the field ``attr`` of a dataclass instance holds: what the
        construction that made it passed, else its default; for an instance made
        where resolution did not see (a parameter annotated with the class), what
        any construction of the class in the project passes, or the default."""
        made = (
            [value.built]
            if value.built is not None
            else self._constructions(module, cls)
        )
        return self._bindings.values(  # a field holding an instance of its class
            ("field", module, cls, attr, value.built),
            partial(self._field_values, module, cls, attr, made, depth),
            depth,
        )

    def _field_values(
        self,
        module: ModuleSummary,
        cls: ClassSummary,
        attr: str,
        made: list[_Built],
        depth: int,
    ) -> list[object]:
        default = cls.defaults.get(attr)
        found: list[object] = []
        for built in made:
            given = built.argument(cls, attr)
            if given is not None:
                found.extend(self.ref(built.module, built.fn, given, depth + 1))
        if default is not None and (
            not made or any(b.argument(cls, attr) is None for b in made)
        ):
            found.extend(self.ref(module, None, default, depth + 1))
        if not found:
            detail = f"the value of `{cls.name}.{attr}` is not tracked"
            return [_Opaque(Reason.UNTRACKED, detail)]
        return found

    def _constructions(self, module: ModuleSummary, cls: ClassSummary) -> list[_Built]:
        """The calls, anywhere in the project, that make an instance of the
        dataclass ``cls`` (in preview: the files that name it are summarised);
        found once a run."""
        key = (module.path, cls.name)
        known = self._built.get(key)
        if known is not None:
            return known
        self._built[key] = []  # a construction inside one of its own fields
        if not self.handoffs:
            return []
        saved, self._reading = self._reading, None  # the search captures nothing
        try:  # a union, not a trace: the first few
            found = list(islice(self._made_at(module, cls), _MAX_PASSED))
        finally:
            self._reading = saved
        self._built[key] = found
        return found

    def _made_at(self, module: ModuleSummary, cls: ClassSummary) -> Iterator[_Built]:
        """The calls that make an instance of ``cls``: in its module, and in the
        project's files that name it."""
        short = cls.name.rpartition(".")[2]
        words = {module.name.rpartition(".")[2], short}
        found = self._naming({short: words}, how=textsearch.CALL)
        others = (m for m in found if m.path != module.path)
        for other in itertools.chain([module], others):
            names = _local_names(other, [short])
            for caller, site in _sites(other):
                if (
                    site.arguments is None
                    or site.callee.rpartition(".")[2] not in names
                ):
                    continue
                if any(
                    isinstance(target, _Cls)
                    and not target.instance
                    and target.cls.name == cls.name
                    and target.module.path == module.path
                    for target in self.dotted(other, caller, site.callee)
                ):
                    yield _Built(other, caller, site.arguments)

    @staticmethod
    def _result(value: object, callee: str) -> object | None:
        """What calling ``value`` gives, as far as the resolver tracks it: an
        instance of a project class; an opaque value (the reason carries over);
        nothing it models from a project function or instance."""
        if isinstance(value, _Cls) and not value.instance:
            return replace(value, instance=True)
        if isinstance(value, _Opaque):
            return value.attribute("()") if value.qualified else value
        if isinstance(value, (_Fn, _Cls)):
            detail = f"what `{callee}(...)` returns is not tracked"
            return _Opaque(Reason.UNTRACKED, detail)
        return None

    def dotted(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        dotted: str,
        depth: int = 0,
    ) -> list[object]:
        if depth > _MAX_DEPTH:
            return self._bindings.too_deep()
        head, *rest = dotted.split(".")
        values = self.lookup(module, fn, head, depth + 1)
        for attr in rest:
            values = [v for value in values for v in self.attribute(value, attr, depth)]
        return values

    def attribute(self, value: object, attr: str, depth: int = 0) -> list[object]:
        if isinstance(value, _Opaque) and value.derived:
            return self._derived(value, attr)
        if isinstance(value, _Opaque):  # free: the budget counts the resolver's work
            return [value.attribute(attr)]
        self._step()
        if depth > _MAX_DEPTH:
            return self._bindings.too_deep()
        if isinstance(value, _Items):
            # ``self.transformer.h`` on an ``nn.ModuleDict``: one of its members
            # (the summaries do not keep the keys: any member may be the one)
            return list(value.items)
        if isinstance(value, _Mod):
            module = value.module
            if attr in module.compilers:
                return [_Compiler(module.compilers[attr])]
            if attr in module.functions:
                return [_Fn(module, module.functions[attr])]
            if attr in module.classes:
                return [_Cls(module, module.classes[attr], False)]
            if attr in module.names:
                return self._global(module, attr, depth)
            if attr in module.imports:
                return self._imported(module, attr, depth)
            sub = self.index.module(f"{module.name}.{attr}", module)
            if sub is not None:
                return [_Mod(sub)]
            if f"{module.name}.{attr}" in self.index.unsummarised:  # ``pkg.big``
                return [self._unsummarised_module(f"{module.name}.{attr}")]
            detail = f"module `{module.name}` defines no `{attr}`"
            return [_Opaque(Reason.ATTRIBUTE, detail)]
        if isinstance(value, (_Cls, _Super)):
            found, library = self._hierarchy(value.module, value.cls)
            own = [] if isinstance(value, _Super) else [(value.module, value.cls)]
            classes = [*own, *found]
            instance = isinstance(value, _Super) or value.instance
            handoff = value.handoff if isinstance(value, _Cls) else ()
            for module, cls in classes:
                if attr in cls.methods:
                    method = module.functions[cls.methods[attr]]
                    found_fn: list[object] = [_Fn(module, method, handoff)]
                    if isinstance(value, _Cls) and value.open:
                        found_fn.extend(self._overrides(value, attr))
                    return found_fn
                if attr in cls.dataclass and instance and isinstance(value, _Cls):
                    return self._field(value, module, cls, attr, depth)
                if attr in cls.attrs and instance:
                    init = module.functions.get(f"{cls.name}.__init__")
                    held = self._bindings.values(
                        ("attribute", module, cls, attr),
                        partial(self.refs, module, init, cls.attrs[attr], depth),
                        depth,
                    )
                    return [_handed(v, handoff) for v in held] if handoff else held
            if attr == "apply" and any(
                b.qualified in AUTOGRAD_FUNCTIONS for b in library
            ):
                # ``Fn.apply(...)`` runs ``Fn.forward`` now, ``Fn.backward`` when the
                # graph's backward runs (``_follow`` keeps it where that is captured)
                found_fn = []
                own_ctx = any("setup_context" in c.methods for _, c in classes)
                for name in ("forward", "backward"):
                    home, owner = next(
                        ((m, c) for m, c in classes if name in c.methods),
                        (None, None),
                    )
                    if home is not None and owner is not None:
                        method = home.functions[owner.methods[name]]
                        role = "forward()" if name == "forward" and own_ctx else name
                        found_fn.append(_Fn(home, method, handoff, role))
                return found_fn
            if isinstance(value, _Cls) and value.open:
                # ``self.forward`` in a base that leaves it to its subclasses
                overrides = self._overrides(value, attr, handoff)
                if overrides:
                    return overrides
            return [self._missing(value.cls, classes, library, attr)]
        if isinstance(value, _Fn):  # ``outer.Inner``: defined in the function
            inner = f"{value.fn.path}.{attr}"
            if inner in value.module.classes:
                return [_Cls(value.module, value.module.classes[inner], False)]
            if inner in value.module.functions:
                return [_Fn(value.module, value.module.functions[inner])]
            detail = f"`{attr}` of the function `{value.fn.path}` is not tracked"
            return [_Opaque(Reason.ATTRIBUTE, detail)]
        return []

    @staticmethod
    def _missing(
        cls: ClassSummary,
        classes: list[tuple[ModuleSummary, ClassSummary]],
        library: list[_Opaque],
        attr: str,
    ) -> _Opaque:
        """Why an attribute of a project class has no value the summaries model."""
        owner = next((c for _, c in classes if attr in c.untracked), None)
        if owner is not None:
            detail = f"the value of `{owner.name}.{attr}` is not tracked"
            return _Opaque(Reason.UNTRACKED, detail)
        for base in library:  # inherited from a library class (``nn.Module``)
            return base.attribute(attr)
        detail = f"`{cls.name}` defines no `{attr}`"
        return _Opaque(Reason.ATTRIBUTE, detail)

    def _derived(self, value: _Opaque, attr: str) -> list[object]:
        """``attr`` of an instance declared as a library class (``pl_module:
        pl.LightningModule``): the methods of that name of the project classes
        derived from it, where at most ``_OVERRIDES`` define one; else the
        library's (whose model, if any, says what it runs)."""
        base = value.qualified.removesuffix(".()")
        found: list[object] = [
            _Fn(module, module.functions[cls.methods[attr]])
            for module, cls in self._derived_from(base)
            if attr in cls.methods
        ]
        if len(found) > _OVERRIDES:
            detail = (
                f"{len(found)} classes derived from `{base}` define `{attr}`: too "
                "many to say which one runs"
            )
            return [_Opaque(Reason.UNTRACKED, detail)]
        if found:
            return found
        method = replace(value, derived=False).attribute(attr)
        return [replace(method, bound=(value,))]

    def _derived_from(self, base: str) -> list[tuple[ModuleSummary, ClassSummary]]:
        """The project classes derived from the library class ``base``: those whose
        files name it in a class statement, and theirs (``subclasses``), breadth
        first, the first ``_MAX_DERIVED``."""
        known = self._library_subclasses.get(base)
        if known is not None:
            return known
        self._library_subclasses[base] = []  # a cycle finds nothing more
        short = base.rpartition(".")[2]
        words = {base.partition(".")[0], short}
        direct = [
            (module, cls)
            for module in self._naming({short: words}, how=textsearch.BASE)
            for cls in module.classes.values()
            if any(b.qualified == base for b in self._hierarchy(module, cls)[1])
        ]
        found = list(dict.fromkeys(direct))
        todo = list(found)
        while todo and len(found) < _MAX_DERIVED:  # theirs, across files
            for sub in self.subclasses(*todo.pop(0)):
                if sub not in found:
                    found.append(sub)
                    todo.append(sub)
        self._library_subclasses[base] = found
        return found

    def _overrides(
        self, value: _Cls, attr: str, handoff: _Handoff = ()
    ) -> list[object]:
        """The methods ``attr`` of the project classes derived from ``value``'s
        class, for an instance that may be of any of them (``self`` in a base, a
        parameter annotated with the base). For an annotation, where more than
        ``_OVERRIDES`` define one, the base is too common to say which runs: an
        opaque value says so."""
        found: list[object] = [
            _Fn(sub_module, sub_module.functions[sub.methods[attr]], handoff)
            for sub_module, sub in self.subclasses(value.module, value.cls, attr)
            if attr in sub.methods
        ]
        if value.declared and len(found) > _OVERRIDES:
            detail = (
                f"{len(found)} classes derived from `{value.cls.name}` override "
                f"`{attr}`: too many to say which one runs"
            )
            return [_Opaque(Reason.UNTRACKED, detail)]
        return found

    def subclasses(
        self, module: ModuleSummary, cls: ClassSummary, defining: str = ""
    ) -> list[tuple[ModuleSummary, ClassSummary]]:
        """The project classes that derive from ``cls``, nearest first: those of its
        own module, and (in preview) those of the files that name it, and that
        define a method ``defining`` where it is given (the others are not
        summarised). A test's subclasses (test doubles) are not what code outside
        the tests runs."""
        key = (module.path, cls.name, defining)
        known = self._subclasses.get(key)
        if known is not None:
            return known
        self._subclasses[key] = []  # a cycle of bases finds nothing more
        modules = [module]
        if self.handoffs:
            short = cls.name.rpartition(".")[2]
            words = {module.name.rpartition(".")[2], short}
            tests = is_test_module(module.path)
            modules.extend(
                m
                for m in self._naming(
                    {short: words}, how=textsearch.BASE, defining=defining
                )
                if m is not module and (tests or not is_test_module(m.path))
            )
        found = [
            (other, candidate)
            for other in modules
            for candidate in other.classes.values()
            if (other.path, candidate.name) != (module.path, cls.name)
            and any(
                c.name == cls.name and m.path == module.path
                for m, c in self.bases(other, candidate)
            )
        ]
        self._subclasses[key] = found
        return found

    @staticmethod
    def _self_class(module: ModuleSummary, fn: FunctionSummary) -> ClassSummary | None:
        """The class whose instance ``self`` is in ``fn``: its method's, also in a
        function nested in the method (``def custom_forward(*inputs):`` reading
        ``self`` as a closure), unless a nested function binds ``self`` itself."""
        scope = fn.path
        while scope:
            owner = scope.rpartition(".")[0]
            if owner in module.classes:
                return module.classes[owner]
            enclosing = module.functions.get(scope)
            if enclosing is not None and "self" in enclosing.params:
                return None  # its own ``self``, not a method's
            scope = owner
        return None

    def class_of(
        self, module: ModuleSummary, fn: FunctionSummary
    ) -> ClassSummary | None:
        owner = fn.path.rpartition(".")[0]
        return module.classes.get(owner) if owner else None

    def bases(
        self, module: ModuleSummary, cls: ClassSummary
    ) -> list[tuple[ModuleSummary, ClassSummary]]:
        return self._hierarchy(module, cls)[0]

    def _hierarchy(
        self, module: ModuleSummary, cls: ClassSummary
    ) -> tuple[list[tuple[ModuleSummary, ClassSummary]], list[_Opaque]]:
        """The project base classes of ``cls``, breadth first, and its bases from
        outside the project (``torch.nn.Module``)."""
        found: list[tuple[ModuleSummary, ClassSummary]] = []
        library: list[_Opaque] = []
        todo = [(module, cls)]
        seen = {(module.path, cls.name)}
        while todo:
            mod, current = todo.pop(0)
            for base in current.bases:
                for value in self.dotted(mod, None, base):
                    if isinstance(value, _Opaque) and value.qualified:
                        library.append(value)
                    if (
                        isinstance(value, _Cls)
                        and (value.module.path, value.cls.name) not in seen
                    ):
                        seen.add((value.module.path, value.cls.name))
                        found.append((value.module, value.cls))
                        todo.append((value.module, value.cls))
        return found, library

    def called(self, value: object) -> Iterator[_Fn]:
        """The project functions that calling ``value`` runs."""
        if isinstance(value, _Fn):
            yield value
        elif isinstance(value, _Items):
            for item in value.items:
                yield from self.called(item)
        elif isinstance(value, _Cls):
            name = ("forward", "__call__") if value.instance else ("__init__",)
            for module, cls in [
                (value.module, value.cls),
                *self.bases(value.module, value.cls),
            ]:
                hit = next((cls.methods[n] for n in name if n in cls.methods), None)
                if hit is not None:
                    yield _Fn(
                        module,
                        module.functions[hit],
                        value.handoff,
                        through=value.through if value.instance else None,
                    )
                    return

    def resolve(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        at: tuple[int, int] = (1, 0),
        guard: bool = False,
    ) -> list[_Fn]:
        """The project functions a call of ``callee`` (at the line and column
        ``at``; ``guard``: in a condition of the call there) runs. One resolution
        has a budget of steps (``BUDGET``): a module can be written to make name
        lookups fan out without bound, and this runs in the main process. A call
        over the budget is not followed, and ``abandoned`` says where it was."""
        return self.resolve_why(module, fn, callee, at, guard)[0]

    def resolve_why(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        at: tuple[int, int] = (1, 0),
        guard: bool = False,
        library: Callable[[list[object]], list[_Fn]] | None = None,
    ) -> tuple[list[_Fn], _Opaque | None]:
        """``resolve``, and when it finds nothing to follow, why (None: nothing
        that counts as not followed, a call of PyTorch or of Python itself).
        ``library``: what the call runs when the callee is a library's
        (``_library_runs``), from the values it resolved to."""
        return self._budgeted(
            lambda: self._resolve(module, fn, callee, library),
            Dropped(module.path, *at, callee, guard),
            lambda why: ([], why),
        )

    def _budgeted(
        self,
        work: Callable[[], T],
        call: Dropped | None,
        failed: Callable[[_Opaque], T],
    ) -> T:
        """``work`` within one resolution's budget; ``failed(why)`` when it goes
        over (and ``abandoned`` then has ``call``; None: a question that is not a
        call)."""
        if self._steps is not None:  # nested (a guard helper): the outer budget
            return work()
        self._steps = 0
        # what it finds holds for this resolution only
        self._bindings = Bindings(_is_opaque)
        try:
            return work()
        except RecursionError:  # pathological import cycles: the call ends here
            detail = "resolving it recursed too deeply (an import cycle?)"
            return failed(_Opaque(Reason.BUDGET, detail))
        except _OverBudget:
            if call is not None and not self._searching:
                self.abandoned.append(call)
            return failed(
                _Opaque(Reason.BUDGET, f"resolving it took over {BUDGET:,} steps")
            )
        finally:
            self._steps = None
            self._bindings = Bindings(_is_opaque)

    # -- compile wrappers from other modules ---------------------------------------
    def compiled(self, sites: Iterable[CompileSite]) -> list[Entry]:
        """The sites whose imported wrapper compiles with CUDA graphs, as region
        entries for what they compile."""
        found: list[Entry] = []
        roots: dict[str, Path | None] = {}  # of each file: many sites share one
        for site in sites:
            if site.path not in roots:
                roots[site.path] = self.index.root_of_file(site.path)
            work = partial(self._wrapper, site, roots[site.path])
            call = Dropped(site.path, site.line, site.col, site.compiler)
            values = self._budgeted(work, call, lambda _: [])
            label = next((label for label, _ in values if label), "")
            if not label:
                continue
            sure = all(label and every for label, every in values)
            found.append(
                Entry(
                    site.path,
                    site.module,
                    site.function,
                    site.line,
                    site.col,
                    site.target,
                    RegionSite(
                        site.path,
                        site.line,
                        RegionKind.COMPILE,
                        label,
                        confidence=Confidence.HIGH if sure else Confidence.MEDIUM,
                    ),
                )
            )
        return found

    def _wrapper(
        self, site: CompileSite, prefer: Path | None
    ) -> list[tuple[str, bool]]:
        """What the wrapper a site names compiles with: (label, sure) per value it
        may be; a label "" when not with CUDA graphs."""
        found: list[tuple[str, bool]] = []
        key = (site.compiler, prefer)
        if key not in self._wrappers:  # many sites name one wrapper
            self._wrappers[key] = self.qualified(site.compiler, prefer=prefer)
        for value in self._wrappers[key]:
            if isinstance(value, _Compiler) and not site.called:
                found.append((value.label, True))
            elif isinstance(value, _Fn) and "." not in value.fn.path:
                fn = value.fn
                if site.called:
                    arguments = _arguments(fn, site)
                    labels = [
                        Compiler.resolve(e, arguments) for e in fn.returns_compiler
                    ]
                else:
                    labels = fn.compiles
                found.append(Compiler.combined(labels))
            else:
                found.append(("", False))
        return found

    def _step(self) -> None:
        if self._steps is not None:
            self._steps += 1
            if self._steps > BUDGET:
                raise _OverBudget

    def _resolve(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        library: Callable[[list[object]], list[_Fn]] | None = None,
    ) -> tuple[list[_Fn], _Opaque | None]:
        values = self.dotted(module, fn, callee)
        found = [t for value in values for t in self.called(value)]
        if not found and library is not None:
            found = library(values)
        why = None
        if not found:
            if not values:  # ``h = h.float()`` only, ``fn: Callable[...]``
                values = [self._ran_out(module, fn, callee)]
            why = _why(values, callee)
            if why is not None and why.reason in _UNTYPED and "." in callee:
                installed = self._installed(callee.rpartition(".")[2])
                found = [t for t in installed if isinstance(t, _Fn)]
                if not found and library is not None:  # a library method installed
                    found = library([v for v in installed if isinstance(v, _Opaque)])
        handed = [hop for t in found for hop in t.handoff]
        if handed and self._reading is not None:  # each, though targets are one
            known = self.handed.setdefault(self._reading, [])
            known.extend(hop for hop in dict.fromkeys(handed) if hop not in known)
        if found:
            return list(dict.fromkeys(found)), None
        return [], why

    def _installed(self, attribute: str) -> list[_Fn | _Opaque]:
        """In preview, what the project installs as ``attribute`` on objects other
        than a method's own ``self`` (``config.finalize_func = finalize``, in any
        file): the callables a call of that attribute on an object the resolver
        cannot type may run, each with the write as a hand-off. Asked once per
        attribute, of the files whose text writes it; none where the writes are
        more than ``_MAX_INSTALLED`` callables (an attribute too common to tell)."""
        if not self.handoffs:
            return []
        found = self._installs.get(attribute)
        if found is not None:
            return found
        found = self._installs[attribute] = []  # a cycle through it finds nothing
        saved = self._reading, self._steps, self._bindings
        # the search captures nothing, and has budgets of its own
        self._reading, self._steps = None, None
        try:
            for path in self._scan()[1].get(attribute.encode(), ()):
                root = self.index.root_of_file(str(path))
                module = self.index.module(module_of(path), prefer=root)
                if module is not None:
                    found.extend(self._installs_in(module, attribute))
        finally:
            self._reading, self._steps, self._bindings = saved
        installed = {
            (t.module.path, t.fn.path) if isinstance(t, _Fn) else t.qualified
            for t in found
        }
        if len(installed) > _MAX_INSTALLED:
            found.clear()
        return found

    def _installs_in(
        self, module: ModuleSummary, attribute: str
    ) -> Iterator[_Fn | _Opaque]:
        """The project functions that ``module``'s writes of ``attribute`` install
        (and the library methods of declared instances, ``Opaque.bound``), each with
        its write as a hand-off; each resolved within a budget."""
        for fn in [None, *module.functions.values()]:
            stores = module.stores if fn is None else fn.stores
            for store in stores.get(attribute, ()):
                hop = Hop(
                    module.path,
                    store.line,
                    store.col,
                    f"{store.written} = {_shown(store.ref)}",
                    handoff=True,
                )
                self._installing.add(hop)

                def values(
                    ref: Ref = store.ref, where: FunctionSummary | None = fn
                ) -> list[object]:
                    return self.ref(module, where, ref, 0)

                for value in self._budgeted(values, None, lambda why: []):
                    # a function, a bound method or a lambda's calls: a callback
                    # (a class or an instance installed is a spec or an object)
                    items = value.items if isinstance(value, _Items) else (value,)
                    for target in items:
                        if isinstance(target, _Fn):
                            yield replace(target, handoff=(*target.handoff, hop))
                        elif isinstance(target, _Opaque) and target.bound:
                            # a library method of an instance: the model says
                            yield replace(target, handoff=(*target.handoff, hop))

    def _scan(self) -> tuple[dict[Path, frozenset[bytes]], dict[bytes, list[Path]]]:
        """The project's files read once a run, for the searches of hand-offs: the
        words of each file's imports (``imported_words``), and the files by the
        attributes their text installs a callable as: ``x.attr = name`` (``x`` not
        ``self``) of a function the file defines or imports (not a CapWords class
        name), a lambda, or ``x``'s own method kept aside (``x.orig = x.step``),
        where no class of the project has a method of that name
        (``x.run()`` on an object nothing types is far more often some class's
        ``run`` than a callback); the latter with ``--preview`` only."""
        if self._import_words is None or self._writes is None:
            self._import_words = {}
            writes: dict[bytes, dict[Path, None]] = {}
            methods: set[bytes] = set()
            for path in self.sources:
                data = self._read(path)
                if data is None:
                    continue
                words = self._import_words[path] = textsearch.imported_words(data)
                if not self.handoffs:  # only ``_installed`` asks for the writes
                    continue
                known = words.union(textsearch.defined(data), (b"lambda",))
                methods.update(textsearch.methods(data))
                installed, kept = textsearch.installs(data)
                for attribute, value in installed:
                    # a CapWords name is a class (a spec, not a callback): not read
                    callback = not value.rpartition(b".")[2][:1].isupper()
                    if callback and value.partition(b".")[0] in known:
                        writes.setdefault(attribute, {})[path] = None
                # ``m.__orig_step__ = m.optimizer_step``: a method kept aside
                for attribute in kept:
                    writes.setdefault(attribute, {})[path] = None
            self._writes = {
                attribute: list(paths)
                for attribute, paths in writes.items()
                if attribute not in methods
            }
        return self._import_words, self._writes

    def _inferred(self, how: RegionRef, target: _Fn) -> RegionRef:
        """``how``, of medium confidence where ``target`` came through an installed
        callable (``_installed``): that the object it was installed on is the one
        called is inferred from the attribute's name alone."""
        if any(hop in self._installing for hop in target.handoff):
            return replace(how, confidence=Confidence.MEDIUM)
        return how

    @staticmethod
    def _ran_out(
        module: ModuleSummary, fn: FunctionSummary | None, callee: str
    ) -> _Opaque:
        """Why a callee whose name is bound resolved to nothing: a parameter or
        local (``fn: Callable[...]``, ``h = h.float()``), else a chain too long."""
        head = callee.split(".", 1)[0]
        scope = fn.path if fn is not None else ""
        while scope:
            enclosing = module.functions.get(scope)
            if enclosing is not None and (
                head in enclosing.untracked or head in enclosing.params
            ):
                return _untracked(enclosing, head)
            scope = scope.rpartition(".")[0]
        return _Opaque(Reason.UNRESOLVED, f"`{callee}` could not be resolved")

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

            def inner(name: str, target: _Fn = target) -> bool:
                return self.is_check(target.module, target.fn, name, depth + 1, at)

            if guards.under_capture(guards.decode(target.fn.returns), inner) is True:
                name = target.fn.path
                self._helpers.update({f"{target.module.name}.{name}", name})
                return True
        return False

    def guarded(self, target: _Fn, site: CallSite) -> bool:
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
        target: _Fn,
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

    def _origins(self, key: _Param) -> list[tuple[_Null, _Hops]] | None:
        """The records of what the calls followed pass a parameter, through the
        callers that pass on a parameter of their own (``draft(counts)`` calling
        ``run(counts=counts)``), each with what the calls on the way pass their
        callees' other parameters, the callee's first; None where a caller is a
        region's own function (any caller) or the ways are too many to weigh."""
        found: list[tuple[_Null, _Hops]] = []
        todo: list[tuple[_Param, _Hops]] = [(key, ())]
        seen: set[tuple[_Param, _Hops]] = set()
        while todo:
            current, hops = todo.pop()
            if (current, hops) in seen:
                continue
            seen.add((current, hops))
            if len(seen) > _MAX_PASSED or current[:2] in self._holders:
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

    def settled_attribute(self, target: _Fn, attr: str) -> bool | None:
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
        target: _Fn,
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
            given.update(zip(_positional(callee), nullness.positional, strict=False))
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
        target: _Fn,
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
        slots = dict(enumerate(_positional(callee)))

        def give(slot: str, code: str) -> None:
            given[slots.get(int(slot), "") if slot.isdigit() else slot] = code

        if isinstance(site, Entry):
            for slot in site.tensors:
                code = _SLOT_CODES.get(slot[-1], _TENSOR)
                give(slot.rstrip(_MARKS), code)
        elif call is not None and call.nullness is not None:
            nullness = call.nullness
            passed = zip(_positional(callee), nullness.positional, strict=False)
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

    def tensor_params(self, target: _Fn) -> tuple[str, ...]:
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

    def _tensor_code(self, key: _Param) -> str | None:
        """``_TENSOR``, ``_TENSORS`` or ``_HOST`` where every call passes that,
        else None."""

        def value(null: _Null) -> list[str | _Param | None]:
            if null.code in _SLOT_MARKS:
                return [null.code]
            if null.code.startswith(CALLER) and null.fn is not None:
                return [(null.module.path, null.fn.path, null.code[len(CALLER) :])]
            return [None]

        found = self._through_callers(key, self._tensors, value)
        return found.pop() if found is not None and len(found) == 1 else None

    def truth(self, key: _Param) -> bool | None:
        """The truth of the constant every call followed passes the parameter
        (``fused=True``), also through callers that pass on their own parameter;
        None when the calls pass anything else or not the same."""

        def value(null: _Null) -> list[bool | _Param | None]:
            if null.code in (TRUE, FALSE):
                return [null.code == TRUE]
            if null.code.startswith(CALLER) and OR not in null.code and null.fn:
                return [(null.module.path, null.fn.path, null.code[len(CALLER) :])]
            return [None]

        found = self._through_callers(key, self._nulls, value)
        return found.pop() if found is not None and len(found) == 1 else None

    def is_none(self, key: _Param) -> bool | None:
        """Whether every call followed passes the parameter None (True), or every
        one a value that cannot be None (False); None when it is not known. What
        a caller passes on from its own parameters counts as what its own callers
        pass. The function being followed reads each parameter it asks about."""

        def value(null: _Null) -> list[bool | _Param | None]:
            return [
                self._null_value(code, null.module, null.fn)
                for code in null.code.split(OR)
            ]

        found = self._through_callers(key, self._nulls, value)
        return found.pop() if found is not None and len(found) == 1 else None

    def _through_callers(
        self,
        key: _Param,
        table: dict[_Param, set[_Null]],
        value: Callable[[_Null], list[_V | _Param | None]],
    ) -> set[_V] | None:
        """What the calls followed pass the parameter ``key`` (as ``value`` reads
        each record of ``table``: a value, a caller's parameter to follow, or None
        for unknown), also through callers that pass on their own parameter; None
        when something is not known. The function being followed reads each
        parameter asked about."""
        seen: set[_Param] = set()
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
    ) -> bool | _Param | None:
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
            if not (isinstance(value, _Cls) and value.instance):
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
                isinstance(v, _Cls) and not v.instance for v in values
            )
        return self._classes[key]

    def settled(self, target: _Fn) -> tuple[guards.Settled, ...]:
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

    def is_eager(self, target: _Fn) -> bool:
        if not self.eager:
            return False
        if f"{target.module.name}.{target.fn.path}" in self.eager:
            return True
        return any(
            self.qualify(target.module, d) in self.eager for d in target.fn.decorators
        )

    def memoised(self, target: _Fn) -> bool:
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
        return bool(values) and all(isinstance(v, _Fn) and _memoises(v) for v in values)

    def untraced(self, target: _Fn) -> bool:
        """Whether ``target`` is decorated ``@torch.compiler.disable``: a compiled
        caller graph-breaks at its call and runs it eagerly."""
        return any(
            self.qualify(target.module, d) in dynamo.DISABLED
            for d in target.fn.decorators
        )

    # -- reachability ----------------------------------------------------------------
    def _follow(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        site: CallSite | Entry,
        path: str,
        into: list[Unfollowed],
        call: CallSite | None = None,
        how: RegionRef | None = None,
    ) -> list[_Fn]:
        """The project functions a call site runs, after recording what it passes
        them (``call``: the summary's record of the site, if known); one that runs
        none is recorded in ``into`` with the reason."""
        targets: list[_Fn] = []
        why: _Opaque | None
        if site.computed:
            why = _Opaque(Reason.COMPUTED, "the callee is an expression")
        else:
            library = (  # what a library's callable runs of what the call gives it
                partial(self._library_runs, module, fn, call, path)
                if call is not None
                else None
            )
            targets, why = self.resolve_why(
                module, fn, site.callee, (site.line, site.col), library=library
            )
        kind = (
            how.kind
            if how is not None
            else site.region.kind
            if isinstance(site, Entry)
            else None
        )
        if kind is not RegionKind.GRAPHED:
            # an autograd Function's backward runs under capture where the backward
            # pass is captured: always for graphed callables; elsewhere, not known
            targets = [t for t in targets if t.applied != "backward"]
        lazy = [t for t in targets if not self.is_eager(t)]
        if targets and not lazy:
            why = _Opaque(
                Reason.EAGER, f"{_functions(targets)} never runs under capture"
            )
        compiled = kind is RegionKind.COMPILE
        # what runs eagerly even though the capture calls it, and why
        eager: list[tuple[bool, Callable[[_Fn], bool], Callable[[list[_Fn]], str]]] = [
            (
                compiled,
                lambda t: dynamo.skipped(t.module.name),
                lambda gone: (
                    f"Dynamo does not trace into {_modules(gone)}: it runs eagerly"
                ),
            ),
            (
                True,
                self.captures,
                lambda gone: (
                    f"{_functions(gone)} makes a capture of its own: no capture runs it"
                ),
            ),
            (
                not compiled,  # torch.compile traces what the first call runs
                self.memoised,
                lambda gone: (
                    f"{_functions(gone)} is memoised: warm-up runs it, the "
                    "capture reuses it"
                ),
            ),
            (
                compiled,
                self.untraced,
                lambda gone: (
                    f"{_functions(gone)} is excluded from tracing "
                    "(`disable`): it runs eagerly"
                ),
            ),
        ]
        for applies, runs_eagerly, said in eager:
            gone = [t for t in lazy if applies and runs_eagerly(t)]
            lazy = [t for t in lazy if t not in gone]
            if gone and not lazy:
                why = _Opaque(Reason.EAGER, said(gone))
        if why is not None:
            detail = why.detail
            handed = "." not in site.callee or site.callee.startswith("self.")
            if (
                why.reason is Reason.PARAMETER
                and how is None
                and handed
                and not self.handoffs
            ):
                # the region's own code runs what it was handed: a wrapper's stored
                # callable, a capture helper's argument
                detail += " (`--preview` follows what callers hand over)"
            into.append(
                Unfollowed(path, site.line, site.col, site.callee, why.reason, detail)
            )
            self._cut(why, path, site, how)
        if lazy:
            self.followed.add((path, site.line, site.callee))
        for target in lazy:
            chain = _through(how, path, site, target) if how is not None else None
            caller, by, at, made = module, fn, site, call
            if target.through is not None:  # a lambda's call passes its arguments
                caller, by, made = target.through
                at = made
            at, given = _as_called(target, at, made)
            arguments = given.arguments if given is not None else None
            self.pass_arguments(target, arguments, caller, by, chain)
            self.pass_nullness(target, given, caller, by)
            self.pass_tensors(target, at, given, caller, by)
        return lazy

    def _library_runs(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        call: CallSite,
        path: str,
        values: list[object],
    ) -> list[_Fn]:
        """The project functions ``call`` runs where its callee resolved to
        ``values`` of a library that a model describes (``library``):
        ``checkpoint(step, x)`` runs ``step``; a Lightning module's
        ``optimizer_step`` its ``training_step``. Each keeps the call as a hand-off
        in its chain, and receives what the library passes (``_LIBRARY``)."""
        receiver = call.callee.rpartition(".")[0]
        receiver = "self" if receiver == "super()" else receiver
        found: list[_Fn] = []
        for value in values:
            if not isinstance(value, _Opaque) or not value.qualified:
                continue
            for model in self.library.matching(value.qualified):
                for run in model.runs:
                    held: list[object] = []
                    if run.startswith("self.") and (value.bound or receiver):
                        # the instance a method was taken from, else the receiver
                        owners = value.bound or self.dotted(module, fn, receiver)
                        held = [v for r in owners for v in self.attribute(r, run[5:])]
                    elif (ref := model.argument(call.arguments, run)) is not None:
                        held = self.ref(module, fn, ref, 0)
                    shown = f"{_handing(call)} runs {run}"
                    hop = Hop(path, call.line, call.col, shown, handoff=True)
                    found.extend(
                        replace(
                            t,
                            handoff=(*t.handoff, *value.handoff, hop),
                            applied=_LIBRARY,
                        )
                        for v in held
                        for t in self.called(v)
                    )
        return found

    def captures(self, target: _Fn) -> bool:
        """Whether ``target`` makes a manual capture itself (a region's call lies in
        it). Captures do not nest: a capture that seems to reach it reaches it
        through a value resolved too widely (``self.model``, one of several
        wrappers)."""
        if self._capturing is None:
            self._capturing = {
                (entry.module, entry.function)
                for entry in self._entries
                if entry.function and entry.region.kind is RegionKind.MANUAL
            }
        return (target.module.name, target.fn.path) in self._capturing

    def _cut(
        self, why: _Opaque, path: str, site: CallSite | Entry, how: RegionRef | None
    ) -> None:
        """Remember how a region reaches a call that stopped at something graphlint
        could not analyse: a module it could not summarise (``blocked``), or, in
        reached code, a resolution over the budget (``abandoned_by``). Their GL0xx
        then concern the region's file, also where only that file is named."""
        if why.blocked is not None:
            hop = Hop(path, site.line, site.col, f"{site.callee}()")
            if how is not None:
                reached = replace(how, via=(*how.via, hop))
            else:  # a call in the region itself
                assert isinstance(site, Entry)
                reached = site.region.ref((hop,))
            self.blocked.setdefault(why.blocked, []).append(reached)
        elif (
            how is not None
            and why.reason is Reason.BUDGET
            and Dropped(path, site.line, site.col, site.callee) in self.abandoned
        ):
            self.abandoned_by.setdefault(path, []).append(how)

    @property
    def unfollowed(self) -> list[Unfollowed]:
        """The calls ``reach`` did not follow: in regions, and in reached code."""
        return [u for calls in self._unfollowed_in.values() for u in calls]

    def reach(
        self, entries: Iterable[Entry], roots: set[tuple[str, str]]
    ) -> dict[str, dict[str, RegionRef]]:
        """Breadth first from the region calls: file -> function path -> how reached.
        ``roots`` are (module, function) pairs already analysed as regions. Records
        the calls not followed (``unfollowed``), the calls each region's own code
        makes (``starts``) and those of each reached function (``edges``). A reached
        function whose parameters get a new argument is followed again."""
        queue: deque[tuple[_Fn, RegionRef]] = deque()
        # the functions holding regions whose callers were read (``_pass_to_region``)
        bound: set[tuple[str, str]] = set()
        self._entries = list(entries)
        self._capturing = None
        for entry in self._entries:
            module = self.index.module(
                entry.module, prefer=self.index.root_of_file(entry.path)
            )
            holder = (entry.path, entry.function or "")
            if module is not None and entry.function and holder not in bound:
                bound.add(holder)
                self._hold(module, entry.function)
                self._pass_to_region(module, entry.function)
        for index in range(len(self._entries)):
            queue.extend(self._enter(index))
        reached: dict[str, dict[str, RegionRef]] = {}
        followed: dict[tuple[str, str], tuple[_Fn, RegionRef]] = {}
        guessed: set[tuple[str, str]] = set()  # their callees' modules prefetched
        while True:
            if not queue:  # what got new arguments, or was handed over
                queue.extend(self._again(followed))
            if not queue:
                break
            head = queue[0][0]
            if (head.module.path, head.fn.path) not in guessed:  # the next level
                level = {(t.module.path, t.fn.path): t for t, _ in queue}
                level = {k: t for k, t in level.items() if k not in guessed}
                guessed.update(level)
                self.index.prefetch_calls(
                    (t.module, site.callee)
                    for k, t in level.items()
                    if k not in followed
                    for site in t.fn.calls
                    if not site.settled and not site.computed
                )
            target, how = queue.popleft()
            key = (target.module.path, target.fn.path)
            if (target.module.name, target.fn.path) in roots:
                self.regions.add(key)
                self.lines[key] = target.fn.line
            elif key not in followed:
                followed[key] = (target, how)
                reached.setdefault(target.module.path, {})[target.fn.path] = how
                self.lines[key] = target.fn.line
                queue.extend(self._calls_of(target, how))
        for target, how in followed.values():
            settled = self.settled(target)
            tensors = self.tensor_params(target)
            if settled or tensors:
                functions = reached[target.module.path]
                functions[target.fn.path] = replace(
                    how, settled=settled, tensors=tensors
                )
        return reached

    def _enter(self, index: int) -> list[tuple[_Fn, RegionRef]]:
        """The functions the region call ``index`` runs, each with how it is
        reached; the calls it does not follow are recorded anew (it is followed
        again when a parameter it reads gets a new argument)."""
        entry = self._entries[index]
        reader = (_ENTRY, str(index))
        self._entry_regions[reader] = entry.region.key
        unfollowed = self._unfollowed_in[reader] = []
        module = self.index.module(
            entry.module, prefer=self.index.root_of_file(entry.path)
        )
        if module is None:
            why = "the file could not be summarised"
            unfollowed.append(
                Unfollowed(
                    entry.path,
                    entry.line,
                    entry.col,
                    entry.callee,
                    Reason.UNSUMMARISED,
                    why,
                )
            )
            return []
        fn = module.functions.get(entry.function) if entry.function else None
        site = site_of(entry, fn.calls if fn is not None else module.calls)
        self._reading = reader
        try:
            targets = self._follow(module, fn, entry, entry.path, unfollowed, site)
        finally:
            self._reading = None
        self.starts.setdefault(entry.region.key, []).extend(
            (t.module.path, t.fn.path) for t in targets
        )
        found: list[tuple[_Fn, RegionRef]] = []
        for target in targets:
            hop = Hop(entry.path, entry.line, entry.col, f"{target.fn.path}()")
            how = entry.region.ref((*target.handoff, hop))
            found.append((target, self._inferred(how, target)))
        return found

    def _again(
        self, followed: dict[tuple[str, str], tuple[_Fn, RegionRef]]
    ) -> list[tuple[_Fn, RegionRef]]:
        """What to follow once the queue is empty: the reached functions and region
        calls that read a parameter that got a new argument, again; when there are
        none, the next round of hand-offs (``_hand_over``), then those."""
        while True:
            stale, self._stale = self._stale, {}
            found: list[tuple[_Fn, RegionRef]] = []
            for again, chain in sorted(stale.items(), key=lambda kv: kv[0]):
                if again[0] == _ENTRY:
                    found.extend(self._enter(int(again[1])))
                elif again in followed:
                    target, how = followed[again]
                    found.extend(self._calls_of(target, chain or how))
            if found or not self._hand_over():
                return found

    def _hold(self, module: ModuleSummary, path: str) -> None:
        """Calling the function ``path`` (or a method of its class) captures: so do
        the functions and classes it is nested in."""
        parts = path.split(".")
        for end in range(len(parts), 0, -1):
            scope = ".".join(parts[:end])
            if scope in module.functions:
                self._holders.add((module.path, scope))
            elif scope in module.classes:
                self._holder_classes.add((module.path, scope))

    def _captures(self, module: ModuleSummary, fn: FunctionSummary) -> bool:
        """Whether what calls of ``fn`` pass may run under capture wherever they
        are made: it holds a region (or hands a parameter on to one), or it is the
        ``__init__`` of a class whose methods do (``self.fn = fn``)."""
        if (module.path, fn.path) in self._holders:
            return True
        owner, _, name = fn.path.rpartition(".")
        return name == "__init__" and (module.path, owner) in self._holder_classes

    def _hand_over(self) -> bool:
        """One round of hand-offs: the calls, anywhere in the project, of the
        capturing functions whose parameters were read under capture and not yet
        looked for (``Wrapper(step)`` for ``self.fn`` of ``Wrapper.__call__``,
        ``capture(step)``); each parameter then holds what they pass, through that
        hand-off. A caller that passes its own parameter on captures too (the next
        round looks for its callers). Only the project's files whose text names
        the function are summarised. Whether a call was found."""
        if not self.handoffs:
            return False
        todo = [
            (path, name)
            for path, name, _ in self._demanded
            if (path, name) not in self._searched
        ]
        if not todo or self._rounds >= _MAX_ROUNDS:
            return False
        self._rounds += 1
        self._searched.update(todo)
        found = False
        saved, self._reading = self._reading, None  # the search captures nothing
        try:
            for module, caller, site, target in self._calls_to(todo, passing=True):
                found = True
                hop = Hop(
                    module.path, site.line, site.col, _handing(site), handoff=True
                )
                cls = self.class_of(module, caller) if caller else None
                arguments = _before(site, caller, cls)
                self.pass_arguments(target, arguments, module, caller, handoff=(hop,))
                if caller is not None:
                    self._hold(module, caller.path)
        finally:
            self._reading = saved
        return found

    def calls_of(
        self, path: str, name: str
    ) -> list[tuple[ModuleSummary, FunctionSummary | None, CallSite]]:
        """The calls, anywhere in the project, of the function ``name`` of the
        module at ``path``, each with its module and the function making it."""
        with self.searching():
            return [(m, fn, site) for m, fn, site, _ in self._calls_to([(path, name)])]

    @contextmanager
    def searching(self) -> Iterator[None]:
        """Resolve for a search of the project, not for reach: what it resolves is
        captured by nothing, the arguments of the constructions it meets are not
        recorded, and a call over the budget is not reported."""
        saved = self._reading, self._searching
        self._reading, self._searching = None, True
        try:
            yield
        finally:
            self._reading, self._searching = saved

    def typed_by_callers(self, path: str, name: str) -> frozenset[str]:
        """The parameters of the function ``name`` of the module at ``path`` that
        every call of it in the project passes a tensor made on the GPU (``x``) or
        on the host (``x!``), as the summaries show, where some call is in another
        module (pass one types them from the calls of its own file)."""
        sites = self.calls_of(path, name)
        home = self.index.by_path.get(path)
        fn = home.functions.get(name) if home is not None else None
        if fn is None or all(module.path == path for module, _, _ in sites):
            return frozenset()
        slots = dict(enumerate(_positional(fn)))
        common: set[str] | None = None
        for _, _, site in sites:
            marks = {
                slots.get(int(slot), "") if slot.isdigit() else slot
                for slot in site.device
            } | {
                (slots.get(int(slot), "") if slot.isdigit() else slot) + HOST_MARK
                for slot in site.host
            }
            common = marks if common is None else common & marks
        return frozenset(m for m in common or () if m.rstrip(HOST_MARK) in fn.params)

    def _calls_to(
        self, functions: Iterable[tuple[str, str]], *, passing: bool = False
    ) -> Iterator[tuple[ModuleSummary, FunctionSummary | None, CallSite, _Fn]]:
        """The calls of ``functions`` (a module's path, a function's), in their
        modules and in the project's files whose text names them (only those are
        summarised), each with the function it calls; with ``passing``, only those
        that pass something that may be project code."""
        wanted: dict[str, list[tuple[str, str]]] = {}  # as called -> functions
        # ``obj(x)`` of a ``__call__``: any call may be one, in a file that names
        # the class (where its objects are made)
        objects: list[tuple[str, str]] = []
        # a file that calls one from elsewhere imports it, its class (a method) or
        # its module: ``run`` alone is in every other file
        imports: dict[str, set[str]] = {}
        homes: list[ModuleSummary] = []  # where they are defined
        for path, name in functions:
            owner, _, method = name.rpartition(".")
            called = _called_as(name)
            home = self.index.by_path.get(path)
            if home is None:
                continue
            if called is None and method == "__call__" and owner:
                objects.append((path, name))
                called = owner.rpartition(".")[2]  # the text names the class
            elif called is None:
                continue
            else:
                wanted.setdefault(called, []).append((path, name))
            homes.append(home)
            words = imports.setdefault(called, set())
            words.add(home.name.rpartition(".")[2])
            words.add(owner.partition(".")[0] if owner else called)
        for module in dict.fromkeys([*homes, *self._naming(imports)]):
            names = _local_names(module, wanted)
            for caller, site in _sites(module):
                called = names.get(site.callee.rpartition(".")[2])
                slots = wanted[called] if called is not None else objects
                if not slots or (passing and site.arguments is None):
                    continue
                for target in self.resolve(
                    module, caller, site.callee, (site.line, site.col)
                ):
                    if (target.module.path, target.fn.path) in slots:
                        yield module, caller, site, target

    def _naming(
        self,
        names: dict[str, set[str]],
        *,
        how: str = textsearch.ANYWHERE,
        defining: str = "",
    ) -> Iterator[ModuleSummary]:
        """The summaries of the project's files that import one of the words a name
        of ``names`` maps to (that name, its class, its module) and whose text names
        it as ``how`` says (``textsearch.names``): the others are not summarised.
        Each file's imports are read once a run. Summarised as they are asked for, a
        few at a time on every worker: a search that stops early (the first
        constructions of a class) summarises no more."""
        if not names:
            return
        words = self._scan()[0]
        asked = {n.encode(): {w.encode() for w in ws} for n, ws in names.items()}
        hits: list[tuple[str, Path | None]] = []
        for path, imported in words.items():
            star = b"*" in imported
            named = [
                n for n, ws in asked.items() if star or not ws.isdisjoint(imported)
            ]
            if not named:
                continue
            data = self._read(path)
            if (
                data is not None
                and any(textsearch.names(data, n, how) for n in named)
                and (
                    not defining
                    or textsearch.names(data, defining.encode(), textsearch.DEF)
                )
            ):
                hits.append((module_of(path), self.index.root_of_file(str(path))))
        seen: set[str] = set()
        for start in range(0, len(hits), _PREFETCHED):
            batch = hits[start : start + _PREFETCHED]
            self.index.prefetch_named(batch)
            for name, root in batch:
                module = self.index.module(name, prefer=root)
                if module is not None and module.path not in seen:
                    seen.add(module.path)
                    yield module

    def _pass_to_region(self, module: ModuleSummary, path: str) -> None:
        """What the calls, in its own module, of a function that holds a region
        (or is one) pass to its parameters: ``step(model, x)`` of
        ``@torch.compile(...) def step(model, x)``, so that the region's
        ``model(x)`` reaches the model's code."""
        root = module.functions.get(path)
        if root is None or not root.params:
            return
        target = _Fn(module, root)
        name = path.rpartition(".")[2]
        for caller in [None, *module.functions.values()]:
            for site in module.calls if caller is None else caller.calls:
                if (
                    site.arguments is not None
                    and site.callee.rpartition(".")[2] == name
                    and target
                    in self.resolve(module, caller, site.callee, (site.line, site.col))
                ):
                    self.pass_arguments(target, site.arguments, module, caller)

    def _calls_of(self, target: _Fn, how: RegionRef) -> list[tuple[_Fn, RegionRef]]:
        """The functions the calls of a reached function run, each with how it is
        reached; its edges and the calls it does not follow are recorded anew."""
        key = (target.module.path, target.fn.path)
        edges = self.edges[key] = []
        unfollowed = self._unfollowed_in[key] = []
        found: list[tuple[_Fn, RegionRef]] = []
        # under torch.compile, which traces what the first call runs, a block that
        # settles its own test is not skipped (as in the file pass: ``Rule.region``)
        compiled = how.kind is RegionKind.COMPILE
        self._reading = key
        try:
            for site in target.fn.calls:
                if site.settled and not compiled:  # warm-up's, not the capture's
                    continue
                dropped = len(self.abandoned)
                skipped = self.guarded(target, site)
                if len(self.abandoned) > dropped:  # a condition over the budget
                    self.abandoned_by.setdefault(key[0], []).append(how)
                if skipped:
                    continue
                callees = self._follow(
                    target.module, target.fn, site, key[0], unfollowed, site, how
                )
                edges.extend((c.module.path, c.fn.path) for c in callees)
                found.extend(
                    (c, self._inferred(_through(how, key[0], site, c), c))
                    for c in callees
                )
        finally:
            self._reading = None
        return found

    def survey(
        self,
        sites: Iterable[RegionSite],
        excluded: Callable[[str], bool] = lambda path: False,
    ) -> list[RegionReach]:
        """Each region with the functions its calls reach (run after ``reach``),
        sorted by file, line and name; ``excluded`` says which files are not
        analysed."""
        found: list[RegionReach] = []
        for site in sorted(sites, key=lambda s: s.key):
            todo = list(self.starts.get(site.key, ()))
            seen: set[tuple[str, str]] = set()
            while todo:
                key = todo.pop()
                if key in seen or key not in self.lines:  # eager: not reached
                    continue
                seen.add(key)
                todo.extend(self.edges.get(key, ()))  # none from a region
            readers = [r for r, k in self._entry_regions.items() if k == site.key]
            handed = [
                hop
                for reader in [*readers, *sorted(seen)]
                for hop in self.handed.get(reader, ())
            ]
            reached = sorted(
                (
                    ReachedFunction(
                        path,
                        self.lines[path, name],
                        name,
                        excluded(path),
                        (path, name) in self.regions,
                    )
                    for path, name in seen
                ),
                key=lambda r: (r.path, r.line, r.function),
            )
            found.append(
                RegionReach(site, tuple(reached), tuple(dict.fromkeys(handed)))
            )
        return found


def _handed_up(site: CallSite, init: FunctionSummary) -> Arguments | None:
    """What a constructor's call of its base's ``__init__`` passes, by the base's
    parameters after ``self``: ``super().__init__(a)``, ``Base.__init__(self, a)``."""
    arguments = site.arguments
    if arguments is None or not site.callee.endswith(".__init__"):
        return None
    if site.callee == "super().__init__":
        return arguments
    first = arguments.positional[0] if arguments.positional else None
    if first is None or first.kind != "name" or init.params[:1] != [first.target]:
        return None
    return replace(arguments, positional=arguments.positional[1:])


def _argument(arguments: Arguments, parameter: str, position: int) -> Ref | None:
    """What a call's ``arguments`` pass to ``parameter``, by keyword or at
    ``position`` (-1: only by keyword)."""
    for keyword, ref in arguments.keywords:
        if keyword == parameter:
            return ref
    if 0 <= position < len(arguments.positional):
        return arguments.positional[position]
    return None


def _stored(
    module: ModuleSummary, init: FunctionSummary, attr: str, name: str, shown: str
) -> Iterator[Setter]:
    """A setter through ``self.attr``, for each parameter of ``init`` (an
    ``__init__`` of ``module``) that it stores there."""
    cls = module.classes.get(init.path.rpartition(".")[0])
    refs = cls.attrs.get(attr, []) if cls is not None else []
    made = cls.attrs_at.get(attr, []) if cls is not None else []
    if len(refs) != len(made):
        return  # the two lists no longer say which binding is where
    for ref, (method, _) in zip(refs, made, strict=True):
        if method == init.path and ref.kind == "name" and ref.target in init.params:
            index = init.params.index(ref.target)
            position = index - 1 if 0 < index < init.positional else -1
            yield Setter(name, ref.target, position, True, shown)


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


def _as_called(
    target: _Fn, site: CallSite | Entry, call: CallSite | None
) -> tuple[CallSite | Entry, CallSite | None]:
    """The call site and its record as ``target`` receives them: ``Fn.apply(a, b)``
    passes ``forward(ctx, a, b)`` its arguments after ``ctx`` (unless
    ``setup_context`` takes it), and ``backward`` none of them; what a library
    passes the code it runs (``_LIBRARY``) is not known."""
    if target.applied == _LIBRARY:
        unknown = CallSite(site.line, site.col, site.callee)
        unknown = replace(unknown, nullness=Nullness(open=True))
        return unknown, unknown
    if target.applied == "backward":
        return replace(site, tensors=()) if isinstance(site, Entry) else site, None
    if target.applied != "forward":
        return site, call
    if isinstance(site, Entry):
        site = replace(site, tensors=tuple(_later(slot) for slot in site.tensors))
    if call is None:
        return site, None
    arguments, nullness = call.arguments, call.nullness
    return site, replace(
        call,
        arguments=(
            replace(arguments, positional=(None, *arguments.positional))
            if arguments is not None
            else None
        ),
        nullness=(
            replace(nullness, positional=(MAYBE, *nullness.positional))
            if nullness is not None
            else None
        ),
    )


def _later(slot: str) -> str:
    """An ``Entry.tensors`` slot one position on ("0" -> "1", "2*" -> "3*")."""
    index = slot.rstrip(_MARKS)
    return f"{int(index) + 1}{slot[len(index) :]}" if index.isdigit() else slot


def _untracked(fn: FunctionSummary, name: str) -> _Opaque:
    """The value of a parameter or local that the summaries do not model."""
    if name in fn.params:
        detail = f"`{name}` is a parameter of `{fn.path}`"
        return _Opaque(Reason.PARAMETER, detail, local=True)
    detail = f"the value of `{name}` in `{fn.path}` is not tracked"
    return _Opaque(Reason.UNTRACKED, detail, local=True)


def _by_lambda(
    value: object, module: ModuleSummary, fn: FunctionSummary | None, ref: Ref
) -> object:
    """``value`` as the lambda's call ``ref`` (a callee with its line) runs it: with
    that call's record, in the function that makes the lambda."""
    if not ref.line or not isinstance(value, (_Fn, _Cls)):
        return value
    calls = fn.calls if fn is not None else module.calls
    site = next(
        (c for c in calls if c.line == ref.line and c.callee == ref.target), None
    )
    return replace(value, through=(module, fn, site)) if site is not None else value


def _through(
    how: RegionRef, path: str, site: CallSite | Entry, callee: _Fn
) -> RegionRef:
    """How ``callee`` is reached: as the function making the call ``site`` (in the
    file ``path``) is, then through that call."""
    hop = Hop(path, site.line, site.col, f"{callee.fn.path}()")
    return replace(how, via=(*how.via, *callee.handoff, hop))


def _rebinds(package: ModuleSummary, name: str) -> bool:
    """Whether ``package`` binds the last part of its module ``name`` to something
    other than that module (a function it imports from it, under its name)."""
    attr = name.rpartition(".")[2]
    if attr in package.functions or attr in package.classes or attr in package.names:
        return True
    return package.imports.get(attr, name) != name


def _called_as(path: str) -> str | None:
    """The name calls of the function ``path`` are written with: a class's for
    its ``__init__`` (``Wrapper(step)``), the function's or method's own; None
    for another special method (``obj(x)`` names no method)."""
    owner, _, name = path.rpartition(".")
    if name == "__init__":
        return owner.rpartition(".")[2] or None
    return None if name.startswith("__") and name.endswith("__") else name


def _sites(module: ModuleSummary) -> Iterator[tuple[FunctionSummary | None, CallSite]]:
    """Every call site of a module, with the function that makes it."""
    for site in module.calls:
        yield None, site
    for fn in module.functions.values():
        for site in fn.calls:
            yield fn, site


def _before(
    site: CallSite, caller: FunctionSummary | None, cls: ClassSummary | None
) -> Arguments | None:
    """What a hand-off passes, where a name it passes is bound again later (``f =
    get_step(); f = Wrapper(f); ...; f = Other()``): the bindings made before the
    call, not the later ones (the wrapper itself among them). ``self.model`` of
    the caller's class ``cls`` (``self.model = Wrapper(self.model)`` in an ``if``,
    ``self.model = Other(self.model)`` in its ``elif``): the bindings the caller
    made before the call, else those of the class's other methods."""
    arguments = site.arguments
    if arguments is None or caller is None:
        return arguments

    def earlier(ref: Ref | None) -> Ref | None:
        if ref is None or ref.kind != "name":
            return ref
        head, _, attr = ref.target.partition(".")
        if head == "self" and cls is not None and attr in cls.attrs:
            return _attribute_before(site, caller, cls, attr) or ref
        if ref.target not in caller.names:
            return ref
        lines = caller.bound_at.get(ref.target, [])
        refs = caller.names[ref.target]
        if len(lines) != len(refs) or ref.target in caller.params:
            return ref
        kept = tuple(r for r, line in zip(refs, lines, strict=True) if line < site.line)
        return Ref("either", items=kept) if len(kept) < len(refs) else ref

    return Arguments(
        tuple(earlier(r) for r in arguments.positional),
        tuple((k, r) for k, r in ((k, earlier(r)) for k, r in arguments.keywords) if r),
    )


def _attribute_before(
    site: CallSite, caller: FunctionSummary, cls: ClassSummary, attr: str
) -> Ref | None:
    """What ``self.attr`` holds at the call ``site`` in ``caller``, a method of
    ``cls``: the bindings ``caller`` made before it, else those made in the other
    methods; None when the summary does not say where each binding is."""
    refs = cls.attrs[attr]
    places = cls.attrs_at.get(attr, [])
    if len(places) != len(refs):
        return None
    bound = list(zip(refs, places, strict=True))
    mine = [r for r, (fn, line) in bound if fn == caller.path and line < site.line]
    kept = mine or [
        Ref("scoped", fn, (r,)) for r, (fn, _) in bound if fn != caller.path
    ]
    return Ref("either", items=tuple(kept))


def _handing(site: CallSite) -> str:
    """A hand-off as a chain shows it: ``Wrapper(step)``, ``Wrapper(step, ...)``
    (keywords too), ``capture(fn=step)``."""
    arguments = site.arguments or Arguments()
    shown = [_shown(r) if r is not None else "..." for r in arguments.positional]
    if shown and arguments.keywords:
        shown.append("...")
    elif not shown:
        shown = [f"{k}={_shown(r)}" for k, r in arguments.keywords]
    return f"{site.callee}({', '.join(shown)})"


def _shown(ref: Ref) -> str:
    """A value passed, briefly: ``step``, ``Model(...)``, ``[...]``, ``lambda``."""
    if ref.kind == "name":
        return ref.target
    if ref.kind == "instance":
        return f"{ref.target}(...)"
    return {"calls": "lambda", "element": "...[...]"}.get(ref.kind, "[...]")


def _memoises(decorator: _Fn) -> bool:
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


def _functions(found: list[_Fn]) -> str:
    """The functions as a reason names them: `pkg.mod.fn`, `pkg.mod.Cls.method`."""
    return ", ".join(f"`{t.module.name}.{t.fn.path}`" for t in found)


def _modules(found: list[_Fn]) -> str:
    return ", ".join(f"`{t.module.name}`" for t in found)


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
_MARKS = "".join(_SLOT_CODES)


def _local_names(module: ModuleSummary, names: Iterable[str]) -> dict[str, str]:
    """The names the code of ``module`` may call each of ``names`` by, with the
    one each stands for: itself, and what it is imported as (``import X as Y``)."""
    wanted = set(names)
    found = {name: name for name in wanted}
    for local, qualified in module.imports.items():
        name = qualified.rpartition(".")[2]
        if name in wanted:
            found[local] = name
    return found


def _positional(fn: FunctionSummary) -> list[str]:
    """The parameters a call fills by position: a method's after ``self``."""
    names = fn.params[: fn.positional]
    method = "." in fn.path and "staticmethod" not in fn.decorators
    return names[1:] if method and names[:1] in (["self"], ["cls"]) else names


def site_of(entry: Entry, calls: list[CallSite]) -> CallSite | None:
    """The summary's record of a region call (what it passes)."""
    same = [c for c in calls if c.line == entry.line and c.callee == entry.callee]
    return next((c for c in same if c.col == entry.col), same[0] if same else None)


def _why(values: list[object], callee: str) -> _Opaque | None:
    """Why calling any of ``values`` runs no project function; None when the call
    is one the rules check where it is made (PyTorch, Python itself) or runs no
    code of its own (a class without ``__init__`` builds an instance)."""
    flat: list[object] = []
    todo = list(values)
    seen: set[int] = set()
    while todo:
        value = todo.pop(0)
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, _Items):
            todo.extend(value.items)
        else:
            flat.append(value)
    opaque = [v for v in flat if isinstance(v, _Opaque)]
    counted = [v for v in opaque if not _checked_at_call(v)]
    if counted:
        return counted[0]
    if opaque:
        return None
    for value in flat:
        if isinstance(value, _Cls) and value.instance:
            detail = f"`{value.cls.name}` defines no `forward` or `__call__`"
            return _Opaque(Reason.NOT_CALLABLE, detail)
        if isinstance(value, _Mod):
            detail = f"`{value.module.name}` is a module"
            return _Opaque(Reason.NOT_CALLABLE, detail)
    if any(isinstance(v, _Cls) for v in flat):
        return None
    return _Opaque(Reason.UNRESOLVED, f"`{callee}` could not be resolved")


def _arguments(fn: FunctionSummary, site: CompileSite) -> dict[str, str]:
    """The literal string a wrapper's parameters get at a site (or by default)."""
    found = dict(fn.defaults)
    for name, value in zip(fn.params[: fn.positional], site.positional, strict=False):
        if value is None:
            found.pop(name, None)
        else:
            found[name] = value
    for name, value in site.keywords:
        if value is None:
            found.pop(name, None)
        else:
            found[name] = value
    return found


__all__ = ["BUDGET", "Dropped", "Entry", "Loader", "Project"]
