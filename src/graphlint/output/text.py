"""Human output: ``path:line:col: CODE message``, the fix hint below, a summary last.
Lines and columns are 1-based; a column counts code points (``graphlint.columns``).
A place in a Jupyter notebook is its cell and the line in it, as ruff writes it:
``n.ipynb:cell 3:2:5: CODE message`` (cells counted from 1, markdown ones too).

The summary says what the analysis saw (its ``Survey``): how many capture regions,
how many calls out of them were not followed, or that there was no region to check,
so that a clean run and a run that saw nothing read differently. ``--show-reach``
lists the survey itself.

Text from the checked files is shown through ``graphlint.output.escape``: no control
character reaches the terminal, and no line is a GitHub Actions workflow command (a
path that would start one with ``::`` is shown from ``./``).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphlint.diagnostics import (
    Applicability,
    Diagnostic,
    FileResult,
    RegionReach,
    Severity,
    Survey,
    Unfollowed,
    cell_line,
    position,
)
from graphlint.output.escape import inert_lines, printable, shown_path

_RESET = "\x1b[0m"
_STYLE = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFORMATION: "\x1b[1;36m",
    Severity.HINT: "\x1b[1;36m",
}
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color else text


def format_diagnostic(d: Diagnostic, color: bool = False) -> str:
    """One diagnostic, and its help line; text from the checked files (paths, quoted
    source) is escaped by :func:`printable`, graphlint's own colours are not."""
    at = position(d.line, d.cell, d.col)
    where = _paint(f"{shown_path(d.path)}:{at}:", _BOLD, color)
    code = _paint(printable(d.code), _STYLE[d.severity], color)
    line = f"{where} {code} {printable(d.describe())}"
    for other in d.related:
        note = f"    note: {cell_line(other.line, other.cell)}: {other.message}"
        line += "\n" + _paint(printable(note), _DIM, color)
    if d.fix_hint:
        fix = _FIXES[d.applicability] if d.edits and d.applicability else ""
        line += "\n" + _paint(f"    help: {printable(d.fix_hint)}{fix}", _DIM, color)
    return line


_FIXES = {
    Applicability.SAFE: " [fix: --fix]",
    Applicability.UNSAFE: " [unsafe fix: --fix --unsafe-fixes]",
}


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def format_region(reach: RegionReach, color: bool = False) -> str:
    """A region, what it captures, and the functions it reaches, one a line."""
    site = reach.region
    at = position(site.line, site.cell)
    where = _paint(f"{shown_path(str(site.path))}:{at}:", _BOLD, color)
    line = f"{where} {printable(site.label)} region"
    if not site.label.startswith(site.kind.value):  # ``capture_begin()``, a marker
        line += f" [{printable(site.kind.value)}]"
    if site.targets:
        line += f" capturing {printable(', '.join(site.targets))}"
    if not reach.reached and not reach.handoffs:
        return line + " (reaches no project function)"
    lines = [line]
    for fn in reach.reached:
        note = " (a region itself)" if fn.region else ""
        note += " (excluded: not analysed)" if fn.excluded else ""
        lines.append(
            f"    reaches {shown_path(fn.path)}:{position(fn.line, fn.cell)} "
            f"{printable(fn.function)}"
            f"{note}"
        )
    lines.extend(
        f"    handed over by {printable(hop.function)} at "
        f"{shown_path(hop.path)}:{position(hop.line, hop.cell)}"
        for hop in reach.handoffs
    )
    return "\n".join(lines)


def format_unfollowed(call: Unfollowed, color: bool = False) -> str:
    at = position(call.line, call.cell, call.col)
    where = _paint(f"{shown_path(call.path)}:{at}:", _BOLD, color)
    return (
        f"{where} `{printable(call.callee)}` not followed, "
        f"{printable(call.reason.value)}: {printable(call.detail)}"
    )


def format_survey(survey: Survey, color: bool = False) -> str:
    """The ``--show-reach`` listing: every region and what it reaches, then every
    call not followed, with the reason."""
    parts = [_paint(f"Capture regions ({len(survey.regions)}):", _BOLD, color)]
    parts.extend(f"  {format_region(r, color)}" for r in survey.regions)
    if not survey.regions:
        parts.append("  (none)")
    parts.append(
        _paint(f"Calls not followed ({len(survey.unfollowed)}):", _BOLD, color)
    )
    parts.extend(f"  {format_unfollowed(c, color)}" for c in survey.unfollowed)
    if not survey.unfollowed:
        parts.append("  (none)")
    return "\n".join(parts)


def _seen(survey: Survey, show_reach: bool) -> str:
    """``4 capture regions, 1 reaching no project function, 2 calls not followed
    (--show-reach)``."""
    return _regions(survey) + _not_followed(survey, show_reach, ", ")


def _regions(survey: Survey) -> str:
    """``4 capture regions``, and how many of them reach no project function."""
    text = _plural(len(survey.regions), "capture region")
    empty = sum(1 for r in survey.regions if not r.reached)
    return f"{text}, {empty} reaching no project function" if empty else text


def _not_followed(survey: Survey, show_reach: bool, lead: str) -> str:
    count = len(survey.unfollowed)
    if not count:
        return ""
    hint = "" if show_reach else " (--show-reach)"
    return f"{lead}{count} call{'' if count == 1 else 's'} not followed{hint}"


def format_text(
    results: Sequence[FileResult],
    color: bool = False,
    *,
    survey: Survey | None = None,
    show_reach: bool = False,
    summary: bool = True,
) -> str:
    """The diagnostics, the survey when ``show_reach``, and the summary line (which
    counts regions and calls not followed when a ``survey`` is given) unless not
    ``summary`` (``check -q``)."""
    blocks: list[str] = []
    counts = dict.fromkeys(Severity, 0)
    files = 0
    for result in results:
        if not result.diagnostics:
            continue
        files += 1
        for d in result.diagnostics:
            counts[d.severity] += 1
        blocks.append(
            "\n".join(format_diagnostic(d, color) for d in result.diagnostics)
        )
    if survey is not None and show_reach:
        blocks.append(format_survey(survey, color))
    if not summary:
        return inert_lines("\n\n".join(blocks) + "\n" if blocks else "")
    head = "\n\n".join(blocks) + "\n\n" if blocks else ""
    last = summary_line(counts, files, len(results), survey, show_reach)
    fixable = _fixable(results)
    if fixable:  # the summary's last clause
        last = f"{last.removesuffix('.' + chr(10))}; {fixable}.\n"
    return inert_lines(head + last)


def _fixable(results: Sequence[FileResult]) -> str:
    """``2 fixable with --fix (1 more with --unsafe-fixes)``."""
    found = [d.applicability for r in results for d in r.diagnostics if d.edits]
    safe = found.count(Applicability.SAFE)
    unsafe = len(found) - safe
    if not found:
        return ""
    if not safe:
        return f"{unsafe} fixable with --fix --unsafe-fixes"
    more = f" ({unsafe} more with --unsafe-fixes)" if unsafe else ""
    return f"{safe} fixable with --fix{more}"


def summary_line(
    counts: dict[Severity, int],
    files: int,
    checked: int,
    survey: Survey | None,
    show_reach: bool = False,
) -> str:
    """The last line: what was found in how many files, and what was seen."""
    total = sum(counts.values())
    noun = "file" if checked == 1 else "files"
    if total == 0 and survey is None:
        return f"No CUDA-graph capture hazards found ({checked} {noun} checked).\n"
    if total == 0 and survey is not None and not survey.regions:
        return (
            f"No capture regions found in {checked} {noun} checked: nothing to "
            'analyse (see "Capture regions" in the README; capture-markers marks '
            "your own).\n"
        )
    if total == 0 and survey is not None:
        regions = _regions(survey)
        return (
            f"No CUDA-graph capture hazards found in {regions} ({checked} {noun} "
            f"checked){_not_followed(survey, show_reach, '; ')}.\n"
        )
    parts = [
        _plural(counts[s], name)
        for s, name in (
            (Severity.ERROR, "error"),
            (Severity.WARNING, "warning"),
            (Severity.INFORMATION, "note"),
            (Severity.HINT, "hint"),
        )
        if counts[s]
    ]
    seen = f"; {_seen(survey, show_reach)}" if survey is not None else ""
    return (
        f"Found {_plural(total, 'diagnostic')} ({', '.join(parts)}) "
        f"in {files} of {checked} {noun} checked{seen}.\n"
    )
