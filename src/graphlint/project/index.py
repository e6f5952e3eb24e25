"""The project's modules, found under its source roots and summarised on demand.

``ModuleIndex.module(name)`` finds the file of a module the way an import would
from the roots (the root of the importing module first: sibling example folders may
each have a ``model.py``), has the loader summarise it (``project.summary``, in a
worker), and keeps the answer; ``prefetch`` and ``prefetch_calls`` have the modules
a resolution will ask for next summarised together. Resolution
(``project.reach``) asks this index and never reads a file itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from graphlint.diagnostics import CompileSite, Entry
from graphlint.notebook import is_notebook
from graphlint.project.summary import ModuleSummary
from graphlint.read import module_of, overlay_contents, real_path, source_root

# summarises a module's file (with its module name), or says None where it cannot
Loader = Callable[[Path, str], ModuleSummary | None]


_HOPS = 2  # packages re-exporting a name, followed ahead of the resolver


def _splits(prefix: str, rest: str) -> list[tuple[str, str, str]]:
    """Where the dotted name ``prefix.rest`` may be imported again, of the two
    modules ``_near(prefix)`` has summarised: (a module, the name looked up
    there, the rest after it), ``prefix`` itself first, then its package."""
    found: list[tuple[str, str, str]] = []
    if rest:
        head, _, tail = rest.partition(".")
        found.append((prefix, head, tail))
    package, _, last = prefix.rpartition(".")
    if package:
        found.append((package, last, rest))
    return found


def _bound(module: ModuleSummary, function: str | None, callee: str) -> list[str]:
    """``callee`` (dotted, as a region's code in ``function`` of ``module`` writes
    it) as the module's imports may name it: itself, and where its first name is a
    local of the function, that name written as what each of its bindings names
    (``model = build(cfg)`` before the region, ``model.step()`` in it:
    ``build.step``), which ``_callee_modules`` finds the files of."""
    first, dot, rest = callee.partition(".")
    summary = module.functions.get(function) if function is not None else None
    if summary is None or first in module.imports:
        return [callee]
    named = (ref.target for ref in summary.names.get(first, ()))
    return [callee, *(f"{target}{dot}{rest}" for target in named if target)]


class ModuleIndex:
    """The modules under ``roots``, summarised by ``load(path, module_name)`` when
    first asked for; ``prefetch`` has a batch of files summarised at once; the
    checked notebooks (in ``sources``) are found by their own module names."""

    def __init__(
        self,
        roots: Iterable[Path],
        load: Loader,
        prefetch: Callable[[list[tuple[Path, str]]], None] | None = None,
        sources: Sequence[Path] = (),
    ) -> None:
        # a root for each checked file, mostly the same few: each resolved once
        self.roots = list(dict.fromkeys(real_path(r) for r in dict.fromkeys(roots)))
        self.load = load
        self._prefetch = prefetch
        self._root_set = frozenset(self.roots)
        self._root_of_file: dict[str, Path | None] = {}
        self._modules: dict[tuple[Path, str], ModuleSummary | None] = {}
        # what ``module`` found, by the root preferred and the name; the root
        # orders it tries; how many loads are under way (their lookups may meet a
        # cycle, and are not kept)
        self._found: dict[tuple[Path | None, str], ModuleSummary | None] = {}
        self._order: dict[Path | None, list[Path]] = {}
        self._tried: dict[tuple[Path | None, str], list[Path]] = {}  # ``_holding``
        self._loading = 0
        self._root_of: dict[int, Path] = {}  # id(summary) -> the root it came from
        # the modules whose file gave no summary, with that file
        self.unsummarised: dict[str, Path] = {}
        self._listed: dict[Path, frozenset[str] | None] = {}  # names in a root
        self._unsaved: dict[Path, frozenset[str]] = {}  # what buffers add to it
        self._buffer_names: frozenset[str] | None = None  # the buffers' file names
        self._files: dict[tuple[Path, str], Path | None] = {}  # ``_file``'s answers
        self._heads: frozenset[str] | None = None  # what any root holds (``_nowhere``)
        self._unlistable = False  # a root could not be listed: it may hold anything
        # the roots that may hold each name (``_holds``), and those that could not
        # be listed, which may hold anything
        self._holders: dict[str, set[Path]] = {}
        self._anything: set[Path] = set()
        self.looked: set[Path] = set()  # folders whose entries a lookup depended on
        self.by_path: dict[str, ModuleSummary] = {}  # the summaries, by file
        # the checked notebooks, by their source root and module (``module_of``):
        # their own regions' calls resolve in them, as a script's do; no import
        # does (a notebook is not importable)
        self._notebooks = {
            (source_root(path), module_of(path)): real_path(path)
            for path in sources
            if is_notebook(path)
        }

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
        known = self._found.get((first, name), self)
        if known is not self:  # asked before, with no load under way then
            return known  # type: ignore[return-value]
        parts = name.split(".")
        if self._nowhere(parts[0], first):  # ``torch``: every root would say no
            return None
        found: ModuleSummary | None = None
        settled = not self._loading  # not a lookup a load in progress made
        for root in self._holding(first, parts[0]):
            key = (root, name)
            if key not in self._modules:
                self._modules[key] = None  # a cycle or a miss
                self._loading += 1
                try:
                    self._modules[key] = self._load(root, parts, name)
                finally:
                    self._loading -= 1
            found = self._modules[key]
            if found is not None:
                break
        if settled:
            self._found[(first, name)] = found
        return found

    def _roots_from(self, first: Path | None) -> list[Path]:
        """The source roots in the order a lookup preferring ``first`` tries them."""
        order = self._order.get(first)
        if order is None:
            order = [first, *(r for r in self.roots if r != first)] if first else []
            self._order[first] = order = order or self.roots
        return order

    def _holding(self, first: Path | None, head: str) -> list[Path]:
        """The roots a lookup preferring ``first`` tries for a module under ``head``:
        those that may hold it (``_holds``; elsewhere ``_load`` would find no
        file), in order. Kept by both: a project's modules share a few heads."""
        key = (first, head)
        found = self._tried.get(key)
        if found is None:
            order = self._roots_from(first)
            found = self._tried[key] = [r for r in order if self._holds(r, head)]
        return found

    def _load(self, root: Path, parts: list[str], name: str) -> ModuleSummary | None:
        candidate = self._file(root, parts)
        if candidate is None:
            return None
        summary = self.load(candidate, name)
        if summary is not None:
            self._root_of[id(summary)] = root
            self.by_path.setdefault(summary.path, summary)
        else:
            self.unsummarised.setdefault(name, candidate)
        return summary

    def prefetch(self, entries: Iterable[Entry], sites: Iterable[CompileSite]) -> None:
        """Have the modules resolution will load first summarised together (the
        loader's ``prefetch``): the modules of the region calls, then what their
        callees name through those modules' imports, and the modules of the
        wrappers compile sites name. A guess: anything else loads when asked."""
        if self._prefetch is None:
            return
        entries = list(entries)
        first = [(e.module, self.root_of_file(e.path)) for e in entries]
        self._prefetch([m for name, root in first for m in self._next_load(name, root)])
        then: list[tuple[Path, str]] = []
        calls: list[tuple[ModuleSummary, str]] = []
        for entry, (name, root) in zip(entries, first, strict=True):
            module = self.module(name, prefer=root)  # summarised just now
            if module is None:
                continue
            for callee in _bound(module, entry.function, entry.callee):
                then.extend(self._callee_modules(module, callee))
                calls.append((module, callee))
        for site in sites:
            parts = site.compiler.split(".")
            near = self.root_of_file(site.path)
            for end in range(len(parts), 0, -1):
                then.extend(self._next_load(".".join(parts[:end]), near))
        self._prefetch(then)
        self._reexports(calls)

    def prefetch_calls(self, calls: Iterable[tuple[ModuleSummary, str]]) -> None:
        """Have the modules that ``calls`` (a module, and a callee as written there)
        name through their modules' imports summarised together: the breadth-first
        walk of ``reach`` would otherwise load them one at a time, each waiting for
        one worker."""
        if self._prefetch is None:
            return
        calls = list(calls)
        wanted = [
            found
            for module, callee in calls
            for found in self._callee_modules(module, callee)
        ]
        if wanted:
            self._prefetch(wanted)
        self._reexports(calls)

    def _reexports(self, calls: Sequence[tuple[ModuleSummary, str]]) -> None:
        """Have summarised, a hop at a time, the modules that a package just
        summarised for ``calls`` (``_callee_modules``) imports a callee's name from
        (``from pkg import f`` where ``pkg/__init__.py`` has ``from .impl import
        f``): the resolver would load each alone, waiting for one worker."""
        if self._prefetch is None:
            return
        names = [
            name for module, callee in calls for name in self._named_in(module, callee)
        ]
        for _ in range(_HOPS):
            hops = [hop for name in names for hop in self._reexported(*name)]
            wanted = [
                found
                for qualified, _, near in hops
                for found in self._near(qualified, near)
            ]
            if wanted:
                self._prefetch(wanted)
            names = [
                (*split, near)
                for qualified, rest, near in hops
                for split in _splits(qualified, rest)
            ]

    def prefetch_named(self, modules: Iterable[tuple[str, Path | None]]) -> None:
        """Have ``modules`` (a name, and the root to prefer) summarised together."""
        if self._prefetch is not None:
            self._prefetch(
                [m for name, root in modules for m in self._next_load(name, root)]
            )

    def _callee_modules(
        self, module: ModuleSummary, callee: str
    ) -> list[tuple[Path, str]]:
        """The files resolving ``callee`` (dotted, as written in ``module``) would
        summarise first: the module its first name is imported from, or that
        module's package."""
        base = module.imports.get(callee.partition(".")[0])
        if base is None:
            return []
        return self._near(base, self._root_of.get(id(module)))

    def _near(self, qualified: str, near: Path | None) -> list[tuple[Path, str]]:
        """The files resolving the dotted name ``qualified`` would summarise
        first: its module, or its package's."""
        return [
            *self._next_load(qualified, near),
            *self._next_load(qualified.rpartition(".")[0], near),
        ]

    def _named_in(
        self, module: ModuleSummary, callee: str
    ) -> list[tuple[str, str, str, Path | None]]:
        """Where ``callee`` (dotted, as written in ``module``) may be imported
        again, in a module ``_callee_modules`` had summarised: (that module, the
        name looked up there, the rest of the callee, the root to prefer)."""
        first, _, rest = callee.partition(".")
        base = module.imports.get(first)
        if base is None:
            return []
        near = self._root_of.get(id(module))
        return [(*split, near) for split in _splits(base, rest)]

    def _reexported(
        self, package: str, name: str, rest: str, near: Path | None
    ) -> list[tuple[str, str, Path | None]]:
        """What ``name`` stands for where the module ``package`` (summarised by the
        last prefetch, or before) imports it: the name it is imported from, the
        rest of the dotted name, and the root to prefer."""
        summary = self.module(package, prefer=near)
        target = summary.imports.get(name) if summary is not None else None
        if summary is None or target is None:
            return []
        return [(target, rest, self._root_of.get(id(summary)))]

    def _next_load(self, name: str, prefer: Path | None) -> list[tuple[Path, str]]:
        """The file ``module(name, prefer=...)`` would summarise next, if any."""
        if not name:
            return []
        parts = name.split(".")
        if self._nowhere(parts[0], prefer):
            return []
        for root in self._holding(prefer, parts[0]):
            if (root, name) in self._modules:
                return []  # loaded, or looked for and missing there
            found = self._file(root, parts)
            if found is not None:
                return [(found, name)]
        return []

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
        loose scripts. A checked notebook is found by its own module name. Each
        is looked for once (``_next_load`` asks, then ``module`` loads)."""
        key = (root, ".".join(parts))
        if key in self._files:
            return self._files[key]
        found = self._files[key] = self._find(root, parts, key[1])
        return found

    def _find(self, root: Path, parts: list[str], name: str) -> Path | None:
        if self._notebooks:
            notebook = self._notebooks.get((root, name))
            if notebook is not None:
                return notebook
        listed = self._listing(root)
        unsaved = overlay_contents()  # an editor's buffers are there too
        head = parts[0]
        if (
            listed is not None
            and head not in listed
            and f"{head}.py" not in listed
            and (not unsaved or head not in self._unsaved_in(root, unsaved))
        ):
            return None  # most lookups end here: a name no root holds (``torch``)
        for candidate in (
            root.joinpath(*parts).with_suffix(".py"),
            root.joinpath(*parts, "__init__.py"),
        ):
            self.looked.add(candidate.parent)
            if os.path.lexists(candidate):  # a FIFO too: the loader says why
                return candidate
            if unsaved and self._unsaved_file(candidate, unsaved):
                return candidate
        return None

    def _unsaved_file(self, candidate: Path, unsaved: Mapping[str, bytes]) -> bool:
        """Whether ``candidate``, which is not on disk, is an editor's buffer. Its
        real path ends in its own name (no link of that name is there to follow):
        only a name some buffer has is resolved."""
        if self._buffer_names is None:
            self._buffer_names = frozenset(os.path.basename(p) for p in unsaved)
        return (
            candidate.name in self._buffer_names
            and os.path.realpath(candidate) in unsaved
        )

    def _nowhere(self, head: str, prefer: Path | None) -> bool:
        """Whether no root (``prefer`` first) holds a module or package ``head``, as
        ``_file`` would find: most names looked up (``torch``, ``os``) are of none,
        and asking each of dozens of roots (one for each folder of loose scripts)
        was most of a lookup's time. Every root is listed once, the first time; a
        root that cannot be listed may hold anything."""
        if prefer is not None and prefer not in self._root_set:
            return False
        heads = self._heads if self._heads is not None else self._list_heads()
        return not self._unlistable and head not in heads

    def _list_heads(self) -> frozenset[str]:
        """List every root once: the names any holds (``_nowhere``), and which
        roots may hold each (``_holds``)."""
        holders = self._holders
        for root, name in self._notebooks:
            holders.setdefault(name.split(".")[0], set()).add(root)
        unsaved = overlay_contents()
        for root in self.roots:
            listed = self._listing(root)
            if listed is None:
                self._unlistable = True
                self._anything.add(root)
                continue
            names = {*listed, *(n.removesuffix(".py") for n in listed)}
            if unsaved:
                names.update(self._unsaved_in(root, unsaved))
            for found in names:
                holders.setdefault(found, set()).add(root)
        self._heads = frozenset(holders)
        return self._heads

    def _holds(self, root: Path, head: str) -> bool:
        """Whether ``root`` may hold the module or package ``head``: where it does
        not, ``_file`` finds nothing there for any module under ``head``. Asking
        each of dozens of roots (one for each folder of loose scripts) through
        ``_file`` was most of an edit's lookups."""
        if root not in self._root_set:
            return True
        if self._heads is None:
            self._list_heads()
        return root in self._anything or root in self._holders.get(head, ())

    def _listing(self, root: Path) -> frozenset[str] | None:
        """The names in ``root``, listed once (None: it cannot be listed)."""
        if root not in self._listed:
            self.looked.add(root)
            try:
                self._listed[root] = frozenset(os.listdir(root))
            except OSError:
                self._listed[root] = None
        return self._listed[root]

    def _unsaved_in(self, root: Path, unsaved: Mapping[str, bytes]) -> frozenset[str]:
        """The names the editor's buffers under ``root`` add to its listing (the
        first part of each one's path there, a module's without ``.py``), once per
        root: a server's edit looks up thousands of names in every root."""
        found = self._unsaved.get(root)
        if found is None:
            top = os.path.join(root, "")
            heads = {
                path[len(top) :].partition(os.sep)[0]
                for path in unsaved
                if path.startswith(top)
            }
            found = frozenset({*heads, *(h.removesuffix(".py") for h in heads)})
            self._unsaved[root] = found
        return found

    def root_of_file(self, path: str) -> Path | None:
        """The source root that holds ``path`` (the innermost)."""
        if path not in self._root_of_file:
            real = real_path(path)
            self._root_of_file[path] = next(
                (f for f in (real, *real.parents) if f in self._root_set), None
            )
        return self._root_of_file[path]


__all__ = ["Loader", "ModuleIndex"]
