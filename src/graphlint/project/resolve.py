"""Resolution over the module summaries: the project code a name, an attribute or
a call refers to, as far as the summaries say (``Resolver``).

Modules are summarised lazily, when a name first resolves into them. Resolution
never guesses: a value the summaries do not model is an ``Opaque``, which says why
(a library, a parameter nothing passes, dynamic dispatch). A parameter holds what
the calls recorded for it pass (``Resolver._passed``: ``graphlint.project.reach``
records them as it follows calls), and an ``__init__``'s parameters what the
instances resolved were built with. One resolution of a call has a budget of steps
(``BUDGET``), as a module can be written to make lookups fan out without bound.
"""

from __future__ import annotations

import builtins
import itertools
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import islice
from pathlib import Path
from typing import TypeVar

from graphlint.diagnostics import (
    Confidence,
    Hop,
    Reason,
    RegionRef,
)
from graphlint.facts.torchapi import (
    AUTOGRAD_FUNCTIONS,
    MODULE_CONTAINERS,
    TENSOR_METHODS,
)
from graphlint.files import is_test_module
from graphlint.library import Library, library_of
from graphlint.project import textsearch
from graphlint.project.bindings import Bindings
from graphlint.project.index import Loader, ModuleIndex
from graphlint.project.resolved import (
    CHECKED,
    RESOLVED,
    Hand,
    Module,
    Pass,
    Question,
    Read,
    Resolution,
    Subclasses,
    Unsummarised,
    same,
    same_passed,
)
from graphlint.project.summary import (
    Arguments,
    CallSite,
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
    Ref,
)
from graphlint.read import module_of
from graphlint.settings import Setter

T = TypeVar("T")


_MAX_DEPTH = 24  # resolution steps for one name: ends chains too long to follow


BUDGET = 100_000  # steps for one call: real calls take tens


# at most this many overrides of a method are followed for an instance annotated
# with its class (more: the base is too common to say which runs)
_OVERRIDES = 8


_MAX_DERIVED = 64  # project classes derived from one library class, at most
_NOT_FOUND = object()  # a question this run has no answer to yet (``_answer``)


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
Handoff = tuple[Hop, ...]


# a call a lambda makes: the module and function that make the lambda, its record
Through = tuple[ModuleSummary, FunctionSummary | None, CallSite]


@dataclass(frozen=True)
class Fn:
    module: ModuleSummary
    fn: FunctionSummary
    handoff: Handoff = field(default=(), compare=False)
    # run by ``Fn.apply(...)`` of an autograd Function: its ``forward`` ("forward",
    # "forward()" where ``setup_context`` takes ``ctx`` instead), or its "backward";
    # by a library's callable, as its model says (``reach``'s ``_LIBRARY``)
    applied: str = field(default="", compare=False)
    # called by a lambda's call (``lambda: fn(n, counts)``): that call, in the
    # function that makes the lambda, passes its parameters
    through: Through | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Built:
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
class Cls:
    module: ModuleSummary
    cls: ClassSummary
    instance: bool
    handoff: Handoff = field(default=(), compare=False)
    # ``self`` in a method of ``cls``: an instance of it or of any subclass, whose
    # overrides its methods' calls run too
    open: bool = False
    # open because a parameter or a return is annotated with ``cls``: the
    # overrides are followed only where few classes define one (``_OVERRIDES``)
    declared: bool = False
    # an instance of a dataclass made where resolution saw it (``Spec(module=M)``)
    built: Built | None = None
    through: Through | None = field(default=None, compare=False)  # as ``Fn``'s


@dataclass(frozen=True)
class Mod:
    module: ModuleSummary


@dataclass(frozen=True)
class Items:
    items: tuple[object, ...]


def _handed(value: object, hops: Handoff) -> object:
    """``value`` as passed through the hand-offs ``hops`` (outermost first)."""
    if isinstance(value, (Fn, Cls)):
        return replace(value, handoff=(*hops, *value.handoff))
    if isinstance(value, Items):
        return Items(tuple(_handed(item, hops) for item in value.items))
    return value


@dataclass(frozen=True)
class Super:
    module: ModuleSummary
    cls: ClassSummary


@dataclass(frozen=True)
class Opaque:
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
    handoff: Handoff = field(default=(), compare=False)

    def attribute(self, attr: str) -> Opaque:
        if self.local and attr in TENSOR_METHODS:
            return Opaque(self.reason, self.detail, f"torch.Tensor.{attr}")
        qualified = f"{self.qualified}.{attr}" if self.qualified else ""
        return Opaque(self.reason, self.detail, qualified, blocked=self.blocked)


# outside the project, but not "not followed": the rules check these calls where they
# are made (PyTorch), or they are Python itself
_CHECKED_AT_CALL = frozenset({"torch", "builtins", *sys.stdlib_module_names})


_BUILTINS = frozenset(dir(builtins))


def is_opaque(value: object) -> bool:
    """A value resolution cannot follow into project code."""
    return isinstance(value, Opaque)


def _checked_at_call(value: Opaque) -> bool:
    return value.qualified.split(".", 1)[0] in _CHECKED_AT_CALL


def _unsummarised_module(name: str, blocked: Path) -> Opaque:
    detail = f"module `{name}` could not be summarised"
    return Opaque(Reason.UNSUMMARISED, detail, blocked=blocked)


@dataclass(frozen=True)
class BoundCompiler:
    """A module-level name bound to a CUDA-graph compiler: its label."""

    label: str


# a function and one of its parameters, by file and function path
Param = tuple[str, str, str]


@dataclass(frozen=True)
class Passed:
    """An argument a call passes, with the code it is resolved in; ``handoff``:
    the call, where it hands code over to a capture (not part of its identity)."""

    module: ModuleSummary
    fn: FunctionSummary | None
    ref: Ref
    handoff: Handoff = field(default=(), compare=False)


# calls that return a copy of their first argument (``replace``: with some fields
# changed, so what the copy's fields hold is any construction's)
_COPIES = frozenset({"dataclasses.replace", "copy.copy", "copy.deepcopy"})


MAX_PASSED = 16  # arguments kept per parameter: a union, not a call-by-call trace


_PREFETCHED = 8  # files a text search has summarised together, at a time


_MAX_SUPER = 4  # ``super().__init__`` calls GL407 follows up from a constructor


# why a call ``x.attr(...)`` resolved to nothing that may be because the resolver
# cannot type ``x``: then what the project installs as ``attr`` is asked (preview)
_UNTYPED = frozenset(
    {Reason.PARAMETER, Reason.UNTRACKED, Reason.UNRESOLVED, Reason.ATTRIBUTE}
)


_MAX_INSTALLED = 4  # callables installed as one attribute, at most, to follow it


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


def untracked_value(fn: FunctionSummary, name: str) -> Opaque:
    """The value of a parameter or local that the summaries do not model."""
    if name in fn.params:
        detail = f"`{name}` is a parameter of `{fn.path}`"
        return Opaque(Reason.PARAMETER, detail, local=True)
    detail = f"the value of `{name}` in `{fn.path}` is not tracked"
    return Opaque(Reason.UNTRACKED, detail, local=True)


def _by_lambda(
    value: object, module: ModuleSummary, fn: FunctionSummary | None, ref: Ref
) -> object:
    """``value`` as the lambda's call ``ref`` (a callee with its line) runs it: with
    that call's record, in the function that makes the lambda."""
    if not ref.line or not isinstance(value, (Fn, Cls)):
        return value
    calls = fn.calls if fn is not None else module.calls
    site = next(
        (c for c in calls if c.line == ref.line and c.callee == ref.target), None
    )
    return replace(value, through=(module, fn, site)) if site is not None else value


def _rebinds(package: ModuleSummary, name: str) -> bool:
    """Whether ``package`` binds the last part of its module ``name`` to something
    other than that module (a function it imports from it, under its name)."""
    attr = name.rpartition(".")[2]
    if attr in package.functions or attr in package.classes or attr in package.names:
        return True
    return package.imports.get(attr, name) != name


def call_sites(
    module: ModuleSummary,
) -> Iterator[tuple[FunctionSummary | None, CallSite]]:
    """Every call site of a module, with the function that makes it."""
    for site in module.calls:
        yield None, site
    for fn in module.functions.values():
        for site in fn.calls:
            yield fn, site


def ref_text(ref: Ref) -> str:
    """A value passed, briefly: ``step``, ``Model(...)``, ``[...]``, ``lambda``."""
    if ref.kind == "name":
        return ref.target
    if ref.kind == "instance":
        return f"{ref.target}(...)"
    return {"calls": "lambda", "element": "...[...]"}.get(ref.kind, "[...]")


def local_names(module: ModuleSummary, names: Iterable[str]) -> dict[str, str]:
    """The names the code of ``module`` may call each of ``names`` by, with the
    one each stands for: itself, and what it is imported as (``import X as Y``)."""
    wanted = set(names)
    found = {name: name for name in wanted}
    for local, qualified in module.imports.items():
        name = qualified.rpartition(".")[2]
        if name in wanted:
            found[local] = name
    return found


def positional_params(fn: FunctionSummary) -> list[str]:
    """The parameters a call fills by position: a method's after ``self``."""
    names = fn.params[: fn.positional]
    method = "." in fn.path and "staticmethod" not in fn.decorators
    return names[1:] if method and names[:1] in (["self"], ["cls"]) else names


def _why(values: list[object], callee: str) -> Opaque | None:
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
        if isinstance(value, Items):
            todo.extend(value.items)
        else:
            flat.append(value)
    opaque = [v for v in flat if isinstance(v, Opaque)]
    counted = [v for v in opaque if not _checked_at_call(v)]
    if counted:
        return counted[0]
    if opaque:
        return None
    for value in flat:
        if isinstance(value, Cls) and value.instance:
            detail = f"`{value.cls.name}` defines no `forward` or `__call__`"
            return Opaque(Reason.NOT_CALLABLE, detail)
        if isinstance(value, Mod):
            detail = f"`{value.module.name}` is a module"
            return Opaque(Reason.NOT_CALLABLE, detail)
    if any(isinstance(v, Cls) for v in flat):
        return None
    return Opaque(Reason.UNRESOLVED, f"`{callee}` could not be resolved")


class Resolver:
    """What the names, attributes and calls of the project's code refer to, over
    the summaries of the modules under its source roots (``index``), made on demand
    by ``load(path, module_name)``, which says None when a module cannot be
    summarised. ``handoffs``: in preview, also what the project installs on
    attributes (``_installed``) and the subclasses of library classes; ``sources``
    (read with ``read``) are the files those searches read."""

    def __init__(
        self,
        roots: Iterable[Path],
        load: Loader,
        *,
        prefetch: Callable[[list[tuple[Path, str]]], None] | None = None,
        sources: Sequence[Path] = (),
        read: Callable[[Path], bytes | None] = lambda path: None,
        handoffs: bool = False,
        library: Library | None = None,
    ) -> None:
        # the modules, found and summarised (``self.index.module(name)``)
        self.index = ModuleIndex(roots, load, prefetch, sources)
        self.handoffs = handoffs
        # what library callables run of what they are given (``_library_runs``)
        self.library = library if library is not None else library_of(())
        # what the resolution under way reads and does, where it is to be kept
        # (``graphlint.project.resolved``)
        self._record: Resolution | None = None
        self.sources = sources
        self._read = read
        self._steps: int | None = None  # of the resolution under way
        self.abandoned: list[Dropped] = []  # calls over the budget, in order found
        # the arguments passed to each parameter; the reached function being
        # followed (what its resolutions find is recorded for it, ``_asked``)
        self._passed: dict[Param, list[Passed]] = {}
        self._reading: tuple[str, str] | None = None
        # a search of calls (``calls_of``) is under way: what the constructions it
        # resolves pass is not recorded, so that it changes nothing reach finds
        self._searching = False
        self._bindings = Bindings(is_opaque)
        self._library_subclasses: dict[
            str, list[tuple[ModuleSummary, ClassSummary]]
        ] = {}
        self._subclasses: dict[
            tuple[str, str, str], list[tuple[ModuleSummary, ClassSummary]]
        ] = {}
        # the constructions of dataclasses found in the project, by class
        self._built: dict[tuple[str, str], list[Built]] = {}
        # installed callables, by attribute (``_installed``), and the hand-offs
        # that installed them (what they reach is inferred: medium confidence);
        # the hand-offs each reader followed
        self._installs: dict[str, list[Fn | Opaque]] = {}
        self._installing: set[Hop] = set()
        self._writes: dict[bytes, list[Path]] | None = None  # by ``_scan``
        self._import_words: dict[Path, frozenset[bytes]] | None = None  # by ``_scan``
        self.handed: dict[tuple[str, str], list[Hop]] = {}

    def _asked(
        self,
        key: Param,
        reader: tuple[str, str],
        module: ModuleSummary,
        fn: FunctionSummary,
    ) -> None:
        """``argument`` was asked what the parameter ``key`` of ``fn`` holds while
        ``reader`` is followed (reach records its readers, to follow them again
        when it is passed something new)."""

    def _passed_new(self, key: Param, target: Fn, chain: RegionRef | None) -> None:
        """The parameter ``key`` of ``target`` was passed something new, by a call
        that reaches ``target`` as ``chain`` says, where reach follows it (reach
        follows the functions that read the parameter again)."""

    # -- loading: ``self.index`` (``graphlint.project.index``) -----------------
    def function(
        self, module: ModuleSummary, qualname: str
    ) -> tuple[ModuleSummary, FunctionSummary] | None:
        """The function ``qualname`` ("step", "Model.forward", "Outer.Inner.run")
        names in ``module``: defined there, or a method a class there inherits."""
        if qualname in module.functions:
            return module, module.functions[qualname]
        for value in self.dotted(module, None, qualname):
            if isinstance(value, Fn):
                return value.module, value.fn
        return None

    def setters(self, name: str, near: Path | None = None) -> list[Setter]:
        """How calling ``name`` (qualified: a function, or a class's method as the
        instance's class names it) sets hyper-parameters of an optimizer it is
        given (GL407): through a parameter, or through an attribute of ``self``
        that the class's ``__init__`` (its own or inherited) stores a parameter in."""
        parts = name.split(".")
        for end in range(len(parts) - 1, 0, -1):
            module = self._module(".".join(parts[:end]), prefer=near)
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
                    return [Cls(module, cls, True, open=True)]
                if cls is not None:
                    return [Super(module, cls)]
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
                        return [Fn(module, nested)]
                    local = module.classes.get(f"{scope}.{name}")
                    if local is not None:  # a class defined in the function
                        return [Cls(module, local, False)]
                    if name in enclosing.names:  # also ``model: Transformer``
                        return self._bindings.values(
                            ("local", module, enclosing, name),
                            partial(self._local, module, enclosing, name, depth),
                            depth,
                        )
                    if name in enclosing.params:  # whatever the callers pass
                        return self.argument(module, enclosing, name, depth) or [
                            untracked_value(enclosing, name)
                        ]
                scope = scope.rpartition(".")[0]
        if name in module.functions:
            return [Fn(module, module.functions[name])]
        if name in module.classes:
            return [Cls(module, module.classes[name], False)]
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
            values.append(untracked_value(fn, name))
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
        if self._record is not None:
            held = tuple(self._passed.get(key, ()))
            self._record.events.append(Read(key, held, module, fn))
        if self._reading is not None:
            self._asked(key, self._reading, module, fn)
        passed = self._passed.get(key)
        if not passed:
            return []
        return self._bindings.values(  # ``f(model)`` inside ``f``: a cycle
            ("parameter", module, fn, name),
            partial(self._passed_values, passed, depth),
            depth,
        )

    def _passed_values(self, passed: list[Passed], depth: int) -> list[object]:
        values = [
            _handed(v, p.handoff)
            for p in passed
            for v in self.ref(p.module, p.fn, p.ref, depth + 1)
        ]
        if all(isinstance(v, Opaque) and not v.qualified for v in values):
            return []
        return values

    def pass_arguments(
        self,
        target: Fn,
        arguments: Arguments | None,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        chain: RegionRef | None = None,
        handoff: Handoff = (),
    ) -> None:
        """Record what a call of ``target`` made in ``fn`` passes to its
        parameters (``_passed_new`` is told of each new argument, with ``chain``:
        how the call reaches ``target``, where reach follows it). ``handoff``: the
        call, where it hands code over to a capture."""
        if arguments is None:
            return
        if self._record is not None:
            self._record.events.append(
                Pass(target, arguments, module, fn, chain, handoff)
            )
        callee = target.fn
        named = [
            *zip(positional_params(callee), arguments.positional, strict=False),
            *((k, r) for k, r in arguments.keywords if k in callee.params),
        ]
        for name, ref in named:
            if ref is None:
                continue
            key = (target.module.path, callee.path, name)
            passed = self._passed.setdefault(key, [])
            argument = Passed(module, fn, ref, handoff)
            if argument in passed:  # the hand-off of a call already passed
                index = passed.index(argument)
                if not handoff or passed[index].handoff:
                    continue
                passed[index] = argument
            elif len(passed) >= MAX_PASSED:
                continue
            else:
                passed.append(argument)
            self._bindings.changed()  # what the parameter holds
            self._passed_new(key, target, chain)

    def _unbound(
        self, module: ModuleSummary, fn: FunctionSummary | None, name: str
    ) -> Opaque:
        """Why ``name`` has no value the summaries model."""
        scope = fn.path if fn is not None else ""
        while scope:
            enclosing = module.functions.get(scope)
            if enclosing is not None and name in enclosing.untracked:
                return untracked_value(enclosing, name)
            scope = scope.rpartition(".")[0]
        if name in _BUILTINS:
            return Opaque(Reason.OUTSIDE, f"`{name}` is a builtin", f"builtins.{name}")
        if name in ("self", "super()"):
            detail = f"`{name}` where graphlint does not know the class"
            return Opaque(Reason.UNRESOLVED, detail)
        detail = f"`{name}` is bound nowhere in `{module.name}` that graphlint sees"
        return Opaque(Reason.UNRESOLVED, detail)

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
            found = self._module(".".join(parts[:cut]), near, prefer=prefer)
            if found is not None:
                values: list[object] = [Mod(found)]
                package = (  # ``from pkg import grads``: the module, or not
                    self._module(".".join(parts[: cut - 1]), near, prefer=prefer)
                    if 1 < cut == len(parts)
                    else None
                )
                if package is not None and _rebinds(package, found.name):
                    values = self.attribute(Mod(package), parts[cut - 1], depth + 1)
                for attr in parts[cut:]:
                    values = [
                        v
                        for value in values
                        for v in self.attribute(value, attr, depth + 1)
                    ]
                return values
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            blocked = self._unsummarised(prefix)
            if blocked is not None:
                return [_unsummarised_module(prefix, blocked)]
        detail = f"module `{parts[0]}` is not under the source roots"
        return [Opaque(Reason.OUTSIDE, detail, name)]

    # -- the index, as a kept resolution records what it asked -----------------------
    def _module(
        self,
        name: str,
        near: ModuleSummary | None = None,
        prefer: Path | None = None,
    ) -> ModuleSummary | None:
        """``self.index.module``, recorded for a kept resolution."""
        found = self.index.module(name, near, prefer=prefer)
        if self._record is not None:
            self._record.asked.append((Module(name, near, prefer), found))
        return found

    def _unsummarised(self, name: str) -> Path | None:
        """The file of the module ``name``, where it could not be summarised."""
        found = self.index.unsummarised.get(name)
        if self._record is not None:
            self._record.asked.append((Unsummarised(name), found))
        return found

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
                Items(
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
                if isinstance(v, Cls) and v.instance
                else replace(v, derived=True)
                if isinstance(v, Opaque)
                and self.handoffs
                and v.qualified.endswith(".()")
                and not _checked_at_call(v)
                else v
                for v in self.ref(module, fn, replace(ref, kind="instance"), depth + 1)
            ]
        if ref.kind == "element":
            found: list[object] = []
            for value in self.ref(module, fn, ref.items[0], depth + 1):
                if isinstance(value, Items):
                    found.extend(value.items)
                elif isinstance(value, Opaque):  # ``x[0]``: the reason carries over
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
                replace(v, built=None) if changed and isinstance(v, Cls) else v
                for v in (self.ref(module, fn, first, depth + 1) if first else [])
            ]
        if ref.target == "dict" or qualified in MODULE_CONTAINERS:
            return [
                Items(
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
                isinstance(value, Cls)
                and not value.instance
                and ref.arguments
                and not self._searching
            ):
                for init in self.called(value):  # ``Wrapper(fn)``: its ``__init__``
                    self.pass_arguments(init, ref.arguments, module, fn)
                if value.cls.dataclass:  # ``Spec(module=M)``: its fields hold these
                    built = Built(module, fn, ref.arguments)
                    found.append(replace(value, instance=True, built=built))
                    continue
            if self.handoffs and isinstance(value, Fn) and value.fn.made:
                # a factory that makes what it is passed
                found.extend(self._made(value, ref.arguments, module, fn, depth))
                continue
            if self.handoffs and isinstance(value, Fn) and value.fn.results:
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
        if not isinstance(value, Fn) or not value.fn.returns_class:
            return []
        declared = Ref("declared", value.fn.returns_class)
        found = self.ref(value.module, None, declared, depth + 1)
        return found if all(isinstance(v, Cls) for v in found) else []

    def _made(
        self,
        factory: Fn,
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
            zip(positional_params(factory.fn), arguments.positional, strict=False)
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
                if isinstance(value, Cls) and not value.instance:
                    if called:
                        found.append(replace(value, instance=True))
                    elif path not in instantiated:
                        found.append(value)
                elif not called:
                    found.append(value)
                elif isinstance(value, Opaque):
                    found.append(value.attribute("()") if value.qualified else value)
        return found

    def _field(
        self,
        value: Cls,
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
        made: list[Built],
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
            return [Opaque(Reason.UNTRACKED, detail)]
        return found

    def _constructions(self, module: ModuleSummary, cls: ClassSummary) -> list[Built]:
        """The calls, anywhere in the project, that make an instance of the
        dataclass ``cls`` (in preview: the files that name it are summarised);
        found once a run."""
        if not self.handoffs:
            return []
        key = (module.path, cls.name)
        known = self._built.get(key)
        if known is not None:
            return known
        self._built[key] = []  # a construction inside one of its own fields
        saved, self._reading = self._reading, None  # the search captures nothing
        try:  # a union, not a trace: the first few
            found = list(islice(self._made_at(module, cls), MAX_PASSED))
        finally:
            self._reading = saved
        self._built[key] = found
        return found

    def _made_at(self, module: ModuleSummary, cls: ClassSummary) -> Iterator[Built]:
        """The calls that make an instance of ``cls``: in its module, and in the
        project's files that name it."""
        short = cls.name.rpartition(".")[2]
        words = {module.name.rpartition(".")[2], short}
        found = self._naming({short: words}, how=textsearch.CALL)
        others = (m for m in found if m.path != module.path)
        for other in itertools.chain([module], others):
            names = local_names(other, [short])
            for caller, site in call_sites(other):
                if (
                    site.arguments is None
                    or site.callee.rpartition(".")[2] not in names
                ):
                    continue
                if any(
                    isinstance(target, Cls)
                    and not target.instance
                    and target.cls.name == cls.name
                    and target.module.path == module.path
                    for target in self.dotted(other, caller, site.callee)
                ):
                    yield Built(other, caller, site.arguments)

    @staticmethod
    def _result(value: object, callee: str) -> object | None:
        """What calling ``value`` gives, as far as the resolver tracks it: an
        instance of a project class; an opaque value (the reason carries over);
        nothing it models from a project function or instance."""
        if isinstance(value, Cls) and not value.instance:
            return replace(value, instance=True)
        if isinstance(value, Opaque):
            return value.attribute("()") if value.qualified else value
        if isinstance(value, (Fn, Cls)):
            detail = f"what `{callee}(...)` returns is not tracked"
            return Opaque(Reason.UNTRACKED, detail)
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
        if isinstance(value, Opaque) and value.derived:
            return self._derived(value, attr)
        if isinstance(value, Opaque):  # free: the budget counts the resolver's work
            return [value.attribute(attr)]
        self._step()
        if depth > _MAX_DEPTH:
            return self._bindings.too_deep()
        if isinstance(value, Items):
            # ``self.transformer.h`` on an ``nn.ModuleDict``: one of its members
            # (the summaries do not keep the keys: any member may be the one)
            return list(value.items)
        if isinstance(value, Mod):
            module = value.module
            if attr in module.compilers:
                return [BoundCompiler(module.compilers[attr])]
            if attr in module.functions:
                return [Fn(module, module.functions[attr])]
            if attr in module.classes:
                return [Cls(module, module.classes[attr], False)]
            if attr in module.names:
                return self._global(module, attr, depth)
            if attr in module.imports:
                return self._imported(module, attr, depth)
            sub = self._module(f"{module.name}.{attr}", module)
            if sub is not None:
                return [Mod(sub)]
            blocked = self._unsummarised(f"{module.name}.{attr}")  # ``pkg.big``
            if blocked is not None:
                return [_unsummarised_module(f"{module.name}.{attr}", blocked)]
            detail = f"module `{module.name}` defines no `{attr}`"
            return [Opaque(Reason.ATTRIBUTE, detail)]
        if isinstance(value, (Cls, Super)):
            found, library = self._hierarchy(value.module, value.cls)
            own = [] if isinstance(value, Super) else [(value.module, value.cls)]
            classes = [*own, *found]
            instance = isinstance(value, Super) or value.instance
            handoff = value.handoff if isinstance(value, Cls) else ()
            for module, cls in classes:
                if attr in cls.methods:
                    method = module.functions[cls.methods[attr]]
                    found_fn: list[object] = [Fn(module, method, handoff)]
                    if isinstance(value, Cls) and value.open:
                        found_fn.extend(self._overrides(value, attr))
                    return found_fn
                if attr in cls.dataclass and instance and isinstance(value, Cls):
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
                        found_fn.append(Fn(home, method, handoff, role))
                return found_fn
            if isinstance(value, Cls) and value.open:
                # ``self.forward`` in a base that leaves it to its subclasses
                overrides = self._overrides(value, attr, handoff)
                if overrides:
                    return overrides
            return [self._missing(value.cls, classes, library, attr)]
        if isinstance(value, Fn):  # ``outer.Inner``: defined in the function
            inner = f"{value.fn.path}.{attr}"
            if inner in value.module.classes:
                return [Cls(value.module, value.module.classes[inner], False)]
            if inner in value.module.functions:
                return [Fn(value.module, value.module.functions[inner])]
            detail = f"`{attr}` of the function `{value.fn.path}` is not tracked"
            return [Opaque(Reason.ATTRIBUTE, detail)]
        return []

    @staticmethod
    def _missing(
        cls: ClassSummary,
        classes: list[tuple[ModuleSummary, ClassSummary]],
        library: list[Opaque],
        attr: str,
    ) -> Opaque:
        """Why an attribute of a project class has no value the summaries model."""
        owner = next((c for _, c in classes if attr in c.untracked), None)
        if owner is not None:
            detail = f"the value of `{owner.name}.{attr}` is not tracked"
            return Opaque(Reason.UNTRACKED, detail)
        for base in library:  # inherited from a library class (``nn.Module``)
            return base.attribute(attr)
        detail = f"`{cls.name}` defines no `{attr}`"
        return Opaque(Reason.ATTRIBUTE, detail)

    def _derived(self, value: Opaque, attr: str) -> list[object]:
        """``attr`` of an instance declared as a library class (``pl_module:
        pl.LightningModule``): the methods of that name of the project classes
        derived from it, where at most ``_OVERRIDES`` define one; else the
        library's (whose model, if any, says what it runs)."""
        base = value.qualified.removesuffix(".()")
        found: list[object] = [
            Fn(module, module.functions[cls.methods[attr]])
            for module, cls in self._derived_from(base)
            if attr in cls.methods
        ]
        if len(found) > _OVERRIDES:
            detail = (
                f"{len(found)} classes derived from `{base}` define `{attr}`: too "
                "many to say which one runs"
            )
            return [Opaque(Reason.UNTRACKED, detail)]
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

    def _overrides(self, value: Cls, attr: str, handoff: Handoff = ()) -> list[object]:
        """The methods ``attr`` of the project classes derived from ``value``'s
        class, for an instance that may be of any of them (``self`` in a base, a
        parameter annotated with the base). For an annotation, where more than
        ``_OVERRIDES`` define one, the base is too common to say which runs: an
        opaque value says so."""
        found: list[object] = [
            Fn(sub_module, sub_module.functions[sub.methods[attr]], handoff)
            for sub_module, sub in self.subclasses(value.module, value.cls, attr)
            if attr in sub.methods
        ]
        if value.declared and len(found) > _OVERRIDES:
            detail = (
                f"{len(found)} classes derived from `{value.cls.name}` override "
                f"`{attr}`: too many to say which one runs"
            )
            return [Opaque(Reason.UNTRACKED, detail)]
        return found

    def subclasses(
        self, module: ModuleSummary, cls: ClassSummary, defining: str = ""
    ) -> list[tuple[ModuleSummary, ClassSummary]]:
        """``_subclasses_of``, recorded for a kept resolution. Found once a run, in
        the resolution that first asks, whose bindings under way it may read: that
        resolution is not kept, and a kept one that asks holds only where this
        run has found the same (``_holds``)."""
        if self._record is not None:
            known = self._subclasses.get((module.path, cls.name, defining))
            if known is None:
                self._record.keep = False
        found = self._subclasses_of(module, cls, defining)
        if self._record is not None:
            self._record.asked.append((Subclasses(module, cls, defining), found))
        return found

    def _subclasses_of(
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
    ) -> tuple[list[tuple[ModuleSummary, ClassSummary]], list[Opaque]]:
        """The project base classes of ``cls``, breadth first, and its bases from
        outside the project (``torch.nn.Module``)."""
        found: list[tuple[ModuleSummary, ClassSummary]] = []
        library: list[Opaque] = []
        todo = [(module, cls)]
        seen = {(module.path, cls.name)}
        while todo:
            mod, current = todo.pop(0)
            for base in current.bases:
                for value in self.dotted(mod, None, base):
                    if isinstance(value, Opaque) and value.qualified:
                        library.append(value)
                    if (
                        isinstance(value, Cls)
                        and (value.module.path, value.cls.name) not in seen
                    ):
                        seen.add((value.module.path, value.cls.name))
                        found.append((value.module, value.cls))
                        todo.append((value.module, value.cls))
        return found, library

    def called(self, value: object) -> Iterator[Fn]:
        """The project functions that calling ``value`` runs."""
        if isinstance(value, Fn):
            yield value
        elif isinstance(value, Items):
            for item in value.items:
                yield from self.called(item)
        elif isinstance(value, Cls):
            name = ("forward", "__call__") if value.instance else ("__init__",)
            for module, cls in [
                (value.module, value.cls),
                *self.bases(value.module, value.cls),
            ]:
                hit = next((cls.methods[n] for n in name if n in cls.methods), None)
                if hit is not None:
                    yield Fn(
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
    ) -> list[Fn]:
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
        call: CallSite | None = None,
        path: str = "",
    ) -> tuple[list[Fn], Opaque | None]:
        """``resolve``, and when it finds nothing to follow, why (None: nothing
        that counts as not followed, a call of PyTorch or of Python itself).
        ``call``: the summary's record of the call, made in the file ``path``,
        where what the call runs when the callee is a library's counts
        (``_library_runs``)."""
        kept = self._steps is None and not self.handoffs  # not inside another
        return self._budgeted(
            lambda: self._resolve(module, fn, callee, call, path, kept=kept),
            Dropped(module.path, *at, callee, guard),
            lambda why: ([], why),
        )

    def _budgeted(
        self,
        work: Callable[[], T],
        call: Dropped | None,
        failed: Callable[[Opaque], T],
    ) -> T:
        """``work`` within one resolution's budget; ``failed(why)`` when it goes
        over (and ``abandoned`` then has ``call``; None: a question that is not a
        call)."""
        if self._steps is not None:  # nested (a guard helper): the outer budget
            return work()
        self._steps = 0
        # what it finds holds for this resolution only
        self._bindings = Bindings(is_opaque)
        try:
            return work()
        except RecursionError:  # pathological import cycles: the call ends here
            detail = "resolving it recursed too deeply (an import cycle?)"
            return failed(Opaque(Reason.BUDGET, detail))
        except _OverBudget:
            if call is not None and not self._searching:
                self.abandoned.append(call)
            return failed(
                Opaque(Reason.BUDGET, f"resolving it took over {BUDGET:,} steps")
            )
        finally:
            self._steps = None
            self._bindings = Bindings(is_opaque)

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
        call: CallSite | None,
        path: str,
        *,
        kept: bool,
    ) -> tuple[list[Fn], Opaque | None]:
        """What the call runs, and why nothing where it runs nothing to follow;
        ``kept``: from a resolution kept (``graphlint.project.resolved``) where
        it holds, and kept for later where it can be."""
        if kept:
            found, why = self._recalled(module, fn, callee, call, path)
        else:
            found, why = self._targets(module, fn, callee, call, path)
        handed = tuple(hop for t in found for hop in t.handoff)
        if handed:
            self._hand(handed)
        return found, why

    def _hand(self, hops: tuple[Hop, ...]) -> None:
        """The function being followed was reached through the hand-offs ``hops``
        (each once, though targets are one)."""
        if self._record is not None:  # a resolution inside the one recorded
            self._record.events.append(Hand(hops))
        if self._reading is not None:
            known = self.handed.setdefault(self._reading, [])
            known.extend(hop for hop in dict.fromkeys(hops) if hop not in known)

    def _recalled(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        call: CallSite | None,
        path: str,
    ) -> tuple[list[Fn], Opaque | None]:
        """``_targets``, from the resolution kept for this call where everything
        it read holds (its reads and arguments passed done again), else resolved
        and kept."""
        key = RESOLVED.key(module, fn, callee, call, self._searching, self.library)
        known = RESOLVED.get(key)
        if (
            known is not None
            and known.module is module
            and known.fn is fn
            and known.call is call
            and known.path == path
            and self._holds(known)
        ):
            if not CHECKED:
                self._replay(known)
                return list(known.found), known.why
            fresh = self._recorded(module, fn, callee, call, path)
            if not known.agrees(fresh):
                raise AssertionError(
                    f"a kept resolution of {callee} in {path} differs from a new one"
                )
            return list(fresh.found), fresh.why
        fresh = self._recorded(module, fn, callee, call, path)
        if fresh.keep:
            RESOLVED.keep(key, fresh)
        return list(fresh.found), fresh.why

    def _recorded(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        call: CallSite | None,
        path: str,
    ) -> Resolution:
        """``_targets``, with what it read and did recorded."""
        record = self._record = Resolution(module, fn, call, path)
        try:
            record.found, record.why = self._targets(module, fn, callee, call, path)
        finally:
            self._record = None
        return record

    def _holds(self, known: Resolution) -> bool:
        """Whether what the kept resolution read holds now: each parameter holds
        what it held then, and each question gets the same answer (``_answer``:
        asked of the index, or of what this run found; nothing read for the reach,
        no step counted). The questions are asked in the resolution's order, up to
        the first whose answer differs: those a new resolution would ask first."""
        for event in known.events:
            if isinstance(event, Read) and not same_passed(
                event.held, self._passed.get(event.key, ())
            ):
                return False
        return all(
            same(answer, self._answer(question)) for question, answer in known.asked
        )

    def _answer(self, question: Question) -> object:
        """A kept resolution's question, answered now: the index's; a class's
        subclasses as this run found them, where it has (``_NOT_FOUND`` where
        not: the resolution that finds them reads its own bindings)."""
        if isinstance(question, Subclasses):
            module, cls, defining = question
            found = self._subclasses.get((module.path, cls.name, defining))
            return _NOT_FOUND if found is None else found
        if isinstance(question, Module):
            name, near, prefer = question
            return self.index.module(name, near, prefer=prefer)
        return self.index.unsummarised.get(question.name)

    def _replay(self, known: Resolution) -> None:
        """What the kept resolution did besides its answer, done again in its
        order: the parameters it read are read by the function being followed;
        the arguments it passed are passed; the hand-offs that resolutions inside
        it met are met."""
        for event in known.events:
            if isinstance(event, Read):
                if self._reading is not None:
                    self._asked(event.key, self._reading, event.module, event.fn)
            elif isinstance(event, Pass):
                self.pass_arguments(*event)
            else:
                self._hand(event.hops)

    def _library_runs(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        call: CallSite,
        path: str,
        values: list[object],
    ) -> list[Fn]:
        """The project functions ``call`` runs where its callee resolved to
        ``values`` of a library whose callables run what they are given: none
        here (the reach knows them)."""
        return []

    def _targets(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        call: CallSite | None,
        path: str,
    ) -> tuple[list[Fn], Opaque | None]:
        library = (  # what a library's callable runs of what the call gives it
            partial(self._library_runs, module, fn, call, path)
            if call is not None
            else None
        )
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
                found = [t for t in installed if isinstance(t, Fn)]
                if not found and library is not None:  # a library method installed
                    found = library([v for v in installed if isinstance(v, Opaque)])
        if found:
            return list(dict.fromkeys(found)), None
        return [], why

    # -- what the project installs on attributes (preview) ---------------------------
    def _installed(self, attribute: str) -> list[Fn | Opaque]:
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
            (t.module.path, t.fn.path) if isinstance(t, Fn) else t.qualified
            for t in found
        }
        if len(installed) > _MAX_INSTALLED:
            found.clear()
        return found

    def _installs_in(
        self, module: ModuleSummary, attribute: str
    ) -> Iterator[Fn | Opaque]:
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
                    f"{store.written} = {ref_text(store.ref)}",
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
                    items = value.items if isinstance(value, Items) else (value,)
                    for target in items:
                        if isinstance(target, Fn):
                            yield replace(target, handoff=(*target.handoff, hop))
                        elif isinstance(target, Opaque) and target.bound:
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

    def _inferred(self, how: RegionRef, target: Fn) -> RegionRef:
        """``how``, of medium confidence where ``target`` came through an installed
        callable (``_installed``): that the object it was installed on is the one
        called is inferred from the attribute's name alone."""
        if any(hop in self._installing for hop in target.handoff):
            return replace(how, confidence=Confidence.MEDIUM)
        return how

    @staticmethod
    def _ran_out(
        module: ModuleSummary, fn: FunctionSummary | None, callee: str
    ) -> Opaque:
        """Why a callee whose name is bound resolved to nothing: a parameter or
        local (``fn: Callable[...]``, ``h = h.float()``), else a chain too long."""
        head = callee.split(".", 1)[0]
        scope = fn.path if fn is not None else ""
        while scope:
            enclosing = module.functions.get(scope)
            if enclosing is not None and (
                head in enclosing.untracked or head in enclosing.params
            ):
                return untracked_value(enclosing, head)
            scope = scope.rpartition(".")[0]
        return Opaque(Reason.UNRESOLVED, f"`{callee}` could not be resolved")

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


__all__ = [
    "BUDGET",
    "MAX_PASSED",
    "BoundCompiler",
    "Built",
    "Cls",
    "Dropped",
    "Fn",
    "Handoff",
    "Items",
    "Mod",
    "Opaque",
    "Param",
    "Passed",
    "Resolver",
    "Super",
    "Through",
    "call_sites",
    "is_opaque",
    "local_names",
    "positional_params",
    "ref_text",
    "untracked_value",
]
