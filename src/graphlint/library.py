"""Library models: what a callable of a library outside the project runs of what it
is given, so that a region calling it reaches that code.

``torch.utils.checkpoint.checkpoint(step, x)`` runs ``step``; Lightning's
``LightningModule.optimizer_step`` runs the module's ``training_step`` and
``backward`` (through the optimizer closure it is handed). The resolver cannot
see into the library, so each such callable is described once, as data: its
qualified name, its parameters, and what it runs, each a parameter (the callable
passed there) or ``self.NAME`` (that method of the object it is called on, the
project's override where there is one)::

    torch.utils.checkpoint.checkpoint(function, *args) -> function

The bundled models are in ``library-runs.toml`` beside this module; a project adds
its own with ``library-runs`` in its configuration, in the same form. A name part
may be ``*`` (``torch.optim.*.step``: any optimizer's ``step``), and one after the
first ``**`` (any number of parts: ``lightning.**.LightningModule``). Parsing reads
the parameter list with ``ast`` and never runs anything.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphlint.project.summary import Arguments, Ref

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

BUNDLED = "library-runs.toml"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_QUALIFIED = re.compile(rf"(?:{_NAME}|\*)(?:\.(?:{_NAME}|\*\*?))+")
_RUN = re.compile(r"(?:self\.)?[A-Za-z_][A-Za-z0-9_]*")


class ModelError(ValueError):
    """A library model that does not parse; the message says why."""


@dataclass(frozen=True)
class LibraryModel:
    """One library callable: ``pattern`` (its qualified name, ``*`` for any one
    part), its parameters in order (``positional``; ``keywords`` the keyword-only
    ones) and what it runs (``runs``: parameter names, or ``self.NAME``)."""

    text: str
    pattern: re.Pattern[str]
    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    runs: tuple[str, ...]

    def matches(self, qualified: str) -> bool:
        return self.pattern.fullmatch(qualified) is not None

    def argument(self, arguments: Arguments | None, name: str) -> Ref | None:
        """What a call with ``arguments`` passes to the parameter ``name``."""
        if arguments is None:
            return None
        for keyword, ref in arguments.keywords:
            if keyword == name:
                return ref
        if name in self.positional:
            index = self.positional.index(name)
            if index < len(arguments.positional):
                return arguments.positional[index]
        return None


def parse(text: str) -> LibraryModel:
    """``text`` ("pkg.fn(a, b=None, *args) -> a, self.hook") as a model."""
    head, arrow, tail = text.partition("->")
    head = head.strip()
    name, paren, rest = head.partition("(")
    if not arrow or not paren or not rest.endswith(")"):
        raise ModelError('expected "qualified.name(parameters) -> what it runs"')
    name = name.strip()
    if not _QUALIFIED.fullmatch(name):
        raise ModelError(f"{name!r} is not a dotted name (a part may be * or **)")
    try:
        tree = ast.parse(f"def _({rest[:-1]}): pass")
    except SyntaxError:
        raise ModelError(f"the parameters {rest[:-1]!r} do not parse") from None
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    args = function.args
    positional = tuple(a.arg for a in [*args.posonlyargs, *args.args])
    keywords = tuple(a.arg for a in args.kwonlyargs)
    runs = tuple(part.strip() for part in tail.split(","))
    method = positional[:1] == ("self",)
    for run in runs:
        if run.startswith("self.") and not method:
            raise ModelError(f"{run!r} needs a method: a first parameter self")
        if not _RUN.fullmatch(run):
            raise ModelError(f"{run!r} is neither a parameter nor self.NAME")
        if not run.startswith("self.") and run not in (*positional, *keywords):
            raise ModelError(f"{run!r} is not one of the parameters")
    if method:  # calls pass what follows ``self``
        positional = positional[1:]
    return LibraryModel(text, _pattern(name), positional, keywords, runs)


def _pattern(name: str) -> re.Pattern[str]:
    """The names ``name`` matches: ``*`` is one part, ``**`` any number of them
    (none too): ``lightning.**.LightningModule`` is ``lightning.LightningModule``
    and ``lightning.pytorch.core.module.LightningModule``."""
    first, *rest = name.split(".")
    regex = r"[^.]+" if first == "*" else re.escape(first)
    for part in rest:
        if part == "**":
            regex += r"(?:\.[^.]+)*"
        elif part == "*":
            regex += r"\.[^.]+"
        else:
            regex += r"\." + re.escape(part)
    return re.compile(regex)


class Library:
    """The models a run uses: the bundled ones, then the project's."""

    def __init__(self, extra: tuple[str, ...] = ()) -> None:
        self.models = (*bundled(), *(parse(text) for text in extra))

    def matching(self, qualified: str) -> list[LibraryModel]:
        """The models of the callable ``qualified`` (``Cls.().method`` of an
        instance is ``Cls.method``)."""
        name = qualified.replace(".().", ".")
        return [m for m in self.models if m.matches(name)]


@cache
def library_of(extra: tuple[str, ...]) -> Library:
    """The models of a run whose configuration adds ``extra`` (parsed once)."""
    return Library(extra)


@cache
def bundled() -> tuple[LibraryModel, ...]:
    """The models that come with graphlint (``library-runs.toml``)."""
    data = (Path(__file__).parent / BUNDLED).read_text(encoding="utf-8")
    return tuple(parse(text) for text in tomllib.loads(data)["runs"])
