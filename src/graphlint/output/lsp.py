"""LSP-shaped JSON: ``[{"uri": ..., "diagnostics": [Diagnostic, ...]}, ...]``.

Each diagnostic is an LSP ``Diagnostic`` (0-based positions, severity 1-4, ``code``,
``codeDescription.href``, ``source``, ``message``); ``data`` carries graphlint's own
fields: the region, the fix hint, the measured outcome and the confidence. Characters
are counted in UTF-16 code units, LSP's default position encoding: a character
outside the Basic Multilingual Plane (most emoji) is two, where graphlint's
own columns (and the text output's) count it as one.

File URIs percent-encode the path's bytes, so a file name that is not UTF-8 keeps its
real bytes (``%FF``); in the other strings such a byte is escaped (``\\xff``), so that
the document is valid UTF-8 JSON.

LSP has no place in a Jupyter notebook's cells for a file's URI: a notebook's
diagnostics are ranged within their cell, which ``data.cell`` gives (1-based, every
cell counted, as the text output's ``cell 3``); a related location in a notebook is
ranged within its cell too, and its message ends with the cell (``(cell 3)``); in
``data.region`` and in ``reach`` a place in a notebook has a ``cell``. Notebooks get
no ``data.edits``: fixes are not applied to them. (``graphlint server`` does not
check notebooks at all: see ``graphlint.server``.)

With ``--show-reach`` the document is an object instead: ``{"files": <the list
above>, "reach": <the survey>}`` (``format_survey``); without it, the list is all
there is, so that editors reading it are unaffected.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphlint.diagnostics import Diagnostic, FileResult, Hop, Survey
from graphlint.docs import doc_path
from graphlint.output.escape import encodable_json, inert_json
from graphlint.output.flat import cell_field


def diagnostic_to_lsp(d: Diagnostic, *, utf16: bool = True) -> dict[str, Any]:
    """``d`` as an LSP ``Diagnostic``, its characters counted in UTF-16 code units
    (LSP's default position encoding), or in code points without ``utf16`` (the
    language server converts those itself, to what the client negotiated)."""

    def at(path: str, line: int, col: int, cell: int | None = None) -> dict[str, int]:
        units = d.utf16(path, line, col, cell) if utf16 else col
        return {"line": line - 1, "character": units}

    item: dict[str, Any] = {
        "range": {
            "start": at(d.path, d.line, d.col, d.cell),
            "end": at(d.path, d.end_line, d.end_col, d.cell),
        },
        "severity": int(d.severity),
        "code": d.code,
        "source": "graphlint",
        "message": d.message,
        "data": {
            **cell_field(d.cell),
            "name": d.name,
            "outcome": d.outcome.value,
            "confidence": d.confidence.value,
            "fix": d.fix_hint,
            "edits": [
                {
                    "range": {
                        "start": at(d.path, e.line, e.col),
                        "end": at(d.path, e.end_line, e.end_col),
                    },
                    "newText": e.text,
                }
                for e in d.edits
            ],
            "applicability": d.applicability.value if d.applicability else None,
            "region": None
            if d.region is None
            else {
                "kind": d.region.kind.value,
                **cell_field(d.region.cell),
                "line": d.region.line,
                "label": d.region.label,
                **(
                    {"path": d.region.path, "via": d.region.chain}
                    if d.region.via
                    else {}
                ),
            },
        },
    }
    related = [
        {
            "location": {
                "uri": _uri(d.path),
                "range": {
                    "start": at(d.path, other.line, other.col, other.cell),
                    "end": at(d.path, other.line, other.col, other.cell),
                },
            },
            "message": other.message + _in_cell(other.cell),
        }
        for other in d.related
    ]
    if related:
        item["relatedInformation"] = related
    if d.region is not None and d.region.via:
        item["relatedInformation"] = related + [
            {
                "location": {
                    "uri": _uri(hop.path),
                    "range": {
                        "start": at(hop.path, hop.line, hop.col, hop.cell),
                        "end": at(hop.path, hop.line, hop.col, hop.cell),
                    },
                },
                "message": hop.note(hop is _first_call(d.region.via))
                + _in_cell(hop.cell),
            }
            for hop in d.region.via
        ]
    doc = doc_path(d.code)
    if doc is not None:
        item["codeDescription"] = {"href": doc.as_uri()}
    return {key: encodable_json(value) for key, value in item.items()}


def _in_cell(cell: int | None) -> str:
    """`` (cell 3)`` after a related location's message, in a notebook."""
    return "" if cell is None else f" (cell {cell})"


def _first_call(via: tuple[Hop, ...]) -> Hop | None:
    """The call made inside the region (a chain may start with a hand-off)."""
    return next((hop for hop in via if not hop.handoff), None)


def _uri(path: str) -> str:
    """The file URI of ``path``; ``realpath`` does not raise on a link loop."""
    return Path(os.path.realpath(path)).as_uri()


def survey_to_json(survey: Survey, checked: int) -> dict[str, Any]:
    """What the analysis saw: counts, regions with the functions they reach, and
    the calls not followed. Lines and columns are 1-based, as in the text output;
    paths are shown as in it too."""
    document = {
        "counts": {
            "files": checked,
            "regions": len(survey.regions),
            "unfollowed": len(survey.unfollowed),
            "reaching_nothing": sum(1 for r in survey.regions if not r.reached),
        },
        "regions": [
            {
                "kind": reach.region.kind.value,
                "path": reach.region.path,
                **cell_field(reach.region.cell),
                "line": reach.region.line,
                "label": reach.region.label,
                "targets": list(reach.region.targets),
                "reached": [
                    {
                        "path": fn.path,
                        **cell_field(fn.cell),
                        "line": fn.line,
                        "function": fn.function,
                        "excluded": fn.excluded,
                        "region": fn.region,
                    }
                    for fn in reach.reached
                ],
                "handoffs": [
                    {
                        "path": hop.path,
                        **cell_field(hop.cell),
                        "line": hop.line,
                        "column": hop.col + 1,
                        "call": hop.function,
                    }
                    for hop in reach.handoffs
                ],
            }
            for reach in survey.regions
        ],
        "unfollowed": [
            {
                "path": call.path,
                **cell_field(call.cell),
                "line": call.line,
                "column": call.col + 1,
                "callee": call.callee,
                "reason": call.reason.value,
                "detail": call.detail,
            }
            for call in survey.unfollowed
        ],
    }
    return {key: encodable_json(value) for key, value in document.items()}


def format_lsp(
    results: Sequence[FileResult],
    color: bool = False,
    *,
    survey: Survey | None = None,
    show_reach: bool = False,
) -> str:
    del color  # JSON is never coloured
    files = [
        {
            "uri": _uri(result.path),
            "diagnostics": [diagnostic_to_lsp(d) for d in result.diagnostics],
        }
        for result in results
    ]
    document: object = files
    if show_reach and survey is not None:
        document = {"files": files, "reach": survey_to_json(survey, len(results))}
    return inert_json(json.dumps(document, indent=2)) + "\n"
