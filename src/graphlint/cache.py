"""The cache of module summaries and of files' results: plain data, kept in the
user's cache folder, never in the tree, and bounded.

A checked repository must not be able to ship cache entries (0.1 read a pickled
``.graphlint_cache/`` from the tree, so a repository could run code through it). The
cache therefore lives in the user's cache folder (``platformdirs``), or wherever
``GRAPHLINT_CACHE_DIR`` / ``--cache-dir`` say; nothing in a repository can move it.
In that base folder::

    .swept                  when the last sweep of every project's cache ran
    <project>/              one per project root (24 hex digits of its path's hash)
        .tmp-*              entries being written, renamed into a version's folder
        <version>/          the entries of one graphlint: its format, version and
            <key>           code (16 hex digits); an entry per key (64)

Entries are JSON (``msgspec``), with a format number, and are validated against their
type when read: anything unreadable, of another format or of the wrong shape is a
miss, and the next write replaces it. The base folder is the user's own setting (or
the platform's folder): where it is a link, the link is followed (a cache kept on
another disk). The project and version folders and entries inside it that are
symlinks or not regular files are never followed; reads are bounded and
non-blocking; writes go to a ``mkstemp`` file in the project's folder and are renamed
into place.

What bounds it, at a cost a run does not notice (``Cache._start``, once per run):

- in the project's folder (a few names): a temporary file that a killed run left
  is removed once it is an hour old (a write in progress is seconds old at most);
  the folders of other graphlint versions, and the entries of format 25 and before
  (kept in the project's folder itself), once unused for a day (two graphlint
  installations used side by side, pre-commit's and an editor's, do not remove
  each other's); this version's folder is marked used (at most once an hour);
- once a day (``.swept``), over every project: the same, then, while the entries
  weigh more than ``max_size`` (``GRAPHLINT_CACHE_MAX_MIB``), the least recently
  used go first (an entry read is marked used, at most once a day).

``clean_project`` and ``clean_all`` (``graphlint clean``) remove a project's cache or
every one, and only what looks like graphlint's: names it writes, never a link.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import msgspec

from graphlint import __version__
from graphlint.read import ReadError, read_bounded

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

# bump whenever a stored type changes shape or meaning: 1 was 0.1's pickles, 2 kept
# guard callees where 3 keeps guard formulas; 4 adds untracked names and computed
# callees (why a call is not followed); 5 adds diagnostics' related locations; 6 adds
# compile wrappers; 7 adds call arguments and files' results; 8 adds whole runs and
# screening verdicts; 9 adds suppressions to results (GL008); 10 adds the change
# time to the stamps of files and folders; 11 adds hand-offs to chains
# (``Hop.handoff``), and lambdas and dict literals to summaries; 12 adds what
# functions return (``FunctionSummary.results``); 13 adds where each ``self.``
# attribute is bound (``ClassSummary.attrs_at``); 14 adds calls made in blocks that
# settle their own test (``CallSite.settled``); 15 adds the device tensors
# region calls pass (``Entry.tensors``); 16 adds what factories make
# (``FunctionSummary.made``, results that are constructions) and dataclass fields;
# 17 adds host-tensor arguments (``CallSite.host``, "!" slots of ``Entry.tensors``);
# 18 adds module arguments ("~" slots); 19 reads ``getattr(obj, "name")`` as
# ``obj.name``; 20 adds what functions set hyper-parameters of
# (``FunctionSummary.sets_hyperparameters``) and GL407's questions to the project
# pass (``FileResult.asks``); 21 marks annotated parameters as declared instances
# (``Ref`` kind "declared"); 22 adds return annotations
# (``FunctionSummary.returns_class``); 23 counts ``*=`` and skips nested functions
# in ``sets_hyperparameters``; 24 adds a fix's applicability
# (``Diagnostic.applicability``); 25 the text each edit replaces (``Edit.old``); 26
# counts the columns of calls in code points, not UTF-8 bytes (``CallSite.col``,
# ``CompileSite.col``); 27 adds what the outputs need of a file's text
# (``Diagnostic.anchor`` and ``wide``, ``FileResult.wide``); 28 adds suppressions of
# a whole file (``Suppression.whole_file``), and keeps each version's entries in a
# folder of its own; 29 reads a notebook as the script of its code cells, and adds
# the cells of places in notebooks (``cell`` of ``Diagnostic``, ``Wide`` and the rest);
# 30 adds the callables a module installs on other objects (``Store``); 31 gives a
# region one type, also how a function is reached (``RegionRef`` with the facts its
# calls settle); 32 adds the loops and side-stream blocks of a function (``Blocks``)
# and the capturing functions whose callers elsewhere settle GL703
# (``WarmupVerdict.callers``); 34 adds the constant flags calls pass (the nullness
# codes ``TRUE`` and ``FALSE``); 35 the names a function declares ``global``
# (``FunctionSummary.shared``); 36 stores a file's result as it is, the region of a
# region call typed (``Entry.region``) and compile sites apart (``FileResult.compiles``)
# 37 stores a file's regions and a region call's region as ``RegionRef``
FORMAT = 37
ENV = "GRAPHLINT_CACHE_DIR"
SIZE_ENV = "GRAPHLINT_CACHE_MAX_MIB"  # the most the entries may weigh, in MiB
DEFAULT_MAX_MIB = 1024
_MAX_MIB = 1 << 20  # a TiB
_MAX_ENTRY = 64 * 1024 * 1024
_TEMPORARY = ".tmp-"
_SWEPT = ".swept"
_PROJECT = re.compile(r"[0-9a-f]{24}")
_VERSION = re.compile(r"[0-9a-f]{16}")
_KEY = re.compile(r"[0-9a-f]{64}")
_HOUR_NS = 3600 * 10**9
# a temporary entry this old was left by a run killed between writing and renaming
_STALE_NS = _HOUR_NS
_IN_USE_NS = _HOUR_NS  # this version's folder is marked used at most this often
_UNUSED_NS = 24 * _HOUR_NS  # another version's folder unused this long is removed
_SWEEP_NS = 24 * _HOUR_NS  # every project's cache is swept at most this often
_READ_NS = 24 * _HOUR_NS  # an entry read is marked used at most this often

T = TypeVar("T")


class CacheError(Exception):
    """A setting of the cache the user must fix, or a folder ``graphlint clean``
    refuses: the message says which."""


class _Entry(msgspec.Struct, Generic[T]):
    format: int
    key: str
    value: T


def default_base() -> Path:
    """``$GRAPHLINT_CACHE_DIR``, else the user's cache folder for graphlint."""
    configured = os.environ.get(ENV)
    if configured:
        return Path(configured)
    from platformdirs import user_cache_path  # noqa: PLC0415 - only when caching

    return user_cache_path("graphlint", appauthor=False)


def configured_max_size(environ: Mapping[str, str] = os.environ) -> int:
    """The most the entries of every project may weigh, in bytes:
    ``$GRAPHLINT_CACHE_MAX_MIB`` MiB, else ``DEFAULT_MAX_MIB``. Raises CacheError
    for a value that is not a whole number of MiB from 1 to 1048576."""
    text = environ.get(SIZE_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_MIB << 20
    if not text.isdigit() or not 1 <= int(text) <= _MAX_MIB:
        raise CacheError(
            f"{SIZE_ENV} must be a whole number of MiB from 1 to {_MAX_MIB}, "
            f"not {text!r}"
        )
    return int(text) << 20


def project_folder(root: Path, base: Path | None = None) -> Path:
    """The folder of the cache of the project rooted at ``root``, under ``base``
    (the user's ``--cache-dir``, else ``default_base()``), which is resolved: a
    link the user made there is followed, not refused."""
    name = hashlib.sha256(os.fsencode(root.absolute())).hexdigest()[:24]
    return Path(os.path.realpath(base or default_base())) / name


@functools.cache
def version_folder() -> str:
    """The name of this graphlint's folder in a project's: its format, its version
    and its code (``code_version``), whose entries no other graphlint reads."""
    version = f"{FORMAT}:{__version__}".encode()
    return hashlib.sha256(version + b"\0" + code_version()).hexdigest()[:16]


class Cache:
    """Entries of one project, by key; a cache that cannot be used is only slower.
    ``folder`` holds this graphlint's entries, in the project's folder (its parent),
    in the ``base`` folder of every project's cache, which is swept once a day
    (None: not swept) down to ``max_size`` bytes."""

    def __init__(
        self,
        folder: Path,
        base: Path | None = None,
        max_size: int = DEFAULT_MAX_MIB << 20,
    ) -> None:
        self.folder = folder
        self.project = folder.parent
        self.base = base
        self.max_size = max_size
        self._started = False
        self._now = 0

    @classmethod
    def for_project(
        cls, root: Path, base: Path | None = None, max_size: int | None = None
    ) -> Cache:
        """The cache of the project rooted at ``root`` (``project_folder``), for
        this graphlint (``version_folder``)."""
        project = project_folder(root, base)
        size = max_size if max_size is not None else DEFAULT_MAX_MIB << 20
        return cls(project / version_folder(), project.parent, size)

    @staticmethod
    def key(*parts: bytes) -> str:
        """The key of an entry made from ``parts`` by this version of graphlint."""
        version = f"{FORMAT}:{__version__}".encode()
        return hashlib.sha256(b"\0".join([version, *parts])).hexdigest()

    def get(self, key: str, kind: type[T]) -> T | None:
        if not (self._is_folder(self.project) and self._is_folder(self.folder)):
            return None
        self._start()
        path = self.folder / key
        try:
            data = read_bounded(path, _MAX_ENTRY, follow=False)
            entry = msgspec.json.decode(data, type=_Entry[kind])  # type: ignore[valid-type]
        except (ReadError, msgspec.MsgspecError, ValueError, RecursionError):
            return None
        if entry.format != FORMAT or entry.key != key:
            return None
        with contextlib.suppress(OSError):  # read: used (for the size cap)
            if self._now - os.lstat(path).st_mtime_ns > _READ_NS:
                _touch(path)
        value: T = entry.value
        return value

    def put(self, key: str, value: object) -> None:
        try:
            self._make_folder()
            self._start()
            data = msgspec.json.encode(_Entry(FORMAT, key, value))
            if len(data) > _MAX_ENTRY:
                return  # it could not be read back
            handle, temporary = tempfile.mkstemp(dir=self.project, prefix=_TEMPORARY)
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(data)
                os.replace(temporary, self.folder / key)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except (OSError, ValueError, TypeError, RecursionError, msgspec.MsgspecError):
            pass  # read-only home, a full disk, a folder not ours, odd data: no cache

    def _start(self) -> None:
        """Once per ``Cache`` (a run), when it is first used: tidy the project's
        folder (``_tidy``), and once a day the base folder (``sweep``)."""
        if self._started:
            return
        self._started = True
        self._now = now = time.time_ns()
        ours = _PROJECT.fullmatch(self.project.name) is not None
        _tidy(self.project, now, self.folder.name if ours else None, mark=True)
        if ours and self.base is not None and self.project.parent == self.base:
            with contextlib.suppress(OSError):
                if _sweep_due(self.base, now):
                    sweep(self.base, self.max_size, now, keep=self.project)

    def _make_folder(self) -> None:
        """Create the base folder (and its parents) as needed, then the project's
        and this version's, private to the user; a link among these two is
        refused (the base is the user's: a link there is followed)."""
        above = self.project.parent
        missing = [p for p in (above, *above.parents) if not os.path.lexists(p)]
        for folder in reversed(missing):
            os.mkdir(folder, 0o700)
        for folder in (self.project, self.folder):
            if not os.path.lexists(folder):
                os.mkdir(folder, 0o700)
            if not self._is_folder(folder):
                raise OSError(f"{folder} is not a plain folder")

    @staticmethod
    def _is_folder(path: Path | str) -> bool:
        try:
            return stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            return False


def _tidy(
    project: Path | str, now: int, current: str | None, *, mark: bool = False
) -> None:
    """In a project's folder, remove the temporary files runs killed while writing
    left (an hour old: a write in progress is seconds old). Where ``current`` (the
    folder of this graphlint's entries) is given, the folder is graphlint's: remove
    the folders of other versions, and the entries of format 25 and before (which
    were kept in the project's folder itself), unused for a day; with ``mark``
    (this run's project), mark ``current`` used."""
    try:
        with os.scandir(project) as listing:
            children = list(listing)
    except OSError:
        return
    for child in children:
        with contextlib.suppress(OSError):  # gone: another run removed it
            info = child.stat(follow_symlinks=False)
            age = now - info.st_mtime_ns
            name = child.name
            if name.startswith(_TEMPORARY):
                if stat.S_ISREG(info.st_mode) and age > _STALE_NS:
                    os.unlink(child.path)
            elif current is None:
                continue
            elif name == current:
                if mark and age > _IN_USE_NS and stat.S_ISDIR(info.st_mode):
                    _touch(child.path)
            elif age <= _UNUSED_NS:
                continue
            elif _VERSION.fullmatch(name) and stat.S_ISDIR(info.st_mode):
                shutil.rmtree(child.path, ignore_errors=True)
            elif _KEY.fullmatch(name) and stat.S_ISREG(info.st_mode):
                os.unlink(child.path)


def _touch(path: Path | str) -> None:
    """Mark ``path`` used: its modification time is now (a link's own, never what
    it leads to; where the platform cannot, a link is left alone)."""
    if os.utime in os.supports_follow_symlinks:
        os.utime(path, follow_symlinks=False)
    elif not os.path.islink(path):  # pragma: no cover - Windows
        os.utime(path)


def _sweep_due(base: Path, now: int) -> bool:
    """Whether every project's cache was last swept a day ago or more (or never);
    if so, say it is swept now, so that runs starting meanwhile do not."""
    marker = base / _SWEPT
    try:
        info = os.lstat(marker)
        if not stat.S_ISREG(info.st_mode) or now - info.st_mtime_ns < _SWEEP_NS:
            return False
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _NONBLOCK
    handle = os.open(marker, flags, 0o600)
    try:
        if os.utime in os.supports_fd:
            os.utime(handle)
        else:  # pragma: no cover - Windows
            os.utime(marker)
    finally:
        os.close(handle)
    return True


def sweep(
    base: Path, max_size: int, now: int | None = None, keep: Path | None = None
) -> None:
    """Bound every project's cache under ``base``: in each project's folder, what
    ``_tidy`` removes (this graphlint's entries excepted); then, while the entries
    weigh more than ``max_size`` bytes, remove the least recently used (written, or
    read: ``Cache.get`` marks them), and the folders left empty (``keep``'s
    excepted). Only names graphlint writes are touched, and no link is followed."""
    now = time.time_ns() if now is None else now
    current = version_folder()
    entries: list[tuple[int, int, str]] = []  # (last used, bytes, path)
    projects = [p for p in _children(base) if _PROJECT.fullmatch(p.name) and _dir(p)]
    for project in projects:
        _tidy(project.path, now, current)
        for child in _children(project.path):
            if _VERSION.fullmatch(child.name) and _dir(child):
                entries.extend(_entries(child.path))
            elif _KEY.fullmatch(child.name):  # format 25 and before
                entries.extend(_entries(project.path, [child]))
    total = sum(size for _, size, _ in entries)
    if total > max_size:
        for _, size, path in sorted(entries):
            with contextlib.suppress(OSError):
                os.unlink(path)
            total -= size
            if total <= max_size:
                break
    for project in projects:
        if keep is not None and project.path == os.fspath(keep):
            continue
        for child in _children(project.path):
            if _VERSION.fullmatch(child.name) and _dir(child):
                with contextlib.suppress(OSError):  # not empty
                    os.rmdir(child.path)
        with contextlib.suppress(OSError):
            os.rmdir(project.path)


def _children(folder: str | Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as listing:
            return list(listing)
    except OSError:
        return []


def _dir(entry: os.DirEntry[str]) -> bool:
    """A folder, not a link to one."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _entries(
    folder: str, children: list[os.DirEntry[str]] | None = None
) -> list[tuple[int, int, str]]:
    """(last used, bytes, path) of each entry of ``folder`` (or of ``children``):
    a regular file with a key's name."""
    found = []
    for child in _children(folder) if children is None else children:
        if not _KEY.fullmatch(child.name):
            continue
        with contextlib.suppress(OSError):
            info = child.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode):
                found.append((info.st_mtime_ns, info.st_size, child.path))
    return found


@dataclass(frozen=True)
class Removed:
    """What ``graphlint clean`` removed: project caches, their files and bytes."""

    projects: int
    files: int
    size: int


def clean_project(folder: Path) -> Removed | None:
    """Remove the cache of one project (``project_folder``); None where there is
    none. Raises CacheError, having removed nothing, where ``folder`` does not look
    like graphlint's (``_measure``)."""
    if not os.path.lexists(folder):
        return None
    files, size = _measure(folder)
    _remove(folder)
    return Removed(1, files, size)


def clean_all(base: Path) -> Removed | None:
    """Remove every project's cache under ``base`` (resolved: the user's link is
    followed), which stays; None where it does not exist. Raises CacheError,
    having removed nothing, where ``base`` or one of its folders does not look like
    graphlint's."""
    base = Path(os.path.realpath(base))
    if not os.path.lexists(base):
        return None
    if not os.path.isdir(base):
        raise CacheError(f"{base} is not a folder: not a graphlint cache folder")
    projects: list[Path] = []
    marker: Path | None = None
    files = size = 0
    with os.scandir(base) as listing:  # unreadable: an OSError, said
        children = sorted(listing, key=lambda entry: entry.name)
    for child in children:
        path = Path(child.path)
        if child.name == _SWEPT and not _dir(child):
            marker = path
        elif _PROJECT.fullmatch(child.name):
            count, weight = _measure(path)
            projects.append(path)
            files, size = files + count, size + weight
        else:
            raise _foreign(base, child.name)
    for project in projects:
        _remove(project)
    if marker is not None:
        with contextlib.suppress(OSError):
            os.unlink(marker)
    return Removed(len(projects), files, size) if projects else None


def _measure(project: Path) -> tuple[int, int]:
    """The files and bytes of a project's cache folder. Raises CacheError where it
    is a link or not a folder, or holds a name graphlint does not write there
    (version folders of entries; temporary files; entries of format 25 and
    before): such a folder is not graphlint's to remove."""
    info = os.lstat(project)
    if stat.S_ISLNK(info.st_mode):
        raise CacheError(
            f"{project} is a symbolic link, not a graphlint cache folder; "
            "nothing was removed"
        )
    if not stat.S_ISDIR(info.st_mode) or not _PROJECT.fullmatch(project.name):
        raise CacheError(
            f"{project} does not look like a graphlint cache folder; nothing was "
            "removed"
        )
    files = size = 0
    for child in _children(project):
        if _VERSION.fullmatch(child.name) and _dir(child):
            found = _children(child.path)
        elif _KEY.fullmatch(child.name) or child.name.startswith(_TEMPORARY):
            found = [child]
        else:
            raise _foreign(project, child.name)
        for entry in found:
            named = _KEY.fullmatch(entry.name) or entry.name.startswith(_TEMPORARY)
            if not named or _dir(entry):
                raise _foreign(project, os.path.relpath(entry.path, project))
            files += 1
            with contextlib.suppress(OSError):
                entry_info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(entry_info.st_mode):
                    size += entry_info.st_size
    return files, size


def _foreign(folder: Path, name: str) -> CacheError:
    return CacheError(
        f"{folder} does not look like a graphlint cache folder: it holds "
        f"{name!r}, which graphlint does not write there; nothing was removed"
    )


def _remove(folder: Path) -> None:
    """Remove a folder and what it holds; a link inside is removed, never followed
    (``shutil.rmtree`` works from file descriptors where the platform allows).
    Raises CacheError where some of it stays."""
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.lexists(folder):
        raise CacheError(f"could not remove all of {folder}")


def _version(package: str) -> str:
    """``package``'s version file, by size and times where the package has one
    (installing another version writes it anew): found without importing the
    package, and without ``importlib.metadata``, whose import alone takes 0.05 s
    at the start of every run that caches."""
    from importlib import util  # noqa: PLC0415 - only for a run that caches

    try:
        spec = util.find_spec(package)
        folders = spec.submodule_search_locations if spec is not None else None
        info = os.stat(os.path.join(next(iter(folders or ())), "_version.py"))
        return f"{package} {info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
    except (ImportError, ValueError, StopIteration, OSError):
        pass
    from importlib import metadata  # noqa: PLC0415 - a package without the file

    try:
        return f"{package} {metadata.version(package)}"
    except metadata.PackageNotFoundError:
        return f"{package} unknown"


@functools.cache
def pattern_library() -> str:
    """The version of pathspec, which translates .gitignore patterns (``_version``)."""
    return _version("pathspec")


@functools.cache
def code_version() -> bytes:
    """graphlint's own source files, by name, size and times (an edited rule is a
    new version before its release number changes), with the versions of Python
    and LibCST, whose parsers make the trees."""
    package = Path(__file__).resolve().parent
    stamps = [sys.version, _version("libcst")]
    for path in sorted(package.rglob("*.py")):
        try:
            info = path.stat()
        except OSError:
            continue
        name = path.relative_to(package)
        stamps.append(f"{name}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}")
    return "\n".join(stamps).encode()


__all__ = [
    "ENV",
    "FORMAT",
    "SIZE_ENV",
    "Cache",
    "CacheError",
    "Removed",
    "clean_all",
    "clean_project",
    "code_version",
    "configured_max_size",
    "default_base",
    "pattern_library",
    "project_folder",
    "sweep",
    "version_folder",
]
