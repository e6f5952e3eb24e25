"""SARIF 2.1.0, for GitHub code scanning and other SARIF consumers.

One run; ``tool.driver.rules`` lists every code graphlint knows, each with its summary
and its documentation page as help (Markdown), so that a consumer shows the rule
without graphlint installed. A result's location is relative to ``%SRCROOT%``, the
working folder; the capture region, the lines of its evidence and each call from the
region to the finding are ``relatedLocations``, and the call chain is also a
``codeFlow``, which code scanning shows as steps. Columns are 1-based, as SARIF
counts them; graphlint's own fields (confidence, measured outcome, fix) are the
result's ``properties``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from graphlint import __version__
from graphlint.codes import CODES
from graphlint.diagnostics import (
    Applicability,
    Diagnostic,
    FileResult,
    Hop,
    Severity,
    Survey,
)
from graphlint.docs import doc_path
from graphlint.output.escape import encodable_json, inert_json

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "note",
    Severity.HINT: "note",
}
_BASE = "%SRCROOT%"


def _rule(code: str) -> dict[str, Any]:
    found = CODES[code]
    rule: dict[str, Any] = {
        "id": code,
        "name": found.name,
        "shortDescription": {"text": found.summary},
        "defaultConfiguration": {"enabled": found.default},
    }
    page = doc_path(code)
    if page is not None:
        markdown = page.read_text(encoding="utf-8")
        rule["help"] = {"text": markdown, "markdown": markdown}
    return rule


def _location(path: str, line: int, col: int | None = None) -> dict[str, Any]:
    """A physical location: ``path`` as shown (relative to the working folder, which
    is ``%SRCROOT%``), or a file URI when it is absolute."""
    region: dict[str, Any] = {"startLine": line}
    if col is not None:
        region["startColumn"] = col + 1
    artifact = (
        {"uri": Path(path).as_uri()}
        if os.path.isabs(path)
        else {"uri": quote(os.fsencode(Path(path).as_posix())), "uriBaseId": _BASE}
    )
    return {"physicalLocation": {"artifactLocation": artifact, "region": region}}


def _hop(hop: Hop, first: bool) -> dict[str, Any]:
    return {
        **_location(hop.path, hop.line, hop.col),
        "message": {"text": hop.note(first)},
    }


def _result(d: Diagnostic, index: int) -> dict[str, Any]:
    primary = _location(d.path, d.line, d.col)
    region = primary["physicalLocation"]["region"]
    region["endLine"] = d.end_line
    region["endColumn"] = d.end_col + 1
    related: list[dict[str, Any]] = []
    if d.region is not None:
        where = d.region.path if d.region.path is not None else d.path
        related.append(
            {
                **_location(where, d.region.line),
                "message": {"text": f"the {d.region.label} region"},
            }
        )
    related += [
        {**_location(d.path, other.line, other.col), "message": {"text": other.message}}
        for other in d.related
    ]
    via = d.region.via if d.region else ()
    first = next((hop for hop in via if not hop.handoff), None)
    hops = [_hop(hop, hop is first) for hop in via]
    related += hops
    result: dict[str, Any] = {
        "ruleId": d.code,
        "ruleIndex": index,
        "level": _LEVEL[d.severity],
        "message": {"text": d.describe()},
        "locations": [primary],
        "properties": {
            "name": d.name,
            "confidence": d.confidence.value,
            "outcome": d.outcome.value,
            **({"fix": d.fix_hint} if d.fix_hint else {}),
        },
    }
    if related:
        result["relatedLocations"] = [
            {"id": number, **location} for number, location in enumerate(related)
        ]
    if d.edits:
        artifact = primary["physicalLocation"]["artifactLocation"]
        replacements = [
            {
                "deletedRegion": {
                    "startLine": e.line,
                    "startColumn": e.col + 1,
                    "endLine": e.end_line,
                    "endColumn": e.end_col + 1,
                },
                "insertedContent": {"text": e.text},
            }
            for e in d.edits
        ]
        result["fixes"] = [
            {
                "description": {"text": d.fix_hint or "graphlint's fix"},
                "artifactChanges": [
                    {"artifactLocation": artifact, "replacements": replacements}
                ],
                "properties": {
                    "applicability": (d.applicability or Applicability.UNSAFE).value
                },
            }
        ]
    if hops:
        steps = [*hops, {**primary, "message": {"text": d.message}}]
        result["codeFlows"] = [
            {"threadFlows": [{"locations": [{"location": s} for s in steps]}]}
        ]
    return result


def format_sarif(
    results: Sequence[FileResult],
    color: bool = False,
    *,
    survey: Survey | None = None,
    show_reach: bool = False,
) -> str:
    del color, survey, show_reach  # SARIF carries findings only
    codes = list(CODES)
    index = {code: number for number, code in enumerate(codes)}
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "graphlint",
                        "version": __version__,
                        "rules": [_rule(code) for code in codes],
                    }
                },
                "originalUriBaseIds": {
                    _BASE: {"uri": Path.cwd().resolve().as_uri() + "/"}
                },
                "results": [
                    _result(d, index[d.code])
                    for result in results
                    for d in result.diagnostics
                ],
            }
        ],
    }
    return inert_json(json.dumps(encodable_json(document), indent=2)) + "\n"
