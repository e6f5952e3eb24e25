"""Maintainer commands. ``python -m graphlint._dev sync-docs [--check]`` regenerates the
rule index in rules/README.md from the registry and the doc pages."""

from __future__ import annotations

import sys
from pathlib import Path

from graphlint.rule import all_checks

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "rules" / "README.md"
START, END = "<!-- rules-index:start -->", "<!-- rules-index:end -->"


def render_index() -> str:
    rows = ["| code | name | summary |", "|---|---|---|"]
    for code, check in all_checks().items():
        off = " (off by default)" if not check.default_enabled else ""
        rows.append(
            f"| [{code}]({check.key()}.md) | {check.name} | {check.summary()}{off} |"
        )
    return "\n".join(rows)


def sync_docs(check: bool = False) -> bool:
    """Rewrite the index; with ``check``, only report whether it is up to date."""
    text = INDEX.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    updated = f"{head}{START}\n{render_index()}\n{END}{tail}"
    if check:
        return updated == text
    INDEX.write_text(updated, encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "sync-docs":
        print("usage: python -m graphlint._dev sync-docs [--check]", file=sys.stderr)
        return 2
    if "--check" in argv:
        if sync_docs(check=True):
            return 0
        print("rules/README.md is out of date: run python -m graphlint._dev sync-docs")
        return 1
    sync_docs()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
