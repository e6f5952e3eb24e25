"""The cache of module summaries and of files' results: plain data, kept in the
user's cache folder, never in the tree.

A checked repository must not be able to ship cache entries (0.1 read a pickled
``.graphlint_cache/`` from the tree, so a repository could run code through it). The
cache therefore lives in the user's cache folder (``platformdirs``), one folder per
project root, or wherever ``GRAPHLINT_CACHE_DIR`` / ``--cache-dir`` say; nothing in a
repository can move it.

Entries are JSON (``msgspec``), with a format number, and are validated against their
type when read: anything unreadable, of another format or of the wrong shape is a
miss, and the next write replaces it. The base folder is the user's own setting (or
the platform's folder): where it is a link, the link is followed (a cache kept on
another disk). The project folders and entries inside it that are symlinks or not
regular files are never followed; reads are bounded and non-blocking; writes go to a
``mkstemp`` file (``.tmp-*``) in the cache folder and are renamed into place, and
such a file that a killed run left is removed when the folder is next used, once it
is an hour old (a write in progress is seconds old at most).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Generic, TypeVar

import msgspec

from graphlint import __version__
from graphlint.read import ReadError, read_bounded

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
# (``Diagnostic.applicability``); 25 the text each edit replaces (``Edit.old``);
# 26 adds suppressions of a whole file (``Suppression.whole_file``)
FORMAT = 26
ENV = "GRAPHLINT_CACHE_DIR"
_MAX_ENTRY = 64 * 1024 * 1024
_TEMPORARY = ".tmp-"
# a temporary entry this old was left by a run killed between writing and renaming
_STALE_NS = 3600 * 10**9

T = TypeVar("T")


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


class Cache:
    """Entries of one project, by key; a cache that cannot be used is only slower."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._swept = False

    @classmethod
    def for_project(cls, root: Path, base: Path | None = None) -> Cache:
        """The cache of the project rooted at ``root``, under ``base`` (the user's
        ``--cache-dir``, else ``default_base()``), which is resolved: a link the user
        made there is followed, not refused."""
        name = hashlib.sha256(os.fsencode(root.absolute())).hexdigest()[:24]
        return cls(Path(os.path.realpath(base or default_base())) / name)

    @staticmethod
    def key(*parts: bytes) -> str:
        """The key of an entry made from ``parts`` by this version of graphlint."""
        version = f"{FORMAT}:{__version__}".encode()
        return hashlib.sha256(b"\0".join([version, *parts])).hexdigest()

    def get(self, key: str, kind: type[T]) -> T | None:
        if not self._is_folder(self.folder):
            return None
        self._sweep()
        try:
            data = read_bounded(self.folder / key, _MAX_ENTRY, follow=False)
            entry = msgspec.json.decode(data, type=_Entry[kind])  # type: ignore[valid-type]
        except (ReadError, msgspec.MsgspecError, ValueError, RecursionError):
            return None
        if entry.format != FORMAT or entry.key != key:
            return None
        value: T = entry.value
        return value

    def put(self, key: str, value: object) -> None:
        try:
            self._make_folder()
            self._sweep()
            data = msgspec.json.encode(_Entry(FORMAT, key, value))
            if len(data) > _MAX_ENTRY:
                return  # it could not be read back
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=_TEMPORARY)
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

    def _sweep(self) -> None:
        """Remove the temporary files that killed runs left in the folder, once per
        ``Cache``: regular files named ``.tmp-*`` last written over an hour ago. A
        run writing one now (its file is seconds old) is never disturbed."""
        if self._swept:
            return
        self._swept = True
        now = time.time_ns()
        try:
            with os.scandir(self.folder) as entries:
                found = [e for e in entries if e.name.startswith(_TEMPORARY)]
        except OSError:
            return
        for entry in found:
            with contextlib.suppress(OSError):  # gone: another run removed it
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime_ns > _STALE_NS:
                    os.unlink(entry.path)

    def _make_folder(self) -> None:
        """Create the folder (private to the user), refusing links on the way."""
        missing = [self.folder, *self.folder.parents]
        missing = list(reversed([p for p in missing if not os.path.lexists(p)]))
        for folder in missing:
            os.mkdir(folder, 0o700)
        if not self._is_folder(self.folder) or not self._is_folder(self.folder.parent):
            raise OSError(f"{self.folder} is not a plain folder")

    @staticmethod
    def _is_folder(path: Path) -> bool:
        try:
            return stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            return False


def _version(distribution: str) -> str:
    from importlib import metadata  # noqa: PLC0415 - only for a run that caches

    try:
        return f"{distribution} {metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return f"{distribution} unknown"


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


__all__ = ["ENV", "FORMAT", "Cache", "code_version", "default_base"]
