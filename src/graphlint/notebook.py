"""Jupyter notebooks: their code cells as one Python script, and the way back from
the script's lines to the cells'.

A notebook (``*.ipynb``, nbformat 4 JSON) is checked as the script its code cells
make, joined in order (ruff does the same): the reader (``read.read_file``) hands
that script to everything that reads the file, so the analysis, the cache and the
project pass see a Python file. What is not Python is left out, line for line, so
that every other line stays where it is:

- markdown and raw cells, and a cell whose first line is a cell magic (``%%bash``,
  ``%%writefile``), are not part of the script; a ``%%time``, ``%%timeit``,
  ``%%capture`` or ``%%prun`` cell runs its body as Python, so only its first line
  is left out (:data:`PYTHON_CELL_MAGICS`);
- an IPython line that is not Python (``%time f()``, ``!pip install x``,
  ``files = !ls``, ``x?``, ``??x``, ``/f 1``, and ``pip install x`` in a cell of that
  one line, where IPython reads it as ``%pip``) becomes ``pass`` at its indentation
  (``files = None`` for an assignment), so that the block it is in still parses;
- a notebook whose kernel is not Python (``metadata.kernelspec.language``,
  ``metadata.language_info.name``) has no script.

The script's lines map back to cells through :class:`Cells` (cell numbers count
every cell, markdown ones too, from 1, as ruff counts them); :func:`in_cells` is
the one place where diagnostics and what the analysis saw are given their cells.

A file that is not JSON, or not an nbformat 4 notebook, is :class:`NotebookError`:
the reader reports it as GL001 (GL002 for bytes that are not UTF-8), never raises.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any

from graphlint.diagnostics import (
    Checked,
    Diagnostic,
    FileResult,
    Hop,
    ReachedFunction,
    RegionReach,
    RegionRef,
    Related,
    Survey,
    Unfollowed,
    Wide,
)

SUFFIX = ".ipynb"
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
"""Cell magics whose body IPython runs as Python in the notebook's namespace."""

# Line magics IPython runs without their ``%`` (automagic), as ruff lists them
# (``_AUTOMAGIC`` says where: ``pip install torch`` alone in a cell)
_AUTOMAGIC_NAMES = """
alias alias_magic autoawait autocall automagic bookmark cd code_wrap colors
conda config debug dhist dirs doctest_mode edit env gui history killbgscripts
load load_ext loadpy logoff logon logstart logstate logstop lsmagic macro magic
mamba matplotlib micromamba notebook page pastebin pdb pdef pdoc pfile pinfo
pinfo2 pip popd pprint precision prun psearch psource pushd pwd pycat pylab
quickref recall rehashx reload_ext rerun reset reset_selective run save sc
set_env sx system tb time timeit unalias unload_ext who who_ls whos xdel xmode
"""
AUTOMAGICS = frozenset(_AUTOMAGIC_NAMES.split())
# what starts an IPython line that is no Python statement: a magic (``%``, ``%%``),
# a shell command (``!``, ``!!``), help (``?``, ``??``), or an autocall escape
_ESCAPES = ("%", "!", "?", "/", ",", ";")
_ASSIGNED = re.compile(
    r"(?P<indent>[ \t]*)(?P<targets>[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)"
    r"[ \t]*=[ \t]*[!%](?!=)"
)
# a line magic said without its ``%``: IPython reads a cell of one line so when its
# first word is a magic's (and no variable of the notebook's has that name, which
# graphlint cannot know), unless an assignment follows (``time = 3``, ``run, x = ...``)
_AUTOMAGIC = re.compile(r"[ \t]*(?P<name>[A-Za-z_]\w*)(?:[ \t]+(?P<rest>[^ \t]).*)?")
# a coding declaration (PEP 263): in the script's first two lines it would make the
# reader decode the UTF-8 script with another codec
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_BREAKS = re.compile(r"\r\n?")


def is_notebook(path: str | PurePath) -> bool:
    """Whether ``path`` names a Jupyter notebook (by its suffix, as ruff decides)."""
    return str(path).lower().endswith(SUFFIX)


class NotebookError(Exception):
    """The file is no nbformat 4 notebook: ``detail`` says why, ``undecodable``
    whether its bytes are not UTF-8; ``line`` and ``col`` (1-based, 0-based) are in
    the JSON text, where the JSON is broken."""

    def __init__(
        self, detail: str, *, undecodable: bool = False, line: int = 1, col: int = 0
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.undecodable = undecodable
        self.line = line
        self.col = col


@dataclass(frozen=True, slots=True)
class Cells:
    """Where each code cell's lines are in the script: ``starts[i]`` is the script
    line (1-based) of the first line of the cell numbered ``numbers[i]``."""

    starts: tuple[int, ...] = ()
    numbers: tuple[int, ...] = ()

    def locate(self, line: int) -> tuple[int, int] | None:
        """The cell (1-based, every cell counted) and its line (1-based) that the
        script's ``line`` is; None where the script has no cells."""
        if not self.starts:
            return None
        index = max(bisect.bisect_right(self.starts, line) - 1, 0)
        return self.numbers[index], max(line - self.starts[index] + 1, 1)


@dataclass(frozen=True, slots=True)
class Script:
    """A notebook's code cells as one Python script, and where each cell is."""

    text: str
    cells: Cells


def script(data: bytes) -> Script:
    """The script of the notebook ``data`` (its JSON bytes); raises
    :class:`NotebookError` for a file that is no nbformat 4 notebook."""
    document = _document(data)
    if not _python(document):
        return Script("", Cells())
    parts: list[str] = []
    starts: list[int] = []
    numbers: list[int] = []
    line = 1
    for number, cell in enumerate(document["cells"], 1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise NotebookError(f"cell {number} is not a notebook cell")
        if cell["cell_type"] != "code":
            continue
        lines = _code(_source(cell, number))
        if lines is None:
            continue  # a cell magic that is not Python
        starts.append(line)
        numbers.append(number)
        parts.extend(lines)
        line += len(lines)
    text = "".join(parts)
    return Script(_without_coding(text), Cells(tuple(starts), tuple(numbers)))


def _document(data: bytes) -> dict[str, Any]:
    """The notebook's JSON object, checked to be nbformat 4 with a list of cells."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1)
        raise NotebookError(
            f"invalid utf-8 byte {data[error.start]:#04x} at line {line}: a "
            "notebook is UTF-8 JSON",
            undecodable=True,
            line=line,
            col=column,
        ) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(
            f"not a Jupyter notebook: invalid JSON ({error.msg} at line "
            f"{error.lineno}, column {error.colno})",
            line=error.lineno,
            col=error.colno - 1,
        ) from None
    except RecursionError:
        raise NotebookError("not a Jupyter notebook: JSON nested too deeply") from None
    except ValueError as error:  # a number too long to convert, say
        raise NotebookError(f"not a Jupyter notebook: {error}") from None
    if not isinstance(document, dict):
        raise NotebookError("not a Jupyter notebook: the JSON is not an object")
    version = document.get("nbformat")
    if version is None:
        raise NotebookError("not a Jupyter notebook: no nbformat in its JSON")
    if version != 4 or isinstance(version, bool):
        raise NotebookError(
            f"nbformat {version!r} notebook: graphlint reads nbformat 4 (`jupyter "
            "nbconvert --to notebook --inplace` converts it)"
        )
    if not isinstance(document.get("cells"), list):
        raise NotebookError("not an nbformat 4 notebook: it has no list of cells")
    return document


def _python(document: dict[str, Any]) -> bool:
    """Whether the notebook's kernel runs Python (one that does not say does)."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        found = metadata.get(key)
        language = found.get(field) if isinstance(found, dict) else None
        if isinstance(language, str) and language.lower() != "python":
            return False
    return True


def _source(cell: dict[str, Any], number: int) -> str:
    """A code cell's source: a string, or a list of strings (nbformat's lines)."""
    source = cell.get("source")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise NotebookError(
            f"cell {number} is not an nbformat 4 code cell: its source is not a "
            "string or a list of strings"
        )
    return _LONE_SURROGATE.sub("\ufffd", _BREAKS.sub("\n", source))


def _code(source: str) -> list[str] | None:
    """A code cell's lines as the script holds them, each ending with a line break
    (an empty cell is one empty line); None for a cell magic that is not Python."""
    lines = source.split("\n")
    if lines[-1] == "" and len(lines) > 1:
        lines.pop()  # the break that ends the last line
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(maxsplit=1)
        if not magic or magic[0] not in PYTHON_CELL_MAGICS:
            return None
        lines[first] = _neutral(lines[first])
        _python_lines(lines, first + 1)
    else:
        _python_lines(lines, 0)
    return [f"{line}\n" for line in lines]


def _python_lines(lines: list[str], start: int) -> None:
    """Replace, from ``start`` on, each line that IPython reads as no Python (a
    magic, a shell command, help) with a neutral statement, in place."""
    single = start == 0 and len(lines) == 1  # where IPython tries automagic
    state = _State()
    magic = False  # the line before was a magic that a backslash continues
    for index in range(start, len(lines)):
        line = lines[index]
        if magic:
            lines[index] = _neutral(lines[index - 1])
            magic = line.endswith("\\")
            continue
        if state.open:  # inside brackets, a string, or after a backslash
            state.scan(line)
            continue
        neutral = _ipython(line, single)
        if neutral is None:
            code_end = state.scan(line)
            if not state.open and line[:code_end].rstrip().endswith("?"):
                neutral = _neutral(line)  # ``name?``, ``name??``: help
        if neutral is not None:
            lines[index] = neutral
            magic = line.endswith("\\")


def _ipython(line: str, single: bool) -> str | None:
    """The neutral statement for ``line`` (the start of a logical line), when it
    starts as IPython's own syntax does (an escape, ``x = !cmd``, an automagic in a
    ``single`` line cell); else None (help, at its end, is the caller's to see)."""
    stripped = line.lstrip()
    if not stripped or stripped.startswith("#"):
        return None
    if stripped.startswith(_ESCAPES):
        return _neutral(line)
    assigned = _ASSIGNED.match(line)
    if assigned is not None:
        return f"{assigned['indent']}{assigned['targets']} = None"
    automagic = _AUTOMAGIC.fullmatch(line) if single else None
    if (
        automagic is not None
        and automagic["name"] in AUTOMAGICS
        and automagic["rest"] not in ("=", ",")
    ):
        return _neutral(line)  # ``pip install x``, ``cd /tmp``, ``pwd``
    return None


def _neutral(line: str) -> str:
    """``pass`` at the indentation of ``line``."""
    return f"{line[: len(line) - len(line.lstrip())]}pass"


class _State:
    """Where a scan of Python lines is: inside how many brackets, inside which open
    string (its quotes), after a backslash that continues the line. Enough to tell
    the lines that start a logical line (where IPython looks for its escapes)."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""  # the quotes of a string still open at the line's end
        self.continued = False

    @property
    def open(self) -> bool:
        return bool(self.depth or self.quote or self.continued)

    def scan(self, line: str) -> int:
        """Go over ``line``; where its code ends (a comment starts, or its end)."""
        at, end = 0, len(line)
        self.continued = False
        while at < end:
            if self.quote:
                at = self._string_end(line, at)
                continue
            char = line[at]
            if char == "#":
                return at
            if char in "\"'":
                triple = line.startswith(char * 3, at)
                self.quote = char * 3 if triple else char
                at = self._string_end(line, at + len(self.quote))
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            elif char == "\\" and at == end - 1:
                self.continued = True
            at += 1
        return end

    def _string_end(self, line: str, at: int) -> int:
        """Past the end of the open string on ``line`` from ``at``; at the line's end
        with the string still open where it goes on (triple quotes, or a backslash
        before the break), else closed there (a broken string: the parser says)."""
        end = len(line)
        while at < end:
            if line[at] == "\\":
                if at == end - 1:
                    return end  # a backslash continues the string
                at += 2
                continue
            if line.startswith(self.quote, at):
                at += len(self.quote)
                self.quote = ""
                return at
            at += 1
        if len(self.quote) == 1 and not line.endswith("\\"):
            self.quote = ""
        return end


def _without_coding(text: str) -> str:
    """``text`` with a coding declaration in its first two lines blanked (the
    script is UTF-8 whatever a cell declares)."""
    head = text.split("\n", 2)
    changed = False
    for index in range(min(2, len(head) - 1)):
        if _CODING.match(head[index]):
            head[index] = "#"
            changed = True
    return "\n".join(head) if changed else text


# -- the way back: cells ---------------------------------------------------------

Locator = Callable[[str, int], "tuple[int, int] | None"]


def in_cells(checked: Checked, load: Callable[[str], Cells | None]) -> Checked:
    """``checked`` with every place in a notebook given as its cell and the line in
    that cell (``cell`` set, ``line`` the cell's): the diagnostics, their related
    lines, regions and calls, and what the analysis saw. The lines a message names
    ("the replay at line 12") are given their cells too. A notebook's diagnostics
    lose their fix: fixes are not applied to notebooks. ``load``: a notebook's
    cells, by its path as shown (None where it cannot be read now)."""
    tables: dict[str, Cells | None] = {}

    def locate(path: str, line: int) -> tuple[int, int] | None:
        if not is_notebook(path):
            return None
        if path not in tables:
            tables[path] = load(path)
        table = tables[path]
        return table.locate(line) if table is not None else None

    results = [_result(result, locate) for result in checked.results]
    return Checked(results, _survey(checked.survey, locate))


def _result(result: FileResult, locate: Locator) -> FileResult:
    if not any(is_notebook(p) for p in _paths(result.diagnostics)):
        return result
    return replace(
        result, diagnostics=tuple(_diagnostic(d, locate) for d in result.diagnostics)
    )


def _paths(diagnostics: Iterable[Diagnostic]) -> Iterable[str]:
    for d in diagnostics:
        yield d.path
        if d.region is not None:
            if d.region.path is not None:
                yield d.region.path
            yield from (hop.path for hop in d.region.via)


def _diagnostic(d: Diagnostic, locate: Locator) -> Diagnostic:
    region = d.region
    if region is not None:
        where = locate(region.path if region.path is not None else d.path, region.line)
        region = replace(
            region,
            line=where[1] if where else region.line,
            cell=where[0] if where else None,
            via=tuple(_hop(hop, locate) for hop in region.via),
        )
    wide = tuple(_wide(entry, locate) for entry in d.wide)
    start = locate(d.path, d.line)
    if start is None:
        return replace(d, region=region, wide=wide)
    end = locate(d.path, d.end_line)
    related = tuple(_related(other, d.path, locate) for other in d.related)
    return replace(
        d,
        cell=start[0],
        line=start[1],
        end_line=end[1] if end is not None and end[0] == start[0] else start[1],
        end_col=d.end_col if end is not None and end[0] == start[0] else d.col,
        message=_message(d.message, d.path, locate),
        region=region,
        related=related,
        edits=(),
        applicability=None,
        wide=wide,
    )


def _related(other: Related, path: str, locate: Locator) -> Related:
    where = locate(path, other.line)
    if where is None:
        return other
    return replace(
        other,
        cell=where[0],
        line=where[1],
        message=_message(other.message, path, locate),
    )


def _wide(entry: Wide, locate: Locator) -> Wide:
    where = locate(entry.path, entry.line)
    return entry if where is None else replace(entry, cell=where[0], line=where[1])


def _hop(hop: Hop, locate: Locator) -> Hop:
    where = locate(hop.path, hop.line)
    return hop if where is None else replace(hop, cell=where[0], line=where[1])


def _survey(survey: Survey, locate: Locator) -> Survey:
    def site(found: RegionRef) -> RegionRef:
        where = locate(found.path, found.line) if found.path is not None else None
        return found if where is None else replace(found, cell=where[0], line=where[1])

    def reached(found: ReachedFunction) -> ReachedFunction:
        where = locate(found.path, found.line)
        return found if where is None else replace(found, cell=where[0], line=where[1])

    def call(found: Unfollowed) -> Unfollowed:
        where = locate(found.path, found.line)
        return found if where is None else replace(found, cell=where[0], line=where[1])

    return Survey(
        tuple(
            RegionReach(
                site(r.region),
                tuple(reached(f) for f in r.reached),
                tuple(_hop(hop, locate) for hop in r.handoffs),
            )
            for r in survey.regions
        ),
        tuple(call(c) for c in survey.unfollowed),
    )


# "line 12", "lines 3-9", "lines 3, 5, 8": the script's lines a message names
_LINES_NAMED = re.compile(r"\b(?P<word>lines?) (?P<numbers>\d+(?:(?:-|, )\d+)*)")


def _message(text: str, path: str, locate: Locator) -> str:
    """``text`` (about the notebook ``path``) with the script lines it names given
    as cells and their lines ("cell 3, line 2"); code quoted in backticks is left
    as it is. ``path:12`` (the notebook itself) becomes ``path:cell 3:2``."""
    pieces = text.split("`")
    for index in range(0, len(pieces), 2):  # outside backticks
        piece = pieces[index]
        piece = _LINES_NAMED.sub(lambda m: _named(m, path, locate), piece)
        own = re.escape(path) + r":(\d+)\b"
        piece = re.sub(own, lambda m: _at(m, path, locate), piece)
        pieces[index] = piece
    return "`".join(pieces)


def _named(match: re.Match[str], path: str, locate: Locator) -> str:
    numbers = re.split(r"(-|, )", match["numbers"])
    places = [locate(path, int(n)) if n.isdigit() else n for n in numbers]
    cells = {p[0] for p in places if isinstance(p, tuple)}
    if any(p is None for p in places) or not cells:
        return match.group()
    if len(cells) == 1:
        (cell,) = cells
        shown = "".join(str(p[1]) if isinstance(p, tuple) else str(p) for p in places)
        return f"cell {cell}, {match['word']} {shown}"
    return ", ".join(f"cell {p[0]} line {p[1]}" for p in places if isinstance(p, tuple))


def _at(match: re.Match[str], path: str, locate: Locator) -> str:
    where = locate(path, int(match.group(1)))
    return match.group() if where is None else f"{path}:cell {where[0]}:{where[1]}"


__all__ = [
    "PYTHON_CELL_MAGICS",
    "SUFFIX",
    "Cells",
    "NotebookError",
    "Script",
    "in_cells",
    "is_notebook",
    "script",
]
