"""Output formats: pure functions from results to text."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol

from graphlint.diagnostics import FileResult, Survey
from graphlint.output.lsp import format_lsp
from graphlint.output.text import format_text


class OutputFormat(str, enum.Enum):
    TEXT = "text"
    LSP = "lsp"


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
}
