"""The project pass gives LibCST only the reached functions of a file: every other
function is blanked, and every line that is kept stays where it was."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from graphlint.sparse import sparse_source
from tests.conftest import FIXTURES

SOURCE = textwrap.dedent(
    '''\
    """A module."""
    import torch

    LIMIT = 4


    @torch.no_grad()
    def unrelated(x):
        return x.item()


    class Model(torch.nn.Module):
        scale = 2

        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.proj(x) * self.scale

        def debug(self, x):
            print(x.tolist())


    class Helpers:
        @staticmethod
        def one(x):
            return x

        def two(self, x):\x0c
            return x


    def outer(x):
        def inner(y):
            return y.sum()
        return inner(x)
    '''
)


def kept_lines(sparse: str) -> dict[int, str]:
    return {n: line for n, line in enumerate(sparse.split("\n"), 1) if line.strip()}


def test_only_what_a_reached_function_reads_is_kept() -> None:
    sparse = sparse_source(SOURCE, ast.parse(SOURCE), {"Model.forward", "outer.inner"})
    ast.parse(sparse)
    original = SOURCE.split("\n")
    assert sparse.count("\n") == SOURCE.count("\n")
    kept = kept_lines(sparse)
    for number, line in kept.items():  # nothing moves
        assert line == original[number - 1] or line.strip() == "pass"
    text = "\n".join(kept.values())
    assert "import torch" in text and "LIMIT = 4" in text and "scale = 2" in text
    assert "def __init__" in text and "self.proj = " in text  # what self.x holds
    assert "def forward" in text and "def outer" in text and "def inner" in text
    assert "unrelated" not in text and "@torch.no_grad()" not in text
    assert "debug" not in text and "tolist" not in text
    # a class left with no member keeps a body, indented as its methods were
    assert "def one" not in text and "def two" not in text
    assert kept[28] == "    pass"


def test_nothing_to_blank_returns_the_source() -> None:
    tree = ast.parse(SOURCE)
    every = {
        "unrelated",
        "Model.forward",
        "Model.debug",
        "Helpers.one",
        "Helpers.two",
        "outer",
    }
    assert sparse_source(SOURCE, tree, every) == SOURCE


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: p.name)
def test_every_fixture_stays_valid_with_one_function_kept(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    functions = [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    sparse = sparse_source(source, tree, set(functions[:1]))
    ast.parse(sparse)
    assert sparse.count("\n") == source.count("\n")
