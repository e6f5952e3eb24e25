"""The pre-filter: the substring test in front of the candidate pattern never rules
out a file the pattern would take, and the test on CPython's tree never rules out a
file with a region."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphlint import candidates
from graphlint.engine import analyse_source
from graphlint.facts.kinds import RECOGNISERS, Recogniser
from tests.conftest import FIXTURES, ROOT

CORPUS = ROOT.parent / "shared" / "corpus"

SAMPLES = [
    "with torch.cuda.graph(g):",
    "from torch.cuda import graph",
    "with graph(g):",
    "g.capture_begin()",
    "torch.cuda.make_graphed_callables(m, (x,))",
    "@graphlint.capture_region",
    'torch.compile(m, mode="reduce-overhead")',
    "torch.compile(m, mode='max-autotune')",
    'options={"triton.cudagraphs": True}',
    'backend="cudagraphs"',
    "print('nothing here')",
    "graph = build()",
    "x = subgraph(g)",
    "from torch.cuda import (\n    CUDAGraph,\n    graph,\n)",
    "from torch.cuda.graphs import(graph)",
    "f(a,\tgraph)\ngraph = 1",
    "torch.cuda.graphs.is_current_stream_capturing()",
    "opts['cudagraphs'] = x; my_cudagraphs = 1",
    "import os  # a graph\nx.graphs(1)",
    "x" * 5000 + " import graph",
    # names imported in parentheses from a ``cuda`` module: only ``graph`` counts
    "from runner.cuda_graph_runner import (\n    CudaGraphRunner,\n)",
    "from torch.cuda import (  # see (1)\n    graph as capture,\n)",
    "from torch.cuda import (  # not graph\n    Stream,\n)",
    "from torch.cuda import (Stream)\ngraph = 1",
    "from a.cuda import (x,  # b.cuda import (graph\n y)",
    "from a.cuda import (\n  x,  # graph\n)",
    "from a.cuda import (\n  x,  # see (1)\n  graph)",
    "from a.cuda import (\n  x,  # to the end",
    "mode='max-autotune-no-cudagraphs'",
    "modes = ('max-autotune-no-cudagraphs', 'max-autotune')",
    "graph = torch.accelerator.Graph()",
    "from torch.accelerator import (\n    Graph,\n)",
    "import networkx\ng = networkx.Graph()",
    "from accelerate import Accelerator\naccelerator = Accelerator()",
    "Graph = 1\n" + "x" * 5000 + "\n# the accelerator",
    "from .graphs import Graph\ng = Graph()",
    "from . import graphs\ng = graphs.Graph()",
    "from .graph import Graph",
    # the letters "graph" absent: the test of the other alternatives ends there
    "g = torch.accelerator.Graph()",
    "import torch.accelerator as acc\nwith acc.Graph():\n    pass",
    "g.capture_begin(pool=p)",
    "from torch.cuda import (\n    Graph,\n)",
    # ``graphs`` in the import of ``Graph`` itself
    "from . import Graph, graphs",
    "from . import graphs, Graph",
]


@pytest.mark.parametrize(
    "text",
    [
        *SAMPLES,
        *(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))),
    ],
)
def test_prefilter_agrees_with_the_pattern(text: str) -> None:
    assert candidates.text_candidate(text) == bool(
        candidates._definition().search(text)
    )


@pytest.mark.parametrize("kind", RECOGNISERS, ids=lambda k: k.__name__)
def test_a_kinds_screen_agrees_with_its_pattern(kind: type[Recogniser]) -> None:
    """Each kind's screen: its text test is its pattern, and a text its pattern
    matches holds one of its letters (the only texts it is asked about)."""
    screen = kind.screen(frozenset())
    fixtures = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))]
    for text in [*SAMPLES, *fixtures]:
        matched = re.search(screen.pattern, text) is not None
        if any(letter in text for letter in screen.letters):
            assert screen.text(text) == matched, text
        else:
            assert not matched, text


def test_the_screen_loads_no_libcst() -> None:
    """The process that screens a project's files imports every kind's module,
    and LibCST is not loaded (``graphlint.lazy``): its import costs more than a
    warm check."""
    code = (
        "import json, sys\n"
        "from graphlint import candidates\n"
        "assert candidates.text_candidate('with torch.cuda.graph(g):')\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    assert not [m for m in loaded if m.startswith("libcst")]
    assert "graphlint.facts.kinds.compiled" in loaded


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a module whose name starts with "cuda", imported from in parentheses by
        # every file that uses it (``cuda_graph_runner``): not without ``graph``
        ("from runner.cuda_graph_runner import (\n    CudaGraphRunner,\n)", False),
        ("from torch.cuda import (\n    Stream,  # graph comes later\n)", False),
        ("from torch.cuda import (  # see (1)\n    graph as capture,\n)", True),
        ("from torch.cuda import (CUDAGraph, graph)", True),
        ("mode = 'max-autotune-no-cudagraphs'", False),
        ("mode = 'max-autotune-no-cudagraphs' if x else 'max-autotune'", True),
        # a graph library's ``Graph``, or Hugging Face's accelerator, alone
        ("import networkx\ng = networkx.Graph()", False),
        ("from accelerate import Accelerator\naccelerator = Accelerator()", False),
        ("import torch.accelerator as acc\nwith acc.Graph():\n    pass", True),
        # PyTorch's own ``torch/accelerator/``: its ``graphs`` module, relatively
        ("from .graphs import Graph\nwith Graph():\n    pass", True),
        ("from .graph import Graph\ng = Graph()", False),
    ],
)
def test_the_text_decides_without_a_parse(text: str, expected: bool) -> None:
    """Files that only name a ``cuda`` module or a mode without CUDA graphs are
    settled by their text: most such files of a tree capture nothing."""
    assert candidates.text_candidate(text) is expected


# each way a file makes a region, as the rules' fixtures write it, in a few words
MAKES_A_REGION = [
    "import torch\nwith torch.cuda.graph(g):\n    pass\n",
    "import torch.cuda as tc\nwith tc.graph(g):\n    pass\n",
    "from torch.cuda import (\n    graph as capture,\n)\nwith capture(g):\n    pass\n",
    "import torch\nfn = torch.cuda.graph\nwith fn(g):\n    pass\n",
    "g.capture_begin()\ny = x + 1\ng.capture_end()\n",
    "import torch\nstep = torch.cuda.make_graphed_callables(step, (x,))\n",
    "import torch\nfast = torch.compile(step, mode='reduce-overhead')\n",
    "import torch\nopts = {'triton.cudagraphs': True}\nf = torch.compile(m, options=opts)\n",
    "import torch._inductor.config as c\nc.triton.cudagraphs = True\n",
    "from unittest import mock\n"
    "@mock.patch('torch._inductor.config.triton.cudagraphs', True)\n"
    "def test(self):\n    pass\n",
    "from unittest import mock\nfrom torch._inductor import config\n"
    "p = mock.patch.object(config.triton, 'cudagraphs', True)\n",
    "import torch\nfast = torch.compile(step, backend='cudagraphs')\n",
    "import graphlint\n@graphlint.capture_region\ndef step(x):\n    pass\n",
    "from graphlint import capture_region as mark\n@mark\ndef step(x):\n    pass\n",
    "# graphlint: capture-begin\ny = x + 1\n# graphlint: capture-end\n",
    "import torch\ng = torch.accelerator.Graph()\nwith g:\n    pass\n",
    "from torch.accelerator import (\n    Graph,\n)\nwith Graph():\n    pass\n",
    "import torch.accelerator as acc\ng = acc.Graph()\nwith s, g:\n    pass\n",
]

# text that names a region's API where no code uses it
ONLY_TEXT = [
    '"""Layers graphed with make_graphed_callables() each."""\n',
    "# with torch.cuda.graph(g): would break here\nx = 1\n",
    "kwargs = make_graphed_callables_kwargs()\n",
    "graph = build()\ngraph.nodes\n",
    "gm.graph.lint()\n",
    "if config.triton.cudagraphs:\n    log = getArtifactLogger(__name__, 'cudagraphs')\n",
    "from runner.cuda_graph_runner import (\n    CudaGraphRunner,\n)\n",
    "import torch\nfast = torch.compile(step, mode='max-autotune-no-cudagraphs')\n",
    "# runs on the accelerator\nimport networkx\ng = networkx.DiGraph()\n",
    "accelerator = Accelerator()\nlabel = 'Graph'\n",
]


@pytest.mark.parametrize("source", MAKES_A_REGION)
def test_code_that_makes_a_region_is_a_candidate(source: str) -> None:
    assert candidates.may_capture(source, ast.parse(source), frozenset())


@pytest.mark.parametrize("source", ONLY_TEXT)
def test_text_alone_is_not_a_candidate(source: str) -> None:
    assert not candidates.may_capture(source, ast.parse(source), frozenset())


def test_configured_markers_are_candidates() -> None:
    source = "from mylib import captured\n@captured\ndef step(x):\n    pass\n"
    tree = ast.parse(source)
    assert not candidates.may_capture(source, tree, frozenset())
    assert candidates.may_capture(source, tree, frozenset({"mylib.captured"}))


def test_a_marker_named_like_inductors_switch_is_a_candidate() -> None:
    """A marker read as an attribute whose last part is ``cudagraphs`` (the name of
    Inductor's switch, which shows a region only where it is set): the marker's
    name decides. Before the kinds' screens the switch's test answered for the
    name first, and the file was not analysed."""
    source = "import mylib\nwith mylib.cudagraphs():\n    pass\n"
    tree = ast.parse(source)
    assert not candidates.may_capture(source, tree, frozenset())
    assert candidates.may_capture(source, tree, frozenset({"mylib.cudagraphs"}))


def test_without_a_cpython_tree_the_text_decides() -> None:
    assert candidates.may_capture(ONLY_TEXT[0], None, frozenset())


@pytest.mark.parametrize(
    "path",
    sorted([*FIXTURES.rglob("*.py"), *CORPUS.rglob("*.py")]),
    ids=lambda p: str(p.relative_to(p.parents[2])),
)
def test_every_file_with_a_region_is_a_candidate(path: Path) -> None:
    """The pre-filter never drops a file in which the analysis finds a region or a
    call out of one."""
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    found = analyse_source(source, str(path))
    if found.regions or found.entries or found.diagnostics:
        assert candidates.may_capture(source, tree, frozenset())
