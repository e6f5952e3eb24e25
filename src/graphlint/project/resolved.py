"""Resolutions of calls kept from one reach to the next: a language server follows
the calls of every region of the project again at each edit, and most of them
resolve as they did.

A resolution (``Resolver._resolve``: what a call in a function runs) reads the
module summaries, what the calls followed so far pass the parameters it meets
(``Resolver.argument``) and the module index; it may pass arguments itself (a
construction ``Wrapper(fn)`` passes ``fn`` to ``__init__``) and it tells the
reach which parameters the function being followed read (``Resolver._asked``). A
kept resolution (``Resolution``) records each of these as the resolution made
them: the parameters read, with what had been passed to each then; every question
put to the index (and for a class's subclasses), with its answer; the arguments
passed. It is taken again only
where the function is the same summary (by identity: an edited file's summary is a
new one) and every record holds in the run asking: each parameter holds what it
held then, and each question gets the same answer (asked again). Then the
arguments are passed again and the parameters reported read again, and the answer
is the one kept.

In preview nothing is kept: resolution there searches the project's files as text
(hand-offs, the callables installed on attributes, the constructions of a
dataclass, the classes derived from a library's), which any edit may change. Nor
is a resolution over its budget kept, nor one inside another (its steps count
towards the outer budget), nor the one that first asks for a class's subclasses
in a run: it finds them reading its own bindings under way, and the run keeps
them for the others, so a kept resolution that asks for them holds only where the
run has found the same (``Resolver._answer``).

A kept resolution holds the summaries it read. Those of a file's earlier versions
are let go when a resolution of its new version is kept (``Resolutions.keep``).

``GRAPHLINT_CHECK_RESOLVED=1`` resolves every call whose kept resolution holds
afresh too, and fails where the two differ: any run may be checked so (the test
suite and checks of the eight real trees with region files edited found none).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from graphlint.diagnostics import Hop, RegionRef
from graphlint.project.summary import (
    Arguments,
    CallSite,
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
)

if TYPE_CHECKING:
    from graphlint.project.resolve import Fn, Opaque, Passed

# the resolutions kept, at most (each holds the summaries it read: a language
# server's edits make new ones); all are dropped when there are more
KEPT = 20_000

CHECKED = os.environ.get("GRAPHLINT_CHECK_RESOLVED") == "1"

Param = tuple[str, str, str]  # a parameter: file, function path, name


class Read(NamedTuple):
    """The parameter ``key`` of ``fn`` was read; it held ``held`` then."""

    key: Param
    held: tuple[Passed, ...]
    module: ModuleSummary
    fn: FunctionSummary


class Pass(NamedTuple):
    """``Resolver.pass_arguments``'s arguments, in its order."""

    target: Fn
    arguments: Arguments
    module: ModuleSummary
    fn: FunctionSummary | None
    chain: RegionRef | None
    handoff: tuple[Hop, ...]


class Hand(NamedTuple):
    """A resolution inside it found targets handed over through ``hops``."""

    hops: tuple[Hop, ...]


class Module(NamedTuple):
    """``ModuleIndex.module``'s question."""

    name: str
    near: ModuleSummary | None
    prefer: Path | None


class Unsummarised(NamedTuple):
    """The file of the module ``name``, where it could not be summarised."""

    name: str


class Subclasses(NamedTuple):
    """``Resolver.subclasses``'s question."""

    module: ModuleSummary
    cls: ClassSummary
    defining: str


Question = Module | Unsummarised | Subclasses


@dataclass(slots=True)
class Resolution:
    """What one resolution of a call read and did, in order (``events``), what it
    asked the index and of the subclasses the run found (``asked``: the
    resolver's method, its arguments, the answer), and what it found."""

    module: ModuleSummary
    fn: FunctionSummary | None
    call: CallSite | None  # the call's record, where a library's model may apply
    path: str
    events: list[Read | Pass | Hand] = field(default_factory=list)
    asked: list[tuple[Question, object]] = field(default_factory=list)
    found: list[Fn] = field(default_factory=list)
    why: Opaque | None = None
    keep: bool = True  # False: it found what the run keeps for others (subclasses)

    def agrees(self, other: Resolution) -> bool:
        """Whether ``other``, a resolution of the same call, read, did and found
        what this one did (``GRAPHLINT_CHECK_RESOLVED``). What they asked may
        differ: an answer found once a run is asked of its search, or of the
        index, by the first resolution that needs it."""
        return (
            len(self.events) == len(other.events)
            and all(
                _same_event(a, b)
                for a, b in zip(self.events, other.events, strict=True)
            )
            and _shape(self.found) == _shape(other.found)
            and _shape(self.why) == _shape(other.why)
        )


Key = tuple[int, int, str, int, bool, object]


class Resolutions:
    """The resolutions kept, by the identity of the module and function summaries
    and of the call's record, the callee as written, whether the resolution
    searched for callers (``Project.searching``) and the library models in force.
    A key's summaries are held by its resolution, so their identities stay theirs."""

    def __init__(self) -> None:
        self._kept: dict[Key, Resolution] = {}
        # by module (file and name): the summary the kept resolutions are of, and
        # their keys
        self._modules: dict[tuple[str, str], tuple[ModuleSummary, list[Key]]] = {}

    @staticmethod
    def key(
        module: ModuleSummary,
        fn: FunctionSummary | None,
        callee: str,
        call: CallSite | None,
        searching: bool,
        library: object,
    ) -> Key:
        return (id(module), id(fn), callee, id(call), searching, library)

    def get(self, key: Key) -> Resolution | None:
        return self._kept.get(key)

    def keep(self, key: Key, resolution: Resolution) -> None:
        """Keep ``resolution``; those of an earlier summary of its module (an
        earlier version of the file) go: no resolution of that summary is asked
        for again."""
        if len(self._kept) >= KEPT:
            self.clear()
        module = resolution.module
        held = self._modules.get((module.path, module.name))
        if held is None or held[0] is not module:
            for old in held[1] if held is not None else ():
                self._kept.pop(old, None)
            held = (module, [])
            self._modules[(module.path, module.name)] = held
        if key not in self._kept:
            held[1].append(key)
        self._kept[key] = resolution

    def clear(self) -> None:
        self._kept.clear()
        self._modules.clear()

    def __len__(self) -> int:
        return len(self._kept)


def same(kept: object, now: object) -> bool:
    """Whether an answer given now is the one kept: the same summaries (by
    identity), in the same order; the same paths and names."""
    if isinstance(kept, (list, tuple)):
        return (
            isinstance(now, (list, tuple))
            and len(kept) == len(now)
            and all(same(a, b) for a, b in zip(kept, now, strict=True))
        )
    if kept is None or isinstance(kept, (str, Path)):
        return kept == now
    return kept is now


def same_passed(kept: Sequence[Passed], now: Sequence[Passed]) -> bool:
    """Whether a parameter holds what it held: the same records of the calls that
    pass it (summaries and references by identity), with the same hand-offs."""
    return len(kept) == len(now) and all(
        a.module is b.module
        and a.fn is b.fn
        and a.ref is b.ref
        and a.handoff == b.handoff
        for a, b in zip(kept, now, strict=True)
    )


_SUMMARIES = (ModuleSummary, FunctionSummary, ClassSummary, CallSite)


def _shape(value: object) -> object:
    """``value`` with every field, as comparable: summaries by identity (two
    targets of one function are equal whatever their hand-offs, which count)."""
    if isinstance(value, _SUMMARIES):
        return ("summary", id(value))
    if isinstance(value, (list, tuple)):
        return tuple(_shape(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (type(value), *(_shape(getattr(value, f.name)) for f in fields))
    return value


def _same_event(a: Read | Pass | Hand, b: Read | Pass | Hand) -> bool:
    if isinstance(a, Read) and isinstance(b, Read):
        return a.key == b.key and same_passed(a.held, b.held)
    return type(a) is type(b) and _shape(tuple(a)) == _shape(tuple(b))


# one for the process: a language server's runs take each other's
RESOLVED = Resolutions()

__all__ = [
    "CHECKED",
    "KEPT",
    "RESOLVED",
    "Hand",
    "Module",
    "Pass",
    "Question",
    "Read",
    "Resolution",
    "Resolutions",
    "Subclasses",
    "Unsummarised",
    "same",
    "same_passed",
]
