"""Reaching bindings: which binding of a name each read sees (facts/reaching.py)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from graphlint.facts.reaching import Reaching
from graphlint.facts.scopes import ScopeBuilder
from graphlint.facts.walk import walk


def seen(source: str) -> dict[tuple[int, str], list[int] | None]:
    """(line, name) of each read -> the lines of the bindings it sees (None:
    unknown); the last read of a name on a line wins."""
    module = cst.parse_module(textwrap.dedent(source))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    scopes = ScopeBuilder(None)
    walk(module, scopes)
    reaching = Reaching(module, scopes.scope_of)
    found: dict[tuple[int, str], list[int] | None] = {}

    class Reads(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            defs = reaching.of(node)
            line = positions[node].start.line
            if defs is not None:
                found[line, node.value] = sorted(positions[d].start.line for d in defs)
            elif (line, node.value) not in found:
                found[line, node.value] = None

    walk(module, Reads())
    return found


def test_a_rebinding_is_a_new_value() -> None:
    got = seen(
        """
        def f(a):
            x = a
            x = x + 1
            return x
        """
    )
    assert got[4, "x"] == [3]  # the read on the right sees the first binding
    assert got[5, "x"] == [4]
    assert got[3, "a"] == [2]  # a parameter


def test_branches_join() -> None:
    got = seen(
        """
        def f(c):
            if c:
                x = 1
            elif c > 1:
                x = 2
            else:
                return
            return x
        """
    )
    assert got[9, "x"] == [4, 6]


def test_a_loop_carries_bindings_round() -> None:
    got = seen(
        """
        def f(xs):
            y = 0
            for x in xs:
                use(y)
                y = x
            return y
        """
    )
    assert got[5, "y"] == [3, 6]
    assert got[6, "x"] == [4]
    assert got[7, "y"] == [3, 6]


def test_break_and_continue_end_a_path() -> None:
    got = seen(
        """
        def f(xs):
            y = 0
            while xs:
                if xs[0]:
                    y = 1
                    break
                y = 2
                continue
                y = 3
            return y
        """
    )
    assert got[11, "y"] == [3, 6, 8]  # never line 10's: no path gets past continue


def test_a_loop_inside_a_region_rebinds_its_index() -> None:
    got = seen(
        """
        def f(n, graph, xs):
            for i in range(n):
                xs[i].fill_(0)
            with graph:
                for i in range(n):
                    y = xs[i]
            return y
        """
    )
    assert got[7, "i"] == [6]
    assert got[4, "i"] == [3]


def test_a_handler_sees_what_the_body_bound() -> None:
    got = seen(
        """
        def f():
            x = 0
            try:
                x = 1
                risky()
                x = 2
            except ValueError:
                return x
            finally:
                log(x)
            return x
        """
    )
    assert got[9, "x"] == [3, 5, 7]
    assert got[11, "x"] == [3, 5, 7]
    assert got[12, "x"] == [7]


def test_code_that_runs_later_is_unknown() -> None:
    got = seen(
        """
        def f():
            x = 1
            g = lambda: x
            def h():
                return x
            gen = (x for _ in range(3))
            x = 2
            return g, h, gen
        """
    )
    assert got[4, "x"] is None
    assert got[6, "x"] is None
    assert got[7, "x"] is None


def test_names_another_scope_rebinds_are_unknown() -> None:
    got = seen(
        """
        count = 0

        def bump():
            global count
            count += 1

        bump()
        print(count)
        """
    )
    assert got[9, "count"] is None


def test_walrus_del_with_and_imports() -> None:
    got = seen(
        """
        def f(m):
            if (n := len(m)) > 1:
                print(n)
            with open(m) as fh:
                data = fh.read()
            del data
            import os
            return n, fh, os
        """
    )
    assert got[4, "n"] == [3]
    assert got[9, "n"] == [3]
    assert got[9, "fh"] == [5]
    assert got[9, "os"] == [8]


@pytest.mark.parametrize("loops", [1, 6])
def test_nested_loops_settle(loops: int) -> None:
    body = "x = x + 1"
    for depth in range(loops):
        body = f"for i{depth} in r:\n" + textwrap.indent(body, "    ")
    source = (
        "def f(r):\n    x = 0\n" + textwrap.indent(body, "    ") + "\n    return x\n"
    )
    got = seen(source)
    assert got[3 + loops, "x"] is not None
    assert got[4 + loops, "x"] is not None


KEPT = """\
import torch


def f(a):
    x = a
    for i in range(3):
        x = x + i
    return x


class Model:
    def forward(self, y):
        z = y * 2
        return z


def g(b):
    w = b
    return w
"""


def answers(module: cst.Module) -> tuple[Reaching, dict[cst.Name, object]]:
    """Each read's bindings in ``module``, as a set of (line, name) pairs."""
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    scopes = ScopeBuilder(None)
    walk(module, scopes)
    reaching = Reaching(module, scopes.scope_of)
    found: dict[cst.Name, object] = {}

    class Reads(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            defs = reaching.of(node)
            line = positions[node].start.line
            found[node] = (
                line,
                node.value,
                None if defs is None else sorted(positions[d].start.line for d in defs),
            )

    walk(module, Reads())
    return reaching, found


def test_a_kept_worker_takes_the_answers_of_the_functions_an_edit_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``keep`` (a language server's worker), a function whose parameters and
    body are the very nodes an earlier analysis saw (the pieces an edit left alone,
    ``graphlint.reparse``) takes that analysis's answers; the others are found
    afresh, and every read sees what a fresh analysis finds."""
    from graphlint.facts import reaching  # noqa: PLC0415
    from graphlint.reparse import Pieces  # noqa: PLC0415

    monkeypatch.setattr(reaching, "_RECENT", [])
    monkeypatch.setattr(reaching, "_keeping", True)
    found: list[str] = []  # the functions whose answers were found afresh
    answer = Reaching._answer

    def spy(self: Reaching, owner: object, *rest: object) -> object:
        node = owner.node  # type: ignore[attr-defined]
        found.append(node.name.value if isinstance(node, cst.FunctionDef) else "")
        return answer(self, owner, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(Reaching, "_answer", spy)
    pieces = Pieces()
    answers(pieces.parse(KEPT)[0])
    assert sorted(found) == ["", "f", "forward", "g"]
    edits = [
        KEPT.replace("    w = b\n", "    w = b\n    w = w + 1\n"),  # g's body
        "x = 1\n\n\n" + KEPT,  # a statement above: every line moves
        KEPT.replace("z = y * 2", "z = 2"),  # the class
    ]
    afresh = [["", "g"], [""], ["", "forward"]]
    for text, expected in zip(edits, afresh, strict=True):
        found.clear()
        module = pieces.parse(text)[0]
        _, kept = answers(module)
        assert sorted(found) == expected, text
        monkeypatch.setattr(reaching, "_keeping", False)
        _, whole = answers(module)
        monkeypatch.setattr(reaching, "_keeping", True)
        assert sorted(map(repr, kept.values())) == sorted(map(repr, whole.values()))
