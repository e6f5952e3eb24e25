"""Provider facts on small snippets: names, tensor inference, capture regions."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from graphlint import candidates
from graphlint.diagnostics import Confidence, RegionKind
from graphlint.facts import kinds
from graphlint.facts.analysis import FileFacts, analyse
from graphlint.facts.kinds.base import QUESTIONS, Opened, Recogniser, Screen, asks
from graphlint.facts.kinds.compiled import Compiled
from graphlint.facts.kinds.graph_block import GraphBlock
from graphlint.facts.values import Device, Kind
from graphlint.facts.walk import descendants
from tests.conftest import lint


def facts_for(source: str) -> tuple[cst.Module, FileFacts]:
    module = cst.parse_module(textwrap.dedent(source))
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    return module, analyse(module, wrapper.resolve(PositionProvider))


def expr_named(module: cst.Module, target: str) -> cst.BaseExpression:
    """The right-hand side of the last ``target = ...`` in the module."""
    found: list[cst.BaseExpression] = []

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            t = node.targets[0].target
            if isinstance(t, cst.Name) and t.value == target:
                found.append(node.value)

    module.visit(Finder())
    return found[-1]


@pytest.mark.parametrize(
    ("source", "name", "kind", "device"),
    [
        (
            "import torch\nv = torch.zeros(3, device='cuda')",
            "v",
            Kind.TENSOR,
            Device.CUDA,
        ),
        ("import torch\nv = torch.zeros(3)", "v", Kind.TENSOR, Device.CPU),
        (
            "import torch\nd = torch.device('cuda')\nv = torch.ones(2, device=d)",
            "v",
            Kind.TENSOR,
            Device.CUDA,
        ),
        (
            "import torch\nx = torch.ones(2)\nv = x.cuda().sum()",
            "v",
            Kind.TENSOR,
            Device.CUDA,
        ),
        (
            "import torch\nx = torch.ones(2).cuda()\nv = x.shape[0]",
            "v",
            Kind.PYTHON,
            Device.UNKNOWN,
        ),
        (
            "import torch\nx = torch.ones(2).cuda()\nv = x.dim() == 2",
            "v",
            Kind.PYTHON,
            Device.UNKNOWN,
        ),
        (
            "import torch\nx = torch.ones(2).cuda()\nv = x is None",
            "v",
            Kind.PYTHON,
            Device.UNKNOWN,
        ),
        (
            "import torch\nm = torch.nn.Linear(2, 2).cuda()\nv = m(torch.ones(2))",
            "v",
            Kind.TENSOR,
            Device.UNKNOWN,
        ),
        (
            "import torch.nn.functional as F\nimport torch\nv = F.relu(torch.ones(2))",
            "v",
            Kind.TENSOR,
            Device.CPU,
        ),
        (
            "import torch\nx = torch.ones(2)\nv = x.item()",
            "v",
            Kind.PYTHON,
            Device.UNKNOWN,
        ),
        (
            "import torch\nv = torch.optim.Adam([], lr=1e-3)",
            "v",
            Kind.OBJECT,
            Device.UNKNOWN,
        ),
        ("v = some_function()", "v", Kind.UNKNOWN, Device.UNKNOWN),
        (
            "import torch\nx = torch.ones(2)\nv = x + 1\nv = v * 2",
            "v",
            Kind.TENSOR,
            Device.CPU,
        ),
        (
            "import torch\na, b = torch.ones(4).chunk(2)\nv = a",
            "v",
            Kind.TENSOR,
            Device.CPU,
        ),
    ],
)
def test_value_inference(source: str, name: str, kind: Kind, device: Device) -> None:
    module, facts = facts_for(source)
    value = facts.value_of(expr_named(module, name))
    assert value.kind is kind
    if kind is Kind.TENSOR:
        assert value.device is device


CYCLE = """\
import torch

h = torch.zeros(4, device="cuda")
for i in range(3):
    t = h.foo()
    u = t
    if i:
        h = t
    else:
        h = u
y = u.item()
"""


def test_a_value_in_a_cycle_does_not_depend_on_what_was_asked_first() -> None:
    """``h``, ``t`` and ``u`` feed each other: a value computed while the cycle
    was cut is partial, and so is one that read it (``u`` through ``t``), which
    is not kept for later questions."""
    module, facts = facts_for(CYCLE)
    call = expr_named(module, "y")
    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
    read = call.func.value  # ``u``
    facts.values.reset()
    asked_alone = facts.value_of(read)
    facts.values.reset()
    facts.value_of(expr_named(module, "t"))  # enters the cycle at ``h``
    assert facts.value_of(read) == asked_alone


# names bound in a loop from their own value: an accumulator, a running maximum
# and an offset (as in real capture code)
ACCUMULATED = """\
import torch
model = torch.nn.Linear(8, 8).cuda()
x = torch.zeros(4, 8, device="cuda")
total = torch.zeros(4, 8, device="cuda")
for i in range(3):
    total = total + model(x)
print(total)
"""
WIDEST = """\
def widths(rows, headers):
    for header in headers:
        width = len(header)
        for row in rows:
            width = max(width, len(row))
        print(width)
"""
OFFSETS = """\
def offsets(sizes, scale):
    start = 0
    for size in sizes:
        end = start + size * scale
        print(start, end)
        start = end
"""


@pytest.mark.parametrize("source", [ACCUMULATED, WIDEST, OFFSETS])
def test_a_cycle_has_one_value_whichever_read_is_asked_first(source: str) -> None:
    """Each read of a name in a cycle of bindings has the same value whether the
    reads are asked in source order or backwards: the cycle is evaluated to its
    fixed point, and arithmetic on a read the cycle cut waits for the other
    bindings (before, a read asked first saw the others' cut values)."""
    module, facts = facts_for(source)
    names = [node for node in descendants(module) if isinstance(node, cst.Name)]
    answers = []
    for order in (names, names[::-1]):
        facts.values.reset()
        answers.append({id(name): facts.value_of(name) for name in order})
    assert answers[0] == answers[1]


@pytest.mark.parametrize(
    ("source", "device"),
    [
        ("lens_cpu = load()\nv = lens_cpu[:2].max()", Device.CPU),
        ("batch = load()\nv = batch.host_ids", Device.CPU),
        (
            "import torch\ndef f(pinned_buf: torch.Tensor):\n    v = pinned_buf",
            Device.CPU,
        ),
        # flags and counts are named for what they decide, not where they live
        ("use_cpu_offload = load()\nv = use_cpu_offload", Device.UNKNOWN),
        ("num_host_ranks = load()\nv = num_host_ranks", Device.UNKNOWN),
        (
            "import torch\ndef f(num_tokens_cpu: torch.Tensor):\n    v = num_tokens_cpu",
            Device.CPU,
        ),
        # the construction outweighs the name
        ("import torch\nx_cpu = torch.ones(2).cuda()\nv = x_cpu", Device.CUDA),
        ("lens = load()\nv = lens", Device.UNKNOWN),
    ],
)
def test_names_of_host_memory(source: str, device: Device) -> None:
    """A value of unknown device named as host memory is on the host, and no more is
    known of it (a tensor or not)."""
    module, facts = facts_for(source)
    value = facts.value_of(expr_named(module, "v"))
    assert value.device is device
    if device is Device.CPU:
        assert value.kind is Kind.UNKNOWN


def test_module_attributes_and_parameters() -> None:
    module, facts = facts_for(
        """
        import torch
        class Net(torch.nn.Module):
            def __init__(self, flag: bool):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)
                self.flag = flag
                self.register_buffer("buf", torch.zeros(2))
            def forward(self, x: torch.Tensor, y):
                a = self.fc(x)
                b = self.flag
                c = self.buf
                d = y
                e = self.training
        """
    )
    assert facts.value_of(expr_named(module, "a")).is_tensor
    assert facts.value_of(expr_named(module, "b")).kind is Kind.PYTHON
    assert facts.value_of(expr_named(module, "c")).is_tensor
    assert facts.value_of(expr_named(module, "d")).kind is Kind.UNKNOWN
    assert facts.value_of(expr_named(module, "e")).kind is Kind.PYTHON


def test_shadowed_import_is_not_resolved() -> None:
    module, facts = facts_for(
        """
        import torch
        def f(torch):
            v = torch.cuda.graph
        """
    )
    assert facts.qualname(expr_named(module, "v")) is None


def region_lines(source: str) -> dict[int, RegionKind]:
    module, facts = facts_for(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    return {
        positions[node].start.line: region.kind
        for node, region in facts.regions.items()
        if isinstance(node, cst.SimpleStatementLine)
    }


def test_guarded_branches_are_not_regions() -> None:
    lines = region_lines(
        """
        import torch
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            a = 1
            if not torch.cuda.is_current_stream_capturing():
                b = 2
            if torch.cuda.is_current_stream_capturing():
                c = 3
            else:
                d = 4
        e = 5
        """
    )
    assert lines == {5: RegionKind.MANUAL, 9: RegionKind.MANUAL}


def test_region_kinds() -> None:
    lines = region_lines(
        """
        import torch
        @torch.compile(mode="reduce-overhead")
        def f(x):
            a = 1
        def h(x):
            b = 2
        graphed = torch.cuda.make_graphed_callables(h, (1,))
        @torch.compile(mode="default")
        def k(x):
            c = 3
        """
    )
    assert lines == {5: RegionKind.COMPILE, 7: RegionKind.GRAPHED}


class _TracerScreen(Screen):
    """Files that name the module ``tracer`` may capture."""

    letters = ("tracer",)
    pattern = "tracer"

    def names(self, source: str) -> frozenset[str]:
        return frozenset({"tracer"})


class _Tracer(Recogniser):
    """A kind of region a test adds: ``with tracer.capture():`` captures."""

    screen = _TracerScreen

    def context(self, call: cst.Call, qualified: str | None) -> Opened | None:
        if qualified == "tracer.capture":
            return RegionKind.MANUAL, "tracer.capture", Confidence.HIGH, None
        return None


@pytest.fixture
def with_tracer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``_Tracer`` registered as ``kinds.RECOGNISERS``'s last kind, and nothing
    else changed (the screens of the kinds are made again)."""
    monkeypatch.setattr(kinds, "RECOGNISERS", (*kinds.RECOGNISERS, _Tracer))
    candidates.screens.cache_clear()
    yield
    candidates.screens.cache_clear()


TRACED = """
    import torch
    import tracer
    with tracer.capture():
        a = 1
        torch.cuda.synchronize()
    b = 2
    """


def test_a_new_kind_of_region_is_one_module() -> None:
    """Without the kind, ``with tracer.capture():`` is no region: the screen
    rejects the file, and the finder opens none."""
    assert not candidates.text_candidate(textwrap.dedent(TRACED))
    assert region_lines(TRACED) == {}
    assert not lint(TRACED)


@pytest.mark.usefixtures("with_tracer")
def test_a_kind_added_to_the_recognisers_opens_regions() -> None:
    """A kind's module (its screen and recogniser) and its entry in
    ``RECOGNISERS``: the screen takes the file, the finder opens the region, the
    rules see it; the kinds before it are asked first (a graph block before a
    marker, a marker before a compile decorator)."""
    assert candidates.text_candidate(textwrap.dedent(TRACED))
    assert region_lines(TRACED) == {5: RegionKind.MANUAL, 6: RegionKind.MANUAL}
    assert [(d.code, d.line) for d in lint(TRACED)] == [("GL103", 6)]
    names = [kind.__name__ for kind in kinds.RECOGNISERS]
    assert names.index("GraphBlock") < names.index("Marked") < names.index("Compiled")


def test_a_kind_answers_only_its_questions() -> None:
    """A kind is asked only what it overrides: a graph block, only about
    context managers; ``asks`` reads that off the class."""
    asked = {q for q in QUESTIONS if asks(GraphBlock, q)}
    assert asked == {"context"}
    assert {q for q in QUESTIONS if asks(Compiled, q)} == {
        "module",
        "entering",
        "leaving",
        "decorator",
        "call",
    }


def test_lookalikes_are_not_regions() -> None:
    assert not lint(
        """
        import torch
        import networkx as nx
        class Model:
            def graph(self, g):
                return self
        m = Model()
        x = torch.ones(3, device="cuda")
        with m.graph(1):
            a = x.sum().item()
        with torch.autograd.graph.saved_tensors_hooks(id, id):
            b = x.sum().item()
        with nx.graph(x):
            c = x.sum().item()
        """
    )


def test_unresolvable_graphed_target_is_not_a_region() -> None:
    assert not lint(
        """
        import torch
        from elsewhere import make_model
        m = make_model()
        graphed = torch.cuda.make_graphed_callables(m, (torch.ones(2),))
        def helper(x):
            return x.sum().item()
        """
    )


def test_an_inductor_switch_does_not_make_re_compile_a_region() -> None:
    _, facts = facts_for(
        """
        import re
        import torch
        import torch._inductor.config
        torch._inductor.config.triton.cudagraphs = True
        pattern = re.compile("x")
        model = torch.nn.Linear(2, 2)
        fast = model.compile()
        """
    )
    # the module's compile is one (of a library class, not followed), re's is not
    assert [cst.Module([]).code_for_node(t) for _, t, _ in facts.unresolved] == [
        "model"
    ]


def test_compile_wrappers_label_and_confidence() -> None:
    """A helper's returns decide: all CUDA-graph compilers, a sure region; only
    some, medium confidence; a mode passed through is known only when written out."""
    _, facts = facts_for(
        """
        import functools
        import torch
        def pick(mode):
            return functools.partial(torch.compile, mode=mode)
        def maybe(on):
            if on:
                return functools.partial(torch.compile, backend="cudagraphs")
            return lambda fn: fn
        def a(x): ...
        def b(x): ...
        def c(x, mode): ...
        def d(x): ...
        a = pick("max-autotune")(a)
        b = maybe(True)(b)
        c = pick(mode)(c)
        d = pick("max-autotune-no-cudagraphs")(d)
        """
    )
    found = {
        facts.paths[r.root]: (r.label, r.confidence)
        for r in facts.all_regions()
        if isinstance(r.root, cst.FunctionDef)
    }
    assert found == {
        "a": ('torch.compile(mode="max-autotune")', Confidence.HIGH),
        "b": ('torch.compile(backend="cudagraphs")', Confidence.MEDIUM),
    }
