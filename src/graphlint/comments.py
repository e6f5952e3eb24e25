"""Comments graphlint reads: suppressions and region pragmas, from one tokenize pass."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_IGNORE = re.compile(r"#\s*graphlint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_BEGIN = re.compile(r"#\s*graphlint:\s*capture-begin\b", re.I)
_END = re.compile(r"#\s*graphlint:\s*capture-end\b", re.I)
# every comment above holds this: without it, there is nothing to tokenize for
_ANY = re.compile(r"graphlint\s*:", re.I)


@dataclass
class Comments:
    """``suppressed``: line -> codes ignored there (None: every code).
    ``pragmas``: (begin line, end line) of each marked span.
    """

    suppressed: dict[int, frozenset[str] | None] = field(default_factory=dict)
    pragmas: list[tuple[int, int]] = field(default_factory=list)


def scan(source: str) -> Comments:
    """Find graphlint comments (``source`` has compiled, so tokenize succeeds)."""
    found = Comments()
    if not _ANY.search(source):
        return found
    begin: int | None = None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        line = token.start[0]
        text = token.string
        match = _IGNORE.search(text)
        if match:
            codes = match.group("codes")
            if codes is None:
                found.suppressed[line] = None
            else:
                names = frozenset(
                    c.strip().upper() for c in codes.split(",") if c.strip()
                )
                previous = found.suppressed.get(line, frozenset())
                found.suppressed[line] = None if previous is None else previous | names
        if _BEGIN.search(text) and begin is None:
            begin = line
        elif _END.search(text) and begin is not None:
            found.pragmas.append((begin, line))
            begin = None
    if begin is not None:  # an unterminated span runs to the end of the file
        found.pragmas.append((begin, len(source.splitlines()) + 1))
    return found


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
