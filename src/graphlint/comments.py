"""Comments graphlint reads: suppressions (of a line, or of the whole file) and region
pragmas, from one tokenize pass."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection
from dataclasses import dataclass, field, replace

from graphlint.codes import CODES, code_of
from graphlint.diagnostics import Diagnostic, FileResult, Suppression
from graphlint.read import tool_diagnostic
from graphlint.tool_codes import UnknownSuppression, UnusedSuppression

_IGNORE = re.compile(
    r"#\s*graphlint:\s*ignore(?!-file\b)(?:\[(?P<codes>[^\]]*)\])?", re.I
)
# as ruff's file-wide noqa comment: a comment that starts with it covers every line
# of the file, wherever it is written (a comment that only mentions it, further on,
# is prose: it must not silence a whole file)
_IGNORE_FILE = re.compile(
    r"#\s*graphlint:\s*ignore-file\b(?:\[(?P<codes>[^\]]*)\])?", re.I
)
# flake8's and ruff's form, for graphlint's codes only: a bare noqa comment
# silences style checks, and a capture hazard must not vanish with them
_NOQA = re.compile(
    r"#\s*noqa\s*:\s*(?P<codes>[a-z]+[0-9]+(?:[\s,]+[a-z]+[0-9]+)*)", re.I
)
_BEGIN = re.compile(r"#\s*graphlint:\s*capture-begin\b", re.I)
_END = re.compile(r"#\s*graphlint:\s*capture-end\b", re.I)
# how every comment above starts (a noqa one, with a GL code among its codes):
# without it, there is nothing to tokenize for. Every file's text is screened with
# it; the ``#`` it starts with is a literal, which the pattern engine finds the way
# ``str.find`` does (lowering the whole text to search it took six to ten times
# as long on 166 MB of Megatron-LM, vLLM, sglang and NeMo: the same files found)
_ANY = re.compile(r"#\s*(?:graphlint\s*:|noqa\s*:[\w\s,]*?\bgl)", re.I)


def _mentions(source: str) -> bool:
    """Whether ``source`` may hold a comment graphlint reads."""
    return _ANY.search(source) is not None


@dataclass
class Comments:
    """``entries``: each suppression comment (of a line, or of the whole file).
    ``unknown``: (line, column, code) of each suppressed code that is no graphlint
    code or prefix. ``pragmas``: (begin line, end line) of each marked span.
    """

    entries: list[Suppression] = field(default_factory=list)
    unknown: list[tuple[int, int, str]] = field(default_factory=list)
    pragmas: list[tuple[int, int]] = field(default_factory=list)

    @property
    def suppressed(self) -> dict[int, frozenset[str] | None]:
        """Line -> the codes and prefixes ignored there (None: every code)."""
        by_line: dict[int, frozenset[str] | None] = {}
        for entry in self.entries:
            if entry.whole_file:
                continue
            before = by_line.get(entry.line, frozenset())
            if entry.codes is None or before is None:
                by_line[entry.line] = None
            else:
                by_line[entry.line] = before | frozenset(entry.codes)
        return by_line

    @property
    def whole_file(self) -> tuple[Suppression, ...]:
        """The ``# graphlint: ignore-file`` comments, which cover every line."""
        return tuple(entry for entry in self.entries if entry.whole_file)


def suppresses(codes: Collection[str] | None, code: str) -> bool:
    """Whether a suppression (``codes``; None: all) covers ``code``: by its code or
    a prefix of it (``GL1`` covers GL101)."""
    return codes is None or any(code.startswith(prefix) for prefix in codes)


def scan(source: str) -> Comments:
    """Find graphlint comments (``source`` has compiled, so tokenize succeeds)."""
    found = Comments()
    if not _mentions(source):
        return found
    begin: int | None = None
    try:
        # universal newlines: lines that end with "\r" alone are lines, as for Python
        lines = io.StringIO(source, newline=None)
        tokens = list(tokenize.generate_tokens(lines.readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        line = token.start[0]
        text = token.string
        whole = _IGNORE_FILE.match(text)
        # a comment that covers the file covers its own line too: it is not read
        # for a line's suppression as well
        ignore = _IGNORE.search(text) if whole is None else whole
        every = ignore is not None and ignore.group("codes") is None
        named: set[str] = set()
        noqa = _NOQA.search(text) if whole is None else None
        for match in (ignore, noqa):
            if match is not None and match.group("codes") is not None:
                named |= _names(found, token, match)
        if every or named:
            codes = None if every else tuple(sorted(named))
            column = token.start[1]
            found.entries.append(Suppression(line, column, codes, whole is not None))
        if _BEGIN.search(text) and begin is None:
            begin = line
        elif _END.search(text) and begin is not None:
            found.pragmas.append((begin, line))
            begin = None
    if begin is not None:  # an unterminated span runs to the end of the file
        found.pragmas.append((begin, len(source.splitlines()) + 1))
    return found


def _names(
    found: Comments, token: tokenize.TokenInfo, match: re.Match[str]
) -> set[str]:
    """The codes ``match`` names that graphlint has (the others go to ``unknown``);
    a ``noqa`` keeps only graphlint's codes (the rest are other tools')."""
    noqa = match.re is _NOQA
    names = set()
    for part in re.finditer(r"[^\s,]+", match.group("codes")):
        name = code_of(part.group())
        if noqa and not name.startswith("GL"):
            continue
        if any(code.startswith(name) for code in CODES):
            names.add(name)
        else:
            column = token.start[1] + match.start("codes") + part.start()
            found.unknown.append((token.start[0], column, name))
    return names


def unknown_suppressions(
    found: Comments, path: str, enabled: frozenset[str]
) -> list[Diagnostic]:
    """GL007 for each suppressed code that is no graphlint code or prefix."""
    if UnknownSuppression.code not in enabled:
        return []
    return [
        tool_diagnostic(UnknownSuppression, path, line, column, name=name)
        for line, column, name in found.unknown
    ]


def add_ignore(line: str, code: str) -> str | None:
    """``line`` with ``code`` suppressed: added to its ``# graphlint: ignore[...]``,
    or a new such comment at its end. None when the line ignores it already, or
    cannot hold a comment (it continues with a backslash)."""
    found = _IGNORE.search(line)
    if found is not None:
        codes = found.group("codes")
        if codes is None:
            return None  # every code is ignored there
        names = [c.strip() for c in codes.split(",") if c.strip()]
        if code.upper() in {name.upper() for name in names}:
            return None
        listed = ", ".join([*names, code])
        return (
            f"{line[: found.start()]}# graphlint: ignore[{listed}]{line[found.end() :]}"
        )
    body = line.rstrip()
    if body.endswith("\\"):
        return None
    return f"{body}  # graphlint: ignore[{code}]"


def with_unused(result: FileResult, enabled: frozenset[str]) -> FileResult:
    """``result`` with a GL008 for each suppression comment that dropped nothing
    (all passes done): for a comment naming codes, each code or prefix that covers
    an enabled code and dropped no finding; for a bare ignore, one that dropped
    none at all. A finding a file's ``ignore-file`` drops is counted on the
    comment's line (``Rule.report``), as a line's is on its own."""
    if UnusedSuppression.code not in enabled or not result.suppressions:
        return result
    used = set(result.used)
    found = []
    for entry in result.suppressions:
        where = " in this file" if entry.whole_file else ""
        if entry.codes is None:
            if not any(line == entry.line for line, _ in used):
                found.append((entry, f"every code{where}"))
            continue
        idle = [
            prefix
            for prefix in entry.codes
            if any(code.startswith(prefix) for code in enabled)
            and not any(
                line == entry.line and code.startswith(prefix) for line, code in used
            )
        ]
        if idle:
            found.append((entry, ", ".join(idle) + where))
    if not found:
        return result
    unused = [
        tool_diagnostic(UnusedSuppression, result.path, e.line, e.col, names=names)
        for e, names in found
    ]
    diagnostics = sorted((*result.diagnostics, *unused), key=lambda d: d.sort_key)
    return replace(result, diagnostics=tuple(diagnostics))
