"""Human output: ``path:line:col: CODE message``, the fix hint below, a summary last."""

from __future__ import annotations

from collections.abc import Sequence

from graphlint.diagnostics import Confidence, Diagnostic, FileResult, Severity
from graphlint.output.escape import printable

_RESET = "\x1b[0m"
_STYLE = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFORMATION: "\x1b[1;36m",
    Severity.HINT: "\x1b[1;36m",
}
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color else text


def format_diagnostic(d: Diagnostic, color: bool = False) -> str:
    """One diagnostic, and its help line; text from the checked files (paths, quoted
    source) is escaped by :func:`printable`, graphlint's own colours are not."""
    where = _paint(printable(f"{d.path}:{d.line}:{d.col + 1}:"), _BOLD, color)
    code = _paint(printable(d.code), _STYLE[d.severity], color)
    line = f"{where} {code} {printable(d.message)}"
    region = d.region
    if region is not None and region.via:
        line += printable(
            f" [{region.label} region at {region.path}:{region.line}, {region.chain}]"
        )
    elif region is not None:
        line += printable(f" [{region.label} region, line {region.line}]")
    if d.confidence is Confidence.MEDIUM:
        line += " (inferred)"
    for other in d.related:
        note = f"    note: line {other.line}: {other.message}"
        line += "\n" + _paint(printable(note), _DIM, color)
    if d.fix_hint:
        line += "\n" + _paint(f"    help: {printable(d.fix_hint)}", _DIM, color)
    return line


def format_text(results: Sequence[FileResult], color: bool = False) -> str:
    blocks: list[str] = []
    counts = dict.fromkeys(Severity, 0)
    files = 0
    for result in results:
        if not result.diagnostics:
            continue
        files += 1
        for d in result.diagnostics:
            counts[d.severity] += 1
        blocks.append(
            "\n".join(format_diagnostic(d, color) for d in result.diagnostics)
        )
    total = sum(counts.values())
    checked = len(results)
    noun = "file" if checked == 1 else "files"
    if total == 0:
        return f"No CUDA-graph capture hazards found ({checked} {noun} checked).\n"
    parts = [
        f"{counts[s]} {name}{'s' if counts[s] != 1 else ''}"
        for s, name in (
            (Severity.ERROR, "error"),
            (Severity.WARNING, "warning"),
            (Severity.INFORMATION, "note"),
            (Severity.HINT, "hint"),
        )
        if counts[s]
    ]
    summary = (
        f"Found {total} diagnostic{'s' if total != 1 else ''} ({', '.join(parts)}) "
        f"in {files} of {checked} {noun} checked."
    )
    return "\n\n".join(blocks) + "\n\n" + summary + "\n"
