"""What changes when a file or a folder does: the stamps by which a run keeps what
it found (results, screening verdicts, folder listings) for the next one."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from graphlint.diagnostics import Diagnostic
from graphlint.read import overlaid, read_file

# size, modification time (ns), change time (ns) or content digest, inode; None: gone
Stamp = tuple[int, int, int, int] | None

# Where the change time is the status change time (POSIX), every write, rename and
# utime() sets it to the present and nothing sets it back: a same-size edit whose
# modification time was put back (os.utime, tar, rsync, cp -p; an inode number
# reused for a new file) still changes it. Windows keeps the creation time there,
# so the stamp takes a digest of the content instead.
_CTIME_CHANGES = os.name != "nt"
_CHUNK = 1 << 20


def stamp(path: Path | str) -> Stamp:
    """What changes when a file or folder does (a folder's times change when an entry
    is added, removed or renamed in it); never follows a link's loop or raises. A
    file in the overlay (an unsaved buffer) is stamped by its text there."""
    given = overlaid(path)
    if given is not None:
        return (len(given), -1, -1, _digest([given]))
    return _stamp(path, os.stat)


def on_disk(path: Path | str) -> Stamp:
    """The stamp of what the disk holds at ``path`` itself: a link is not followed,
    and an unsaved buffer is not asked (a walk lists folders and reads .gitignore
    files from disk, never through a link)."""
    return _stamp(path, os.lstat)


def recent(found: Stamp, since: int) -> bool:
    """Whether ``found`` shows a change after ``since`` (ns since the epoch): its
    modification time, or its change time where it has one (which ``utime()``, as
    tar and ``rsync -t`` use it, cannot put back)."""
    return found is not None and (
        found[1] > since or (_CTIME_CHANGES and found[2] > since)
    )


def digest_of(path: Path, display: str, max_file_size: int) -> str | Diagnostic:
    """The SHA-256 (hex) of ``read.read_file``'s bytes, or its outcome, kept for the
    process by the file's stamp (taken before the file is read): a language
    server's edit keys each candidate's result and each module's summary again,
    and read and hashed every one of those files each time."""
    now = stamp(path)
    name = os.fspath(path)
    known = _DIGESTS.get(name)
    if known is not None and now is not None and known[:2] == (now, max_file_size):
        return known[2]
    data = read_file(path, display, max_file_size)
    if isinstance(data, Diagnostic):
        return data
    found = hashlib.sha256(data).hexdigest()
    if now is not None:
        _DIGESTS.pop(name, None)
        _DIGESTS[name] = (now, max_file_size, found)
        while len(_DIGESTS) > _DIGESTS_KEPT:
            del _DIGESTS[next(iter(_DIGESTS))]
    return found


# ``digest_of``'s: by path, the stamp and size limit it was read under, and the
# digest; most recently made last
_DIGESTS: dict[str, tuple[Stamp, int, str]] = {}
_DIGESTS_KEPT = 100_000


def _stamp(path: Path | str, status: Callable[[Path | str], os.stat_result]) -> Stamp:
    try:
        info = status(path)
        changed = info.st_ctime_ns if _CTIME_CHANGES else _content(path, info)
    except (OSError, ValueError):
        return None
    return (info.st_size, info.st_mtime_ns, changed, info.st_ino)


def _digest(chunks: Iterable[bytes]) -> int:
    digest = hashlib.blake2b(digest_size=7)
    for chunk in chunks:
        digest.update(chunk)
    return int.from_bytes(digest.digest(), "big")


def _content(path: Path | str, info: os.stat_result) -> int:
    """A digest of a file's bytes or a folder's names (-1 for anything else, which
    is never read: a FIFO would block)."""
    if stat.S_ISDIR(info.st_mode):
        return _digest(os.fsencode(name) + b"\0" for name in sorted(os.listdir(path)))
    if not stat.S_ISREG(info.st_mode):
        return -1
    with open(path, "rb") as file:
        return _digest(iter(lambda: file.read(_CHUNK), b""))


__all__ = ["Stamp", "digest_of", "on_disk", "recent", "stamp"]
