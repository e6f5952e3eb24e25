"""GL703 across files: what the code a capture runs elsewhere needs a warm-up for.

Pass one reports a capture with no warm-up before it whose code it cannot see
whole from its own file, as code that could not be checked, and leaves a
``WarmupVerdict`` with the calls it left to the project pass (``deferred``). The
project pass gives one for each function a capture reaches: the first op there that
needs a warm-up, whether it runs code that cannot be seen, and its own deferred calls.

Here the two meet, for each such capture: when a function it reaches needs a
warm-up, the finding names that op; when every call left to the project pass was
followed into project code (``Project.followed``, none of them given up on) and each
function reached is known to need none, the finding is dropped; otherwise it stays as
pass one wrote it.

A capture whose ways in its own file reach no entry (``WarmupVerdict.callers``: the
functions on them, such as a helper that captures what it is given, that other
files may call) is warmed up, or not, by those callers. Pass one reports it; here
it is kept, naming the call, when some call of those functions (or of a function
that calls them) starts a way from an entry with no warm-up before it, and
dropped otherwise (``Ways``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from graphlint.diagnostics import (
    Diagnostic,
    FileResult,
    RegionKind,
    RegionReach,
    WarmupVerdict,
)
from graphlint.warmup_wording import CODE, called_message, settled_message

if TYPE_CHECKING:
    from graphlint.project.reach import Project
    from graphlint.project.summary import CallSite, FunctionSummary, ModuleSummary

Place = tuple[str, int]  # a file, a line
_DEPTH = 3  # callers of the callers followed, in any file


@dataclass(frozen=True)
class Caller:
    """The call that starts a way to a capture with no warm-up before it."""

    function: str  # the function making it ("Trainer.fit"), "" for module code
    path: str
    line: int
    called: str  # the function it calls ("capture")


# for a file and the functions of it that only other files call: the call that
# starts a way to its capture with no warm-up before it, if there is one
Callers = Mapping[tuple[str, tuple[str, ...]], Caller | None]


def unwarmed_callers(project: Project, results: Iterable[FileResult]) -> Callers:
    """For each capture of ``results`` whose callers are elsewhere, the call that
    starts a way to it with no warm-up before it (``Ways``)."""
    ways = Ways(project)
    return {
        (result.path, w.callers): ways(result.path, w.callers)
        for result in results
        for w in result.warmups
        if w.callers and not w.function
    }


class Ways:
    """For the functions of a file that only other files call: a call of one, or
    of what calls it, that starts a way from an entry (module code, a test,
    ``main``, a function that replays after the call) with no warm-up before it
    on the way, as the summaries show: a loop that holds the call, a side-stream
    block that ends before it, or a call before it that runs what it hands over or
    a side-stream block of its own."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._known: dict[tuple[str, str], Caller | None] = {}

    def __call__(self, path: str, functions: tuple[str, ...]) -> Caller | None:
        return next((w for name in functions if (w := self._way(path, name, 0))), None)

    def _way(self, path: str, name: str, depth: int) -> Caller | None:
        key = (path, name)
        if key in self._known:
            return self._known[key]
        self._known[key] = None  # a cycle of calls finds nothing more
        found = None
        for module, caller, site in self.project.calls_of(path, name):
            if depth == 0 and module.path == path:
                continue  # its own file's ways: pass one followed them
            if self._warm(module, caller, site):
                continue
            calls = module.calls if caller is None else caller.calls
            if caller is None or _entry(caller.path) or _replays_after(site, calls):
                shown = "" if caller is None else caller.path
                found = Caller(shown, module.path, site.line, name)
            elif depth + 1 < _DEPTH:
                found = self._way(module.path, caller.path, depth + 1)
            if found is not None:
                break
        self._known[key] = found
        return found

    def _warm(
        self, module: ModuleSummary, caller: FunctionSummary | None, site: CallSite
    ) -> bool:
        """Whether ``site`` runs after a warm-up in the code that makes it."""
        blocks = module.blocks if caller is None else caller.blocks
        if any(first <= site.line <= last for first, last in blocks.loops):
            return True
        if any(last < site.line for _, last in blocks.streams):
            return True
        arguments = site.arguments
        handed = (
            set()
            if arguments is None
            else {
                ref.target
                for ref in [*arguments.positional, *(r for _, r in arguments.keywords)]
                if ref is not None and ref.kind == "name"
            }
        )
        calls = module.calls if caller is None else caller.calls
        with self.project.searching():
            return any(
                call.line < site.line
                and not call.computed
                and (
                    call.callee in handed
                    or any(
                        target.fn.blocks.streams
                        for target in self.project.resolve(
                            module, caller, call.callee, (call.line, call.col)
                        )
                    )
                )
                for call in calls
            )


def _entry(path: str) -> bool:
    """Code nothing in the project calls first: a test, ``main``."""
    name = path.rpartition(".")[2]
    return name.startswith("test") or name == "main"


def _replays_after(site: CallSite, calls: Iterable[CallSite]) -> bool:
    """Whether the function making ``site`` replays a graph after it."""
    return any(
        call.line > site.line and call.callee.endswith(".replay") for call in calls
    )


def settle_warmups(
    results: Sequence[FileResult],
    reached: Iterable[FileResult],
    regions: Iterable[RegionReach],
    followed: set[tuple[str, int, str]],
    dropped: set[Place],
    callers: Callers,
) -> list[FileResult]:
    """``results`` of pass one with their pending GL703 findings settled by what
    the project pass found in the functions their captures reach (``reached``:
    its results; ``regions``: what each region reaches) and by the calls that
    start a way with no warm-up to those whose callers are elsewhere (``callers``);
    ``followed``: the calls followed into project code, ``dropped``: where calls
    were not followed."""
    verdicts: dict[tuple[str, str], WarmupVerdict] = {
        (result.path, verdict.function): verdict
        for result in reached
        for verdict in result.warmups
        if verdict.function
    }
    reach = {
        (r.region.path, r.region.line): r
        for r in regions
        if r.region.kind is RegionKind.MANUAL
    }
    settled: list[FileResult] = []
    for result in results:
        pending = [w for w in result.warmups if not w.function]
        found = list(result.diagnostics)
        for capture in pending:
            way = None
            if capture.callers:
                way = callers.get((result.path, capture.callers))
                found = _called(found, capture.line, way)
                if way is None:
                    continue
            if not capture.deferred:
                continue
            region = reach.get((result.path, capture.line))
            if region is None or not _followed(result.path, capture, followed, dropped):
                continue  # could not be checked, as pass one says
            outcome = _outcome(
                region, verdicts, followed, dropped, way.path if way else ""
            )
            if outcome is False:
                continue
            found = _settled(found, capture.line, outcome)
        if pending:
            result = replace(result, diagnostics=tuple(found), warmups=())
        settled.append(result)
    return settled


def _followed(
    path: str,
    verdict: WarmupVerdict,
    followed: set[tuple[str, int, str]],
    dropped: set[Place],
) -> bool:
    """Whether every call ``verdict`` left to the project pass was followed."""
    return all(
        (path, line, callee) in followed and (path, line) not in dropped
        for line, callee in verdict.deferred
    )


def _outcome(
    region: RegionReach,
    verdicts: Mapping[tuple[str, str], WarmupVerdict],
    followed: set[tuple[str, int, str]],
    dropped: set[Place],
    caller: str = "",
) -> tuple[WarmupVerdict, str] | bool:
    """The first function the region reaches that needs a warm-up, with its file,
    those of the file ``caller`` first (where the call that runs none of it
    before is); True when none does and all its code was seen; False when some
    could not be."""
    seen = True
    for function in sorted(region.reached, key=lambda f: f.path != caller):
        verdict = verdicts.get((function.path, function.function))
        if verdict is None:
            seen = False  # not analysed: an excluded file, a region of its own
            continue
        if verdict.need:
            return verdict, function.path
        if verdict.unknown or not _followed(function.path, verdict, followed, dropped):
            seen = False
    return seen


def _settled(
    found: list[Diagnostic], line: int, outcome: tuple[WarmupVerdict, str] | bool
) -> list[Diagnostic]:
    """``found`` with the GL703 finding of the capture at ``line`` dropped (True)
    or naming the op that needs the warm-up."""
    if not isinstance(outcome, tuple):
        return _reworded(found, line, None)
    verdict, path = outcome
    return _reworded(found, line, lambda m: settled_message(m, verdict, path))


def _called(found: list[Diagnostic], line: int, way: Caller | None) -> list[Diagnostic]:
    """``found`` with the GL703 finding of the capture at ``line``, whose callers
    are elsewhere, naming the call that starts ``way``, or dropped without one."""
    if way is None:
        return _reworded(found, line, None)
    return _reworded(
        found,
        line,
        lambda m: called_message(m, way.function, way.path, way.line, way.called),
    )


def _reworded(
    found: list[Diagnostic], line: int, reword: Callable[[str], str] | None
) -> list[Diagnostic]:
    """``found`` with the pass-one GL703 finding of the capture at ``line`` given
    the message ``reword`` makes of its own, or dropped (None)."""
    kept: list[Diagnostic] = []
    for diagnostic in found:
        region = diagnostic.region
        if (
            diagnostic.code != CODE
            or region is None
            or region.via
            or region.line != line
        ):
            kept.append(diagnostic)
        elif reword is not None:
            kept.append(replace(diagnostic, message=reword(diagnostic.message)))
    return kept
