"""Fixes of control flow and host work under capture (GL201, GL103, GL401): the
exact edit each finding carries, that the fixed source parses and is no longer
reported, and the shapes that get no fix."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from graphlint.diagnostics import Applicability, Diagnostic
from graphlint.engine import lint_source
from tests.test_fixes import apply

HEAD = """\
import logging
import torch

log = logging.getLogger(__name__)
x = torch.randn(8, device="cuda")
side = torch.cuda.Stream()
done = torch.cuda.Event()
g = torch.cuda.CUDAGraph()
"""


def source(body: str, head: str = HEAD) -> str:
    return head + textwrap.dedent(body)


def found(text: str, code: str) -> list[Diagnostic]:
    return [d for d in lint_source(text) if d.code == code]


def fixed(text: str, code: str) -> str:
    """``text`` with the fixes of all of ``code``'s findings applied, checked: the
    result parses, no longer has the finding, has no finding that ``text`` had
    not, and offers nothing more to fix."""
    before = lint_source(text)
    edits = tuple(e for d in before if d.code == code for e in d.edits)
    assert edits, "a fix is offered"
    assert all(
        d.applicability is Applicability.UNSAFE for d in before if d.code == code
    )
    after = apply(text, edits)
    cst.parse_module(after)
    again = lint_source(after)
    assert code not in {d.code for d in again}
    assert {d.code for d in again} <= {d.code for d in before}
    assert all(not d.edits for d in again if d.code == code)
    return after


def no_fix(text: str, code: str) -> None:
    findings = found(text, code)
    assert findings, "still reported"
    assert all(d.edits == () and d.applicability is None for d in findings)


# -- GL103: a wait for the device goes ---------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "torch.cuda.synchronize()",
        "torch.cuda.synchronize(0)",
        "torch.cuda.current_stream().synchronize()",
        "side.synchronize()",
        "done.synchronize()",
    ],
)
def test_gl103_removes_the_wait(call: str) -> None:
    text = source(f"""\
        with torch.cuda.graph(g):
            y = x * 2
            {call}  # wait
            z = y + 1
        """)
    assert fixed(text, "GL103") == source("""\
        with torch.cuda.graph(g):
            y = x * 2
            z = y + 1
        """)


def test_gl103_keeps_the_comments_above() -> None:
    text = source("""\
        with torch.cuda.graph(g):
            y = x * 2
            # let the copy finish
            torch.cuda.synchronize(
                0,
            )
        """)
    assert fixed(text, "GL103") == source("""\
        with torch.cuda.graph(g):
            y = x * 2
            # let the copy finish
        """)


def test_gl103_leaves_pass_in_a_block_it_would_empty() -> None:
    text = source("""\
        with torch.cuda.graph(g):
            for _ in range(2):
                torch.cuda.synchronize()  # wait
            y = x * 2
        """)
    assert fixed(text, "GL103") == source("""\
        with torch.cuda.graph(g):
            for _ in range(2):
                pass  # wait
            y = x * 2
        """)


def test_gl103_at_the_end_of_a_file_without_newline() -> None:
    text = source("""\
        with torch.cuda.graph(g):
            y = x * 2
            torch.cuda.synchronize()""")
    assert fixed(text, "GL103") == source("""\
        with torch.cuda.graph(g):
            y = x * 2
        """)


def test_gl103_between_capture_begin_and_end() -> None:
    text = source("""\
        g.capture_begin()
        y = x * 2
        torch.cuda.synchronize()
        g.capture_end()
        """)
    assert fixed(text, "GL103") == source("""\
        g.capture_begin()
        y = x * 2
        g.capture_end()
        """)


@pytest.mark.parametrize(
    "body",
    [
        # a result to keep, or not a statement of its own
        """\
        with torch.cuda.graph(g):
            ready = done.query()
        """,
        """\
        with torch.cuda.graph(g):
            done.query()
        """,
        """\
        with torch.cuda.graph(g):
            y = x * 2; torch.cuda.synchronize()
        """,
        """\
        with torch.cuda.graph(g):
            torch.cuda.synchronize() or None
        """,
        # an argument or a receiver that does something
        """\
        with torch.cuda.graph(g):
            torch.cuda.synchronize(torch.cuda.current_device())
        """,
        """\
        with torch.cuda.graph(g):
            torch.cuda.Stream().synchronize()
        """,
        # a receiver of unknown type
        """\
        def wait(handle):
            with torch.cuda.graph(g):
                handle.synchronize()
        """,
        # in a function the region calls: it runs eagerly elsewhere too
        """\
        def settle():
            torch.cuda.synchronize()

        with torch.cuda.graph(g):
            settle()
        """,
        # under torch.compile the wait runs on every call
        """\
        @torch.compile(mode="reduce-overhead")
        def step(t):
            torch.cuda.synchronize()
            return t * 2
        """,
    ],
)
def test_gl103_no_fix(body: str) -> None:
    no_fix(source(body), "GL103")


# -- GL401: print and logging go -----------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        'print("step done")',
        'print(f"step {x.shape}", flush=True)',
        'log.info("captured %d elements", 8)',
        'logging.warning("capturing")',
    ],
)
def test_gl401_removes_the_output(call: str) -> None:
    text = source(f"""\
        with torch.cuda.graph(g):
            y = x * 2
            {call}
        g.replay()
        """)
    assert fixed(text, "GL401") == source("""\
        with torch.cuda.graph(g):
            y = x * 2
        g.replay()
        """)


def test_gl401_leaves_pass_in_a_block_it_would_empty() -> None:
    text = source("""\
        with torch.cuda.graph(g):
            print("capturing")
        """)
    assert fixed(text, "GL401") == source("""\
        with torch.cuda.graph(g):
            pass
        """)


def test_removals_of_two_rules_keep_their_block() -> None:
    """Each fix alone keeps the block, and so do both applied together."""
    text = source("""\
        with torch.cuda.graph(g):
            y = x * 2
            if True:
                print("capturing")
                torch.cuda.synchronize()
        """)
    edits = tuple(
        e for d in lint_source(text) if d.code in ("GL103", "GL401") for e in d.edits
    )
    assert len(edits) == 2
    assert apply(text, edits) == source("""\
        with torch.cuda.graph(g):
            y = x * 2
            if True:
                pass
        """)


@pytest.mark.parametrize(
    "body",
    [
        # I/O that reads or writes data
        """\
        import sys
        with torch.cuda.graph(g):
            sys.stdout.write("tick")
        """,
        """\
        with torch.cuda.graph(g):
            with open("trace.txt", "w") as fh:
                fh.write("x")
        """,
        """\
        with torch.cuda.graph(g):
            logging.basicConfig(level=logging.INFO)
        """,
        # arguments that do something
        """\
        items = [1, 2]
        with torch.cuda.graph(g):
            print(items.pop())
        """,
        """\
        with torch.cuda.graph(g):
            print(*[1, 2])
        """,
        """\
        with torch.cuda.graph(g):
            logging.getLogger("x").info("capturing")
        """,
        # not a statement of its own
        """\
        with torch.cuda.graph(g):
            shown = print("capturing")
        """,
        # in a function the region calls: it runs eagerly elsewhere too
        """\
        def report():
            print("step")

        with torch.cuda.graph(g):
            report()
        """,
    ],
)
def test_gl401_no_fix(body: str) -> None:
    no_fix(source(body), "GL401")


# -- GL201: an if/else that selects becomes torch.where ------------------------------


def test_gl201_selects_with_where() -> None:
    text = source("""\
        with torch.cuda.graph(g):
            y = x * 2
            if y.sum() > 0:
                y = -y
            else:
                y = torch.clamp(y, min=0.0) * 0.5
        """)
    assert fixed(text, "GL201") == source("""\
        with torch.cuda.graph(g):
            y = x * 2
            y = torch.where(y.sum() > 0, -y, torch.clamp(y, min=0.0) * 0.5)
        """)


def test_gl201_keeps_the_comment_of_the_if_line() -> None:
    text = source("""\
        with torch.cuda.graph(g):
            y = x * 2
            if torch.isnan(y).any():  # reset
                y = torch.zeros_like(y)
            else:
                y = y.abs()
        """)
    assert fixed(text, "GL201") == source("""\
        with torch.cuda.graph(g):
            y = x * 2
            y = torch.where(torch.isnan(y).any(), torch.zeros_like(y), y.abs())  # reset
        """)


def test_gl201_keeps_the_comment_of_the_else_line() -> None:
    text = source("""\
        with torch.cuda.graph(g):
            y = x * 2
            if y.max() > 1:
                s = y / y.max()
            else:
                s = y  # as is
        """)
    assert fixed(text, "GL201") == source("""\
        with torch.cuda.graph(g):
            y = x * 2
            s = torch.where(y.max() > 1, y / y.max(), y)  # as is
        """)


@pytest.mark.parametrize(
    ("line", "after"),
    [
        (
            "scale = 2.0 if y.sum() > 0 else 0.5",
            "scale = torch.where(y.sum() > 0, 2.0, 0.5)",
        ),
        (
            "z = (y if (y > 0).all() else -y)",
            "z = (torch.where((y > 0).all(), y, -y))",
        ),
    ],
)
def test_gl201_conditional_expression_becomes_where(line: str, after: str) -> None:
    text = source(f"""\
        with torch.cuda.graph(g):
            y = x * 2
            {line}
        """)
    assert fixed(text, "GL201") == text.replace(line, after)


def test_gl201_in_a_graphed_module() -> None:
    text = textwrap.dedent("""\
        import torch


        class Gate(torch.nn.Module):
            def forward(self, h):
                scale = 2.0 if h.sum() > 0 else 0.5
                return h * scale


        gate = torch.cuda.make_graphed_callables(
            Gate().cuda(), (torch.randn(4, device="cuda"),)
        )
        """)
    assert "scale = torch.where(h.sum() > 0, 2.0, 0.5)\n" in fixed(text, "GL201")


@pytest.mark.parametrize(
    "body",
    [
        # elif, no else, different names, more than one assignment
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                y = -y
            elif y.sum() < -1:
                y = y * 2
            else:
                y = y + 1
        """,
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                y = -y
        """,
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                a = -y
            else:
                b = y
        """,
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                y = -y
                z = y
            else:
                y = y + 1
        """,
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                y = -y
            else:
                y += 1
        """,
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0: y = -y
            else: y = y + 1
        """,
        # a comment that would be lost
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                # flip
                y = -y
            else:
                y = y + 1
        """,
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:  # flip
                y = -y
            else:
                y = y + 1  # shift
        """,
        # a value that does something, or that torch.where cannot select
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                y = y.add_(1)
            else:
                y = y
        """,
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                y = torch.rand_like(y)
            else:
                y = y
        """,
        """\
        with torch.cuda.graph(g):
            if y.sum() > 0:
                y = model(y)
            else:
                y = y
        """,
        """\
        with torch.cuda.graph(g):
            mode = "up" if y.sum() > 0 else "down"
        """,
        """\
        with torch.cuda.graph(g):
            z = y if y.sum() > 0 else None
        """,
        # the test is not one bool tensor
        """\
        with torch.cuda.graph(g):
            z = y if y.sum() else -y
        """,
        """\
        with torch.cuda.graph(g):
            z = y if not (y > 0).all() else -y
        """,
        """\
        with torch.cuda.graph(g):
            z = y if (y > 0).all() and True else -y
        """,
        # not the value of an assignment
        """\
        with torch.cuda.graph(g):
            z = (y if (y > 0).all() else -y) + 1
        """,
    ],
)
def test_gl201_no_fix(body: str) -> None:
    head = HEAD + "model = torch.nn.Linear(8, 8).cuda()\ny = x * 2\n"
    no_fix(source(body, head), "GL201")


@pytest.mark.parametrize(
    "text",
    [
        """\
import torch as th

x = th.randn(8, device="cuda")
g = th.cuda.CUDAGraph()
with th.cuda.graph(g):
    scale = 2.0 if x.sum() > 0 else 0.5
""",
        """\
import numpy as torch
from torch import randn
from torch.cuda import CUDAGraph, graph

x = randn(8, device="cuda")
g = CUDAGraph()
with graph(g):
    scale = 2.0 if x.sum() > 0 else 0.5
""",
    ],
)
def test_gl201_no_fix_without_torch_by_that_name(text: str) -> None:
    no_fix(text, "GL201")
