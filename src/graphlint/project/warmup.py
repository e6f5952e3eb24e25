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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from graphlint.diagnostics import (
    Diagnostic,
    FileResult,
    RegionKind,
    RegionReach,
    WarmupVerdict,
)
from graphlint.warmup_wording import CODE, settled_message

Place = tuple[str, int]  # a file, a line


def settle_warmups(
    results: Sequence[FileResult],
    reached: Iterable[FileResult],
    regions: Iterable[RegionReach],
    followed: set[tuple[str, int, str]],
    dropped: set[Place],
) -> list[FileResult]:
    """``results`` of pass one with their pending GL703 findings settled by what
    the project pass found in the functions their captures reach (``reached``:
    its results; ``regions``: what each region reaches); ``followed``: the calls
    followed into project code, ``dropped``: where calls were not followed."""
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
            region = reach.get((result.path, capture.line))
            if region is None or not _followed(result.path, capture, followed, dropped):
                continue  # could not be checked, as pass one says
            outcome = _outcome(region, verdicts, followed, dropped)
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
) -> tuple[WarmupVerdict, str] | bool:
    """The first function the region reaches that needs a warm-up, with its file;
    True when none does and all its code was seen; False when some could not be."""
    seen = True
    for function in region.reached:
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
        elif isinstance(outcome, tuple):
            verdict, path = outcome
            message = settled_message(diagnostic.message, verdict, path)
            kept.append(replace(diagnostic, message=message))
    return kept
