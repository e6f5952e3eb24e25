"""GL0xx codes: the outcomes of files graphlint could not analyse, and comments
that tell it something it cannot use.

These carry no detection logic (reading, parsing and the engine decide them), so they
share one module instead of one each, outside ``graphlint.rules``: the modules that
report them import no rule (``rule.all_checks`` registers them with the rules).
"""

from __future__ import annotations

from graphlint.checks import Check
from graphlint.diagnostics import Outcome, Severity


class UnparsableFile(Check):
    """The file is not valid Python."""

    code = "GL001"
    message = "file does not parse: {detail}"
    fix_title = "Fix the syntax error; nothing else in this file was checked"
    outcome = Outcome.TOOL
    severity = Severity.ERROR


class UndecodableFile(Check):
    """The file is not valid UTF-8 or has a bad coding declaration."""

    code = "GL002"
    message = "file cannot be decoded: {detail}"
    fix_title = "Save the file as UTF-8 or fix its coding declaration"
    outcome = Outcome.TOOL
    severity = Severity.ERROR


class OversizedFile(Check):
    """The file is over the size limit and was not analysed."""

    code = "GL003"
    message = "file is {size} bytes, over the {limit}-byte limit; it was not analysed"
    fix_title = "Exclude the file, or raise the limit: `--max-file-size BYTES`"
    outcome = Outcome.TOOL
    severity = Severity.WARNING


class UnreadableFile(Check):
    """The path cannot be read as a regular file."""

    code = "GL004"
    message = "file cannot be read: {detail}"
    fix_title = "Check the path's type and permissions, or exclude it"
    outcome = Outcome.TOOL
    severity = Severity.ERROR


class ParserLimitExceeded(Check):
    """The file was too deep, large or slow for the limits, or crashed the parser."""

    code = "GL005"
    message = "file could not be analysed: {detail}"
    fix_title = (
        "Split what is deep or large, exclude the file, or raise the limit it names "
        "(`--timeout`, `--max-memory`)"
    )
    outcome = Outcome.TOOL
    severity = Severity.ERROR


class EmptyFile(Check):
    """The file is empty (an empty ``__init__.py`` is not reported)."""

    code = "GL006"
    message = "file is empty"
    fix_title = "Delete the file or give it content"
    outcome = Outcome.TOOL
    severity = Severity.INFORMATION
    default_enabled = False


class UnknownSuppression(Check):
    """A suppression comment names a code that graphlint does not have."""

    code = "GL007"
    message = (
        "`{name}` in a suppression comment is no graphlint code or prefix: it "
        "suppresses nothing"
    )
    fix_title = "Correct the code (`graphlint rules` lists them) or remove it"
    outcome = Outcome.TOOL
    severity = Severity.WARNING


class UnusedSuppression(Check):
    """A suppression comment suppresses nothing."""

    code = "GL008"
    message = "suppression of {names} is unused: nothing it names is reported here"
    fix_title = "Remove the suppression, or the codes it no longer needs"
    outcome = Outcome.TOOL
    severity = Severity.WARNING
    default_enabled = False


class InternalError(Check):
    """graphlint failed on this file: a bug to report."""

    code = "GL009"
    message = "graphlint failed on this file: {detail}"
    fix_title = "Please report this with the file; other files were checked normally"
    outcome = Outcome.TOOL
    severity = Severity.ERROR


UNANALYSED = frozenset(
    check.code
    for check in (
        UnparsableFile,
        UndecodableFile,
        OversizedFile,
        UnreadableFile,
        ParserLimitExceeded,
    )
)
"""The outcomes that say a file, or a statement of it, was not analysed."""
