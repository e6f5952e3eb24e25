"""Output formats: pure functions from results to text."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from graphlint.diagnostics import FileResult
from graphlint.output.lsp import format_lsp
from graphlint.output.text import format_text


class OutputFormat(str, enum.Enum):
    TEXT = "text"
    LSP = "lsp"


Formatter = Callable[[Sequence[FileResult], bool], str]

FORMATTERS: dict[OutputFormat, Formatter] = {
    OutputFormat.TEXT: format_text,
    OutputFormat.LSP: format_lsp,
}
