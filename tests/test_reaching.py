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
