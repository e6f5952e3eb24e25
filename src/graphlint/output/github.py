"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` line
per diagnostic, which a workflow run shows as an annotation on the pull request's
diff. Lines and columns are 1-based, columns in code points, as in the text output.

Values are escaped as the runner unescapes them (``%``, CR and LF in the message;
``:`` and ``,`` too in a property), after the text from the checked files (paths,
quoted source) has had every control character, BiDi control and line or paragraph
separator escaped (``graphlint.output.escape``): nothing a repository holds can end
an annotation, start another command or drive the terminal that shows the log. The
one line break of a message, before the fix, is graphlint's own (``%0A``).

An annotation's lines are lines of the file's text, and a Jupyter notebook's text is
its JSON: a diagnostic in a notebook is an annotation on the file (no ``line``), its
message starting with the cell, line and column (``cell 3, line 2, column 5: ...``).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphlint.diagnostics import FileResult, Severity, Survey
from graphlint.output.escape import printable, visible

_COMMAND = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "notice",
    Severity.HINT: "notice",
}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A property's value: ``visible`` (its ``:`` and ``,`` are escaped here, so the
    file name stays the file's own)."""
    return _data(visible(text)).replace(":", "%3A").replace(",", "%2C")


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
            span = (
                f"line={d.line}",
                f"col={d.col + 1}",
                f"endLine={d.end_line}",
                f"endColumn={d.end_col + 1}",
            )
            where = ",".join(
                (
                    f"file={_property(d.path)}",
                    *(span if d.cell is None else ()),
                    f"title={_property(f'{d.code} {d.name}')}",
                )
            )
            text = printable(d.describe())
            if d.cell is not None:
                text = f"cell {d.cell}, line {d.line}, column {d.col + 1}: {text}"
            if d.fix_hint:
                text += f"\n{printable(d.fix_hint)}"
            lines.append(f"::{_COMMAND[d.severity]} {where}::{_data(text)}\n")
    return "".join(lines)
