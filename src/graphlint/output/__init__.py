"""Output formats: pure functions from results to text."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Protocol

from graphlint.diagnostics import FileResult, Survey
from graphlint.output.flat import format_json
from graphlint.output.github import format_github
from graphlint.output.lsp import format_lsp
from graphlint.output.sarif import format_sarif
from graphlint.output.statistics import statistics_json, statistics_text
from graphlint.output.text import format_text


class OutputFormat(str, enum.Enum):
    TEXT = "text"
    LSP = "lsp"
    JSON = "json"
    SARIF = "sarif"
    GITHUB = "github"


class Formatter(Protocol):
    """Results (and what the analysis saw, listed when ``show_reach``) to text."""

    def __call__(
        self,
        results: Sequence[FileResult],
        color: bool = False,
        *,
        survey: Survey | None = None,
        show_reach: bool = False,
    ) -> str: ...


FORMATTERS: dict[OutputFormat, Formatter] = {
    OutputFormat.TEXT: format_text,
    OutputFormat.LSP: format_lsp,
    OutputFormat.JSON: format_json,
    OutputFormat.SARIF: format_sarif,
    OutputFormat.GITHUB: format_github,
}


STATISTICS: dict[OutputFormat, Callable[[Sequence[FileResult], Survey], str]] = {
    OutputFormat.TEXT: statistics_text,
    OutputFormat.JSON: statistics_json,
}
"""``--statistics``: counts per code instead of the diagnostics."""
