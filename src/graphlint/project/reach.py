"""Phase two of the project analysis: from the calls made inside capture regions to
every project function they reach, with the chain of calls that reaches it.

What a call runs is resolved by ``graphlint.project.resolve`` over the module
summaries; a call whose target is not a project function ends the chain there,
with the reason (``Unfollowed``, for ``--show-reach`` and the summary line). Calls
of PyTorch, the standard library and builtins are not counted as not followed: the
rules see those calls where they are made.

A parameter holds what the calls that reach its function pass (``step(model,
loss_fn)`` in a region: ``model(x)`` in ``step`` runs the model's ``forward``), and
an ``__init__``'s parameters what the instances resolved were built with
(``Wrapper(fn)``: ``self.fn(x)`` runs ``fn``). This is a union over those calls, not
per call: a function reached again with a new argument is followed again.

The same union says whether a parameter is None under capture, or a device tensor,
and so which of its tests the calls settle: ``settle.Settling``, which ``Project``
extends with the reach.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

from graphlint.diagnostics import (
    HOST_MARK,
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
    Unfollowed,
)
from graphlint.library import Library
from graphlint.project import dynamo
from graphlint.project.index import Loader
from graphlint.project.resolve import (
    BoundCompiler,
    Dropped,
    Fn,
    Opaque,
    Param,
    call_sites,
    local_names,
    positional_params,
    ref_text,
)
from graphlint.project.settle import MARKS, Settling
from graphlint.project.summary import (
    MAYBE,
    Arguments,
    CallSite,
    ClassSummary,
    Compiler,
    FunctionSummary,
    ModuleSummary,
    Nullness,
    Ref,
)

_MAX_ROUNDS = 8  # rounds of hand-offs: a helper passing its parameter on is one more
_ENTRY = ""  # the file of a region call's reader key: (_ENTRY, its index)
_LIBRARY = "library"  # ``Fn.applied`` of code a library's callable runs


class Project(Settling):
    """Reach over the project's code: from the calls made inside capture regions to
    every project function they run (``reach``), resolving them as ``Resolver``
    does; what each call passes its callee's parameters is recorded as it is
    followed (``pass_arguments``, and what that settles: ``Settling``), and a
    function whose parameter gets something new is followed again."""

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
        # preview (``handoffs``): follow code handed over to a capture
        # (``_hand_over``) and what a factory returns
        super().__init__(
            roots,
            load,
            eager=eager,
            checks=checks,
            prefetch=prefetch,
            sources=sources,
            read=read,
            handoffs=handoffs,
            library=library,
        )
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
        self._unfollowed_in: dict[tuple[str, str], list[Unfollowed]] = {}
        # hand-offs: the region calls; the functions whose calls capture (they
        # hold a region, or hand a parameter on to one that does) and the classes
        # whose methods do; their parameters read under capture (an
        # ``__init__``'s: through ``self.fn``), and the functions whose callers
        # were looked for
        self._entries: list[Entry] = []
        self._capturing: set[tuple[str, str | None]] | None = None
        self._entry_regions: dict[tuple[str, str], RegionKey] = {}
        self._holder_classes: set[tuple[str, str]] = set()
        self._demanded: dict[Param, None] = {}
        self._searched: set[tuple[str, str]] = set()
        self._rounds = 0

    def _asked(
        self,
        key: Param,
        reader: tuple[str, str],
        module: ModuleSummary,
        fn: FunctionSummary,
    ) -> None:
        self._readers.setdefault(key, set()).add(reader)
        if self._captures(module, fn):  # its callers hand code to a capture
            self._demanded.setdefault(key)

    def _passed_new(self, key: Param, target: Fn, chain: RegionRef | None) -> None:
        """The reached functions that read the parameter are followed again
        (``_stale``), ``target`` itself through this call (``chain``) so that what
        it then reaches says where the value came from."""
        for reader in self._readers.get(key, ()):
            mine = reader == (target.module.path, target.fn.path)
            if self._stale.get(reader) is None:
                self._stale[reader] = chain if mine else None

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
                    RegionRef(
                        RegionKind.COMPILE,
                        site.line,
                        label,
                        site.path,
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
            if isinstance(value, BoundCompiler) and not site.called:
                found.append((value.label, True))
            elif isinstance(value, Fn) and "." not in value.fn.path:
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
    ) -> list[Fn]:
        """The project functions a call site runs, after recording what it passes
        them (``call``: the summary's record of the site, if known); one that runs
        none is recorded in ``into`` with the reason."""
        targets: list[Fn] = []
        why: Opaque | None
        if site.computed:
            why = Opaque(Reason.COMPUTED, "the callee is an expression")
        else:
            # with ``call``: what a library's callable runs of what it is given
            targets, why = self.resolve_why(
                module, fn, site.callee, (site.line, site.col), call=call, path=path
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
            why = Opaque(
                Reason.EAGER, f"{_functions(targets)} never runs under capture"
            )
        compiled = kind is RegionKind.COMPILE
        # what runs eagerly even though the capture calls it, and why
        eager: list[tuple[bool, Callable[[Fn], bool], Callable[[list[Fn]], str]]] = [
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
                why = Opaque(Reason.EAGER, said(gone))
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
    ) -> list[Fn]:
        """The project functions ``call`` runs where its callee resolved to
        ``values`` of a library that a model describes (``library``):
        ``checkpoint(step, x)`` runs ``step``; a Lightning module's
        ``optimizer_step`` its ``training_step``. Each keeps the call as a hand-off
        in its chain, and receives what the library passes (``_LIBRARY``)."""
        receiver = call.callee.rpartition(".")[0]
        receiver = "self" if receiver == "super()" else receiver
        found: list[Fn] = []
        for value in values:
            if not isinstance(value, Opaque) or not value.qualified:
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

    def captures(self, target: Fn) -> bool:
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
        self, why: Opaque, path: str, site: CallSite | Entry, how: RegionRef | None
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
                reached = site.region.reaching((hop,))
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
        queue: deque[tuple[Fn, RegionRef]] = deque()
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
        followed: dict[tuple[str, str], tuple[Fn, RegionRef]] = {}
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

    def _enter(self, index: int) -> list[tuple[Fn, RegionRef]]:
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
        found: list[tuple[Fn, RegionRef]] = []
        for target in targets:
            hop = Hop(entry.path, entry.line, entry.col, f"{target.fn.path}()")
            how = entry.region.reaching((*target.handoff, hop))
            found.append((target, self._inferred(how, target)))
        return found

    def _again(
        self, followed: dict[tuple[str, str], tuple[Fn, RegionRef]]
    ) -> list[tuple[Fn, RegionRef]]:
        """What to follow once the queue is empty: the reached functions and region
        calls that read a parameter that got a new argument, again; when there are
        none, the next round of hand-offs (``_hand_over``), then those."""
        while True:
            stale, self._stale = self._stale, {}
            found: list[tuple[Fn, RegionRef]] = []
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
        slots = dict(enumerate(positional_params(fn)))
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
    ) -> Iterator[tuple[ModuleSummary, FunctionSummary | None, CallSite, Fn]]:
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
            names = local_names(module, wanted)
            for caller, site in call_sites(module):
                called = names.get(site.callee.rpartition(".")[2])
                slots = wanted[called] if called is not None else objects
                if not slots or (passing and site.arguments is None):
                    continue
                for target in self.resolve(
                    module, caller, site.callee, (site.line, site.col)
                ):
                    if (target.module.path, target.fn.path) in slots:
                        yield module, caller, site, target

    def _pass_to_region(self, module: ModuleSummary, path: str) -> None:
        """What the calls, in its own module, of a function that holds a region
        (or is one) pass to its parameters: ``step(model, x)`` of
        ``@torch.compile(...) def step(model, x)``, so that the region's
        ``model(x)`` reaches the model's code."""
        root = module.functions.get(path)
        if root is None or not root.params:
            return
        target = Fn(module, root)
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

    def _calls_of(self, target: Fn, how: RegionRef) -> list[tuple[Fn, RegionRef]]:
        """The functions the calls of a reached function run, each with how it is
        reached; its edges and the calls it does not follow are recorded anew."""
        key = (target.module.path, target.fn.path)
        edges = self.edges[key] = []
        unfollowed = self._unfollowed_in[key] = []
        found: list[tuple[Fn, RegionRef]] = []
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
        sites: Iterable[RegionRef],
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


def _as_called(
    target: Fn, site: CallSite | Entry, call: CallSite | None
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
    index = slot.rstrip(MARKS)
    return f"{int(index) + 1}{slot[len(index) :]}" if index.isdigit() else slot


def _through(
    how: RegionRef, path: str, site: CallSite | Entry, callee: Fn
) -> RegionRef:
    """How ``callee`` is reached: as the function making the call ``site`` (in the
    file ``path``) is, then through that call."""
    hop = Hop(path, site.line, site.col, f"{callee.fn.path}()")
    return replace(how, via=(*how.via, *callee.handoff, hop))


def _called_as(path: str) -> str | None:
    """The name calls of the function ``path`` are written with: a class's for
    its ``__init__`` (``Wrapper(step)``), the function's or method's own; None
    for another special method (``obj(x)`` names no method)."""
    owner, _, name = path.rpartition(".")
    if name == "__init__":
        return owner.rpartition(".")[2] or None
    return None if name.startswith("__") and name.endswith("__") else name


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
    shown = [ref_text(r) if r is not None else "..." for r in arguments.positional]
    if shown and arguments.keywords:
        shown.append("...")
    elif not shown:
        shown = [f"{k}={ref_text(r)}" for k, r in arguments.keywords]
    return f"{site.callee}({', '.join(shown)})"


def _functions(found: list[Fn]) -> str:
    """The functions as a reason names them: `pkg.mod.fn`, `pkg.mod.Cls.method`."""
    return ", ".join(f"`{t.module.name}.{t.fn.path}`" for t in found)


def _modules(found: list[Fn]) -> str:
    return ", ".join(f"`{t.module.name}`" for t in found)


def site_of(entry: Entry, calls: list[CallSite]) -> CallSite | None:
    """The summary's record of a region call (what it passes)."""
    same = [c for c in calls if c.line == entry.line and c.callee == entry.callee]
    return next((c for c in same if c.col == entry.col), same[0] if same else None)


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


__all__ = ["Entry", "Loader", "Project"]
