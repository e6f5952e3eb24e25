"""Positions computed a statement at a time (``facts.positions.Positions``) are the
whole module's codegen's, for every node the analysis can ask about, in any order."""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from libcst.metadata import CodeRange

from graphlint.facts.positions import Anchor, Positions, anchors, positions_of
from graphlint.facts.walk import descendants
from graphlint.settings import Settings
from tests.conftest import FIXTURES

FILES = sorted(FIXTURES.rglob("*.py"))

TEXTS = {
    "no trailing newline": "x = f(1)",
    "empty": "",
    "comment only": "# nothing\n",
    "crlf": "x = 1\r\ny = f(\r\n  2)\r\n",
    "lone cr": "x = 1\ry = f(2)\r",
    "semicolons": "a = 1; b = f(2); c = 3\nd = 4;\n",
    "decorators and comments": (
        "# c\n\n@dec\n# between\n@other(\n  1)\n\n# after\ndef f(x):\n"
        "    return g(x)\n# trailing\n\n\nclass A(B):\n    @property\n"
        "    def p(self): return h()\n"
    ),
    "continued decorator": "@\\\n  dec\ndef f(): pass\n",
    "tabs and non-ascii": "if x:\n\ty = f()\nelse:\n\tz = 'é' + g('ü')\n",
    "async": (
        "async def f():\n    async with a() as b:\n        await c()\n\n\n"
        "async def g(): pass"
    ),
    "f-string": "x = f'{a(1)} {b(2)!r:>{w()}}'\n",
    "comment after a block": (
        "def f():\n    pass\n    # after the block\n\n# top\nx = y()\n"
    ),
    "class members": (
        "class A:\n    x = f(); y = 2\n    # c\n\n    @d\n    # e\n"
        "    def m(self):\n        return 1\n    # end of class\n\n\n"
        "class B: z = 1\nclass C:\n\tdef f(self):\n\t\tpass\n\tclass D:\n"
        "\t\tdef g(self): h()\n"
    ),
    "class with bases over lines": (
        "class A(\n    B,\n    metaclass=M,\n):\n  def f(self): pass\n"
        "  @property\n  def g(self): return 1\n"
    ),
    "comment at column 0 in a class": (
        "class A:\n    def f(self):\n        pass\n# here\n    def g(self):\n"
        "        pass\n"
    ),
    "continued line in a class": "class A:\n    def f(self): \\\n        pass\n",
}


def _both(
    source: str,
) -> tuple[cst.Module, Mapping[cst.CSTNode, CodeRange], Positions]:
    module = cst.parse_module(source)
    lazy = positions_of(module, anchors(ast.parse(source).body))
    assert isinstance(lazy, Positions)
    return module, positions_of(module), lazy


def _asked(module: cst.Module) -> Iterator[cst.CSTNode]:
    """The nodes the analysis can ask about: those its walk enters."""
    for statement in module.body:
        yield from descendants(statement)


def _agree(source: str, seed: int = 0) -> None:
    """Every node asked, in a random order: the module's statements' each computed
    once (never the whole module's), then the module's own range."""
    module, whole, lazy = _both(source)
    nodes = list(_asked(module))
    random.Random(seed).shuffle(nodes)
    for node in nodes:
        assert lazy[node] == whole[node], (type(node).__name__, whole[node])
    assert not lazy._whole
    assert lazy[module] == whole[module]


@pytest.mark.parametrize("name", list(TEXTS))
def test_a_statement_at_a_time_gives_the_whole_module_s_positions(name: str) -> None:
    _agree(TEXTS[name])


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixtures_positions_agree_asked_in_any_order(path: Path) -> None:
    _agree(path.read_text(encoding="utf-8"), seed=len(path.name))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_generated_modules_positions_agree(source: str) -> None:
    try:
        ast.parse(source)
        cst.parse_module(source)
    except (SyntaxError, ValueError, cst.ParserSyntaxError):
        return  # what neither or only one parser takes is never analysed
    _agree(source)


def test_only_the_statement_asked_about_is_computed() -> None:
    source = (
        "import torch\n\n\nclass Runner:\n    def setup(self):\n"
        "        self.x = make()\n        self.y = make()\n\n    def step(self):\n"
        "        y = self.x + 1\n        return self.graph.replay()\n\n\n"
        "def main():\n    Runner().step()\n"
    )
    module, whole, lazy = _both(source)
    runner = module.body[1]
    assert isinstance(runner, cst.ClassDef)
    _, step = runner.body.body
    assert isinstance(step, cst.FunctionDef)
    call = next(n for n in descendants(step) if isinstance(n, cst.Call))
    assert lazy[call] == whole[call]
    assert lazy.statements == 1  # the method's statement, not the method nor the class
    assert lazy[step] == whole[step]  # from its keyword to its last statement's end
    assert lazy.statements == 1
    assert lazy[step.name] == whole[step.name]  # the method's own node: all of it
    assert lazy.statements == 3  # the method and its two statements
    assert lazy[runner.name] == whole[runner.name]  # the class's own node
    assert lazy.statements == 7  # the class, its two methods, their four statements
    assert not lazy._whole


def test_a_wrong_guess_at_a_statement_s_first_line_is_corrected() -> None:
    """A statement's first line is a guess (its leading lines and comments counted
    back from CPython's line): where the range computed from it does not start on
    CPython's line, it is computed again from the line the difference says; where
    the column differs too, the whole module is computed. (A class's or a
    function's own range takes its start from CPython's parse unchecked.)"""

    def later(anchor: Anchor) -> Anchor:
        return anchor._replace(first=anchor.first + 3)

    def further(anchor: Anchor) -> Anchor:
        return anchor._replace(column=anchor.column + 1)

    for source, wrong in (
        (TEXTS["decorators and comments"], later),
        ("x = f(1)\n# c\ny = [\n  g(2)]\nif x:\n    z = h()\n", further),
    ):
        module = cst.parse_module(source)
        whole = positions_of(module)
        lazy = positions_of(module, [wrong(a) for a in anchors(ast.parse(source).body)])
        for node in [*_asked(module), module]:
            assert lazy[node] == whole[node]


def test_statements_that_do_not_match_are_computed_whole() -> None:
    module = cst.parse_module("a = 1; b = 2\n")
    assert not isinstance(
        positions_of(module, anchors(ast.parse("a = 1\n").body)), Positions
    )


def test_a_node_of_another_tree_is_not_found() -> None:
    _, _, lazy = _both("x = f(1)\n")
    other = cst.parse_expression("f(1)")
    assert lazy.get(other) is None
    with pytest.raises(KeyError):
        lazy[other]


def test_a_check_computes_the_positions_of_the_statements_it_reports_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's check asks for the positions of its capture's function and the
    finding's, not of every function that makes calls or writes state."""
    from graphlint import engine  # noqa: PLC0415

    made: list[Mapping[cst.CSTNode, CodeRange]] = []

    def kept(
        module: cst.Module, where: Sequence[Anchor] | None = None
    ) -> Mapping[cst.CSTNode, CodeRange]:
        made.append(positions_of(module, where))
        return made[-1]

    monkeypatch.setattr(engine, "positions_of", kept)
    helpers = "".join(
        f"def helper_{n}(x):\n    y = x.view(-1)\n    state[{n}] = y\n    return y\n\n\n"
        for n in range(20)
    )
    path = tmp_path / "step.py"
    path.write_text(
        "import torch\n\nstate = {}\n\n\n"
        + helpers
        + "def capture(g, x):\n    with torch.cuda.graph(g):\n"
        "        return x.sum().item()\n"
    )
    found = engine.check_file(path, Settings())
    assert [d.code for d in found.diagnostics] == ["GL101"]
    (positions,) = made
    assert isinstance(positions, Positions)
    assert positions.statements <= 2  # of 23
