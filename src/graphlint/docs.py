"""Where a rule's documentation lives: ``rules/<key>.md``, shipped in the wheel."""

from __future__ import annotations

from pathlib import Path

from graphlint.codes import key

_PACKAGED = Path(__file__).parent / "_rules"  # wheel: force-included from rules/
_SOURCE = Path(__file__).resolve().parents[2] / "rules"  # a source checkout


def rules_folder() -> Path | None:
    for folder in (_PACKAGED, _SOURCE):
        if folder.is_dir():
            return folder
    return None


def doc_path(code: str) -> Path | None:
    """The doc page of ``code``, or None if this installation does not have it."""
    name = key(code)
    folder = rules_folder()
    if name is None or folder is None:
        return None
    path = folder / f"{name}.md"
    return path if path.is_file() else None
