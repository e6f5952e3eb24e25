"""SARIF 2.1.0, for GitHub code scanning and other SARIF consumers.

One run. ``tool.driver.rules`` lists every code graphlint knows, with what GitHub
reads of a rule (its "SARIF support for code scanning" page, ``reportingDescriptor``):
the summary (``shortDescription``), the first paragraph of the page's "What it does"
(``fullDescription``, the summary where there is none; at most 1024 characters, as
GitHub shows), the page itself as ``help`` (Markdown), the default level, and
``properties``: ``tags`` (``cuda-graphs``, the code's family, its measured outcome),
``precision`` and ``problem.severity``. There is no ``helpUri``: the pages have no
published address, and the installed page's ``file:`` URI (what the ``lsp`` format
links) would put a path of the machine that ran graphlint in the file; the page is the
rule's ``help`` instead.

A result's locations are URIs relative to ``%SRCROOT%``, the folder graphlint ran in
(in CI, the checkout: GitHub reads a relative URI as relative to the repository's
root); ``originalUriBaseIds`` names it without its absolute path, and a file outside
it is reached with ``../``. The capture region, the lines of its evidence and each
call from the region to the finding are ``relatedLocations``; the call chain is also a
``codeFlow``, which code scanning shows as steps. Lines are 1-based and columns are
1-based UTF-16 code units, as the run's ``columnKind`` says (a run that says nothing
means code points, SARIF 2.1.0's default), the unit of tools built on UTF-16
strings (JavaScript viewers, LSP editors); graphlint's own fields (confidence,
measured outcome, fix) are the result's ``properties``.

``partialFingerprints["graphlint/v1"]`` identifies a finding across commits: a
SHA-256 of its code, its file's URI, a digest of the code it flags (the span's text on
its first line, white space collapsed: ``columns.anchor``) and its index among the
findings of that file with the same code and text, in the file's order. No line
number or column takes part, so adding lines above a finding keeps it, changing the
flagged code changes it, and two identical findings in one file differ. GitHub code
scanning itself reads only ``primaryLocationLineHash``, which the ``upload-sarif``
action computes from the checked-out file when it is missing (a hash of the text from
the line's start, with an occurrence count: also blind to line numbers); graphlint
leaves that key to the action, which warns about every value it did not compute.

SARIF's regions are lines of the file's text, and a Jupyter notebook's text is its
JSON: a place in a notebook is the notebook as a whole (a location without a
region), with its cell, line and column in the location's ``properties`` (``{"cell":
3, "line": 2, "column": 5}``, the cell's line, as the text output gives them), and a
result there says them first in its message (``cell 3, line 2, column 5: ...``).
Notebooks get no ``fixes``: fixes are not applied to them.

Sources: GitHub's "SARIF support for code scanning"
(https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning:
the properties code scanning reads, their limits, "Code scanning only uses the
primaryLocationLineHash") and the ``upload-sarif`` action's fingerprinting
(``src/fingerprints.ts`` of github/codeql-action: the hash, and the warning).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
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
from graphlint.docs import doc_path, what_it_does
from graphlint.output.escape import encodable_json, inert_json

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "note",
    Severity.HINT: "note",
}
_BASE = "%SRCROOT%"
FINGERPRINT = "graphlint/v1"
# a code's hundred: its family (``rules/README.md``), as a tag to filter by
_FAMILY = {
    "0": "tool",
    "1": "host-synchronisation",
    "2": "control-flow",
    "3": "static-memory",
    "4": "host-work",
    "5": "rng",
    "6": "transfers",
    "7": "capture-setup",
}
# GitHub's levels of ``problem.severity``, from a code's severity
_PROBLEM = {
    "error": "error",
    "warning": "warning",
    "information": "recommendation",
    "hint": "recommendation",
}
_DESCRIPTION_LIMIT = 1024  # characters GitHub shows of a description


def _rule(code: str) -> dict[str, Any]:
    found = CODES[code]
    page = doc_path(code)
    markdown = page.read_text(encoding="utf-8") if page is not None else None
    full = (what_it_does(markdown) if markdown is not None else None) or found.summary
    family = _FAMILY.get(code[2], "other")
    tags = ["cuda-graphs", family, found.outcome] if family != "tool" else ["tool"]
    return {
        "id": code,
        "name": found.name,
        "shortDescription": {"text": _plain(found.summary)},
        "fullDescription": {"text": _plain(full), "markdown": _short(full)},
        "defaultConfiguration": {
            "enabled": found.default,
            "level": _LEVEL[Severity[found.severity.upper()]],
        },
        "help": {
            "text": markdown or found.summary,
            "markdown": markdown or found.summary,
        },
        "properties": {
            "tags": tags,
            # GL0xx say what happened to a file; the hazards are found by analysis,
            # and a finding that rests on inference says so ("(inferred)")
            "precision": "very-high" if found.outcome == "tool" else "high",
            "problem.severity": _PROBLEM[found.severity],
        },
    }


def _plain(markdown: str) -> str:
    """A one-line Markdown text as plain text: code spans without their backticks."""
    return _short(markdown.replace("``", "").replace("`", ""))


def _short(text: str) -> str:
    if len(text) <= _DESCRIPTION_LIMIT:
        return text
    return text[: _DESCRIPTION_LIMIT - 1].rsplit(" ", 1)[0] + "\u2026"


def _uri(path: str, root: str) -> dict[str, str]:
    """The artifact location of ``path`` (as shown: relative to the working folder,
    or absolute): a URI relative to ``%SRCROOT%``, the working folder ``root``.
    Only a path that has no relative form (another drive on Windows) stays an
    absolute file URI."""
    if os.path.isabs(path):
        try:
            path = os.path.relpath(path, root)
        except ValueError:
            return {"uri": Path(path).as_uri()}
    relative = Path(path).as_posix()
    return {"uri": quote(os.fsencode(relative)), "uriBaseId": _BASE}


class _Places:
    """Locations of one diagnostic's places, in UTF-16 columns."""

    def __init__(self, d: Diagnostic, root: str) -> None:
        self.d = d
        self.root = root

    def column(self, path: str, line: int, col: int) -> int:
        return self.d.utf16(path, line, col) + 1

    def location(
        self, path: str, line: int, col: int | None = None, cell: int | None = None
    ) -> dict[str, Any]:
        """A place in a file; in a notebook (``cell``), the whole notebook, with
        the place in the cell in the location's properties."""
        artifact = _uri(path, self.root)
        if cell is not None:
            where = {"cell": cell, "line": line}
            if col is not None:
                where["column"] = col + 1
            return {
                "physicalLocation": {"artifactLocation": artifact},
                "properties": where,
            }
        region: dict[str, Any] = {"startLine": line}
        if col is not None:
            region["startColumn"] = self.column(path, line, col)
        return {"physicalLocation": {"artifactLocation": artifact, "region": region}}

    def hop(self, hop: Hop, first: bool) -> dict[str, Any]:
        return {
            **self.location(hop.path, hop.line, hop.col, hop.cell),
            "message": {"text": hop.note(first)},
        }


def _result(d: Diagnostic, index: int, fingerprint: str, root: str) -> dict[str, Any]:
    at = _Places(d, root)
    primary = at.location(d.path, d.line, d.col, d.cell)
    region = primary["physicalLocation"].get("region")
    if region is not None:
        region["endLine"] = d.end_line
        region["endColumn"] = at.column(d.path, d.end_line, d.end_col)
    related: list[dict[str, Any]] = []
    if d.region is not None:
        where = d.region.path if d.region.path is not None else d.path
        related.append(
            {
                **at.location(where, d.region.line, cell=d.region.cell),
                "message": {"text": f"the {d.region.label} region"},
            }
        )
    related += [
        {
            **at.location(d.path, other.line, other.col, other.cell),
            "message": {"text": other.message},
        }
        for other in d.related
    ]
    via = d.region.via if d.region else ()
    first = next((hop for hop in via if not hop.handoff), None)
    hops = [at.hop(hop, hop is first) for hop in via]
    related += hops
    result: dict[str, Any] = {
        "ruleId": d.code,
        "ruleIndex": index,
        "level": _LEVEL[d.severity],
        "message": {"text": _in_cell(d) + d.describe()},
        "locations": [primary],
        "partialFingerprints": {FINGERPRINT: fingerprint},
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
                    "startColumn": at.column(d.path, e.line, e.col),
                    "endLine": e.end_line,
                    "endColumn": at.column(d.path, e.end_line, e.end_col),
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


def _in_cell(d: Diagnostic) -> str:
    """``cell 3, line 2, column 5: `` before a notebook's message (its location is
    the whole file)."""
    if d.cell is None:
        return ""
    return f"cell {d.cell}, line {d.line}, column {d.col + 1}: "


def fingerprints(results: Sequence[FileResult], root: str) -> list[str]:
    """Each diagnostic's ``graphlint/v1`` fingerprint, in the results' order (see the
    module's docstring)."""
    seen: Counter[tuple[str, str, str]] = Counter()
    found: list[str] = []
    for result in results:
        shown = result.diagnostics
        digests = [""] * len(shown)
        order = sorted(
            range(len(shown)), key=lambda n: (shown[n].cell or 0, shown[n].sort_key)
        )
        for number in order:
            d = shown[number]
            key = (d.code, _uri(d.path, root)["uri"], d.anchor)
            digests[number] = _digest(*key, str(seen[key]))
            seen[key] += 1
        found.extend(digests)
    return found


def _digest(*parts: str) -> str:
    data = "\0".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


def format_sarif(
    results: Sequence[FileResult],
    color: bool = False,
    *,
    survey: Survey | None = None,
    show_reach: bool = False,
    root: str | None = None,
) -> str:
    """The SARIF log of ``results``; paths are made relative to ``root`` (the
    working folder unless given), which is ``%SRCROOT%``."""
    del color, survey, show_reach  # SARIF carries findings only
    root = root if root is not None else os.getcwd()
    codes = list(CODES)
    index = {code: number for number, code in enumerate(codes)}
    found = [d for result in results for d in result.diagnostics]
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "graphlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule(code) for code in codes],
                    }
                },
                "originalUriBaseIds": {
                    _BASE: {
                        "description": {
                            "text": "The folder graphlint ran in (in CI, the "
                            "repository's checkout)."
                        }
                    }
                },
                "columnKind": "utf16CodeUnits",
                "results": [
                    _result(d, index[d.code], fingerprint, root)
                    for d, fingerprint in zip(
                        found, fingerprints(results, root), strict=True
                    )
                ],
            }
        ],
    }
    return inert_json(json.dumps(encodable_json(document), indent=2)) + "\n"
