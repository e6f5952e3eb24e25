"""Fixes of the static-memory rules: a rebound static input copied into (GL301), a
``.data =`` turned into a copy (GL302), a kept graph output cloned (GL303). Each
edit, that the fixed text parses and no longer has the finding, and the shapes
that get no edit."""

from __future__ import annotations

import libcst as cst
import pytest

from graphlint.diagnostics import Applicability, Diagnostic
from graphlint.engine import lint_source
from tests.test_fixes import apply

CAPTURED = """\
import torch

static_in = torch.zeros(4, 8, device="cuda")
other = torch.zeros(4, 8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_out = static_in * 2 + other
"""

LOOP = CAPTURED + "for step in range(3):\n    {write}\n    g.replay()\n"


def found(source: str, code: str) -> list[Diagnostic]:
    return [d for d in lint_source(source) if d.code == code]


def fixed(source: str, code: str, applicability: Applicability) -> str:
    """The source with the edit of its one ``code`` finding applied, checked: it
    parses, ``code`` is gone (a second run has nothing to fix), and nothing else
    is found that was not before."""
    every = lint_source(source)
    (finding,) = [d for d in every if d.code == code]
    assert finding.applicability is applicability
    after = apply(source, finding.edits)
    cst.parse_module(after)
    before = sorted(d.code for d in every if d is not finding)
    assert sorted(d.code for d in lint_source(after)) == before
    return after


# -- GL301 -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("write", "copy"),
    [
        (
            'static_in = torch.randn(4, 8, device="cuda")',
            'static_in.copy_(torch.randn(4, 8, device="cuda"))',
        ),
        (  # the statement only: what follows its semicolon stays
            "static_in = static_in * 0.5; static_in.add_(1)",
            "static_in.copy_(static_in * 0.5); static_in.add_(1)",
        ),
        (  # a value over lines keeps the block's indentation
            'static_in = (\n        torch.randn(4, 8, device="cuda")  # next\n    )',
            'static_in.copy_((\n        torch.randn(4, 8, device="cuda")  # next\n    ))',
        ),
    ],
)
def test_gl301_copies_into_the_static_input(write: str, copy: str) -> None:
    source = LOOP.format(write=write)
    after = fixed(source, "GL301", Applicability.UNSAFE)
    assert after == LOOP.format(write=copy)


RUNNER = """\
import torch


class Runner:
    def __init__(self) -> None:
        self.static_x = torch.zeros(4, 8, device="cuda")
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.static_x * 2

    def run(self, x: torch.Tensor) -> torch.Tensor:
        {write}
        self.graph.replay()
        return self.out.clone()


runner = Runner()
runner.run(torch.randn(4, 8, device="cuda"))
"""


def test_gl301_copies_into_an_attribute_bound_elsewhere() -> None:
    source = RUNNER.format(write="self.static_x = x")
    after = fixed(source, "GL301", Applicability.UNSAFE)
    assert after == RUNNER.format(write="self.static_x.copy_(x)")


SHAPES = """\
import torch

static_in = torch.zeros(4, 8, device="cuda")
other = torch.zeros(4, 8, device="cuda")
buffers = {{"x": torch.zeros(4, 8, device="cuda")}}
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_out = static_in * 2 + other + buffers["x"]
for step in range(3):
    {write}
    g.replay()
"""


@pytest.mark.parametrize(
    "write",
    [
        # an entry of a container: the assignment may add it
        'buffers["x"] = torch.randn(4, 8, device="cuda")',
        # unpacking, several targets, an annotation, a walrus, a loop target
        "static_in, other = torch.randn(4, 8), torch.randn(4, 8)",
        "static_in = other = torch.randn(4, 8)",
        "static_in: torch.Tensor = torch.randn(4, 8)",
        "(static_in := torch.randn(4, 8))",
        "for static_in in [torch.randn(4, 8)]: pass",
        # a value that is no tensor
        "static_in = None",
    ],
)
def test_gl301_offers_no_edit_for_other_shapes(write: str) -> None:
    findings = found(SHAPES.format(write=write), "GL301")
    assert findings, "the shape is reported"
    assert all(d.edits == () and d.applicability is None for d in findings)


def test_gl301_no_edit_for_the_binding_that_makes_the_input() -> None:
    """Captured inside the loop, at its fourth pass: on the first passes the write
    binds the name the capture will read, and a copy into it would fail."""
    source = """\
import torch

g = torch.cuda.CUDAGraph()
for step in range(6):
    x = torch.randn(4, device="cuda")
    if step == 3:
        with torch.cuda.graph(g):
            y = x * 2
    if step >= 3:
        g.replay()
"""
    (finding,) = found(source, "GL301")
    assert finding.edits == ()


SETTER = """\
import torch


class Runner:
    def __init__(self) -> None:
        self.graph = torch.cuda.CUDAGraph()

    def set_input(self, x: torch.Tensor) -> None:
        self.static_x = x

    def capture(self) -> None:
        with torch.cuda.graph(self.graph):
            self.out = self.static_x * 2

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.set_input(x)
        self.graph.replay()
        return self.out.clone()


runner = Runner()
runner.set_input(torch.zeros(4, 8, device="cuda"))
runner.capture()
runner.run(torch.randn(4, 8, device="cuda"))
"""


def test_gl301_no_edit_for_an_attribute_only_the_write_binds() -> None:
    """The setter's first call makes the tensor the capture reads: nothing else
    binds it, so there may be nothing to copy into."""
    (finding,) = found(SETTER, "GL301")
    assert finding.edits == ()


def test_gl301_no_edit_for_a_yield() -> None:
    source = CAPTURED + (
        "\n\ndef feed():\n    global static_in\n    while True:\n"
        "        static_in = yield\n        g.replay()\n"
    )
    (finding,) = found(source, "GL301")
    assert finding.edits == ()


# -- GL302 -----------------------------------------------------------------------------
def test_gl302_copies_through_data() -> None:
    source = LOOP.format(write='static_in.data = torch.randn(4, 8, device="cuda")')
    after = fixed(source, "GL302", Applicability.UNSAFE)
    assert after == LOOP.format(
        write='static_in.data.copy_(torch.randn(4, 8, device="cuda"))'
    )


PARAMETER = """\
import torch

net = torch.nn.Linear(8, 8).cuda()
static_in = torch.randn(4, 8, device="cuda")
checkpoints = [torch.randn(8, 8, device="cuda") for _ in range(3)]
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = torch.nn.functional.linear(static_in, net.weight, net.bias)
for weight in checkpoints:
    {write}
    g.replay()
"""


def test_gl302_copies_into_a_parameter() -> None:
    """Through ``.data``, as the assignment wrote. Measured on an H200 (PyTorch
    2.11): ``weight.copy_(new)`` on a parameter raised "a leaf Variable that
    requires grad is being used in an in-place operation"; ``weight.data.copy_``
    copied."""
    source = PARAMETER.format(write="net.weight.data = weight")
    after = fixed(source, "GL302", Applicability.UNSAFE)
    assert after == PARAMETER.format(write="net.weight.data.copy_(weight)")


@pytest.mark.parametrize(
    "write",
    [
        "static_in.data, other.data = torch.randn(4, 8), torch.randn(4, 8)",
        "static_in.data = other.data = torch.randn(4, 8)",
        "static_in.data = None",
    ],
)
def test_gl302_offers_no_edit_for_other_shapes(write: str) -> None:
    findings = found(LOOP.format(write=write), "GL302")
    assert findings, "the shape is reported"
    assert all(d.edits == () for d in findings)


# -- GL303 -----------------------------------------------------------------------------
KEPT = (
    CAPTURED
    + "kept = []\nby_step = {{}}\nfor step in range(3):\n"
    + ("    g.replay()\n    {store}\n")
)


@pytest.mark.parametrize(
    ("store", "copy"),
    [
        ("kept.append(static_out)", "kept.append(static_out.clone())"),
        ("by_step[step] = static_out", "by_step[step] = static_out.clone()"),
        ("kept.extend([static_out])", "kept.extend([static_out.clone()])"),
        ("kept.insert(0, static_out)", "kept.insert(0, static_out.clone())"),
    ],
)
def test_gl303_keeps_a_copy_of_a_tensor_output(store: str, copy: str) -> None:
    source = KEPT.format(store=store)
    after = fixed(source, "GL303", Applicability.SAFE)
    assert after == KEPT.format(store=copy)
    assert found(after, "GL303") == []


def test_gl303_clones_each_element_stored() -> None:
    source = KEPT.format(store="kept.extend([static_out, static_out])")
    findings = found(source, "GL303")
    assert len(findings) == 2
    after = apply(source, tuple(e for d in findings for e in d.edits))
    assert after == KEPT.format(
        store="kept.extend([static_out.clone(), static_out.clone()])"
    )
    assert found(after, "GL303") == []


def test_gl303_clone_of_what_may_not_be_a_tensor_is_unsafe() -> None:
    """A module's output may be a tuple or a dict, which has no ``.clone()``."""
    source = KEPT.format(store="kept.append(result)").replace(
        "    static_out = static_in * 2 + other\n",
        "    static_out = static_in * 2 + other\n    result = helper(static_in)\n",
    )
    source = "from mylib import helper\n" + source
    after = fixed(source, "GL303", Applicability.UNSAFE)
    assert "kept.append(result.clone())\n" in after


COMPILED = """\
import torch


class Server:
    def __init__(self, model):
        self.model = torch.compile(model, mode="reduce-overhead")

    @torch.no_grad()
    def serve(self, requests):
        replies = []
        for request in requests:
            {store}
        return replies
"""


def test_gl303_clones_a_compiled_output_unsafely() -> None:
    source = COMPILED.format(store="replies.append(self.model(request))")
    after = fixed(source, "GL303", Applicability.UNSAFE)
    assert after == COMPILED.format(store="replies.append(self.model(request).clone())")


ROLL = """\
import torch


def decode_one_token(model, token):
    return model(token).argmax(-1), None


@torch.no_grad()
def roll(model, token, steps):
    for _ in range(steps):
        token = decode_one_token(model, {arg})[0]
    return token


decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead")
"""


def test_gl303_copies_an_output_fed_back_before_the_call() -> None:
    """Measured on an H200 (PyTorch 2.11): the decode loop of
    ``bad_compiled_roll.py`` raised "accessing tensor output of CUDAGraphs that has
    been overwritten"; with the argument cloned it ran to its end."""
    source = ROLL.format(arg="token")
    after = fixed(source, "GL303", Applicability.UNSAFE)
    assert after == ROLL.format(arg="token.clone()")


def test_gl303_no_edit_for_a_name_read_after_the_next_call() -> None:
    source = """\
import torch


@torch.compile(mode="reduce-overhead")
def f(x):
    return x * 2


@torch.no_grad()
def compare(first, second):
    a = f(first)
    b = f(second)
    return (a == b).all()
"""
    (finding,) = found(source, "GL303")
    assert finding.edits == ()
    assert finding.applicability is None
