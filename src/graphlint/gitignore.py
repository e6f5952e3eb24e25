"""gitignore-style patterns: the subset of git's rules that decides which files to skip.

Supported: comments, blank lines, ``!`` negation, trailing ``/`` (directories only),
patterns anchored by a slash, ``*``, ``?``, ``[...]`` and ``**``. The last matching
pattern wins, as in git.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


def _translate(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = glob[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def compile_pattern(line: str) -> Pattern | None:
    """One line of a .gitignore (or an ``exclude`` entry) as a Pattern, or None."""
    line = line.rstrip("\n").rstrip("\r")
    if not line.strip() or line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip(" ")
    negated = line.startswith("!")
    if negated or line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    directory_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = _translate(line)
    prefix = "" if anchored else "(?:.*/)?"
    return Pattern(re.compile(f"^{prefix}{body}$"), negated, directory_only)


class IgnoreFile:
    """The patterns of one .gitignore, relative to the folder it sits in."""

    def __init__(self, base: Path, lines: list[str]) -> None:
        self.base = base
        self.patterns = [p for p in map(compile_pattern, lines) if p is not None]

    @classmethod
    def read(cls, path: Path) -> IgnoreFile | None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return cls(path.parent, text.splitlines())

    def decide(self, path: Path, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no pattern here matches."""
        try:
            relative = path.relative_to(self.base).as_posix()
        except ValueError:
            return None
        decision = None
        for pattern in self.patterns:
            if pattern.directory_only and not is_dir:
                continue
            if pattern.regex.match(relative):
                decision = not pattern.negated
        return decision

    def excludes(self, path: Path) -> bool:
        """Whether ``path`` (a file) or one of its folders below ``base`` is ignored."""
        try:
            parts = path.relative_to(self.base).parts
        except ValueError:
            return False
        for depth in range(1, len(parts)):
            if self.decide(self.base.joinpath(*parts[:depth]), is_dir=True):
                return True
        return bool(self.decide(path, is_dir=False))
