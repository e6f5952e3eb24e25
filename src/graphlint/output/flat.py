"""JSON, flat: one object per diagnostic, in the order of the text output.

``[{"code", "name", "message", "path", "cell", "line", "column", "end_line",
"end_column", "severity", "confidence", "outcome", "fix", "edits", "applicability",
"region", "related"}, ...]``: lines and columns are 1-based, columns in code points,
as in the text output, and paths are shown as there. ``cell`` is null but in a
Jupyter notebook, where it is the cell (1-based, every cell counted, as ruff's
``cell``) and the lines are the cell's; a place in ``region``, its ``via`` or
``related`` that is in a notebook has a ``cell`` too (absent elsewhere). ``edits`` is
the fix where it is a mechanical edit (``{"line", "column", "end_line",
"end_column", "text"}``: the text that replaces that span),
``applicability`` whether ``--fix`` applies it ("safe") or only ``--unsafe-fixes``
does ("unsafe"; null without edits); ``region`` is null or
``{"kind", "label", "path", "line", "via": [{"path", "line", "column",
"function"}]}`` (``path`` null when it is the diagnostic's own file). A notebook's
diagnostics have no ``edits``: fixes are not applied to notebooks. For scripts: the
``lsp`` format is for editors, ``sarif`` for code scanning."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from graphlint.diagnostics import Diagnostic, FileResult, Survey
from graphlint.output.escape import encodable_json, inert_json


def cell_field(cell: int | None) -> dict[str, int]:
    """``{"cell": 3}`` for a place in a notebook, else nothing."""
    return {} if cell is None else {"cell": cell}


def diagnostic_to_json(d: Diagnostic) -> dict[str, Any]:
    region = d.region
    return {
        "code": d.code,
        "name": d.name,
        "message": d.message,
        "path": d.path,
        "cell": d.cell,
        "line": d.line,
        "column": d.col + 1,
        "end_line": d.end_line,
        "end_column": d.end_col + 1,
        "severity": d.severity.name.lower(),
        "confidence": d.confidence.value,
        "outcome": d.outcome.value,
        "fix": d.fix_hint,
        "edits": [
            {
                "line": e.line,
                "column": e.col + 1,
                "end_line": e.end_line,
                "end_column": e.end_col + 1,
                "text": e.text,
            }
            for e in d.edits
        ],
        "applicability": d.applicability.value if d.applicability else None,
        "region": None
        if region is None
        else {
            "kind": region.kind.value,
            "label": region.label,
            "path": region.path,
            **cell_field(region.cell),
            "line": region.line,
            "via": [
                {
                    "path": hop.path,
                    **cell_field(hop.cell),
                    "line": hop.line,
                    "column": hop.col + 1,
                    "function": hop.function,
                }
                for hop in region.via
            ],
        },
        "related": [
            {
                **cell_field(other.cell),
                "line": other.line,
                "column": other.col + 1,
                "message": other.message,
            }
            for other in d.related
        ],
    }


def format_json(
    results: Sequence[FileResult],
    color: bool = False,
    *,
    survey: Survey | None = None,
    show_reach: bool = False,
) -> str:
    del color, survey, show_reach  # findings only: --format lsp --show-reach has both
    found = [diagnostic_to_json(d) for result in results for d in result.diagnostics]
    return inert_json(json.dumps(encodable_json(found), indent=2)) + "\n"
