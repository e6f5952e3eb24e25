"""What ``graphlint confirm`` reports: the runtime verdict of every capture site
merged with ``graphlint check``'s findings for the same files. torch-free.

Each finding is **confirmed** (the capture failed at its line, or its region's
replay differed from eager and the finding predicted a silent error), **not
reproduced** (its region captured, and matched eager where compared), or **not
reached** (its region did not run, or failed before it). A failure that no
finding predicted is **missed**.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from graphlint.diagnostics import Diagnostic, FileResult, Outcome
from graphlint.output.escape import printable
from graphlint.output.lsp import diagnostic_to_lsp
from graphlint.output.text import format_diagnostic
from graphlint.runtime.sites import (
    CAPTURE_ERROR,
    CRASHED,
    SILENT_WRONG,
    WARMUP_ERROR,
    Site,
)

CONFIRMED = "confirmed"
NOT_REPRODUCED = "not reproduced"
NOT_REACHED = "not reached"
MISSED = "missed"


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


def _region_failures(code: str) -> tuple[str, ...]:
    """What a capture raises, anywhere in its region, for a finding of ``code`` on
    the whole region (``Check.region_failures``); lower case."""
    from graphlint.rule import all_checks  # noqa: PLC0415 - the rules import LibCST

    check = all_checks().get(code)
    return tuple(s.lower() for s in check.region_failures) if check else ()


def _of_its_kind(d: Diagnostic, site: Site) -> bool:
    """Whether ``site``'s capture failure is the one a finding on its whole region
    (reported at the region's start) predicts, wherever in the region it was raised."""
    if d.region is None or d.region.path is not None or d.line != d.region.line:
        return False
    detail = site.detail.lower()
    return any(kind in detail for kind in _region_failures(d.code))


def _judge(d: Diagnostic, sites: Sequence[Site]) -> tuple[str, str]:
    here = _lines(d)
    for site in sites:
        if site.status == CAPTURE_ERROR and (site.error_path, site.error_line) in here:
            where = "here" if site.error_line == d.line else f"at {site.error_line}"
            return CONFIRMED, f"the capture of {site.name} fails {where}: {site.detail}"
        for at, line, reason in site.breaks:  # torch.compile split its graph here
            if (at, line) in here:
                return CONFIRMED, f"{site.name} breaks its CUDA graph here: {reason}"
    region = _site_of(d, sites)
    if region is None or region.calls == 0:
        return NOT_REACHED, "its region did not run"
    site = region
    if site.status == SILENT_WRONG and d.outcome is Outcome.SILENT_WRONG:
        return CONFIRMED, site.detail
    if site.status == CAPTURE_ERROR and _of_its_kind(d, site):
        where = _where(site.error_path, site.error_line)
        return CONFIRMED, (
            f"the capture of {site.name} fails at {where}, a failure of this kind "
            f"anywhere in the region: {site.detail}"
        )
    if site.status == CAPTURE_ERROR:
        where = _where(site.error_path, site.error_line)
        return NOT_REACHED, f"the capture of {site.name} failed first, at {where}"
    if site.status in (WARMUP_ERROR, CRASHED):
        return NOT_REACHED, f"{site.name} failed without a capture: {site.detail}"
    if d.outcome is Outcome.SILENT_WRONG and site.compared == 0:
        why = f": {site.detail}" if site.detail else ""
        return NOT_REACHED, f"no replay of {site.name} was compared with eager{why}"
    if site.status == SILENT_WRONG:  # wrong, but not in the way this finding says
        return NOT_REPRODUCED, (
            f"{site.name} captured; its replays differ from eager ({site.detail}), "
            "which this finding does not predict"
        )
    matched = f", and {site.compared} replays matched eager" if site.compared else ""
    return NOT_REPRODUCED, f"{site.name} captured{matched}"


def merge(
    results: Sequence[FileResult],
    sites: Sequence[Site],
    *,
    device: str,
    runs: int,
    ended: str | None,
    script: str | None = None,
) -> Report:
    """The report on ``sites`` and the static ``results`` for the same files."""
    findings = tuple(
        Finding(d, *_judge(d, sites)) for result in results for d in result.diagnostics
    )
    missed: list[Missed] = []
    for site in sites:
        predicted = [
            f
            for f in findings
            if f.status == CONFIRMED
            and (
                _site_of(f.diagnostic, sites) is site
                or (site.error_path, site.error_line) in _lines(f.diagnostic)
            )
        ]
        if site.status == CAPTURE_ERROR and not predicted:
            missed.append(
                Missed(
                    site,
                    site.error_path or site.path,
                    site.error_line or site.line,
                    f"the capture of {site.name} fails here, and no rule said so: "
                    f"{site.detail}",
                )
            )
        elif site.status == SILENT_WRONG and not predicted:
            missed.append(
                Missed(
                    site,
                    site.path,
                    site.line,
                    f"{site.name} is silently wrong, and no rule said so: "
                    f"{site.detail}",
                )
            )
    return Report(
        device,
        runs,
        tuple(sites),
        findings,
        tuple(missed),
        tuple(result.path for result in results),
        ended,
        script,
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
    if site.status == CAPTURE_ERROR:
        return f"{site.detail} (at {_where(site.error_path, site.error_line)})"
    if site.status != "captured":
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
    return "not reached" if site.calls == 0 else site.status


def format_text(report: Report, color: bool = False) -> str:
    del color
    runs = "1 run" if report.runs == 1 else f"{report.runs} runs"
    lines = [f"graphlint confirm on {report.device} ({runs} of the script)", ""]
    lines.append("Capture sites:")
    for site in report.sites:
        where = f"{display(site.path)}:{site.line}"
        lines.append(
            f"  {_status(site):<14}{where} {site.name} [{site.kind}]: {describe(site)}"
        )
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
    if report.missed:
        lines += ["", "Missed (failures that no rule predicted):"]
        for missed in report.missed:
            lines.append(f"  {display(missed.path)}:{missed.line}: {missed.message}")
    lines += ["", _ending(report)]
    lines += ["", _summary(report)]
    # paths, site names and error text come from the script and its run
    return "\n".join(printable(line) for line in lines) + "\n"


def _ending(report: Report) -> str:
    if report.ended is not None:
        return f"The script did not finish: {report.ended}"
    return "The script ran to its end."


def _summary(report: Report) -> str:
    counts = {
        s: sum(f.status == s for f in report.findings)
        for s in (CONFIRMED, NOT_REPRODUCED, NOT_REACHED)
    }
    ran = [s for s in report.sites if s.calls]
    captured = [s for s in ran if s.status == "captured"]
    failed = [s for s in ran if s.failed]
    return (
        f"{_count(len(report.findings), 'finding')}: {counts[CONFIRMED]} confirmed, "
        f"{counts[NOT_REPRODUCED]} not reproduced, {counts[NOT_REACHED]} not reached; "
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
        "message": f"{site.name} [{site.kind}]: {describe(site)}",
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
                "code": missed.site.status,
                "source": "graphlint confirm",
                "message": missed.message,
                "data": {"runtime": {"status": MISSED, "site": asdict(missed.site)}},
            },
        )
    document = [{"uri": uri, "diagnostics": items} for uri, items in files.items()]
    return json.dumps(document, indent=2) + "\n"


FORMATTERS = {"text": format_text, "lsp": format_lsp}  # by OutputFormat value
