"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` line
per diagnostic, which a workflow run shows as an annotation on the pull request's
diff. Lines and columns are 1-based; the text is escaped as the runner expects
(``%``, CR and LF in the message; ``:`` and ``,`` too in a property)."""

from __future__ import annotations

from collections.abc import Sequence

from graphlint.diagnostics import FileResult, Severity, Survey

_COMMAND = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "notice",
    Severity.HINT: "notice",
}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(
    results: Sequence[FileResult],
    color: bool = False,
    *,
    survey: Survey | None = None,
    show_reach: bool = False,
) -> str:
    del color, survey, show_reach  # annotations carry findings only
    lines = []
    for result in results:
        for d in result.diagnostics:
            where = ",".join(
                (
                    f"file={_property(d.path)}",
                    f"line={d.line}",
                    f"col={d.col + 1}",
                    f"endLine={d.end_line}",
                    f"endColumn={d.end_col + 1}",
                    f"title={_property(f'{d.code} {d.name}')}",
                )
            )
            text = d.describe() + (f"\n{d.fix_hint}" if d.fix_hint else "")
            lines.append(f"::{_COMMAND[d.severity]} {where}::{_data(text)}\n")
    return "".join(lines)
