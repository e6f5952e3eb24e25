"""A file's values do not depend on the order its names are asked in: a cycle of
bindings is evaluated to its fixed point (``Values._fixpoint``), and an operation
on a read that the cycle cut waits for the other bindings. Checked on every rule
fixture: each name asked in source order, then backwards, in fresh values."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from graphlint.facts.analysis import analyse
from graphlint.facts.positions import positions_of
from graphlint.facts.walk import descendants, forget
from tests.conftest import FIXTURES

FILES = sorted(FIXTURES.glob("GL*/*.py"))


@pytest.mark.parametrize(
    "path", FILES, ids=lambda p: f"{p.parent.name.split('-')[0]}/{p.stem}"
)
def test_values_do_not_depend_on_the_order_of_questions(path: Path) -> None:
    module = cst.parse_module(path.read_text())
    forget(module)
    facts = analyse(module, positions_of(module))
    names = [node for node in descendants(module) if type(node) is cst.Name]
    answers = []
    for order in (names, names[::-1]):
        facts.values.reset()
        answers.append({id(name): facts.value_of(name) for name in order})
    differ = [n.value for n in names if answers[0][id(n)] != answers[1][id(n)]]
    assert differ == []
