"""What ``graphlint confirm`` reports: the runtime verdict of every capture site
merged with ``graphlint check``'s findings for the same files. torch-free.

Each finding is judged on the trials in order (the script as written, then its
variants, ``graphlint.runtime.confirm``), and takes the first verdict one gives:

- **confirmed**: the capture failed at its line with a failure its rule predicts
  (``Check.explains``: the signatures measured for the hazard; or, for a finding
  on a whole region, with a failure of its kind anywhere there); its region's
  replay differed from eager and the finding predicted a silent error; or it is
  host work that ran while the graph was captured, which a replay never repeats;
- **not reproduced**: its line ran in a region that captured (and matched eager
  where compared), or the region fails the same way without capture;
- **not executed**: its line never ran in any trial;
- **no verdict**: none of the above, with the reason (its region did not run, or
  ran only in variants that say nothing of it; failed first at an unexplained line;
  or failed at its line in a way its rule does not predict: "not explained by this
  failure"). A finding on graphlint's own reading of the file (GL0xx) is never
  judged by a run.

A failure that no finding predicted is **missed**, in any trial: one that shows
only in a variant names the variant.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from graphlint.checks import Check
from graphlint.diagnostics import Diagnostic, FileResult, Outcome
from graphlint.output.escape import printable
from graphlint.output.lsp import diagnostic_to_lsp
from graphlint.output.text import format_diagnostic
from graphlint.runtime import neutral
from graphlint.runtime.confirm import Step
from graphlint.runtime.sites import STOPPED, Capture, RunResult, Site, Status
from graphlint.signatures import SYNC

CONFIRMED = "confirmed"
NOT_REPRODUCED = "not reproduced"
NOT_EXECUTED = "not executed"
NO_VERDICT = "no verdict"
MISSED = "missed"
VERDICTS = (CONFIRMED, NOT_REPRODUCED, NOT_EXECUTED, NO_VERDICT)


@dataclass(frozen=True)
class Finding:
    """A static finding and what the run made of it."""

    diagnostic: Diagnostic
    status: str
    note: str


@dataclass(frozen=True)
class Missed:
    """A runtime failure that no static finding predicted."""

    site: Site
    path: str
    line: int
    message: str
    variant: str = ""  # the trial that showed it, when not the script as written


@dataclass(frozen=True)
class Report:
    device: str
    runs: int
    sites: tuple[Site, ...]
    findings: tuple[Finding, ...]
    missed: tuple[Missed, ...]
    files: tuple[str, ...]  # every file checked statically, as displayed
    ended: str | None  # how the script ended, when it did not end well
    script: str | None = None  # the script run, as given
    variants: tuple[RunResult, ...] = ()  # the trials after the first

    @property
    def failed(self) -> bool:
        return (
            any(site.failed or site.breaks for site in self.sites)
            or bool(self.missed)
            or self.ended is not None
        )


def _real(path: str) -> str:
    return os.path.realpath(path)


def _site_of(d: Diagnostic, sites: Sequence[Site]) -> Site | None:
    if d.region is None:
        return None
    path = d.region.path or d.path
    return next((s for s in sites if s.covers(path, d.region.line)), None)


def _lines(d: Diagnostic) -> set[tuple[str, int]]:
    """Where ``d`` is, and its related locations (the same file)."""
    path = _real(d.path)
    return {(path, d.line)} | {(path, other.line) for other in d.related}


def _where(path: str | None, line: int | None) -> str:
    return f"{display(path)}:{line}" if path and line else "an unknown line"


def _check(code: str) -> type[Check] | None:
    from graphlint.rule import all_checks  # noqa: PLC0415 - the rules import LibCST

    return all_checks().get(code)


def _of_its_kind(d: Diagnostic, site: Site) -> bool:
    """Whether ``site``'s capture failure is the one ``d``'s rule measured for its
    hazard anywhere in the region (``Check.region_failures``): a finding on a whole
    region, or a failure torch raises without naming the user's line."""
    if d.region is None:
        return False
    check = _check(d.code)
    detail = site.detail.lower()
    kinds = check.region_failures if check else ()
    return any(kind.lower() in detail for kind in kinds)


def _explains(d: Diagnostic, site: Site) -> bool:
    """Whether ``site``'s capture failure is one ``d``'s rule predicts: a failure
    measured for its hazard (``Check.explains``). Never for a finding on graphlint's
    own reading of the file (GL0xx): no capture failure is about it."""
    if d.outcome is Outcome.TOOL:
        return False
    check = _check(d.code)
    return bool(check and check.explains(site.detail))


def _reads_the_device(d: Diagnostic) -> bool:
    """Whether ``d``'s rule predicts a wait for the device: where torch.compile
    captures, Dynamo splits the graph there instead of failing (measured:
    ground-truth/h100-torch2.11-compile.jsonl, compiled_item_*, compiled_nonzero)."""
    check = _check(d.code)
    return bool(
        check and d.outcome is not Outcome.TOOL and SYNC in check.capture_failures
    )


def _caveat(d: Diagnostic) -> str:
    """What a confirmation of ``d`` cannot tell apart, as its rule says."""
    check = _check(d.code)
    caveat = check.failure_caveat if check else None
    return f" ({caveat})" if caveat else ""


def _warm_kind(d: Diagnostic) -> bool:
    """Whether a warm-up is what ``d`` asks for (GL703): a trial that warms any
    capture up says nothing of it."""
    check = _check(d.code)
    return bool(check and check.fixed_by_warmup)


def _host_work(d: Diagnostic) -> bool:
    check = _check(d.code)
    return bool(check and check.host_work)


# What a capture's own failures say (CUDA's capture errors, torch's checks for
# graphs, cuBLAS and cuDNN set-up), as opposed to Python's errors: a TypeError in a
# variant run may come from a moved statement's stand-in value.
_CAPTURE_WORDS = re.compile(r"captur|graph|cuda error|cublas|cudnn", re.IGNORECASE)


def _captures(site: Site) -> bool:
    """Whether ``site``'s failure reads as a capture's own."""
    return bool(_CAPTURE_WORDS.search(site.detail))


def _taken(trial: RunResult, site: Site) -> bool:
    """Whether ``trial`` moved the line ``site`` failed at already."""
    return any(
        _real(where) == _real(site.error_path or "") and line == site.error_line
        for where, line, *_ in trial.neutralised
    )


def _failed_here(d: Diagnostic, site: Site) -> bool:
    where = (site.error_path, site.error_line)
    return site.status is Status.CAPTURE_ERROR and where in _lines(d)


def _moved(trial: RunResult, d: Diagnostic) -> bool:
    """Whether ``trial`` moved ``d``'s code out of the capture (its statement, or
    an expression of it that holds ``d``): that code no longer runs there."""
    path = _real(d.path)
    moves = [
        [line, *how] for where, line, *how in trial.neutralised if _real(where) == path
    ]
    return bool(moves) and neutral.takes_out(
        path, moves, (d.line, d.col, d.end_line, d.end_col)
    )


def _failed_at(d: Diagnostic, site: Site, trial: RunResult) -> tuple[str, str] | None:
    """What ``site``'s capture, failing at ``d``'s line, says of ``d``; None when
    the failure is not one ``d``'s rule predicts (another verdict may still come).
    The eager check comes first: run eagerly, moved statements compute their own
    values, so no stand-in of a variant run is to blame for the same failure there."""
    where = "here" if site.error_line == d.line else f"at {site.error_line}"
    if site.eager and site.driven:
        return NO_VERDICT, (
            f"the capture of {site.name} fails {where}, but so does the region run "
            f"eagerly on the same stand-ins ({site.eager}): the stand-ins may be why"
        )
    if site.eager:
        return NOT_REPRODUCED, (
            f"the capture of {site.name} fails {where}, but the region fails "
            f"the same way run eagerly ({site.eager}): not a capture hazard"
        )
    if trial.neutralised and not _captures(site):
        return NO_VERDICT, (
            f"{site.name} fails here, but not as a capture fails ({site.detail}): "
            "a statement moved out of the capture may be why"
        )
    if not _explains(d, site):
        return None
    return CONFIRMED, (
        f"the capture of {site.name} fails {where}: {site.detail}{_caveat(d)}"
    )


def _not_explained(d: Diagnostic, site: Site) -> str:
    where = "here" if site.error_line == d.line else f"at {site.error_line}"
    return (
        f"not explained by this failure: the capture of {site.name} fails {where} "
        f"with {site.detail}, which {d.code} does not predict"
    )


def _did_not_run(trial: RunResult) -> str:
    """Why a region did not run in ``trial``, as far as the trial tells."""
    if trial.ended == STOPPED:
        failed = [s.name for s in trial.sites if s.status is Status.CAPTURE_ERROR]
        if failed:
            return (
                "its region did not run: the run was stopped at the failed capture "
                f"of {failed[0]} first"
            )
    if trial.ended is not None:
        return f"its region did not run: the script did not finish ({trial.ended})"
    return "its region did not run"


def _called_here(d: Diagnostic, trial: RunResult) -> str:
    """What the checker's own call of the function around ``d``'s region did,
    when that call never reached the region (``uncalled``)."""
    if d.region is None:
        return ""
    said = trial.driven.get(f"{_real(d.region.path or d.path)}:{d.region.line}")
    return f" ({said})" if said else ""


def _region_ran(d: Diagnostic, trial: RunResult) -> bool:
    region = _site_of(d, trial.sites)
    return region is not None and region.calls > 0


def _judge_in(
    d: Diagnostic, trial: RunResult, every: Sequence[Diagnostic] = ()
) -> tuple[str, str]:
    """What one trial says of ``d``; ``every``: all the findings."""
    sites = trial.sites
    unexplained: tuple[str, str] | None = None
    for site in sites:
        if _failed_here(d, site):
            judged = _failed_at(d, site, trial)
            if judged is not None:
                return judged
            unexplained = (NO_VERDICT, _not_explained(d, site))
        for at, line, reason in site.breaks:  # torch.compile split its graph here
            if (at, line) not in _lines(d):
                continue
            if _reads_the_device(d):
                return CONFIRMED, f"{site.name} breaks its CUDA graph here: {reason}"
            unexplained = unexplained or (
                NO_VERDICT,
                f"not explained by this failure: {site.name} breaks its CUDA graph "
                f"here ({reason}), and {d.code} predicts no read of the device",
            )
    if _host_work(d) and trial.ran_capturing(d.path, d.line):
        return CONFIRMED, (
            "it ran on the host while a CUDA graph was captured: a replay never runs it"
        )
    if unexplained is not None:
        return unexplained
    region = _site_of(d, sites)
    if region is None or region.calls == 0:
        return NO_VERDICT, _did_not_run(trial) + _called_here(d, trial)
    site = region
    # a line that did not run made nothing of its region go wrong
    ran = trial.ran(d.path, d.line) is not False or site.compiles(d.path, d.line)
    if ran and site.status is Status.SILENT_WRONG and _wrong_as_said(d, site):
        return CONFIRMED, site.detail
    # a failure a finding at its own line explains is that finding's
    others = any(
        other is not d and _failed_here(other, site) and _explains(other, site)
        for other in every
    )
    if (
        ran
        and site.status is Status.CAPTURE_ERROR
        and _of_its_kind(d, site)
        and not others
    ):
        where = _where(site.error_path, site.error_line)
        return CONFIRMED, (
            f"the capture of {site.name} fails at {where}, a failure of this kind "
            f"anywhere in the region: {site.detail}{_caveat(d)}"
        )
    if site.status is Status.CAPTURE_ERROR:
        where = _where(site.error_path, site.error_line)
        return NO_VERDICT, f"the capture of {site.name} failed first, at {where}"
    if site.status in (Status.WARMUP_ERROR, Status.CRASHED):
        return NO_VERDICT, f"{site.name} failed without a capture: {site.detail}"
    if not ran:
        return NO_VERDICT, f"its line did not run, though {site.name} did"
    if d.outcome is Outcome.SILENT_WRONG and site.compared == 0:
        why = f": {site.detail}" if site.detail else ""
        return NO_VERDICT, f"no replay of {site.name} was compared with eager{why}"
    if site.driven:
        return NO_VERDICT, (
            f"{site.name} captured on the checker's own call, on stand-ins: what "
            "the program passes, and does between replays, may differ"
        )
    # wrong, but not in the way this finding says
    if site.status is Status.SILENT_WRONG:
        return NOT_REPRODUCED, (
            f"{site.name} captured; its replays differ from eager ({site.detail}), "
            "which this finding does not predict"
        )
    matched = f", and {site.compared} replays matched eager" if site.compared else ""
    return NOT_REPRODUCED, f"{site.name} captured{matched}"


def _passed_over(trial: RunResult, d: Diagnostic) -> str | None:
    """Why ``trial`` says nothing of ``d``, if it does not: it moved ``d``'s
    statement out of the capture, or warmed the capture up while ``d`` asks for a
    warm-up (a warm-up anywhere initialises cuBLAS for every capture)."""
    if _moved(trial, d):
        return "which moved this statement out of the capture"
    if trial.warm and _warm_kind(d):
        return "where a warm-up says nothing of this finding"
    return None


def _stood_in(d: Diagnostic, trial: RunResult) -> str:
    """What the stand-ins of ``trial`` cost ``d``'s region (``neutral``): a value
    no run outside the capture kept, so the code after it ran on a stand-in."""
    site = _site_of(d, trial.sites)
    if site is None or not site.stand_ins:
        return ""
    places = ", ".join(
        f"{display(path)}:{where}" for path, where in map(neutral.place, site.stand_ins)
    )
    return (
        f"; {site.name} ran with a stand-in for {places} (moved out of the "
        "capture, with no value kept from a run outside it), so the code after it "
        "may have failed or gone another way because of it"
    )


def _judge(
    d: Diagnostic, trials: Sequence[RunResult], every: Sequence[Diagnostic] = ()
) -> tuple[str, str]:
    """The first verdict a trial gives ``d``, skipping the trials that move its
    statement out of the capture or warm its capture up; "not executed" when its
    line ran in none of the runs that went as far as the script went; else no
    verdict, for the reason the last trial gives (its region did not run there:
    said so with the skipped trials where it did)."""
    if d.outcome is Outcome.TOOL:
        return NO_VERDICT, (
            "a finding on graphlint's own reading of the file, not a capture hazard: "
            "no run judges it"
        )
    last: tuple[str, str] | None = None
    judged_ran = False  # whether its region ran in a trial that judged it
    ran_in: list[str] = []  # the skipped trials where its region ran, and why
    for number, trial in enumerate(trials):
        why = _passed_over(trial, d)
        if why is not None:
            if _region_ran(d, trial):
                ran_in.append(f"the re-run with {trial.variant}, {why}")
            continue
        status, note = _judge_in(d, trial, every)
        if status == NO_VERDICT:
            note += _stood_in(d, trial)
        driven = _site_of(d, trial.sites)
        if driven is not None and driven.driven:  # not the program's own calls
            note += f" ({driven.driven})"
        if number:
            note = f"{note} (run with {trial.variant})"
        if status in (CONFIRMED, NOT_REPRODUCED):
            return status, note
        last = (status, note)
        judged_ran = judged_ran or _region_ran(d, trial)
    whole = [t for t in trials if t.ended != STOPPED]  # not cut short by the checker
    compiled = any(s.compiles(d.path, d.line) for t in trials for s in t.sites)
    if whole and not compiled and all(t.ran(d.path, d.line) is False for t in whole):
        runs = "the run" if len(trials) == 1 else f"any of {len(trials)} variants"
        return NOT_EXECUTED, f"its line never ran in {runs}"
    if last is not None and not judged_ran and ran_in:
        return NO_VERDICT, f"its region ran only in {'; and in '.join(ran_in)}"
    return last or (NO_VERDICT, "its region did not run")


def _predicts(d: Diagnostic, site: Site, trial: RunResult) -> bool:
    """Whether ``d`` said what went wrong with ``site`` in ``trial``: a failure at
    its line counts only when its rule predicts that failure."""
    if _failed_here(d, site) and _explains(d, site):
        return True
    if d.outcome is Outcome.TOOL or _site_of(d, trial.sites) is not site:
        return False
    if site.status is Status.SILENT_WRONG:
        return _wrong_as_said(d, site)
    return site.status is Status.CAPTURE_ERROR and _of_its_kind(d, site)


def _wrong_as_said(d: Diagnostic, site: Site) -> bool:
    """Whether ``site`` going wrong is what ``d`` predicts: a silent error, or the
    error torch raises when it detects one (CUDA-graph trees' read of an overwritten
    output) where ``d``'s rule measured that error for its whole region."""
    return d.outcome is Outcome.SILENT_WRONG or _of_its_kind(d, site)


def _missed(
    trial: RunResult, results: Sequence[FileResult], variant: str = ""
) -> list[Missed]:
    """The failures of ``trial`` that no finding predicted; ``variant``: how the
    trial's script differs from the script as written, when it does. In a trial
    that moved statements out of the capture, only a failure that reads as a
    capture's own counts: another may be a moved statement's stand-in value; and
    a replay that differs from eager, unless the region ran on a stand-in (its
    eager runs reuse what the moved statements gave the capture, ``neutral``).
    A region only the checker's own call ran (``uncalled``) shows none: the
    program never runs it so, and the stand-in arguments may be why."""
    found: list[Missed] = []
    findings = [d for result in results for d in result.diagnostics]
    shown = f" (in the re-run with {variant})" if variant else ""
    for site in trial.sites:
        if site.eager or any(_predicts(d, site, trial) for d in findings):
            continue
        if site.driven:  # the program never runs it: its stand-ins may be why
            continue
        if trial.neutralised and not (
            (site.status is Status.CAPTURE_ERROR and _captures(site))
            or (site.status is Status.SILENT_WRONG and not site.stand_ins)
        ):
            continue
        if site.status is Status.CAPTURE_ERROR:
            found.append(
                Missed(
                    site,
                    site.error_path or site.path,
                    site.error_line or site.line,
                    f"the capture of {site.name} fails here, and no rule said so: "
                    f"{site.detail}{shown}",
                    variant,
                )
            )
        elif site.status is Status.SILENT_WRONG:
            found.append(
                Missed(
                    site,
                    site.path,
                    site.line,
                    f"{site.name} is silently wrong, and no rule said so: "
                    f"{site.detail}{shown}",
                    variant,
                )
            )
    return found


class Explainer:
    """What the next trial changes, given a failed site of the last one: the
    failing statement moved out of the capture, when a finding is confirmed there
    or the region fails so eagerly too; the capture warmed up first, when a
    finding on the whole region (GL703) is confirmed by its kind of failure; else
    nothing: the failure is unexplained, and the trials stop."""

    def __init__(self, lint: Callable[[list[Path]], Sequence[FileResult]]) -> None:
        self.lint = lint
        self.linted: dict[str, tuple[Diagnostic, ...]] = {}

    def findings(self, paths: Sequence[str]) -> list[Diagnostic]:
        new = sorted({_real(p) for p in paths if _real(p) not in self.linted})
        if new:
            for path in new:
                self.linted[path] = ()
            for result in self.lint([Path(p) for p in new]):
                self.linted[_real(result.path)] = tuple(result.diagnostics)
        return [d for p in {_real(p) for p in paths} for d in self.linted[p]]

    def __call__(self, site: Site, trial: RunResult) -> Step | None:
        if site.status is not Status.CAPTURE_ERROR:
            return None
        findings = self.findings([p for p in (site.path, site.error_path) if p])
        if (
            site.kind is Capture.GRAPH_BLOCK
            and site.key not in trial.warm
            and any(
                _site_of(d, [site]) is site and _of_its_kind(d, site) for d in findings
            )
        ):
            return "warm", site.key
        if site.error_path is None or site.error_line is None:
            return None
        if site.eager or any(
            _failed_here(d, site) and _explains(d, site) for d in findings
        ):
            own = (site.error_path, site.error_line) == (site.path, site.line)
            if own:  # the capture's own call
                return "neutralised", [site.error_path, site.error_line, "ungraphed"]
            spans = [  # the host reads the findings name move alone, where they can
                [d.line, d.col, d.end_line, d.end_col]
                for d in findings
                if _failed_here(d, site) and _explains(d, site)
            ]
            moved = [site.error_path, site.error_line, "hoisted"]
            return "neutralised", [*moved, spans] if spans else moved
        if trial.neutralised and not _captures(site) and not _taken(trial, site):
            # not a capture's failure, in a run that moved statements: a moved
            # statement's doing (``scaler.update()`` once ``scaler.step()`` has
            # moved), as a user's fix moves both: it moves too, and the trials go on
            return "neutralised", [site.error_path, site.error_line, "hoisted"]
        return None


def merge(
    results: Sequence[FileResult],
    trials: Sequence[RunResult],
    *,
    device: str,
    runs: int,
    script: str | None = None,
) -> Report:
    """The report on the ``trials`` (the script as written first) and the static
    ``results`` for the same files."""
    every = [d for result in results for d in result.diagnostics]
    findings = tuple(Finding(d, *_judge(d, trials, every)) for d in every)
    missed: dict[tuple[str, int, str], Missed] = {}
    for number, trial in enumerate(trials):  # as written first: it names none
        for item in _missed(trial, results, trial.variant if number else ""):
            missed.setdefault((item.path, item.line, item.site.detail), item)
    sites: dict[str, Site] = {}
    for trial in trials:  # the first trial's view of a site, then sites found later
        for site in trial.sites:
            sites.setdefault(site.key, site)
    return Report(
        device,
        runs,
        tuple(sites.values()),
        findings,
        tuple(missed.values()),
        tuple(result.path for result in results),
        trials[0].ended if trials else None,
        script,
        tuple(trials[1:]),
    )


def display(path: str) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def describe(site: Site) -> str:
    """One line on what the capture of ``site`` did."""
    if site.calls == 0:
        return "never ran"
    if site.status is Status.CAPTURE_ERROR:
        where = _where(site.error_path, site.error_line)
        eager = "; it fails so run eagerly too" if site.eager else ""
        return f"{site.detail} (at {where}){eager}"
    if site.status is not Status.CAPTURED:
        return site.detail
    parts = []
    if site.breaks:
        count = len(site.breaks)
        parts.append(f"{count} graph break{'s' if count != 1 else ''}")
    if site.compared:
        parts.append(f"matches eager over {site.compared} compared replays")
    elif site.detail:
        parts.append(site.detail)
    if site.random:
        parts.append("draws random numbers")
    speed = site.speedup
    if speed is not None:
        parts.append(
            f"eager {site.eager_ms:.3f} ms, replay {site.replay_ms:.3f} ms: "
            f"{speed:.1f}x faster"
            if speed >= 1
            else f"eager {site.eager_ms:.3f} ms, replay {site.replay_ms:.3f} ms: "
            f"{1 / speed:.1f}x slower"
        )
    return "; ".join(parts) or "captured"


def _status(site: Site) -> str:
    return "not reached" if site.calls == 0 else site.status.value


def format_text(report: Report, color: bool = False) -> str:
    del color
    runs = "1 run" if report.runs == 1 else f"{report.runs} runs"
    lines = [f"graphlint confirm on {report.device} ({runs} of the script)", ""]
    lines.append("Capture sites:")
    for site in report.sites:
        where = f"{display(site.path)}:{site.line} {site.name} [{site.kind.value}]"
        lines.append(f"  {_status(site):<14}{where}: {describe(site)}")
    if not report.sites:
        lines.append(
            "  none ran: mark a region with @graphlint.capture_region, or capture "
            "with torch.cuda.graph"
        )
    if report.findings:
        lines += ["", "Static findings:"]
        for finding in report.findings:
            first = format_diagnostic(finding.diagnostic).split("\n")[0]
            lines.append(f"  {finding.status:<15}{first}")
            lines.append(f"                     {finding.note}")
    if report.variants:
        lines += [
            "",
            "Variant runs (each after a failure explained in the one before):",
        ]
        for trial in report.variants:
            lines.append(f"  {trial.variant}: {_outcome(trial)}")
    if report.missed:
        lines += ["", "Missed (failures that no rule predicted):"]
        for missed in report.missed:
            lines.append(f"  {display(missed.path)}:{missed.line}: {missed.message}")
    lines += ["", _ending(report)]
    lines += ["", _summary(report)]
    # paths, site names and error text come from the script and its run
    return "\n".join(printable(line) for line in lines) + "\n"


def _outcome(trial: RunResult) -> str:
    failed = [site for site in trial.sites if site.failed]
    if failed:
        site = failed[0]
        return f"{site.name} {describe(site)}"
    ran = sum(1 for site in trial.sites if site.calls)
    return f"{_count(ran, 'capture site')} captured" + (
        f"; the script did not finish: {trial.ended}" if trial.ended else ""
    )


def _ending(report: Report) -> str:
    if report.ended is not None:
        return f"The script did not finish: {report.ended}"
    return "The script ran to its end."


def _summary(report: Report) -> str:
    counts = {s: sum(f.status == s for f in report.findings) for s in VERDICTS}
    ran = [s for s in report.sites if s.calls]
    captured = [s for s in ran if s.status is Status.CAPTURED]
    failed = [s for s in ran if s.failed]
    return (
        f"{_count(len(report.findings), 'finding')}: {counts[CONFIRMED]} confirmed, "
        f"{counts[NOT_REPRODUCED]} not reproduced, {counts[NOT_EXECUTED]} not "
        f"executed, {counts[NO_VERDICT]} with no verdict; "
        f"{len(report.missed)} missed. {_count(len(ran), 'capture site')} ran: "
        f"{len(captured)} captured, {len(failed)} failed."
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _range(line: int) -> dict[str, Any]:
    return {
        "start": {"line": line - 1, "character": 0},
        "end": {"line": line - 1, "character": 0},
    }


def _site_item(site: Site) -> dict[str, Any]:
    return {
        "range": _range(site.line),
        "severity": 1 if site.failed else 3,
        "code": _status(site),
        "source": "graphlint confirm",
        "message": f"{site.name} [{site.kind.value}]: {describe(site)}",
        "data": {"runtime": {"status": _status(site), "site": asdict(site)}},
    }


def format_lsp(report: Report, color: bool = False) -> str:
    """``check``'s LSP shape; each finding's ``data.runtime`` says what the run made
    of it; capture sites and missed failures are diagnostics of their own."""
    del color
    files: dict[str, list[dict[str, Any]]] = {}

    def add(path: str, item: dict[str, Any]) -> None:
        files.setdefault(Path(path).resolve().as_uri(), []).append(item)

    for path in report.files:
        files.setdefault(Path(path).resolve().as_uri(), [])
    for finding in report.findings:
        item = diagnostic_to_lsp(finding.diagnostic)
        item["data"]["runtime"] = {"status": finding.status, "note": finding.note}
        add(finding.diagnostic.path, item)
    for site in report.sites:
        add(site.path, _site_item(site))
    if report.script is not None:  # how the script ended, in every format
        add(
            report.script,
            {
                "range": _range(1),
                "severity": 1 if report.ended is not None else 3,
                "code": "script",
                "source": "graphlint confirm",
                "message": _ending(report),
                "data": {
                    "runtime": {
                        "status": "ran to its end"
                        if report.ended is None
                        else "did not finish",
                        "detail": report.ended,
                    }
                },
            },
        )
    for missed in report.missed:
        add(
            missed.path,
            {
                "range": _range(missed.line),
                "severity": 1,
                "code": missed.site.status.value,
                "source": "graphlint confirm",
                "message": missed.message,
                "data": {
                    "runtime": {
                        "status": MISSED,
                        "site": asdict(missed.site),
                        **({"variant": missed.variant} if missed.variant else {}),
                    }
                },
            },
        )
    document = [{"uri": uri, "diagnostics": items} for uri, items in files.items()]
    return json.dumps(document, indent=2) + "\n"


FORMATTERS = {"text": format_text, "lsp": format_lsp}  # by OutputFormat value
