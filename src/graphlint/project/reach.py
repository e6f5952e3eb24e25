"""Phase two of the project analysis: from the calls made inside capture regions to
every project function they reach, with the chain of calls that reaches it.

Modules are summarised lazily, when a call first resolves into them, so a run reads
only what a region can reach. Resolution never guesses: a call whose target is not a
project function (a parameter of unknown type, a library, dynamic dispatch) ends the
chain there.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from graphlint.diagnostics import Confidence, Hop, RegionKind
from graphlint.facts import guards
from graphlint.facts.torchapi import MODULE_CONTAINERS
from graphlint.project.sites import CompileSite
from graphlint.project.summary import (
    ClassSummary,
    Compiler,
    FunctionSummary,
    ModuleSummary,
    Ref,
)

T = TypeVar("T")

_MAX_DEPTH = 24  # resolution steps for one name: ends cycles such as ``h = h.float()``
BUDGET = 100_000  # steps for one call: real calls take tens


class _OverBudget(Exception):
    """A resolution went over its budget."""


@dataclass(frozen=True)
class Entry:
    """A call made inside a capture region, as pass one of the engine found it."""

    path: str  # the file, as displayed
    module: str  # its dotted module name
    function: str | None  # path of the enclosing function ("Cls.method"), if any
    line: int
    col: int
    callee: str  # dotted, as written
    kind: str  # the region's RegionKind value
    label: str
    region_line: int
    confidence: str = "high"  # the region's Confidence value


@dataclass(frozen=True)
class Reached:
    """How a function comes to run under capture: its region and the calls to it."""

    kind: str
    label: str
    region_path: str
    region_line: int
    via: tuple[Hop, ...]
    confidence: str = "high"


# -- values of the tiny resolver -------------------------------------------------------
@dataclass(frozen=True)
class _Fn:
    module: ModuleSummary
    fn: FunctionSummary


@dataclass(frozen=True)
class _Cls:
    module: ModuleSummary
    cls: ClassSummary
    instance: bool


@dataclass(frozen=True)
class _Mod:
    module: ModuleSummary


@dataclass(frozen=True)
class _Items:
    items: tuple[object, ...]


@dataclass(frozen=True)
class _Super:
    module: ModuleSummary
    cls: ClassSummary


@dataclass(frozen=True)
class _Compiler:
    """A module-level name bound to a CUDA-graph compiler: its label."""

    label: str


Loader = Callable[[Path, str], "ModuleSummary | None"]


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
    ) -> None:
        self.roots = list(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))
        self.load = load
        self.eager = eager
        self.known = guards.CAPTURING_CHECKS | guards.TRUE_WHILE_CAPTURING | checks
        self._modules: dict[tuple[Path, str], ModuleSummary | None] = {}
        self._root_of: dict[int, Path] = {}  # id(summary) -> the root it came from
        self._helpers: set[str] = set()  # project functions that return the check
        self._steps: int | None = None  # of the resolution under way
        self.abandoned: list[tuple[str, str]] = []  # (file, callee) over the budget
        self._listed: dict[Path, frozenset[str] | None] = {}  # names in a root
        # what an imported wrapper's name resolves to, from a source root
        self._wrappers: dict[tuple[str, Path | None], list[object]] = {}

    # -- loading ---------------------------------------------------------------------
    def module(
        self,
        name: str,
        near: ModuleSummary | None = None,
        *,
        prefer: Path | None = None,
    ) -> ModuleSummary | None:
        """The module ``name``, searched first under ``prefer`` or the root of the
        module that imports it (``near``): sibling example folders may each have a
        ``model.py``, and an import means the one beside it."""
        first = prefer or (self._root_of.get(id(near)) if near is not None else None)
        roots = [first, *(r for r in self.roots if r != first)] if first else self.roots
        parts = name.split(".")
        for root in roots:
            key = (root, name)
            if key not in self._modules:
                self._modules[key] = None  # a cycle or a miss
                self._modules[key] = self._load(root, parts, name)
            found = self._modules[key]
            if found is not None:
                return found
        return None

    def _load(self, root: Path, parts: list[str], name: str) -> ModuleSummary | None:
        candidate = self._file(root, parts)
        if candidate is None:
            return None
        summary = self.load(candidate, name)
        if summary is not None:
            self._root_of[id(summary)] = root
        return summary

    def file_of(self, name: str, prefer: Path | None = None) -> Path | None:
        """The file that holds the module ``name``, as ``module`` finds it, without
        reading it."""
        parts = name.split(".")
        roots = [prefer, *self.roots] if prefer is not None else self.roots
        return next(
            (f for f in (self._file(r, parts) for r in roots) if f is not None), None
        )

    def _file(self, root: Path, parts: list[str]) -> Path | None:
        """``root/a/b.py`` or ``root/a/b/__init__.py`` for the module ``a.b``. The
        names in a root are listed once: most lookups (``torch``, ``pytest``) are
        of packages that no root holds, and there are as many roots as folders of
        loose scripts."""
        if root not in self._listed:
            try:
                self._listed[root] = frozenset(os.listdir(root))
            except OSError:
                self._listed[root] = None
        listed = self._listed[root]
        if listed is not None and not {parts[0], f"{parts[0]}.py"} & listed:
            return None
        for candidate in (
            root.joinpath(*parts).with_suffix(".py"),
            root.joinpath(*parts, "__init__.py"),
        ):
            if os.path.lexists(candidate):  # a FIFO too: the loader says why
                return candidate
        return None

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

    def root_of_file(self, path: str) -> Path | None:
        """The source root that holds ``path`` (the innermost)."""
        real = Path(os.path.realpath(path))
        holding = [r for r in self.roots if real.is_relative_to(r)]
        return max(holding, key=lambda r: len(r.parts)) if holding else None

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
            return []
        if fn is not None:
            if name == "self":
                cls = self.class_of(module, fn)
                return [_Cls(module, cls, True)] if cls is not None else []
            if name == "super()":
                cls = self.class_of(module, fn)
                return [_Super(module, cls)] if cls is not None else []
            scope: str | None = fn.path
            while scope:
                # a class body's names are not visible from its methods
                enclosing = module.functions.get(scope)
                if enclosing is not None:
                    nested = module.functions.get(f"{scope}.{name}")
                    if nested is not None:
                        return [_Fn(module, nested)]
                    if name in enclosing.names:  # also ``model: Transformer``
                        return self.refs(
                            module, enclosing, enclosing.names[name], depth
                        )
                    if name in enclosing.params:
                        return []  # an argument: whatever the caller passes
                scope = scope.rpartition(".")[0]
        if name in module.functions:
            return [_Fn(module, module.functions[name])]
        if name in module.classes:
            return [_Cls(module, module.classes[name], False)]
        if name in module.names:
            return self.refs(module, None, module.names[name], depth)
        if name in module.imports:
            return self.qualified(module.imports[name], depth, near=module)
        return []

    def qualified(
        self,
        name: str,
        depth: int = 0,
        near: ModuleSummary | None = None,
        prefer: Path | None = None,
    ) -> list[object]:
        """A dotted name from an import: the longest prefix that is a project module,
        then attributes inside it."""
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            found = self.module(".".join(parts[:cut]), near, prefer=prefer)
            if found is not None:
                values: list[object] = [_Mod(found)]
                for attr in parts[cut:]:
                    values = [
                        v
                        for value in values
                        for v in self.attribute(value, attr, depth + 1)
                    ]
                return values
        return []

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
            return []
        if ref.kind == "name":
            return self.dotted(module, fn, ref.target, depth + 1)
        if ref.kind == "items":
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
        if ref.kind == "element":
            found: list[object] = []
            for value in self.ref(module, fn, ref.items[0], depth + 1):
                if isinstance(value, _Items):
                    found.extend(value.items)
            return found
        # an instance: of a project class, or a container of items
        if (
            ref.target == "dict"
            or self.qualify(module, ref.target) in MODULE_CONTAINERS
        ):
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
        return [
            _Cls(value.module, value.cls, True)
            for value in self.dotted(module, fn, ref.target, depth + 1)
            if isinstance(value, _Cls) and not value.instance
        ]

    def dotted(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        dotted: str,
        depth: int = 0,
    ) -> list[object]:
        if depth > _MAX_DEPTH:
            return []
        head, *rest = dotted.split(".")
        values = self.lookup(module, fn, head, depth + 1)
        for attr in rest:
            values = [v for value in values for v in self.attribute(value, attr, depth)]
        return values

    def attribute(self, value: object, attr: str, depth: int = 0) -> list[object]:
        self._step()
        if depth > _MAX_DEPTH:
            return []
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
                return self.refs(module, None, module.names[attr], depth)
            if attr in module.imports:
                return self.qualified(module.imports[attr], depth + 1, near=module)
            sub = self.module(f"{module.name}.{attr}", module)
            return [_Mod(sub)] if sub is not None else []
        if isinstance(value, (_Cls, _Super)):
            classes = (
                self.bases(value.module, value.cls)
                if isinstance(value, _Super)
                else [(value.module, value.cls), *self.bases(value.module, value.cls)]
            )
            for module, cls in classes:
                if attr in cls.methods:
                    return [_Fn(module, module.functions[cls.methods[attr]])]
                if attr in cls.attrs and (isinstance(value, _Super) or value.instance):
                    init = module.functions.get(f"{cls.name}.__init__")
                    return self.refs(module, init, cls.attrs[attr], depth)
        return []

    def class_of(
        self, module: ModuleSummary, fn: FunctionSummary
    ) -> ClassSummary | None:
        owner = fn.path.rpartition(".")[0]
        return module.classes.get(owner) if owner else None

    def bases(
        self, module: ModuleSummary, cls: ClassSummary
    ) -> list[tuple[ModuleSummary, ClassSummary]]:
        found: list[tuple[ModuleSummary, ClassSummary]] = []
        todo = [(module, cls)]
        seen = {(module.path, cls.name)}
        while todo:
            mod, current = todo.pop(0)
            for base in current.bases:
                for value in self.dotted(mod, None, base):
                    if (
                        isinstance(value, _Cls)
                        and (value.module.path, value.cls.name) not in seen
                    ):
                        seen.add((value.module.path, value.cls.name))
                        found.append((value.module, value.cls))
                        todo.append((value.module, value.cls))
        return found

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
                    yield _Fn(module, module.functions[hit])
                    return

    def resolve(
        self, module: ModuleSummary, fn: FunctionSummary | None, callee: str
    ) -> list[_Fn]:
        """The project functions a call of ``callee`` runs. One resolution has a
        budget of steps (``BUDGET``): a module can be written to make name lookups
        fan out without bound, and this runs in the main process. A call over the
        budget is not followed, and ``abandoned`` says where it was."""
        return self._budgeted(
            lambda: self._resolve(module, fn, callee), module.path, callee
        )

    def _budgeted(self, work: Callable[[], list[T]], path: str, name: str) -> list[T]:
        """``work`` within one resolution's budget; nothing when it goes over."""
        if self._steps is not None:  # nested (a guard helper): the outer budget
            return work()
        self._steps = 0
        try:
            return work()
        except RecursionError:  # pathological import cycles: the call ends here
            return []
        except _OverBudget:
            self.abandoned.append((path, name))
            return []
        finally:
            self._steps = None

    # -- compile wrappers from other modules ---------------------------------------
    def compiled(self, sites: Iterable[CompileSite]) -> list[Entry]:
        """The sites whose imported wrapper compiles with CUDA graphs, as region
        entries for what they compile."""
        found: list[Entry] = []
        roots: dict[str, Path | None] = {}  # of each file: many sites share one
        for site in sites:
            if site.path not in roots:
                roots[site.path] = self.root_of_file(site.path)
            work = partial(self._wrapper, site, roots[site.path])
            values = self._budgeted(work, site.path, site.compiler)
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
                    RegionKind.COMPILE.value,
                    label,
                    site.line,
                    (Confidence.HIGH if sure else Confidence.MEDIUM).value,
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
        self, module: ModuleSummary, fn: FunctionSummary | None, callee: str
    ) -> list[_Fn]:
        found = [
            t for value in self.dotted(module, fn, callee) for t in self.called(value)
        ]
        return list(dict.fromkeys(found))

    # -- guards and eager functions ----------------------------------------------------
    def is_check(
        self,
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        depth: int = 0,
    ) -> bool:
        """Whether calling ``callee`` is true whenever the stream is capturing: a
        capture check, directly or through a project helper whose return value is
        one (``return torch.cuda.is_current_stream_capturing()``, not ``return not
        torch.cuda.is_available()``)."""
        if self.qualify(module, callee) in self.known:
            return True
        if depth > 3:
            return False
        for target in self.resolve(module, fn, callee):
            if not target.fn.returns:
                continue

            def inner(name: str, target: _Fn = target) -> bool:
                return self.is_check(target.module, target.fn, name, depth + 1)

            if guards.under_capture(guards.decode(target.fn.returns), inner) is True:
                name = target.fn.path
                self._helpers.update({f"{target.module.name}.{name}", name})
                return True
        return False

    def guarded(self, target: _Fn, encoded: tuple[str, ...]) -> bool:
        """Whether a call under these guards never runs while capturing."""
        return bool(encoded) and guards.never_under_capture(
            [guards.decode(g) for g in encoded],
            lambda name: self.is_check(target.module, target.fn, name),
        )

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

    # -- reachability ----------------------------------------------------------------
    def reach(
        self, entries: Iterable[Entry], roots: set[tuple[str, str]]
    ) -> dict[str, dict[str, Reached]]:
        """Breadth first from the region calls: file -> function path -> how reached.
        ``roots`` are (module, function) pairs already analysed as regions."""
        queue: deque[tuple[_Fn, Reached]] = deque()
        for entry in entries:
            module = self.module(entry.module, prefer=self.root_of_file(entry.path))
            if module is None:
                continue
            fn = module.functions.get(entry.function) if entry.function else None
            for target in self.resolve(module, fn, entry.callee):
                hop = Hop(entry.path, entry.line, entry.col, f"{target.fn.path}()")
                queue.append(
                    (
                        target,
                        Reached(
                            entry.kind,
                            entry.label,
                            entry.path,
                            entry.region_line,
                            (hop,),
                            entry.confidence,
                        ),
                    )
                )
        reached: dict[str, dict[str, Reached]] = {}
        seen: set[tuple[str, str]] = set()
        while queue:
            target, how = queue.popleft()
            key = (target.module.path, target.fn.path)
            if (
                key in seen
                or (target.module.name, target.fn.path) in roots
                or self.is_eager(target)
            ):
                continue
            seen.add(key)
            reached.setdefault(target.module.path, {})[target.fn.path] = how
            for site in target.fn.calls:
                if self.guarded(target, site.guards):
                    continue
                for callee in self.resolve(target.module, target.fn, site.callee):
                    hop = Hop(
                        target.module.path, site.line, site.col, f"{callee.fn.path}()"
                    )
                    queue.append(
                        (
                            callee,
                            Reached(
                                how.kind,
                                how.label,
                                how.region_path,
                                how.region_line,
                                (*how.via, hop),
                                how.confidence,
                            ),
                        )
                    )
        return reached


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


__all__ = ["BUDGET", "Entry", "Loader", "Project", "Reached"]
