"""Fixes that apply themselves: ``check --fix``, ``--unsafe-fixes``, ``--diff``.

The fixer works on the files' text in memory (the read overlay), pass by pass: lint,
apply every fix that does not overlap another one in its file, check that the file
still parses, lint again. A fix whose finding is still there after it, or whose file
no longer parses, is rolled back and reported as a bug of graphlint's. It stops when
nothing more applies, or after ``MAX_PASSES`` (and says so). Nothing is written here:
the caller writes the changed files (``write``) or prints their diff (``diff``).

Edits are spans of a file's text (lines 1-based, columns 0-based code points, as
LibCST gives them), replaced by the edit's text with its line breaks written as the
file writes its own.

Jupyter notebooks are left as they are: their diagnostics come without edits
(``graphlint.notebook``), ``--add-noqa`` adds no comment to them, and ``untouched``
says which notebooks had findings, for a warning.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import io
import os
import stat
import tempfile
import tokenize
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from graphlint.columns import BREAK, line_starts, lines_with_breaks, offset
from graphlint.comments import add_ignore
from graphlint.diagnostics import Applicability, Checked, Diagnostic, Edit
from graphlint.notebook import is_notebook
from graphlint.read import overlaid, overlay, overlay_contents

MAX_PASSES = 10  # rounds of lint-and-fix: each applies what did not overlap


@dataclass(frozen=True, slots=True)
class Fixed:
    """A finding that a fix removed: where it was (in the text the fix was made
    on) and what it said."""

    path: str
    line: int
    col: int
    code: str
    message: str
    applicability: Applicability


@dataclass
class Source:
    """A file's text as the fixer holds it: its bytes as read, how to write it back
    (encoding, line break), and its text now."""

    path: str
    original: bytes
    encoding: str
    newline: str
    text: str
    read: str = ""  # the text as read

    def __post_init__(self) -> None:
        self.read = self.read or self.text

    @property
    def changed(self) -> bool:
        return self.text != self.read

    @property
    def data(self) -> bytes:
        return self.text.encode(self.encoding)


@dataclass
class Fixing:
    """What a fix run did: the files it changed, the findings their fixes removed,
    the problems met (a fix rolled back, the pass bound), and the last lint."""

    sources: dict[str, Source] = field(default_factory=dict)
    fixed: list[Fixed] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    checked: Checked = field(default_factory=lambda: Checked([]))

    @property
    def changed(self) -> list[Source]:
        return [s for s in self.sources.values() if s.changed]

    def remaining(self) -> list[Diagnostic]:
        """The findings of the last lint."""
        return [d for r in self.checked.results for d in r.diagnostics]


def fixable(d: Diagnostic, unsafe: bool) -> bool:
    """Whether a run applies ``d``'s fix: a safe one always, an unsafe one only
    with ``unsafe``."""
    if not d.edits:
        return False
    return unsafe or d.applicability is Applicability.SAFE


def fix(
    lint_once: Callable[[], Checked], *, unsafe: bool, applying: bool = True
) -> Fixing:
    """Lint (``lint_once``, reading the fixer's texts through the overlay) and fix
    until nothing more applies; without ``applying``, lint once."""
    run = Fixing()
    if not applying:
        run.checked = lint_once()
        return run
    refused: set[tuple[str, str, tuple[Edit, ...]]] = set()  # fixes rolled back
    stale: set[str] = set()  # files changed on disk while being checked
    made: list[_Pass] = []  # last pass's, by file
    for number in range(MAX_PASSES + 1):
        texts = {s.path: s.data for s in run.sources.values() if s.changed}
        with overlay({**overlay_contents(), **texts}):  # stdin's, and the fixes
            checked = lint_once()
        run.checked = checked
        settled, made = made, []
        if settled and _settle(run, settled, checked, refused):
            continue  # a fix was rolled back: lint that file again as it was
        todo = _todo(checked, unsafe, refused)
        if not todo:
            break
        if number == MAX_PASSES:
            run.problems.append(
                f"stopped after {MAX_PASSES} passes with fixes still to apply"
            )
            break
        before = _by_path(checked)
        for path, found in todo.items():
            if path in stale:
                continue
            source = run.sources.get(path) or _source(path)
            if source is None:
                run.problems.append(f"{path}: cannot be read again; not fixed")
                continue
            chosen = _chosen(found)
            if not all(_holds(source.text, m.edits) for m in chosen):
                stale.add(path)  # the edits are for a text the file no longer has
                run.problems.append(f"{path}: changed while it was checked; not fixed")
                continue
            run.sources[path] = source
            chosen = _parsing(source, chosen, path, refused, run.problems)
            if chosen:
                made.append(_Pass(source, source.text, chosen, before.get(path, [])))
                source.text = apply(
                    source.text, [e for m in chosen for e in m.edits], source.newline
                )
    return run


def _parsing(
    source: Source,
    chosen: list[_Made],
    path: str,
    refused: set[tuple[str, str, tuple[Edit, ...]]],
    problems: list[str],
) -> list[_Made]:
    """The fixes of ``chosen`` that leave the file parsable: all of them, or, when
    together they do not, those that do alone (the others are refused and reported)."""
    together = [e for m in chosen for e in m.edits]
    if _parses(apply(source.text, together, source.newline), path):
        return chosen
    kept = []
    for m in chosen:
        if _parses(apply(source.text, m.edits, source.newline), path):
            kept.append(m)
        else:
            refused.add(m.key(path))
            problems.append(_bug(path, m, "leaves the file unparsable"))
    together = [e for m in kept for e in m.edits]
    if kept and not _parses(apply(source.text, together, source.newline), path):
        return kept[:1]  # each parses alone: one now, the next ones after it
    return kept


def _holds(text: str, edits: Sequence[Edit]) -> bool:
    """Whether ``text`` still holds, at each edit's span, the text it was made for."""
    starts = line_starts(text)
    return all(
        text[offset(starts, e.line, e.col) : offset(starts, e.end_line, e.end_col)]
        == e.old
        for e in edits
        if e.old  # "": not known
    )


@dataclass(frozen=True, slots=True)
class _Made:
    """One fix applied in a pass: the finding it answers and its edits."""

    diagnostic: Diagnostic
    edits: tuple[Edit, ...]
    also: tuple[Diagnostic, ...] = ()  # other findings with the same fix

    def key(self, path: str) -> tuple[str, str, tuple[Edit, ...]]:
        return (path, self.diagnostic.code, self.edits)


@dataclass(frozen=True, slots=True)
class _Pass:
    """One file's fixes in a pass: its text before them, and its findings then."""

    source: Source
    before: str
    chosen: list[_Made]
    found: list[Diagnostic]


def _by_path(checked: Checked) -> dict[str, list[Diagnostic]]:
    found: dict[str, list[Diagnostic]] = {}
    for result in checked.results:
        for d in result.diagnostics:
            found.setdefault(d.path, []).append(d)
    return found


def _todo(
    checked: Checked, unsafe: bool, refused: set[tuple[str, str, tuple[Edit, ...]]]
) -> dict[str, list[Diagnostic]]:
    """The findings whose fixes apply, by file."""
    found: dict[str, list[Diagnostic]] = {}
    for result in checked.results:
        for d in result.diagnostics:
            if fixable(d, unsafe) and (d.path, d.code, d.edits) not in refused:
                found.setdefault(d.path, []).append(d)
    return found


def _chosen(found: Iterable[Diagnostic]) -> list[_Made]:
    """The fixes of one file that a pass applies: in order, each whose edits touch
    no span an earlier one's do (the rest wait for the next pass); the same edits
    for several findings (one fix) count once, for all of them."""
    by_edits: dict[tuple[Edit, ...], list[Diagnostic]] = {}
    for d in sorted(found, key=lambda d: min((e.line, e.col) for e in d.edits)):
        edits = tuple(sorted(d.edits, key=lambda e: (e.line, e.col)))
        by_edits.setdefault(edits, []).append(d)
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    chosen: list[_Made] = []
    for edits, findings in by_edits.items():
        spans = [((e.line, e.col), (e.end_line, e.end_col)) for e in edits]
        if any(_overlap(a, b) for a in spans for b in taken):
            continue
        taken.extend(spans)
        chosen.append(_Made(findings[0], edits, tuple(findings[1:])))
    return chosen


def _overlap(
    a: tuple[tuple[int, int], tuple[int, int]],
    b: tuple[tuple[int, int], tuple[int, int]],
) -> bool:
    """Whether two spans share text, or are one insertion point (two insertions
    at the same place would not say in which order)."""
    if a[0] == b[0]:
        return True
    return a[0] < b[1] and b[0] < a[1]


def _settle(
    run: Fixing,
    made: list[_Pass],
    checked: Checked,
    refused: set[tuple[str, str, tuple[Edit, ...]]],
) -> bool:
    """Check last pass's fixes against the lint after them: each finding fixed must
    be gone. A file where one is not goes back to its text before that pass, and
    that fix is refused from then on (the others come again). Whether one went
    back."""
    remaining = _by_path(checked)
    rolled = False
    for done in made:
        source = done.source
        after = remaining.get(source.path, [])
        removed = {id(m): _removed(m, done, after) for m in done.chosen}
        stayed = [m for m in done.chosen if not removed[id(m)]]
        if stayed:  # the pass is undone; the other fixes come again in the next
            source.text = done.before
            rolled = True
            for m in stayed:
                refused.add(m.key(source.path))
                run.problems.append(_bug(source.path, m, "does not remove its finding"))
            continue
        run.fixed.extend(
            Fixed(
                source.path,
                d.line,
                d.col,
                d.code,
                d.message,
                d.applicability or Applicability.UNSAFE,
            )
            for m in done.chosen
            for d in (m.diagnostic, *m.also)[: removed[id(m)]]
        )
    return rolled


def _removed(made: _Made, done: _Pass, after: list[Diagnostic]) -> int:
    """How many of the findings ``made`` fixes are gone after the pass: each one
    that is not where it was; for one inside one of the pass's edits, as many as
    the text the edit wrote holds fewer findings of its code than the text it
    replaced (one edit may hold several)."""
    findings = (made.diagnostic, *made.also)
    old, new = line_starts(done.before), line_starts(done.source.text)
    edits = sorted(
        (e for m in done.chosen for e in m.edits), key=lambda e: (e.line, e.col)
    )
    gone = 0
    for d in findings:
        point = offset(old, d.line, d.col)
        shift = 0
        for e in edits:
            begin = offset(old, e.line, e.col)
            end = offset(old, e.end_line, e.end_col)
            written = len(BREAK.sub(done.source.newline, e.text))
            if begin <= point < end or begin == point == end:
                low, high = begin + shift, begin + shift + written
                was = sum(
                    x.code == d.code
                    and begin <= offset(old, x.line, x.col) < max(end, begin + 1)
                    for x in done.found
                )
                now = sum(
                    x.code == d.code
                    and low <= offset(new, x.line, x.col) < max(high, low + 1)
                    for x in after
                )
                return min(len(findings), max(was - now, 0))
            if end <= point:
                shift += written - (end - begin)
        moved = point + shift
        if not any(
            x.code == d.code and offset(new, x.line, x.col) == moved for x in after
        ):
            gone += 1
    return gone


def _bug(path: str, made: _Made, what: str) -> str:
    d = made.diagnostic
    return (
        f"{path}:{d.line}:{d.col + 1}: the fix of {d.code} {what}; not applied "
        "(a bug of graphlint's: please report it)"
    )


def apply(text: str, edits: Sequence[Edit], newline: str = "\n") -> str:
    """``text`` with ``edits`` (spans that do not overlap) replaced, each edit's
    line breaks written as ``newline``."""
    starts = line_starts(text)
    spans = sorted(
        (
            offset(starts, e.line, e.col),
            offset(starts, e.end_line, e.end_col),
            BREAK.sub(newline, e.text),
        )
        for e in edits
    )
    parts: list[str] = []
    at = 0
    for begin, end, new in spans:
        parts.append(text[at:begin])
        parts.append(new)
        at = max(at, end)
    parts.append(text[at:])
    return "".join(parts)


def _parses(text: str, path: str) -> bool:
    """Whether CPython still parses the fixed text (no warnings shown)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def _source(path: str) -> Source | None:
    """A file's text as the linter read it: the overlay's (stdin, an editor) or
    the disk's."""
    data = overlaid(path)
    if data is None:
        try:
            data = Path(path).read_bytes()
        except OSError:
            return None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None
    found = BREAK.search(text)
    return Source(path, data, encoding, found.group() if found else "\n", text)


def diff(sources: Iterable[Source]) -> str:
    """A unified diff of each changed file, as ``git diff`` names its sides and
    marks a last line without a line break (``git apply`` takes it)."""
    out: list[str] = []
    for source in sources:
        before = lines_with_breaks(source.read)
        after = lines_with_breaks(source.text)
        for line in difflib.unified_diff(
            before, after, f"a/{source.path}", f"b/{source.path}"
        ):
            if line.endswith(("\n", "\r")):
                out.append(line)
            else:
                out.append(f"{line}\n\\ No newline at end of file\n")
    return "".join(out)


def write(source: Source) -> str | None:
    """Write a fixed file in place of the original, atomically (a temporary file in
    its folder, then a rename), keeping its mode and owner; None, or why it was not
    written: a link, or a file in a linked folder (never written through), a file
    with other hard links, one that is read-only or that changed since it was read."""
    path = Path(source.path)
    if _linked(path):
        return "a link, or in a linked folder: not written through"
    try:
        now = path.read_bytes()
        status = path.stat()
    except OSError as error:
        return f"cannot be read again ({error.strerror or error})"
    if now != source.original:
        return "changed since it was read: not written"
    mode = stat.S_IMODE(status.st_mode)
    if not mode & stat.S_IWUSR or not os.access(path, os.W_OK):
        return "read-only: not written"  # its mode says so, even to root
    if status.st_nlink > 1:
        return "has other hard links, which a new file would leave behind: not written"
    try:
        handle, temporary = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=".graphlint"
        )
    except OSError as error:
        return f"its folder is not writable ({error.strerror or error})"
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(source.data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        if (status.st_uid, status.st_gid) != (os.getuid(), os.getgid()):
            os.chown(temporary, status.st_uid, status.st_gid)
        os.replace(temporary, path)
    except OSError as error:
        return f"not written ({error.strerror or error})"
    finally:  # also when interrupted: no temporary file stays behind
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return None


def _linked(path: Path) -> bool:
    """Whether ``path``, or a folder on its way from the current folder (from its
    own folder, for a path outside it), is a symbolic link."""
    absolute = Path(os.path.abspath(path))
    here = Path(os.path.abspath("."))
    if absolute.is_relative_to(here):
        parts = absolute.relative_to(here).parts
        return any(
            (here / Path(*parts[: n + 1])).is_symlink() for n in range(len(parts))
        )
    return absolute.is_symlink() or absolute.parent.is_symlink()


def untouched(diagnostics: Iterable[Diagnostic]) -> dict[str, int]:
    """The notebooks among the files of ``diagnostics`` that have findings (not
    graphlint's own GL0xx about a file), with how many: ``--fix``, ``--diff`` and
    ``--add-noqa`` leave notebooks as they are."""
    found: dict[str, int] = {}
    for d in diagnostics:
        if is_notebook(d.path) and not d.code.startswith("GL0"):
            found[d.path] = found.get(d.path, 0) + 1
    return found


def suppress(
    sources: dict[str, Source],
    diagnostics: Iterable[Diagnostic],
    read_more: bool = False,
) -> tuple[dict[str, int], int]:
    """``--add-noqa``: a ``# graphlint: ignore[CODE]`` comment on the line where each
    finding starts (the code added to the line's own suppression comment, or a
    comment added after the one there), in the sources' texts (``read_more``: the
    files not read yet are, into ``sources``). How many were added, by file, and
    how many findings were left without one: on a line that goes on with a
    backslash or ends inside a string, or in a file that would then no longer
    parse. Not for graphlint's own GL0xx about a file, nor in a notebook (left as
    it is: ``untouched``)."""
    added: dict[str, int] = {}
    skipped = 0
    by_path: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        if not d.code.startswith("GL0") and not is_notebook(d.path):
            by_path.setdefault(d.path, []).append(d)
    for path, found in by_path.items():
        source = sources.get(path)
        if source is None and read_more:
            source = _source(path)
            if source is not None:
                sources[path] = source
        if source is None:
            skipped += len(found)
            continue
        lines = BREAK.split(source.text)
        breaks = [*BREAK.findall(source.text), ""]
        comments, inside = _comments(source.text)
        count = 0
        for d in sorted(found, key=lambda d: (d.line, d.code)):
            index = d.line - 1
            line = lines[index] if index < len(lines) else ""
            if index >= len(lines) or d.line in inside or line.rstrip().endswith("\\"):
                skipped += 1
                continue
            at = comments.get(d.line)
            if at is None:  # no comment: one is added
                changed: str | None = f"{line.rstrip()}  # graphlint: ignore[{d.code}]"
                comments[d.line] = len(line.rstrip()) + 2
            else:  # the comment there gets the code, or one is added after it
                rest = add_ignore(line[at:], d.code)
                changed = None if rest is None else line[:at] + rest
            if changed is not None:
                lines[index] = changed
                count += 1
        text = "".join(line + end for line, end in zip(lines, breaks, strict=True))
        if count and _parses(text, path):
            source.text = text
            added[path] = count
        elif count:
            skipped += count
    return added, skipped


def _comments(text: str) -> tuple[dict[int, int], set[int]]:
    """Where each line's comment starts (by line, the column), and the lines whose
    end is inside a string that goes on to the next line (a comment added there
    would be part of the string)."""
    comments: dict[int, int] = {}
    inside: set[int] = set()
    # universal newlines: a file that ends its lines with "\r" alone reads as one
    lines = io.StringIO(text, newline=None)
    with contextlib.suppress(tokenize.TokenError, SyntaxError, IndentationError):
        for token in tokenize.generate_tokens(lines.readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.start[1]
            elif token.type == tokenize.STRING or token.type in _FSTRING:
                inside.update(range(token.start[0], token.end[0]))
    return comments, inside


_FSTRING = {
    getattr(tokenize, name)
    for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
    if hasattr(tokenize, name)
}


__all__ = [
    "MAX_PASSES",
    "Fixed",
    "Fixing",
    "Source",
    "apply",
    "diff",
    "fix",
    "fixable",
    "suppress",
    "untouched",
    "write",
]
