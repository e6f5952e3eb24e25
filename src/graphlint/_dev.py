"""Maintainer commands. ``python -m graphlint._dev sync-docs [--check]`` regenerates the
rule index in rules/README.md and the table of codes in ``graphlint/codes.py`` from the
registry and the doc pages."""

from __future__ import annotations

import sys
from pathlib import Path

from graphlint.checks import Check
from graphlint.diagnostics import Outcome
from graphlint.rule import all_checks

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "rules" / "README.md"
CODES = Path(__file__).resolve().parent / "codes.py"
START, END = "<!-- rules-index:start -->", "<!-- rules-index:end -->"
CODES_START, CODES_END = "# codes:start\n", "# codes:end\n"


def render_index() -> str:
    rows = ["| code | name | summary | fix |", "|---|---|---|---|"]
    for code, check in all_checks().items():
        off = " (off by default)" if not check.default_enabled else ""
        fix = check.fix_applicability.value if check.fix_applicability else ""
        rows.append(
            f"| [{code}]({check.key()}.md) | {check.name} | {check.summary()}{off} "
            f"| {fix} |"
        )
    return "\n".join(rows)


def _literal(text: str) -> str:
    """A string literal as ruff formats it: double quotes, unless the text holds
    double quotes and no single ones."""
    escaped = text.replace("\\", "\\\\")
    if '"' in text and "'" not in text:
        return f"'{escaped}'"
    return '"' + escaped.replace('"', '\\"') + '"'


def _severity(check: type[Check]) -> str:
    """A code's severity outside torch.compile, as ``Rule.report`` derives it."""
    if check.severity is not None:
        return check.severity.name.lower()
    return "warning" if check.outcome is Outcome.PERF else "error"


def render_codes() -> str:
    """The entries as ruff formats them (one field a line: a summary can be long)."""
    return "".join(
        f'    "{code}": Code(\n        "{check.name}",\n'
        f"        {check.default_enabled},\n        {_literal(check.summary())},\n"
        f'        "{check.outcome.value}",\n        "{_severity(check)}",\n'
        + (
            f'        "{check.fix_applicability.value}",\n'
            if check.fix_applicability
            else ""
        )
        + "    ),\n"
        for code, check in all_checks().items()
    )


def sync_docs(check: bool = False) -> bool:
    """Rewrite the index and the table of codes; with ``check``, only report whether
    both are up to date."""
    index = INDEX.read_text(encoding="utf-8")
    head, rest = index.split(START, 1)
    _, tail = rest.split(END, 1)
    new_index = f"{head}{START}\n{render_index()}\n{END}{tail}"
    codes = CODES.read_text(encoding="utf-8")
    head, rest = codes.split(CODES_START, 1)
    _, tail = rest.split(CODES_END, 1)
    new_codes = f"{head}{CODES_START}{render_codes()}    {CODES_END}{tail}"
    if check:
        return new_index == index and new_codes == codes
    INDEX.write_text(new_index, encoding="utf-8")
    CODES.write_text(new_codes, encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "sync-docs":
        print("usage: python -m graphlint._dev sync-docs [--check]", file=sys.stderr)
        return 2
    if "--check" in argv:
        if sync_docs(check=True):
            return 0
        print(
            "rules/README.md or graphlint/codes.py is out of date: "
            "run python -m graphlint._dev sync-docs"
        )
        return 1
    sync_docs()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
