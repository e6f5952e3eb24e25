"""What a worker needs to check a file: the settings of a run, and one file's job.

Light on purpose (no LibCST, no rules): the collecting process reads these, and a run
that finds nothing to analyse never imports the analysis.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from graphlint.codes import default_enabled
from graphlint.read import RUNNING, Version

if TYPE_CHECKING:  # an empty run needs no project pass
    from graphlint.diagnostics import RegionRef

DEFAULT_MAX_FILE_SIZE = 1_048_576  # LibCST took 40 s and 4.8 GB on a 5 MB file
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_MEMORY = 2048  # MiB of address space per worker


@dataclass(frozen=True)
class Settings:
    """What the engine needs from the configuration."""

    enabled: frozenset[str] = field(default_factory=default_enabled)
    markers: frozenset[str] = frozenset()
    checks: frozenset[str] = frozenset()  # functions that ask "capturing now?"
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    timeout: float = DEFAULT_TIMEOUT
    max_memory: int = DEFAULT_MAX_MEMORY  # MiB
    target: Version = RUNNING  # the Python version the checked code is written for
    # analyses not yet judged precise on every tree (``preview`` in the configuration)
    preview: bool = False
    # what library callables run of what they are given, besides the bundled models
    # (``library-runs``: "pkg.fn(a, *args) -> a")
    library_runs: tuple[str, ...] = ()


@dataclass(frozen=True, order=True)
class Setter:
    """A project callable that sets hyper-parameters of an optimizer it is given
    (GL407 across files): calling ``function`` (qualified) sets them on what is
    passed as its ``parameter`` (by keyword, or at ``position``; -1: keyword only),
    or for a method (``attribute``), on what the instance's construction passed its
    ``__init__``'s ``parameter``. ``where``: the write, as "path:line"."""

    function: str
    parameter: str
    position: int
    attribute: bool
    where: str


@dataclass(frozen=True)
class Job:
    """One file for a worker: pass one (``external`` None) or the project pass, which
    analyses the functions regions elsewhere reach. ``declared``: functions of the
    file that ``capture-roots`` names (pass one analyses the file for them);
    ``setters``: the project callables the file's calls asked about that set an
    optimizer's hyper-parameters (``FileResult.asks``); ``typed``: parameters of
    its functions that make a capture, with what every call in the project passes
    them (function path, parameter with its ``Entry.tensors`` mark)."""

    path: Path
    external: Mapping[str, RegionRef] | None = None
    checks: frozenset[str] = frozenset()
    declared: frozenset[str] = frozenset()
    setters: frozenset[Setter] = frozenset()
    typed: frozenset[tuple[str, str]] = frozenset()
