"""Reading files that a checked repository controls, without hanging or following
them anywhere.

A repository decides what its paths are: a FIFO named ``.gitignore`` would block a
plain ``open()`` forever, a link to ``/dev/zero`` would grow memory without bound,
and a symlinked cache entry would send a write out of the tree. Every file graphlint
reads from a checked tree (sources, ``.gitignore``, ``pyproject.toml``, cache
entries) goes through :func:`read_bounded`: opened non-blocking, checked to be a
regular file on the open descriptor (no race with a swap after ``stat``), and read up
to a limit.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import stat
import sys
import tokenize
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from graphlint.checks import Check
from graphlint.diagnostics import Confidence, Diagnostic, Severity
from graphlint.notebook import Cells, NotebookError, Script, is_notebook
from graphlint.notebook import script as notebook_script
from graphlint.tool_codes import (
    EmptyFile,
    OversizedFile,
    ParserLimitExceeded,
    UndecodableFile,
    UnparsableFile,
    UnreadableFile,
)

# Flags that do not exist on every platform are simply absent there.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class ReadError(Exception):
    """The file cannot be read as a regular file; ``reason`` says why, in words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TooLarge(ReadError):
    """The file is a regular file larger than the limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes, over the {limit}-byte limit")
        self.size = size
        self.limit = limit


def read_bounded(
    path: str | os.PathLike[str], limit: int, *, follow: bool = True
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises :class:`TooLarge` past ``limit`` and :class:`ReadError` for anything that
    is not a readable regular file: a FIFO, socket or device (never blocks), a missing
    or unreadable path, a symlink loop, and with ``follow=False`` any symlink.
    """
    flags = os.O_RDONLY | _NONBLOCK | _NOCTTY | _CLOEXEC | _BINARY
    try:
        # Opening a device can act (a watchdog, a terminal): look before opening, and
        # check again on the open descriptor, in case the path changed in between.
        before = os.stat(path) if follow else os.lstat(path)
        if not stat.S_ISREG(before.st_mode):
            raise ReadError(file_type(before.st_mode))
        fd = os.open(path, flags | (0 if follow else _NOFOLLOW))
    except OSError as error:
        raise ReadError(os_reason(error)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadError(file_type(info.st_mode))
        if info.st_size > limit:
            raise TooLarge(info.st_size, limit)
        chunks: list[bytes] = []
        size = 0
        # the size it has, and one byte more to see it grow: os.read allocates all it
        # is asked for, and a megabyte for every small file was most of the cost
        want = info.st_size + 1
        while size <= limit:
            asked = max(1, min(want, 1 << 20, limit + 1 - size))
            chunk = os.read(fd, asked)
            want = 1 << 16  # it grew: read on in blocks
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if len(chunk) < asked:
                break  # a short read of a regular file: its end
        if size > limit:  # it grew while we read it
            raise TooLarge(size, limit)
        return b"".join(chunks)
    except OSError as error:
        raise ReadError(os_reason(error)) from None
    finally:
        os.close(fd)


def os_reason(error: OSError) -> str:
    """An OS error in words, without the path (the caller names the path)."""
    return error.strerror or type(error).__name__


def file_type(mode: int) -> str:
    """Why a file of ``mode`` is not read: ``not a regular file (a FIFO)``."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return f"not a regular file ({name})"
    return "not a regular file"


# -- source files ----------------------------------------------------------------
Version = tuple[int, int]
RUNNING: Version = (sys.version_info.major, sys.version_info.minor)


def tool_diagnostic(
    check: type[Check], path: str, line: int = 1, col: int = 0, **fmt: object
) -> Diagnostic:
    """A GL0xx diagnostic: a file-level outcome with no region."""
    assert check.severity is not None
    return Diagnostic(
        path=path,
        code=check.code,
        name=check.name,
        message=check.message.format(**fmt),
        line=max(line, 1),
        col=max(col, 0),
        end_line=max(line, 1),
        end_col=max(col, 0),
        severity=check.severity,
        confidence=Confidence.HIGH,
        outcome=check.outcome,
        fix_hint=check.fix_title,
    )


_OVERLAY: dict[str, bytes] = {}  # real path: the text an editor or stdin gave


@contextlib.contextmanager
def overlay(contents: Mapping[str, bytes]) -> Iterator[None]:
    """Read these files' text from ``contents`` (by path) instead of the disk, in
    this process and the workers it starts: an editor's unsaved buffer, stdin."""
    before = dict(_OVERLAY)
    set_overlay({os.path.realpath(path): data for path, data in contents.items()})
    try:
        yield
    finally:
        set_overlay(before)


def set_overlay(contents: Mapping[str, bytes]) -> None:
    """Replace the overlay (by real path); a worker takes its run's this way."""
    _OVERLAY.clear()
    _OVERLAY.update(contents)


def overlay_contents() -> Mapping[str, bytes]:
    """The overlay in force, by real path (a view, not a copy)."""
    return MappingProxyType(_OVERLAY)


def overlaid(path: Path | str) -> bytes | None:
    """The text ``path`` has in the overlay; None: it is read from disk. The real
    path is the run's (``real_path``): a server's edit stamps thousands of files."""
    return _OVERLAY.get(str(real_path(path))) if _OVERLAY else None


def unsaved() -> bool:
    """Whether the overlay holds text its file on disk does not: an editor's unsaved
    edit, or standard input that differs from the file it names."""
    return any(unsaved_file(path) for path in list(_OVERLAY))


def unsaved_file(path: str | os.PathLike[str]) -> bool:
    """Whether the overlay holds text for ``path`` that its file on disk does not
    (``unsaved`` for one file)."""
    if not _OVERLAY:
        return False
    real = str(real_path(path))
    text = _OVERLAY.get(real)
    if text is None:
        return False
    try:
        return read_bounded(real, len(text)) != text
    except ReadError:  # TooLarge too: the disk's is longer
        return True


LINK_OUT = "a link out of the repository"
_LEADS_OUT: list[Callable[[Path], bool]] = []  # the innermost ``confined`` in force


@contextlib.contextmanager
def confined(leads_out: Callable[[Path], bool]) -> Iterator[None]:
    """Have ``read_file``, in this process, not read the files ``leads_out`` says
    lead out of the checked repository (a committed link to a file elsewhere): each
    is GL004, so nothing of such a file (its size, names, text) reaches the output.
    """
    _LEADS_OUT.append(leads_out)
    try:
        yield
    finally:
        _LEADS_OUT.pop()


def read_file(path: Path, display: str, max_file_size: int) -> bytes | Diagnostic:
    """A source file's bytes (from the overlay, where it has them), or its GL003/GL004
    outcome; never blocks. A Jupyter notebook's are its script's (its code cells as
    one UTF-8 Python source, ``graphlint.notebook``), or GL001/GL002 for one that is
    not an nbformat 4 notebook, GL006 for an empty file. ``max-file-size`` counts
    the script's bytes: the notebook itself (its outputs, images) may be up to
    ``NOTEBOOK_SIZE`` times larger."""
    notebook = is_notebook(path)
    data = read_raw(
        path, display, _raw_limit(max_file_size) if notebook else max_file_size
    )
    if isinstance(data, Diagnostic) or not notebook:
        return data
    if not data.strip():
        return tool_diagnostic(EmptyFile, display)
    try:
        script = _notebook(data).text.encode("utf-8")
    except NotebookError as error:
        check = UndecodableFile if error.undecodable else UnparsableFile
        return tool_diagnostic(
            check, display, error.line, error.col, detail=error.detail
        )
    if len(script) > max_file_size:
        return tool_diagnostic(
            OversizedFile, display, size=len(script), limit=max_file_size
        )
    return script


NOTEBOOK_SIZE = 16  # a notebook's JSON may weigh this many times its code's limit


def _raw_limit(max_file_size: int) -> int:
    return max_file_size * NOTEBOOK_SIZE


def notebook_cells(path: Path, display: str, max_file_size: int) -> Cells | None:
    """Where the code cells of the notebook ``path`` are in its script; None where
    it cannot be read or is not a notebook (its own diagnostic says why)."""
    data = read_raw(path, display, _raw_limit(max_file_size))
    if isinstance(data, Diagnostic):
        return None
    try:
        return _notebook(data).cells
    except NotebookError:
        return None


# the scripts of the notebooks read last, by their bytes: a run reads a notebook
# several times in one process (its screen, its cache key, its cells for the report)
_SCRIPTS: dict[bytes, Script] = {}
_SCRIPTS_KEPT = 32 * 1_048_576  # bytes of notebooks at most


def _notebook(data: bytes) -> Script:
    """``notebook.script(data)``, made once for the same bytes; raises
    ``NotebookError``."""
    found = _SCRIPTS.pop(data, None)
    if found is None:
        found = notebook_script(data)
    _SCRIPTS[data] = found  # the latest last
    kept = sum(len(known) for known in _SCRIPTS)
    while kept > _SCRIPTS_KEPT and len(_SCRIPTS) > 1:
        oldest = next(iter(_SCRIPTS))
        kept -= len(oldest)
        del _SCRIPTS[oldest]
    return found


def read_raw(path: Path, display: str, max_file_size: int) -> bytes | Diagnostic:
    """A file's bytes as they are (a notebook's JSON), or its GL003/GL004 outcome."""
    given = overlaid(path)
    if given is not None:
        if len(given) > max_file_size:
            return tool_diagnostic(
                OversizedFile, display, size=len(given), limit=max_file_size
            )
        return given
    if _LEADS_OUT and _LEADS_OUT[-1](path):
        return tool_diagnostic(UnreadableFile, display, detail=LINK_OUT)
    try:
        return read_bounded(path, max_file_size)
    except TooLarge as error:
        return tool_diagnostic(
            OversizedFile, display, size=error.size, limit=error.limit
        )
    except ReadError as error:
        return tool_diagnostic(UnreadableFile, display, detail=error.reason)


@dataclass(frozen=True)
class Source:
    """A source file that CPython accepts for the target version, or that LibCST
    parses where the target is newer than this interpreter (then ``tree`` is None)."""

    text: str
    tree: ast.Module | None


def read_text(path: Path, display: str, max_file_size: int) -> str | Diagnostic:
    """A source file's text, or its GL002/GL003/GL004/GL006 outcome: what can be
    said of a file without parsing it. An empty ``__init__.py`` has no text."""
    data = read_file(path, display, max_file_size)
    if isinstance(data, Diagnostic):
        return data
    if not data.strip():
        if path.name == "__init__.py" or is_notebook(path):
            return ""  # a notebook without code cells has no text either
        return tool_diagnostic(EmptyFile, display)
    return decode(data, display)


def source_of(
    text: str, display: str, target: Version = RUNNING
) -> Source | Diagnostic:
    """A file's text (``read_text``'s) as a source, or its GL0xx outcome. An empty
    ``__init__.py`` has no text."""
    if not text:
        return Source("", None)
    tree = prescreen(text, display, target)
    return tree if isinstance(tree, Diagnostic) else Source(text, tree)


def decode(data: bytes, path: str) -> str | Diagnostic:
    """Decode source bytes as CPython does (PEP 263 cookie, BOM), or say why not."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        return tool_diagnostic(UndecodableFile, path, detail=str(error))
    try:
        text = data.decode(encoding)
    except LookupError:
        return tool_diagnostic(
            UndecodableFile, path, detail=f"unknown encoding {encoding!r}"
        )
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1)
        detail = f"invalid {encoding} byte {data[error.start]:#04x} at line {line}"
        return tool_diagnostic(UndecodableFile, path, line, column, detail=detail)
    return text[1:] if text.startswith("\ufeff") else text


# CPython's trees of the last texts parsed, in a language server's worker
# (``keep_trees``: an edited file's summary and its project pass, the same text), by
# text and target, most recently used last, up to ``_TREES_KEPT`` characters of
# text: a tree takes about 30 bytes a character. A command line's workers keep none:
# 256 KiB kept took 12 % more CPU on a generated project of 30,000 files (the
# collector walks the trees kept) and 30 MiB more memory at 10,000, for no gain
# beyond the noise on Megatron-LM
_TREES: dict[tuple[str, Version], ast.Module] = {}
_TREES_KEPT = 0


def keep_trees() -> None:
    """Keep CPython's trees of the last texts parsed: a worker that lives between
    runs, where the collector runs between edits."""
    global _TREES_KEPT
    _TREES_KEPT = 1 << 18


def prescreen(
    source: str, display: str, target: Version = RUNNING
) -> ast.Module | Diagnostic | None:
    """Parse with CPython first: its errors and positions are the reliable ones, and it
    rejects the nesting depths at which LibCST recurses away or crashes.

    Returns the tree, or the file's GL001/GL005 outcome. A target older than this
    interpreter is checked with ``feature_version``; for a newer one, code this
    interpreter rejects is not called broken when LibCST parses it (None: valid, but
    no CPython tree). A tree is the last one of the same text where it is kept: no
    reader changes a tree."""
    key = (source, target)
    tree = _TREES.pop(key, None)
    if tree is None:
        found = _cpython(source, display, target)
        if not isinstance(found, ast.Module) or len(source) > _TREES_KEPT:
            return found
        tree = found
    _TREES[key] = tree
    kept = sum(len(text) for text, _ in _TREES)
    while kept > _TREES_KEPT and len(_TREES) > 1:
        oldest = next(iter(_TREES))
        kept -= len(oldest[0])
        del _TREES[oldest]
    return tree


def _cpython(
    source: str, display: str, target: Version
) -> ast.Module | Diagnostic | None:
    try:
        with warnings.catch_warnings():  # a SyntaxWarning is no error, whatever -W says
            warnings.simplefilter("ignore")
            if target < RUNNING:
                return ast.parse(source, display, feature_version=target)
            return ast.parse(source, display)
    except SyntaxError as error:
        if target > RUNNING and _libcst_parses(source):
            return None
        where = f" (line {error.lineno})" if error.lineno else ""
        newer = f" for Python {target[0]}.{target[1]}" if target != RUNNING else ""
        return tool_diagnostic(
            UnparsableFile,
            display,
            error.lineno or 1,
            (error.offset or 1) - 1,
            detail=f"{error.msg}{where}{newer}",
        )
    except (RecursionError, MemoryError):
        detail = "nested too deeply for CPython's parser"
        return tool_diagnostic(ParserLimitExceeded, display, detail=detail)
    except ValueError as error:  # e.g. null bytes, before Python 3.12
        return tool_diagnostic(UnparsableFile, display, detail=str(error))


MAX_DEPTH = 1_000
"""Nesting of a syntax tree beyond which LibCST is not asked to parse it. CPython
accepts left-deep chains of any length (``a + b + ... ``, ``x[0][0]...``, ``f()()...``);
LibCST's parser is superlinear on them (``x[0]`` 1,000 times: 1.2 s, 1,400 times:
3.6 s, and the analysis of a region holding it 13 s; a 3,000-term ``+`` chain: 20-45 s
to parse). A statement that goes deeper is skipped (:func:`skip_statements`), not
the file."""


@dataclass(frozen=True)
class Skipped:
    """A statement nested deeper than :data:`MAX_DEPTH`, which the syntax-tree
    analysis skips. Lines are 1-based; columns are CPython's, UTF-8 bytes into the
    line."""

    line: int
    col: int
    end_line: int
    end_col: int
    deep: int  # the line where the nesting goes past the limit


def too_deep(tree: ast.AST, source: str | None = None) -> list[Skipped]:
    """The statements of ``tree`` nested deeper than :data:`MAX_DEPTH`, in order:
    each the innermost statement that holds such nesting and that ``pass`` can
    replace (not an ``elif``: its whole ``if``; a definition with its decorators),
    none inside another. Iterative: any depth CPython builds.

    Given the ``source`` of ``tree``, the expressions of a statement whose text is
    too short to nest that deep are not walked (``_text_length``)."""
    found: dict[ast.AST, int] = {}  # statement -> the line where it goes too deep
    starts = _line_starts(source) if source is not None else None
    # node, depth, nearest line number, the statement that holds it
    stack: list[tuple[ast.AST, int, int, ast.AST | None]] = [(tree, 1, 1, None)]
    while stack:
        node, depth, line, holder = stack.pop()
        if holder is not None and holder in found:
            continue  # skipped already
        line = getattr(node, "lineno", line)
        if isinstance(node, (ast.alias, ast.ImportFrom)):  # LibCST nests dotted names
            name = node.name if isinstance(node, ast.alias) else node.module
            depth += (name or "").count(".")
        if depth > MAX_DEPTH and holder is not None:
            found[holder] = line
            continue
        children: Iterable[ast.AST] = ast.iter_child_nodes(node)
        if (
            starts is not None
            and isinstance(node, ast.stmt)
            and depth + 2 * _text_length(node, starts) + 8 <= MAX_DEPTH
        ):
            children = [c for c in children if isinstance(c, _BLOCKS)]
        for child in children:
            inner = holder
            if isinstance(child, ast.stmt) and not _elif(node, child):
                inner = child
            stack.append((child, depth + 1, line, inner))
    spans = sorted(
        (_span(statement, line) for statement, line in found.items()),
        key=lambda s: (s.line, s.col, -s.end_line, -s.end_col),
    )
    outermost: list[Skipped] = []
    for span in spans:  # a statement inside one skipped goes with it
        if outermost and (span.line, span.col) < (
            outermost[-1].end_line,
            outermost[-1].end_col,
        ):
            continue
        outermost.append(span)
    return outermost


# what holds statements: the nodes of a statement ``too_deep`` walks when it need
# not walk its expressions
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def _line_starts(source: str) -> list[int]:
    """The offset of each line's start, as CPython numbers lines (from 1 at index
    1), and the end of the text last."""
    return [0, 0, *(m.end() for m in _NEWLINE.finditer(source)), len(source)]


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _text_length(statement: ast.stmt, starts: list[int]) -> int:
    """How many characters a statement's own expressions may span at most: those of
    its lines, up to the first line of its body for a compound statement
    (decorators included). A node of a syntax tree takes a character of the text
    or stands between two that do (``keyword``, ``arguments``, a context), so an
    expression ``n`` characters long is less than ``2 * n + 2`` nodes deep."""
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    first = min([statement.lineno, *(d.lineno for d in decorators)])
    body = getattr(statement, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        last = body[0].lineno
    else:
        last = statement.end_lineno or statement.lineno
    last = min(last + 1, len(starts) - 1)  # the start of the line after it
    return starts[last] - starts[min(first, last)]


def _elif(parent: ast.AST, child: ast.AST) -> bool:
    """Whether ``child`` may be the ``elif`` of ``parent``: no statement of its own
    in the text (``else:`` and a lone ``if`` look the same in the tree)."""
    return isinstance(parent, ast.If) and parent.orelse == [child]


def _span(statement: ast.AST, deep: int) -> Skipped:
    line = getattr(statement, "lineno", 1)
    col = getattr(statement, "col_offset", 0)
    decorators = getattr(statement, "decorator_list", [])
    if decorators:  # at the indentation of the definition
        line = min(line, *(d.lineno for d in decorators))
    end_line = getattr(statement, "end_lineno", None) or line
    end_col = getattr(statement, "end_col_offset", None) or col
    return Skipped(line, col, end_line, end_col, deep)


def skip_statements(source: str, skipped: list[Skipped]) -> str:
    """``source`` with each of the ``skipped`` statements (``too_deep``'s) replaced
    by ``pass``, continued with backslashes over the lines it spanned: every other
    line and column stays where it was, also code after the statement on its last
    line (``x = <deep>; y.item()``)."""
    lines = _LINES.findall(source)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"  # a backslash continued to the end of the file: no NEWLINE
    for span in reversed(skipped):
        first = lines[span.line - 1]
        last = lines[span.end_line - 1]
        before = _chars(first, span.col)
        upto = _chars(last, span.end_col)  # the last line up to the statement's end
        if span.line == span.end_line:
            width = max(len(upto) - len(before) - len("pass"), 0)
            lines[span.line - 1] = f"{before}pass{' ' * width}{first[len(upto) :]}"
            continue
        middle = [f"\\{_ending(line)}" for line in lines[span.line : span.end_line - 1]]
        lines[span.line - 1 : span.end_line] = [
            f"{before}pass \\{_ending(first)}",
            *middle,
            f"{' ' * len(upto)}{last[len(upto) :]}",
        ]
    return "".join(lines)


def skipped_note(display: str, span: Skipped) -> Diagnostic:
    """GL005 as a note (information): the statement was skipped, the rest of the
    file analysed."""
    where = (
        f"statement at lines {span.line}-{span.end_line}"
        if span.end_line > span.line
        else "statement"
    )
    message = (
        f"{where} skipped: an expression nested more than {MAX_DEPTH} levels deep "
        f"(line {span.deep}) is beyond the syntax-tree analysis; the rest of the "
        "file was analysed"
    )
    found = tool_diagnostic(ParserLimitExceeded, display, span.line, detail="")
    return replace(found, message=message, severity=Severity.INFORMATION)


def deep_outcome(display: str, line: int) -> Diagnostic:
    """GL005 for a file whose nesting keeps all of it from the syntax-tree
    analysis."""
    detail = (
        f"an expression nested more than {MAX_DEPTH} levels deep "
        f"(line {line}) is beyond the syntax-tree analysis"
    )
    return tool_diagnostic(ParserLimitExceeded, display, line, detail=detail)


# lines as CPython counts them (``str.splitlines`` also splits at form feeds)
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _chars(line: str, col: int) -> str:
    """The start of ``line`` up to the UTF-8 byte offset ``col`` (CPython's)."""
    return line.encode("utf-8", "surrogatepass")[:col].decode("utf-8", "replace")


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _libcst_parses(source: str) -> bool:
    import libcst as cst  # noqa: PLC0415 - only for syntax newer than this Python

    try:
        cst.parse_module(source)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return False
    return True


def module_of(path: Path) -> str:
    """The dotted module name of a file: its package and its stem. A notebook's
    keeps its suffix (``analysis.ipynb``): no import names it, and a script of the
    same stem beside it (a jupytext pair) is another module."""
    package = package_of(path)
    if path.name == "__init__.py":
        return package or real_path(path).parent.name
    stem = path.name if is_notebook(path) else path.stem
    return f"{package}.{stem}" if package else stem


def package_of(path: Path) -> str | None:
    """The dotted package a file belongs to, from the ``__init__.py`` files above it.
    Each folder is looked up once per run, not once per file in it, and each file's
    answer is kept for the run (a server's edit asks it of every file again)."""
    key = _absolute(path)
    if key in _FILE_PACKAGES:
        return _FILE_PACKAGES[key]
    found = _FILE_PACKAGES[key] = _package_of(real_path(key).parent)
    if len(_FILE_PACKAGES) > _PACKAGES_KEPT:
        _FILE_PACKAGES.clear()
    return found


def _package_of(folder: Path) -> str | None:
    climbed: list[Path] = []  # packages whose parent is not known yet
    while folder not in _PACKAGES:
        if folder.parent == folder or not is_regular_file(folder / "__init__.py"):
            _PACKAGES[folder] = None
            break
        climbed.append(folder)
        folder = folder.parent
    above = _PACKAGES[folder]
    for package in reversed(climbed):
        above = _PACKAGES[package] = (
            f"{above}.{package.name}" if above else package.name
        )
    if len(_PACKAGES) > _PACKAGES_KEPT:  # the files' answers go too: each run
        _PACKAGES.clear()  # lists the folders it looked up (``package_folders``)
        _FILE_PACKAGES.clear()
        _ROOTS.clear()
    return above


def source_root(path: Path) -> Path:
    """The folder imports of ``path`` are relative to: above its top package. Each
    file's is computed once per run."""
    key = _absolute(path)
    found = _ROOTS.get(key)
    if found is None:
        folder = real_path(key).parent
        package = package_of(path)
        found = _ROOTS[key] = folder.parents[package.count(".")] if package else folder
        if len(_ROOTS) > _PACKAGES_KEPT:
            _ROOTS.clear()
    return found


def _absolute(path: str | os.PathLike[str]) -> str:
    """``path`` as the key of the run's lookups: absolute, from the working folder
    (which a process running several runs may change between them). Asked of each
    file a few times a run (thousands of times a server's edit): within runs, each
    path's key is kept while their working folder stays the same (``run_folder``);
    where paths start with ``/``, joined by hand: a third of what
    ``os.path.isabs`` and ``os.path.join`` cost."""
    if not _RUN_FOLDER:
        return _joined(os.fspath(path), os.getcwd())
    folder = _RUN_FOLDER[-1]
    if folder != _KEYS_FOLDER[0]:
        _KEYS.clear()
        _KEYS_FOLDER[0] = folder
    key = _KEYS.get(path)
    if key is None:
        key = _KEYS[path] = _joined(os.fspath(path), folder)
        if len(_KEYS) > _PACKAGES_KEPT:
            _KEYS.clear()
    return key


def _joined(path: str, folder: str) -> str:
    if not _POSIX:
        return path if os.path.isabs(path) else os.path.join(folder, path)
    if path[:1] == "/":
        return path
    return folder + path if folder.endswith("/") else f"{folder}/{path}"


_POSIX = os.sep == "/" and os.altsep is None
_RUN_FOLDER: list[str] = []  # the working folder of each run under way (``run_folder``)
# ``_absolute``'s keys, by the path as given (a ``Path`` or its text), from the
# working folder ``_KEYS_FOLDER`` names
_KEYS: dict[str | os.PathLike[str], str] = {}
_KEYS_FOLDER = [""]


@contextlib.contextmanager
def run_folder() -> Iterator[None]:
    """A run: its working folder is asked once, not once for each relative path
    looked up (a server's edit looks up thousands). A run does not change it; a
    process running several (tests, a server) may, between them."""
    try:
        _RUN_FOLDER.append(os.getcwd())
    except OSError:  # removed: each lookup asks, and says so where it must
        yield
        return
    try:
        yield
    finally:
        _RUN_FOLDER.pop()


def paths_state() -> tuple[int, str]:
    """What the lookups' answers (real paths, packages, source roots) depend on: how
    often they were forgotten, and the working folder. An answer computed from them
    holds while this is the same."""
    return _FORGOTTEN[0], _RUN_FOLDER[-1] if _RUN_FOLDER else os.getcwd()


_FORGOTTEN = [0]  # how many times ``forget_paths`` was called
_PACKAGES: dict[Path, str | None] = {}  # folder -> the package it is
_FILE_PACKAGES: dict[str, str | None] = {}  # a file (absolute) -> its package
_ROOTS: dict[str, Path] = {}  # a file (absolute) -> its source root
_PACKAGES_KEPT = 100_000


def package_folders() -> list[Path]:
    """The folders looked up for ``__init__.py`` since ``forget_paths``."""
    return list(_PACKAGES)


def forget_paths() -> None:
    """Look folders and links up again (a run starts: ``__init__.py`` files and links
    may have come or gone since the last)."""
    _FORGOTTEN[0] += 1
    _PACKAGES.clear()
    _FILE_PACKAGES.clear()
    _ROOTS.clear()
    _REAL.clear()


def real_path(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute with its links resolved where they resolve; unlike
    ``Path.resolve()`` it never raises on a link loop (Python 3.10-3.12 do). Each
    path is resolved once per run (``forget_paths`` starts a run); a relative one
    by where it leads from the working folder, which a process running several
    (tests, a server) may change between them."""
    key = _absolute(path)
    found = _REAL.get(key)
    if found is None:
        found = _REAL[key] = _resolve(key)
        if len(_REAL) > _PACKAGES_KEPT:
            _REAL.clear()
    return found


def known_real(path: Path) -> None:
    """``path`` (absolute) is real: a file that is no link, found by walking real
    folders. ``real_path`` answers it without asking the file system."""
    if len(_REAL) < _PACKAGES_KEPT:
        _REAL.setdefault(os.fspath(path), path)


def _resolve(path: str) -> Path:
    """``os.path.realpath``, resolving each folder once: a name that is not a link
    is its folder's real path and the name (one ``lstat``, not one per part)."""
    folder, name = os.path.split(path)
    if folder and name and name not in (".", ".."):
        base = _REAL.get(folder)
        if base is None:
            base = _REAL[folder] = Path(os.path.realpath(folder))
        full = base / name
        try:
            if not stat.S_ISLNK(os.lstat(full).st_mode):
                return full
        except (OSError, ValueError):
            pass
    return Path(os.path.realpath(path))


_REAL: dict[str, Path] = {}


def is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
