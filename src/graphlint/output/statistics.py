"""``--statistics``: how many diagnostics each code gave, most first (then by code).

Text: ``    2  GL101  device-to-host-copy`` a line, then the summary line of the text
output. JSON: ``[{"code", "name", "count"}, ...]``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from graphlint.diagnostics import FileResult, Severity, Survey
from graphlint.output.escape import inert_json, inert_lines
from graphlint.output.text import summary_line


def _counts(results: Sequence[FileResult]) -> list[tuple[str, str, int]]:
    counts = Counter((d.code, d.name) for r in results for d in r.diagnostics)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [(code, name, count) for (code, name), count in ordered]


def statistics_text(
    results: Sequence[FileResult], survey: Survey, *, summary: bool = True
) -> str:
    """The counts, and the summary line unless not ``summary`` (``check -q``)."""
    severities = Counter(d.severity for r in results for d in r.diagnostics)
    lines = [f"{count:5d}  {code}  {name}\n" for code, name, count in _counts(results)]
    if not summary:
        return inert_lines("".join(lines))
    files = sum(1 for r in results if r.diagnostics)
    counts = {severity: severities[severity] for severity in Severity}
    last = summary_line(counts, files, len(results), survey)
    return inert_lines("".join(lines) + ("\n" if lines else "") + last)


def statistics_json(results: Sequence[FileResult], survey: Survey) -> str:
    del survey  # counts only
    rows = [
        {"code": code, "name": name, "count": count}
        for code, name, count in _counts(results)
    ]
    return inert_json(json.dumps(rows, indent=2)) + "\n"
