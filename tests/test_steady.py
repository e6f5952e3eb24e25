"""Steady tests (facts/steady.py): a branch under a capture made at one iteration
of a counting loop, whose test has the same value at every later replay."""

from __future__ import annotations

import pytest

from tests.conftest import lint

LOOP = """
import torch

def train(model, x, n, g):
    CAPTURE = 3
    for step in range(n):{bump}
        if step == CAPTURE:
            with torch.cuda.graph(g):
                if {test}:
                    x.mul_(2)
        g.replay()
"""


@pytest.mark.parametrize(
    ("test", "steady"),
    [
        ("step == 0", True),  # false at 3 and after
        ("step != 1", True),
        ("step < 3", True),
        ("step <= 2", True),
        ("step > 2", True),
        ("step >= 3", True),
        ("0 == step", True),
        ("step == 5", False),  # false at capture, true at the replay of step 5
        ("step < 4", False),
        ("step > 3", False),
        ("step >= 4", False),
        ("step % 2 == 0", False),
    ],
)
def test_a_counter_settles_tests_against_constants(test: str, steady: bool) -> None:
    found = lint(LOOP.format(bump="", test=test), "GL203")
    assert (not found) is steady


def test_a_counter_written_elsewhere_settles_nothing() -> None:
    bumped = LOOP.format(bump="\n        step += 1", test="step == 0")
    assert lint(bumped, "GL203")


def test_a_capture_not_pinned_to_one_iteration_settles_nothing() -> None:
    source = LOOP.format(bump="", test="step == 0").replace("step == CAPTURE", "ready")
    assert lint(source, "GL203")


def test_a_steadily_false_branch_is_not_captured() -> None:
    source = """
    import torch

    def train(model, x, n, g):
        log = []
        for step in range(0, n, 2):
            if step == 4:
                with torch.cuda.graph(g):
                    y = model(x)
                    if step == 0:
                        log.append(y)
            g.replay()
        return log
    """
    assert not lint(source, "GL404")
    assert lint(source.replace("step == 0", "step == 6"), "GL404")
    assert lint(source.replace("0, n, 2", "n, 0, -1"), "GL404")  # counts down


SETTLE = """
import torch

seen = set()
cache = {{}}
w = torch.ones(2, device="cuda")
k = 1
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    if {test}:
        {body}
"""


@pytest.mark.parametrize(
    ("test", "body", "settled"),
    [
        ("k not in seen", "w.sum().item(); seen.add(k)", True),
        ("k not in cache", "cache[k] = w.sum().item()", True),
        ("cache.get('n') is None", "w.sum().item()", False),
        ("k not in seen", "w.sum().item(); seen.add(k + 1)", False),
        ("k in seen", "w.sum().item(); seen.add(k)", False),
        ("not cache", "w.sum().item(); cache = {'a': 1}", True),
        ("not cache", "w.sum().item(); cache = {}", False),
        ("cache", "w.sum().item(); cache = {}", True),
        ("cache['n'] is None", "w.sum().item(); cache['n'] = 3", True),
        ("cache['n'] is not None", "w.sum().item(); cache['n'] = 3", False),
    ],
)
def test_a_block_that_settles_its_test_is_not_captured(
    test: str, body: str, settled: bool
) -> None:
    found = lint(SETTLE.format(test=test, body=body), "GL101")
    assert (not found) is settled


REBOUND = """
import torch


def shift(x, dim: int):
    dim %= x.dim()
    return x.roll(1, dims=dim)


def train(x, g) -> int:
    steps: int = 0
    with torch.cuda.graph(g):
        y = shift(x, -1)
        steps += 1
    for _ in range(3):
        g.replay()
    return steps
"""


def test_a_number_rebound_in_a_captured_call_frame_is_no_host_state() -> None:
    """``dim %= n`` on a parameter of a function every call of which is captured
    rebinds it in the call's own frame. ``steps += 1`` on a local of the function
    that holds the region outlives the capture: the function returns 1 after three
    replays."""
    assert [d.line for d in lint(REBOUND, "GL404")] == [14]
