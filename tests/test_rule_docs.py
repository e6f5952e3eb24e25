"""Rule docs have the fixed headings, and their examples behave as documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphlint.diagnostics import Applicability
from graphlint.engine import lint_source
from graphlint.rule import Rule, all_checks
from graphlint.settings import Settings
from tests.conftest import RULE_DOCS

DOCS = sorted(RULE_DOCS.glob("GL*.md"))
WARMUP = "GL703"
HEADINGS = [
    "## What it does",
    "## Why is this bad under CUDA graphs?",
    "## Example",
    "## Use instead",
    "## Fix",
    "## Known limitations",
    "## Runtime check",
    "## References",
]
RULE_ONLY = {"## Use instead", "## Fix", "## Runtime check"}
FIX_LEADS = {
    Applicability.SAFE: "Safe fix (`--fix`):",
    Applicability.UNSAFE: "Unsafe fix (`--unsafe-fixes`):",
    None: "No automatic fix:",
}


def _block(text: str, heading: str) -> str:
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"{heading} needs a fenced python block"
    return match.group(1)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.stem)
def test_doc_shape(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    code, name = path.stem.split("-", 1)
    check = all_checks()[code]
    assert text.startswith(f"# {code} {name}\n"), "title is `# CODE name`"
    assert check.name == name
    assert "Status:" in text.splitlines()[2]
    is_rule = issubclass(check, Rule)
    headings = [h for h in HEADINGS if is_rule or h not in RULE_ONLY]
    positions = [text.find(h) for h in headings]
    assert all(p >= 0 for p in positions), [
        h for h, p in zip(headings, positions, strict=True) if p < 0
    ]
    assert positions == sorted(positions), "headings in the documented order"


@pytest.mark.parametrize(
    "path",
    [p for p in DOCS if issubclass(all_checks()[p.stem.split("-")[0]], Rule)],
    ids=lambda p: p.stem,
)
def test_doc_examples(path: Path) -> None:
    """The Example triggers the rule; Use instead triggers nothing at all.

    Examples show one hazard each, so they leave out the warm-up before a capture
    that GL703 asks for; its own page shows it."""
    text = path.read_text(encoding="utf-8")
    code = path.stem.split("-")[0]
    on = Settings().enabled | {code}  # rules off by default are shown too
    example = lint_source(_block(text, "## Example"), settings=Settings(on))
    assert code in {d.code for d in example}
    enabled = on - ({WARMUP} - {code})
    fixed = lint_source(_block(text, "## Use instead"), settings=Settings(enabled))
    assert not fixed, [(d.line, d.code) for d in fixed]


@pytest.mark.parametrize(
    "path",
    [p for p in DOCS if issubclass(all_checks()[p.stem.split("-")[0]], Rule)],
    ids=lambda p: p.stem,
)
def test_the_fix_section_says_what_the_rule_does(path: Path) -> None:
    """A rule with a fix says what it does and how safe it is; one without says
    why there is none."""
    check = all_checks()[path.stem.split("-")[0]]
    section = path.read_text(encoding="utf-8").split("## Fix\n", 1)[1]
    assert section.startswith(FIX_LEADS[check.fix_applicability])


def test_the_readme_lists_every_fix() -> None:
    """The README's table of fixes: each rule with a fix, and how safe it is."""
    text = (RULE_DOCS.parent / "README.md").read_text(encoding="utf-8")
    table = text.split("<!-- fixes-table:start -->", 1)[1].split("<!--", 1)[0]
    listed = {  # the most permissive first: "safe / unsafe"
        row.split("|")[1].strip(" [").split("]")[0]: row.split("|")[2]
        .split("/")[0]
        .strip()
        for row in table.strip().splitlines()[2:]
    }
    fixed = {
        code: check.fix_applicability.value
        for code, check in all_checks().items()
        if check.fix_applicability is not None
    }
    assert listed == fixed
    assert len(fixed) >= 12
