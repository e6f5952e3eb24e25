"""gitignore patterns, matched as git matches them, in time linear in the path.

The ``pathspec`` library translates each line with git's wildmatch rules (``*``,
``?``, ``[...]``, ``**``, ``!`` negation, a trailing ``/`` for folders only, anchoring
by a slash); the last pattern that matches a path wins. The translated expressions
run on RE2: Python's backtracking ``re`` spends minutes matching a 30-byte pattern
such as ``*a*a*a*a*a*a*a*a*a*a*a*a*a*ab`` against one 40-character name.

A pattern matches the path itself, as in git, where a folder's contents are skipped
because the folder is, not because the folder's pattern also matches them:
``IgnoreFile.decide`` answers for one path, and the walk in ``files.py`` asks from
the top down. (``pathspec.GitIgnoreSpec`` answers for whole paths instead, its
folder patterns matching everything below; then a folder named on the command line
that a .gitignore above it ignores would yield nothing.)

A checked repository writes these files, so nothing in them may stop the run: each
line compiles on its own and a line that does not compile (``[z-a]``, a trailing
backslash) is dropped, as git drops it.
"""

from __future__ import annotations

import codecs
import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphlint.read import ReadError, read_bounded

if TYPE_CHECKING:
    from pathspec import PathSpec, RegexPattern

# pathspec and RE2 are imported where a pattern is first compiled: a run whose walk
# of the folders was kept (``files.Listings``) and that excludes nothing by pattern
# compiles none, and their import is a tenth of a warm run's start.

MAX_FILE_SIZE = 256 * 1024
"""Bytes of one .gitignore (large real ones hold a few thousand lines); a larger one
is skipped, like one that cannot be read. Building the sets and matching a path both
take time in proportion to the patterns' total size: at this limit a hostile file
costs seconds to build and milliseconds per path."""

MAX_PATTERN = 4096
"""Characters of one pattern, PATH_MAX: a longer line is dropped."""

SET_SIZE = 512
"""Patterns per RE2 set at most; a set over RE2's memory budget is halved."""

# RE2 matches UTF-8 text, and a name that is not UTF-8 reaches Python as lone
# surrogates (U+DC80-U+DCFF, one per byte). Patterns and paths both move those to
# private-use code points, so a pattern matches the bytes it was written with.
_SURROGATES = {0xDC80 + byte: 0x10FE80 + byte for byte in range(128)}


@functools.cache
def _re2_options() -> Any:
    import re2  # type: ignore[import-untyped]  # noqa: PLC0415 - see above

    options = re2.Options()
    options.log_errors = False
    return options


# pathspec marks the slash after the folder a pattern names with this group, and
# lets the folder's contents follow it. Here a folder's own path ends there, and a
# file's path (never ending with a slash) cannot.
_FOLDER_MARK = "(?P<ps_d>/)"


@dataclass(frozen=True, slots=True)
class Pattern:
    """One line of a .gitignore: what it matches, as a file and as a folder."""

    line: str
    file: RegexPattern
    folder: RegexPattern


def compile_pattern(line: str) -> Pattern | None:
    """One line of a .gitignore (or an ``exclude`` entry), or None: a blank line, a
    comment, or a line that is not a valid pattern."""
    if len(line) > MAX_PATTERN:
        return None
    import re2  # noqa: PLC0415 - see above
    from pathspec import RegexPattern  # noqa: PLC0415
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern  # noqa: PLC0415

    text = line.translate(_SURROGATES)
    if text.rstrip(" ").endswith("/**/"):
        # pathspec reads "a/**/" as "a/", the folder a; git, as the folders in a
        text = text.rstrip(" ") + "*/"
    try:
        regex, include = GitIgnoreSpecPattern.pattern_to_regex(text)
    except ValueError:  # pathspec's GitIgnorePatternError
        return None
    if regex is None or include is None:
        return None
    try:
        # RE2 alone compiles them: Python's ``re`` is never asked to match.
        file, folder = (
            RegexPattern(
                re2.compile(regex.replace(_FOLDER_MARK, end), _re2_options()), include
            )
            for end in ("/$", "$")
        )
    except re2.error:  # an invalid range such as [z-a]
        return None
    return Pattern(line, file, folder)


def _specs(patterns: Sequence[RegexPattern]) -> list[PathSpec[RegexPattern]]:
    """RE2 sets for ``patterns``, in order: as few as RE2's memory budget allows."""
    if len(patterns) > SET_SIZE:
        return [
            spec
            for start in range(0, len(patterns), SET_SIZE)
            for spec in _specs(patterns[start : start + SET_SIZE])
        ]
    if not patterns:
        return []
    import re2  # noqa: PLC0415 - see above
    from pathspec import PathSpec  # noqa: PLC0415

    try:
        return [PathSpec(patterns, backend="re2")]
    except re2.error:
        if len(patterns) == 1:
            return []  # too large for RE2 on its own
    half = (len(patterns) + 1) // 2
    return _specs(patterns[:half]) + _specs(patterns[half:])


class IgnoreFile:
    """The patterns of one .gitignore, relative to the folder it sits in."""

    def __init__(self, base: Path, lines: Sequence[str]) -> None:
        self.base = base
        self.size = 0  # bytes read from disk
        # Of identical lines only the last can decide anything: keeping one also
        # stops a file of one costly line repeated from multiplying its cost.
        last = list(dict.fromkeys(reversed(lines)))[::-1]
        self.patterns = [p for p in map(compile_pattern, last) if p is not None]
        # The last match wins: the sets of a long file are consulted last first.
        self._files = _specs([p.file for p in self.patterns])[::-1]
        self._folders = _specs([p.folder for p in self.patterns])[::-1]

    @classmethod
    def read(cls, path: Path, limit: int = MAX_FILE_SIZE) -> IgnoreFile | None:
        """The .gitignore at ``path``, or None where git would not use one.

        Git reads an in-tree .gitignore without following a symlink, and skips one
        it cannot read; so does this, and it reads at most ``MAX_FILE_SIZE`` bytes, so
        a FIFO or a link to ``/dev/zero`` can neither block nor fill memory.
        """
        try:
            data = read_bounded(path, limit, follow=False)
        except ReadError:
            return None
        size = len(data)
        if data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8) :]
        found = cls(path.parent, data.decode("utf-8", "surrogateescape").split("\n"))
        found.size = size
        return found

    def decide(self, path: Path, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no pattern here matches."""
        relative = _below(path, self.base)
        if relative is None:
            return None
        query = relative.translate(_SURROGATES)
        for spec in self._folders if is_dir else self._files:
            verdict = spec.check_file(query, separators=()).include
            if verdict is not None:
                return verdict
        return None

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


def _below(path: Path, base: Path) -> str | None:
    """``path`` relative to ``base``, as a POSIX path, where it is below it; else
    None. A walk asks this of every file and folder, most often of paths that
    spell ``base`` out first (``Path.relative_to`` builds two paths each time)."""
    text, folder = os.fspath(path), os.fspath(base)
    start = folder if folder.endswith(os.sep) else folder + os.sep
    if text.startswith(start) and len(text) > len(start):
        rest = text[len(start) :]
        return rest if os.sep == "/" else rest.replace(os.sep, "/")
    try:
        relative = path.relative_to(base).as_posix()
    except ValueError:
        return None
    return None if relative == "." else relative


def _regex_sets(
    regexes: Sequence[tuple[int, str]],
) -> list[tuple[Any, tuple[int, ...]]]:
    """RE2 sets for ``regexes`` (an index, an expression), each with the indices of
    its expressions in the order it numbers them; as few as RE2's memory budget
    allows, an expression too large on its own left out."""
    if len(regexes) > SET_SIZE:
        return [
            found
            for start in range(0, len(regexes), SET_SIZE)
            for found in _regex_sets(regexes[start : start + SET_SIZE])
        ]
    if not regexes:
        return []
    import re2  # noqa: PLC0415 - see above

    regex_set = re2.Set.SearchSet(_re2_options())
    try:
        for _, regex in regexes:
            regex_set.Add(regex)
        regex_set.Compile()
    except re2.error:
        if len(regexes) == 1:
            return []
        half = (len(regexes) + 1) // 2
        return _regex_sets(regexes[:half]) + _regex_sets(regexes[half:])
    return [(regex_set, tuple(index for index, _ in regexes))]


def _source(pattern: RegexPattern) -> str:
    """The expression ``compile_pattern`` compiled (never None there)."""
    assert pattern.regex is not None
    source: str = pattern.regex.pattern
    return source


class PatternSet:
    """Patterns that each decide alone (``per-file-ignores``): which of them exclude
    a path, as ``IgnoreFile(base, [pattern]).excludes(path)`` says for each one.

    Every pattern is compiled once, into one RE2 set per kind (file, folder), so a
    path costs one set match per folder on its way, whatever the number of
    patterns. A negated pattern alone excludes nothing, so it is left out."""

    def __init__(self, base: Path, lines: Sequence[str]) -> None:
        self.base = base
        compiled = [(i, compile_pattern(line)) for i, line in enumerate(lines)]
        kept = [(i, p) for i, p in compiled if p is not None and p.file.include]
        self._files = _regex_sets([(i, _source(p.file)) for i, p in kept])
        self._folders = _regex_sets([(i, _source(p.folder)) for i, p in kept])

    def matching(self, path: Path) -> set[int]:
        """The indices of the patterns that exclude ``path`` (a file) or one of its
        folders below ``base``."""
        try:
            parts = path.relative_to(self.base).parts
        except ValueError:
            return set()
        found: set[int] = set()
        for depth in range(1, len(parts) + 1):
            query = "/".join(parts[:depth]).translate(_SURROGATES)
            sets = self._files if depth == len(parts) else self._folders
            for regex_set, indices in sets:
                found.update(indices[i] for i in regex_set.Match(query) or ())
        return found
