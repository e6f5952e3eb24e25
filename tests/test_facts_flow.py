"""The capture timeline and capture guards on small snippets: which writes run between
a capture and a replay, which are set-up, memo writes, warm-ups, guard formulas."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from graphlint.diagnostics import Confidence
from graphlint.facts import guards
from graphlint.facts.analysis import FileFacts
from graphlint.facts.state import Write
from graphlint.project.check import check_project
from graphlint.project.summary import formula
from graphlint.settings import Settings
from tests.conftest import expectations
from tests.test_facts import facts_for


def writes_of(facts: FileFacts, name: str) -> list[Write]:
    """Writes to ``name``, its attributes or its entries (``x``, ``x.a``, ``x[k]``)."""

    def root(key: object) -> object:
        while isinstance(key, tuple) and key[0] in ("attr", "item"):
            key = key[1]
        return key[-1] if isinstance(key, tuple) else None

    return [
        w
        for key, found in facts.state.writes.items()
        if root(key) == name or key[-1] == name
        for w in found
    ]


def change_lines(source: str, name: str) -> dict[int, tuple[int, int | None] | None]:
    """For each write to ``name``: (the replay it precedes, the call it runs in)."""
    _, facts = facts_for(source)
    regions = facts.all_regions()
    assert regions, "the snippet captures"
    found: dict[int, tuple[int, int | None] | None] = {}
    for write in writes_of(facts, name):
        change = None
        for region in regions:
            change = change or facts.flow.between_replays(write, region)
        found[write.line] = (change.replay, change.call) if change else None
    return found


def test_first_binding_is_set_up_and_a_rebinding_in_the_loop_is_not() -> None:
    lines = change_lines(
        """
        import torch
        def run(model, batches):
            x = torch.zeros(4, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = model(x)
            for b in batches:
                x = b
                g.replay()
            x = None
        """,
        "x",
    )
    assert lines == {4: None, 9: (10, None), 11: None}


def test_a_fresh_capture_per_iteration_replays_what_was_bound_before_it() -> None:
    lines = change_lines(
        """
        import torch
        def run(model, sizes):
            for n in sizes:
                x = torch.zeros(n, device="cuda")
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = model(x)
                g.replay()
                x = torch.ones(n, device="cuda")
        """,
        "x",
    )
    assert lines == {5: None, 10: None}


def test_a_setter_called_in_the_replay_loop_writes_there() -> None:
    lines = change_lines(
        """
        import torch
        SCALE = 1.0
        def set_scale(v):
            global SCALE
            SCALE = v
        def step(x):
            return x * SCALE
        def run(x):
            set_scale(2.0)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = step(x)
            for v in (1.0, 2.0):
                set_scale(v)
                g.replay()
        """,
        "SCALE",
    )
    assert lines == {3: None, 6: (16, 15)}


def test_later_calls_of_a_replaying_method_and_the_public_setter() -> None:
    source = """
        import torch
        class Runner:
            def __init__(self):
                self.x = torch.zeros(4, device="cuda")
                self.scale = 1.0
                self.g = torch.cuda.CUDAGraph()
            def capture(self):
                with torch.cuda.graph(self.g):
                    self.y = self.x * self.scale
            def run(self, x):
                self.g.replay()
                self.x = x
            def rescale(self, s):
                self.scale = s
        """
    assert change_lines(source, "x") == {5: None, 13: (12, None)}
    _, facts = facts_for(source)
    region = facts.all_regions()[0]
    (setter,) = [w for w in writes_of(facts, "scale") if w.line == 15]
    change = facts.flow.between_replays(setter, region)
    assert change is not None and change.confidence is Confidence.MEDIUM


def test_memo_writes_are_guarded_by_a_test_of_their_own_state() -> None:
    _, facts = facts_for(
        """
        import torch
        CACHE = {}
        def get(k, buf):
            if k in CACHE:
                return CACHE[k]
            CACHE[k] = torch.ones(1)
            if buf.x is None:
                buf.x = torch.zeros(1)
            buf.y = 3
            return CACHE[k]
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            get("a", None)
        """
    )
    memo = {
        w.line: facts.flow.memo(w.target, w.key)
        for name in ("CACHE", "x", "y")
        for w in writes_of(facts, name)
        if w.line > 3
    }
    assert memo == {7: True, 9: True, 10: False}


@pytest.mark.parametrize(
    ("test", "value"),
    [
        ("torch.cuda.is_current_stream_capturing()", True),
        ("not torch.cuda.is_current_stream_capturing()", False),
        (
            "torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()",
            True,
        ),
        ("not (torch.cuda.is_available() and is_graph_capturing())", False),
        ("debug and not torch.cuda.is_current_stream_capturing()", False),
        ("debug or torch.cuda.is_current_stream_capturing()", True),
        ("debug or not torch.cuda.is_current_stream_capturing()", None),
        ("debug", None),
        ("not not not not True", True),
    ],
)
def test_guard_formulas_under_capture(test: str, value: bool | None) -> None:
    tree = ast.parse(f"from transformer_engine.pytorch.graph import x\n{test}\n")
    expr = tree.body[1]
    assert isinstance(expr, ast.Expr)
    found = formula(expr.value)
    known = {"is_graph_capturing"}
    assert guards.under_capture(found, known.__contains__) is value
    assert guards.decode(guards.encode(found)) == found


def test_deep_tests_are_unknown_not_a_crash() -> None:
    test = "not " * 500 + "torch.cuda.is_current_stream_capturing()"
    tree = ast.parse(f"if {test}:\n    pass\n")
    node = tree.body[0]
    assert isinstance(node, ast.If)
    assert guards.under_capture(formula(node.test), lambda name: False) is None
    assert guards.decode("[not json") == guards.UNKNOWN


def region_lines(source: str) -> set[int]:
    _, facts = facts_for(source)
    lines: set[int] = set()
    for node in facts.regions:
        if isinstance(node, cst.SimpleStatementLine):
            code = cst.Module([]).code_for_node(node).strip()
            lines.add(int(code.rsplit("#", 1)[1]))
    return lines


def test_guards_keep_code_out_of_the_region() -> None:
    lines = region_lines(
        textwrap.dedent(
            """
            import torch
            def is_capturing():
                return torch.cuda.is_current_stream_capturing()
            def step(x, g):
                with torch.cuda.graph(g):
                    y = x * 2  #1
                    live = torch.cuda.is_current_stream_capturing()  #2
                    if not live:
                        print(y)  #3
                    if x.requires_grad and not is_capturing():
                        print(y)  #4
                    if torch.cuda.is_current_stream_capturing():
                        z = y + 1  #5
                    else:
                        print(y)  #6
                    assert not torch.cuda.is_available() or is_capturing()  #7
                    z = y * 3  #8
            def helper(x):
                y = x + 1  #9
                if is_capturing():
                    return y  #10
                print(y)  #11
            """
        )
    )
    assert lines == {1, 2, 5, 7, 8}


def test_releasing_state_or_resetting_the_graph_is_not_a_public_setter() -> None:
    _, facts = facts_for(
        """
        import torch
        class Runner:
            def __init__(self):
                self.x = torch.zeros(4, device="cuda")
                self.g = torch.cuda.CUDAGraph()
            def capture(self):
                with torch.cuda.graph(self.g):
                    self.y = self.x * 2
            def run(self):
                self.g.replay()
                return self.y
            def release(self):
                self.x = None
            def resize(self, n):
                self.x = torch.zeros(n, device="cuda")
                self.g = torch.cuda.CUDAGraph()
            def swap(self, x):
                self.x = x
        """
    )
    region = facts.all_regions()[0]
    found = {
        w.line: facts.flow.between_replays(w, region) is not None
        for w in writes_of(facts, "x")
    }
    assert found == {5: False, 14: False, 16: False, 19: True}


def test_entry_code_needs_a_visible_capture_before_the_write() -> None:
    """Module code runs from the top: a capture behind a call graphlint cannot follow
    may come after the write, so the write is no evidence; a loop still is."""
    lines = change_lines(
        """
        import torch
        g = torch.cuda.CUDAGraph()
        x = torch.zeros(8, device="cuda")
        class Runner:
            def capture(self):
                with torch.cuda.graph(g):
                    self.out = x * 2
        runner = make_runner()
        runner.capture()
        for _ in range(3):
            x.copy_(torch.ones(8, device="cuda"))
            g.replay()
        for _ in range(3):
            x = torch.ones(8, device="cuda")
            g.replay()
        """,
        "x",
    )
    assert lines == {4: None, 15: (16, None)}


def test_a_capture_made_once_inside_the_loop_is_not_a_fresh_capture() -> None:
    lines = change_lines(
        """
        import torch
        def main(model, n):
            g = torch.cuda.CUDAGraph()
            x = torch.zeros(8, device="cuda")
            for i in range(n):
                x = torch.randn(8, device="cuda")
                if i == 3:
                    with torch.cuda.graph(g):
                        y = model(x)
                if i >= 3:
                    g.replay()
        """,
        "x",
    )
    assert lines == {5: None, 7: (12, None)}


def test_memo_needs_a_test_that_the_state_is_missing() -> None:
    _, facts = facts_for(
        """
        import torch
        CACHE = {}
        class Step:
            def run(self, k, y):
                found = CACHE.get(k)
                if found is not None:
                    return found
                CACHE[k] = y
                while len(self.streams) < 2:
                    self.streams.append(torch.cuda.Stream())
                if not hasattr(self, "buf") or self.buf is None:
                    self.buf = y
                if self.history is not None:
                    self.history.append(y)
                if self.calls < 1000:
                    self.calls += 1
                return y
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            Step().run(1, None)
        """
    )
    memo = {
        w.line: facts.flow.memo(w.target, w.key)
        for name in ("CACHE", "buf", "calls")
        for w in writes_of(facts, name)
    }
    assert memo == {3: False, 9: True, 13: True, 17: False}
    calls = {
        facts.flow.sites[node].line: facts.flow.memo(node, key)
        for node in facts.flow.sites
        if isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "append"
        and (key := facts.state.key_of(node.func.value)) is not None
    }
    assert calls == {11: True, 15: False}


def test_guards_agree_in_the_file_and_across_files(tmp_path: Path) -> None:
    """The same guards hold whether the guarded code is in the capturing file
    (LibCST) or reached in another (the ast summaries): a helper that returns a
    check, a check kept in a local, an if/elif/else whose branches all leave; a
    helper returning a negated condition is not a check."""
    helpers = textwrap.dedent(
        """
        import torch
        def cpu_only():
            return not torch.cuda.is_available()
        def capturing():
            \"\"\"Whether the current stream is capturing.\"\"\"
            return torch.cuda.is_current_stream_capturing()
        def step(x):
            if cpu_only():
                return x
            torch.cuda.synchronize()  # expect: GL103
            live = torch.cuda.is_current_stream_capturing()
            if not live:
                torch.cuda.synchronize()
            if capturing():
                if x is None:
                    return x
                elif x.dim() == 1:
                    return x
                else:
                    raise ValueError(x)
            torch.cuda.synchronize()
            return x
        """
    )
    (tmp_path / "helpers.py").write_text(helpers)
    (tmp_path / "main.py").write_text(
        "import torch\nfrom helpers import step\n\n"
        "def run(x: torch.Tensor, g: torch.cuda.CUDAGraph):\n"
        "    with torch.cuda.graph(g):\n        step(x)\n"
    )
    results = check_project([tmp_path / "main.py"], Settings(), 1)
    across = {
        (Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics
    }
    assert across == {
        ("helpers.py", line, code) for line, code in expectations(helpers)
    }
    # the same function captured in its own file
    inline = (
        helpers + "\ndef run(x, g):\n    with torch.cuda.graph(g):\n        step(x)\n"
    )
    (tmp_path / "helpers.py").write_text(inline)
    results = check_project([tmp_path / "helpers.py"], Settings(), 1)
    assert {(d.line, d.code) for r in results for d in r.diagnostics} == set(
        expectations(helpers)
    )
