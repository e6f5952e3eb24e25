"""Host state between replays, through the ways real code hands it around: a graph
replayed from the dict it was stored in, a global set by a setter, a subclass's
override, a configuration object passed to the captured function."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.project.check import check_project
from graphlint.settings import Settings

CODES = ("GL203", "GL301", "GL406")


def check(tmp_path: Path, source: str) -> set[tuple[int, str]]:
    """Check ``source`` as a one-file project (code it calls is reached)."""
    path = tmp_path / "case.py"
    path.write_text(source)
    results = check_project([path], Settings(), 1)
    return {(d.line, d.code) for r in results for d in r.diagnostics if d.code in CODES}


RUNNER = """
import torch

class Runner:
    def __init__(self, model):
        self.model = model
        self.graphs = {}
        self.x = torch.zeros(4, 8, device="cuda")
        self.out = {}

    def capture(self, bs):
        n = bs * 2
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out[bs] = self.model(self.x[:bs]) * n
        self.graphs[bs] = g

    def run(self, x):
        bs = x.shape[0]
        self.x = x
        self.graphs[bs].replay()
        return self.out[bs]
"""

SETTER = """
import torch
scale = 1.0
x = torch.ones(4, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * scale

def set_scale(v):
    global scale
    scale = v

for i in range(3):
    set_scale(i)
    g.replay()
"""

OVERRIDE = """
import torch

class Base:
    def __init__(self, model):
        self.model = model
        self.static = torch.zeros(4, device="cuda")
        self.graph = torch.cuda.CUDAGraph()

    def capture(self):
        with torch.cuda.graph(self.graph):
            self.out = self.model(self.static)

    def prepare(self, x):
        self.static.copy_(x)

    def run(self, x):
        self.prepare(x)
        self.graph.replay()
        return self.out

class Sub(Base):
    def prepare(self, x):
        self.static = x
"""

CONFIG = """
import torch

class Config:
    def __init__(self):
        self.use_bias = False

def layer(x, cfg):
    if cfg.use_bias:
        return x + 1
    return x * 2

cfg = Config()
x = torch.ones(4, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = layer(x, cfg)
for i in range(3):
    cfg.use_bias = i % 2 == 0
    g.replay()
"""


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (RUNNER, {(20, "GL301")}),  # replayed from self.graphs[bs]; `n` is local
        (SETTER, {(7, "GL406")}),
        (OVERRIDE, {(24, "GL301")}),  # Sub.prepare runs in Base.run
        (CONFIG, {(9, "GL203")}),  # the caller's cfg.use_bias, read as cfg.use_bias
    ],
    ids=["graph-dict", "global-setter", "override", "config-argument"],
)
def test_host_state_changed_between_replays(
    tmp_path: Path, source: str, found: set[tuple[int, str]]
) -> None:
    assert check(tmp_path, source) == found


def test_a_copy_in_the_base_and_no_override_is_fine(tmp_path: Path) -> None:
    assert not check(tmp_path, OVERRIDE.split("class Sub", maxsplit=1)[0])


FRESH = """
import torch

model = torch.nn.Linear(8, 8).cuda()
graphs, inputs, outs = {}, {}, {}
for bs in (1, 2, 4):
    x = torch.zeros(bs, 8, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs[bs] = model(x) * (bs * 2)
    graphs[bs] = g
    inputs[bs] = x
for bs in (1, 2, 4):
    inputs[bs].copy_(torch.randn(bs, 8, device="cuda"))
    graphs[bs].replay()
"""


def test_a_graph_per_key_files_its_output_under_that_key(tmp_path: Path) -> None:
    """One graph per ``bs``, each with its own ``bs`` baked in (``bs * 2``), kept
    and replayed as ``graphs[bs]``: the replay picks the graph the value matches.
    A value the graphs do not select by still changes under them."""
    assert not check(tmp_path, FRESH)
    shared = FRESH.replace("* (bs * 2)", "* scale").replace(
        "for bs in (1, 2, 4):\n    inputs",
        "scale = 1.0\nfor bs in (1, 2, 4):\n    scale = bs / 2\n    inputs",
    )
    assert check(tmp_path, "scale = 2.0\n" + shared) == {(11, "GL406")}


def _gl404(tmp_path: Path, source: str) -> set[tuple[int, str]]:
    path = tmp_path / "case.py"
    path.write_text(source)
    results = check_project([path], Settings(), 1)
    return {
        (d.line, d.code) for r in results for d in r.diagnostics if d.code == "GL404"
    }


def test_a_slot_reset_before_it_is_filled_is_host_state(tmp_path: Path) -> None:
    """A staging slot is one the capture fills and then empties; emptied first
    and filled after, in one function, it keeps what the capture put there."""
    found = _gl404(
        tmp_path,
        """\
import torch

recv = {}


def step(x, k, n):
    recv[k] = None  # expect: GL404
    y = x * 2
    recv[k] = n + 1  # expect: GL404
    return y


g = torch.cuda.CUDAGraph()
x = torch.ones(4, device="cuda")
with torch.cuda.graph(g):
    out = step(x, 0, 5)
""",
    )
    assert found == {(7, "GL404"), (9, "GL404")}


def test_the_lists_of_a_copy_are_the_old_ones(tmp_path: Path) -> None:
    """``list(self.pending)`` and ``[self.pending[0]]`` are new lists of the old
    lists: appending to those is host state, unlike ``[[] for _ in ops]``."""
    found = _gl404(
        tmp_path,
        """\
import torch


class Fuser:
    def __init__(self):
        self.pending = [[], []]

    def forward(self, x):
        self.users = list(self.pending)
        self.users[0].append(x)
        self.copy = [self.pending[0]]
        self.copy[0].append(x)
        self.fresh = [[], [0]]
        self.fresh[0].append(x)
        return x * 2


f = Fuser()
g = torch.cuda.CUDAGraph()
x = torch.ones(4, device="cuda")
with torch.cuda.graph(g):
    out = f.forward(x)
""",
    )
    assert found == {(10, "GL404"), (12, "GL404")}
