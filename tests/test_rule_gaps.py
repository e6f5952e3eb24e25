"""Hazards real projects fixed that no rule saw (#26): host tensors moved to the
device, slice bounds read from device tensors, generators held in class attributes,
RNG states restored under capture, and capture checks earlier in an ``and`` chain;
each with the near misses that must stay silent."""

from __future__ import annotations

import textwrap

import pytest

from graphlint.diagnostics import Confidence
from graphlint.facts.values import Device, Kind
from tests.conftest import lint
from tests.test_facts import expr_named, facts_for

PRELUDE = """
import torch
import torch.nn.functional as F
g = torch.cuda.CUDAGraph()
x = torch.ones(4, 8, 8, device="cuda")
seq_len = torch.tensor([3, 4, 5, 6], device="cuda")
host = torch.tensor([3, 4, 5, 6])
pinned = torch.zeros(8).pin_memory()
"""


def lines(body: str, *codes: str, params: str = "t, dev, nb, n") -> set[int]:
    """Lines (1 = the body's first) that ``codes`` report in ``body``, captured
    inside a function whose parameters are of unknown type."""
    indented = "".join(f"        {line}\n" for line in body.strip().splitlines())
    source = PRELUDE + f"def f({params}):\n    with torch.cuda.graph(g):\n" + indented
    first = len(PRELUDE.splitlines()) + 3
    return {d.line - first + 1 for d in lint(source, *codes)}


@pytest.mark.parametrize(
    ("source", "device"),
    [
        ("x = torch.ones(2, device='cuda')\nv = x.device", Device.CUDA),
        ("x = torch.ones(2)\nv = x.device", Device.CPU),
        ("v = torch.Tensor([1.0, 2.0])", Device.CPU),
        ("v = torch.LongTensor([3, 4])", Device.CPU),
        ("def f(t):\n    return t\nv = torch.Tensor(f(1))", Device.UNKNOWN),
        ("v = torch.cuda.FloatTensor([1.0])", Device.CUDA),
        (
            "x = torch.ones(2, device='cuda')\nv = torch.arange(3).to(x.device)",
            Device.CUDA,
        ),
    ],
)
def test_host_made_and_device_of(source: str, device: Device) -> None:
    module, facts = facts_for("import torch\n" + source)
    assert facts.value_of(expr_named(module, "v")).device is device


def test_class_attribute_generator_is_an_object_but_containers_stay_unknown() -> None:
    module, facts = facts_for(
        """
        import torch
        class RandomSTE:
            generator = None
            results = {}
            @staticmethod
            def make():
                RandomSTE.generator = torch.Generator(device="cuda")
        v = RandomSTE.generator
        w = RandomSTE.results
        """
    )
    found = facts.value_of(expr_named(module, "v"))
    assert found.kind is Kind.OBJECT
    assert found.cls == "torch.Generator"
    assert facts.value_of(expr_named(module, "w")).kind is Kind.UNKNOWN


def test_host_copies_gl601() -> None:
    body = """
a = torch.arange(8).to(x.device)
b = torch.Tensor([1.0, 2.0]).cuda()
c = pinned.to("cuda")
d = torch.tensor([1, 2]).cuda()
e = pinned.cuda(non_blocking=True)
f2 = pinned.to(x.device, non_blocking=True)
g2 = torch.arange(8, device=x.device)
h = t.to(x.device)
i = torch.ones(3).to(dev)
j = pinned.to("cuda", non_blocking=nb)
k = torch.Tensor(t).cuda()
m = torch.arange(n).pin_memory().to(x.device, non_blocking=True)
"""
    assert lines(body, "GL601") == {1, 2, 3, 4}


def test_host_copy_to_unknown_device_attribute_is_medium() -> None:
    source = PRELUDE + (
        "def f(t):\n    with torch.cuda.graph(g):\n"
        "        a = torch.arange(8).to(t.device)\n"
        "        b = torch.arange(8).to(x.device)\n"
    )
    found = {d.line: d.confidence for d in lint(source, "GL601")}
    first = len(PRELUDE.splitlines()) + 3
    assert found == {first: Confidence.MEDIUM, first + 1: Confidence.HIGH}


def test_slice_bounds_gl106() -> None:
    body = """
a = x[0, :, : seq_len[0]]
b = x[:, : seq_len.max()]
c = x.narrow(2, 0, seq_len[0])
d = torch.narrow(x, 2, seq_len[1], 2)
e = x[:, ::seq_len[2]]
f2 = x[:, :n]
g2 = x[:, : x.shape[1] // 2]
h = x[:, : host[0]]
i = x[:, : t[0]]
j = x.narrow(2, 0, n)
k = t.narrow(2, 0, n)
"""
    assert lines(body, "GL106") == {1, 2, 3, 4, 5}


CLASS_GEN = """
import torch
g = torch.cuda.CUDAGraph()
x = torch.ones(8, device="cuda")
class RandomSTE:
    generator = None
    @staticmethod
    def make():
        RandomSTE.generator = torch.Generator(device="cuda")
{register}
with torch.cuda.graph(g):
    y = x.clone().normal_(generator=RandomSTE.generator)
"""


def test_class_attribute_generator_gl501() -> None:
    assert [d.code for d in lint(CLASS_GEN.format(register=""), "GL501")] == ["GL501"]
    registered = CLASS_GEN.format(
        register="g.register_generator_state(RandomSTE.generator)"
    )
    assert lint(registered, "GL501") == []


def test_rng_state_restored_gl503() -> None:
    source = """
    import torch
    import torch.nn.functional as F
    g = torch.cuda.CUDAGraph()
    x = torch.ones(8, device="cuda")
    saved = torch.cuda.get_rng_state()

    class Block:
        def __init__(self):
            self.state = torch.cuda.get_rng_state()

        def run(self, s):
            with torch.cuda.graph(g):
                torch.cuda.set_rng_state(self.state)  # reported
                torch.cuda.set_rng_state(s)
                fork = torch.cuda.get_rng_state()
                a = F.dropout(x, 0.5)
                torch.cuda.set_rng_state(fork)
                torch.set_rng_state(torch.get_rng_state())

    with torch.cuda.graph(g):
        torch.cuda.set_rng_state(saved)  # reported
    torch.cuda.set_rng_state(saved)
    """
    marked = {
        n
        for n, text in enumerate(textwrap.dedent(source).splitlines(), 1)
        if text.endswith("# reported")
    }
    found = lint(source, "GL501", "GL502", "GL503")
    assert len(marked) == 2
    assert {(d.line, d.code) for d in found} == {(n, "GL503") for n in marked}


def test_short_circuit_capture_check() -> None:
    body = """
if not torch.cuda.is_current_stream_capturing() and x.sum().item() > 0:
    pass
if torch.cuda.is_current_stream_capturing() and x.sum().item():
    pass
a = torch.cuda.is_current_stream_capturing() or x.sum().item()
b = not torch.cuda.is_current_stream_capturing() or x.sum().item()
c = not torch.cuda.is_current_stream_capturing() and x.any() and x.sum().item()
d = x.sum().item() and not torch.cuda.is_current_stream_capturing()
"""
    assert lines(body, "GL101") == {3, 6, 8}


REENTRANT = """
import torch


class {name}({base}):
    @staticmethod
    def forward(ctx, run, x):
        ctx.run = run
        ctx.save_for_backward(x)
        with torch.no_grad():
            return run(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_()
        with torch.enable_grad():
            out = ctx.run(x)
        torch.autograd.backward(out, grad)
        return None, x.grad


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return {name}.apply(self.fc, x)


x = torch.randn(4, 8, device="cuda", requires_grad=True)
graphed = torch.cuda.make_graphed_callables(Block().cuda(), (x,))
"""


MODULE_BACKWARD = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def backward(self, loss):
        torch.autograd.backward(loss)

    def forward(self, x):
        y = self.fc(x)
        self.backward(y.sum())
        return y


x = torch.randn(4, 8, device="cuda", requires_grad=True)
graphed = torch.cuda.make_graphed_callables(Net().cuda(), (x,))
"""


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (REENTRANT.format(name="Checkpoint", base="torch.autograd.Function"), [19]),
        (REENTRANT.format(name="Recompute", base="Checkpoint"), []),  # unknown base
        (MODULE_BACKWARD, []),  # a module's method that happens to be "backward"
    ],
)
def test_a_reentrant_checkpoint_of_the_project_gl708(
    source: str, found: list[int]
) -> None:
    """A backward that reruns the forward and back-propagates through the rerun
    itself is a reentrant checkpoint, when it is an autograd Function's: a method
    that only happens to be called ``backward`` is not."""
    assert [d.line for d in lint(source, "GL708")] == found
