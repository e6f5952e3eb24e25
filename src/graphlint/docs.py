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


def what_it_does(page: str) -> str | None:
    """The first paragraph under a page's "What it does" heading, on one line; None
    where the page has none."""
    lines = page.splitlines()
    try:
        start = lines.index("## What it does") + 1
    except ValueError:
        return None
    while start < len(lines) and not lines[start].strip():
        start += 1
    paragraph: list[str] = []
    for line in lines[start:]:
        if not line.strip() or line.startswith("#"):
            break
        paragraph.append(line.strip())
    return " ".join(paragraph) or None
