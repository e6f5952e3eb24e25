"""``graphlint confirm`` calls the functions holding a region that the program never
runs (``graphlint.runtime.uncalled``): which ones, with what, and what the verdicts
say of such a call. The calls themselves run on a GPU: the runtime scenarios
``fixtures/runtime/gl1_uncalled_*.py`` (``test_confirm.test_gpu_scenario``)."""

from __future__ import annotations

import ast
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from graphlint.diagnostics import FileResult, Outcome
from graphlint.lint import lint
from graphlint.runtime import report, uncalled
from graphlint.runtime.sites import RunResult
from tests.test_confirm import SYNC, _failed, _finding, _site


def _targets(tmp_path: Path, source: str, name: str = "m.py") -> list[dict[str, Any]]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    uncalled._tree.cache_clear()
    return uncalled.targets(lint([path]).results, path)


def _kinds(source: str) -> dict[str, str | None]:
    (function,) = ast.parse(textwrap.dedent(source)).body
    assert isinstance(function, ast.FunctionDef)
    return uncalled.parameters(function, skip_first=False)


def test_the_function_or_method_around_each_region_is_a_target(tmp_path: Path) -> None:
    targets = _targets(
        tmp_path,
        """
        import torch

        g = torch.cuda.CUDAGraph()
        x = torch.ones(4, device="cuda")
        with torch.cuda.graph(g):  # module level: the script runs it, or nothing
            y = x * 2

        def step(model, x):
            with torch.cuda.graph(g):
                return model(x)

        class Runner:
            def __init__(self, size: int, scale=2.0):
                self.x = torch.ones(size)

            def capture(self):
                def inner():
                    with torch.cuda.graph(g):
                        self.x.add_(1)
                inner()

            @staticmethod
            def helper(x: torch.Tensor):
                with torch.cuda.graph(g):
                    x.add_(1)
        """,
    )
    path = str((tmp_path / "m.py").resolve())
    assert [(t["name"], t["regions"], t["needs"], t["init"]) for t in targets] == [
        ("step", [10], {"model": "module", "x": "tensor"}, None),
        # a nested function is called through the method that defines it
        ("Runner.capture", [19], {}, {"size": "int"}),
        ("Runner.helper", [25], {"x": "tensor"}, None),
    ]
    assert {t["path"] for t in targets} == {path}


def test_a_region_its_findings_are_reached_from_is_a_target(tmp_path: Path) -> None:
    """A file of layers, checked alone, has no region: the finding's region, in the
    file that captures them, names the function to call."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(
        "def norm(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"
    )
    (pkg / "runner.py").write_text(
        "import torch\n\nfrom .layers import norm\n\n\n"
        "def run(x: torch.Tensor):\n    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g):\n        norm(x)\n"
    )
    uncalled._tree.cache_clear()
    layers = pkg / "layers.py"
    results = lint([layers, pkg / "runner.py"]).results
    (target,) = uncalled.targets(results, layers)
    assert target["name"] == "run" and target["regions"] == [8]
    assert target["path"] == str((pkg / "runner.py").resolve())


def test_each_parameter_gets_a_stand_in_by_annotation_default_or_use() -> None:
    assert _kinds(
        """
        def f(a: torch.Tensor, b: "Tensor", c: nn.Module, d: int, e: float,
              g: Optional[torch.Tensor], h: torch.Tensor | None, i: list[torch.Tensor],
              j: bool, k=3, *rest, l, m=1, **more):
            pass
        """
    ) == {
        "a": "tensor",
        "b": "tensor",
        "c": "module",
        "d": "int",
        "e": "float",
        "g": "none",
        "h": "none",
        "i": "tensors",
        "j": "bool",
        "l": "tensor",
    }
    assert _kinds(
        """
        def f(model, batches, n, x, opt: torch.optim.Optimizer, kind: str):
            for batch in batches:
                model(batch)
            for _ in range(n):
                x.add_(1)
        """
    ) == {
        "model": "module",
        "batches": "tensors",
        "n": "int",
        "x": "tensor",
        "opt": None,
        "kind": None,
    }


def test_stand_ins_are_said_as_the_verdicts_say_them() -> None:
    said = uncalled.described({"model": "module", "x": "tensor", "opt": None})
    assert said == (
        "`model`: a module that scales its input by a learnable scalar, "
        "`x`: a random 16x16 float32 CUDA tensor"
    )


def test_a_call_on_stand_ins_that_fails_eagerly_too_gives_no_verdict(
    tmp_path: Path,
) -> None:
    """A capture of a called function that fails the same way run eagerly says
    nothing of the code when the inputs were stand-ins: they may be why."""
    a = tmp_path / "a.py"
    shapes = "RuntimeError: mat1 and mat2 shapes cannot be multiplied"
    site = _failed(a, 3, 9, shapes, at=5)
    site.eager, site.driven = shapes, "`step` is never called by the program"
    finding = _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)
    result = FileResult(str(a), (finding,))
    merged = report.merge([result], [RunResult([site])], device="GPU", runs=2)
    (judged,) = merged.findings
    assert judged.status == "no verdict"
    assert "the stand-ins may be why" in judged.note
    assert merged.missed == ()  # not a capture's failure: not counted as missed
    site.driven = ""  # the program's own inputs: the code's failure, not a hazard
    merged = report.merge([result], [RunResult([site])], device="GPU", runs=2)
    assert merged.findings[0].status == "not reproduced"


def test_a_verdict_names_the_call_on_stand_ins(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    said = "`step` is never called by the program: graphlint confirm called it"
    site = _failed(a, 3, 9, SYNC, at=5)
    site.driven = said
    finding = _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)
    result = FileResult(str(a), (finding,))
    merged = report.merge([result], [RunResult([site])], device="GPU", runs=2)
    assert merged.findings[0].status == "confirmed"
    assert said in merged.findings[0].note
    # a call that never reached the region: its verdict says what the call did
    failed = f"{said}, which failed (TypeError: bad)"
    unrun = RunResult([], driven={f"{a.resolve()}:3": failed})
    merged = report.merge([result], [unrun], device="GPU", runs=1)
    assert merged.findings[0].status == "no verdict"
    assert failed in merged.findings[0].note
    # a capture that matched on stand-ins says nothing of what the program passes
    # (``torch.tensor(weights, device="cuda")`` is a copy from the host only when
    # ``weights`` is host data): no verdict, never "not reproduced"
    ran = _site(a, 3, 9, compared=2)
    ran.driven = said
    merged = report.merge([result], [RunResult([ran])], device="GPU", runs=2)
    assert merged.findings[0].status == "no verdict"
    assert "on stand-ins: what the program passes" in merged.findings[0].note
    assert said in merged.findings[0].note


def test_a_method_is_followed_by_the_methods_that_replay_on_its_instance(
    tmp_path: Path,
) -> None:
    """A trainer captures in one method and replays in another: both run, on one
    instance, and a batch copied into the static input is made like it."""
    (target,) = _targets(
        tmp_path,
        """
        import torch

        class Trainer:
            def __init__(self, model: torch.nn.Module):
                self.x = torch.zeros(8, 16, device="cuda")
                self.graph = torch.cuda.CUDAGraph()

            def capture(self):
                with torch.cuda.graph(self.graph):
                    self.out = self.x * 2

            def train(self, batches):
                for batch in batches:
                    self.x.copy_(batch)
                    self.graph.replay()

            def step(self, x):
                self.x.copy_(x)
                self.graph.replay()

            def report(self):
                print(self.out)

            @property
            def replayed(self):
                return self.graph.replay()
        """,
    )
    assert target["name"] == "Trainer.capture"
    assert target["init"] == {"model": "module"}
    assert target["then"] == [
        {"name": "train", "needs": {"batches": "tensors like self.x"}, "keywords": []},
        {"name": "step", "needs": {"x": "tensor like self.x"}, "keywords": []},
    ]
    assert uncalled.described({"batches": "tensors like self.x"}) == (
        "`batches`: a list of 3 random tensors like `self.x`"
    )


def test_a_buffer_is_a_dotted_name_never_a_call() -> None:
    assert _kinds("def f(x):\n    buf.copy_(x)\n") == {"x": "tensor like buf"}
    assert _kinds("def f(x):\n    make().copy_(x)\n") == {"x": "tensor"}
    assert _kinds("def f(x):\n    bufs[0].copy_(x)\n") == {"x": "tensor"}


def test_a_silent_finding_is_not_cleared_by_the_checkers_own_call(
    tmp_path: Path,
) -> None:
    """A stale host value shows only when the program changes it between replays:
    replays that matched on the checker's call of the capturing method say
    nothing of it."""
    a = tmp_path / "a.py"
    site = _site(a, 3, 9, compared=2)
    site.driven = "`Trainer.capture` is never called by the program"
    finding = _finding(a, 5, "GL406", Outcome.SILENT_WRONG, 3)
    result = FileResult(str(a), (finding,))
    merged = report.merge([result], [RunResult([site])], device="GPU", runs=2)
    (judged,) = merged.findings
    assert judged.status == "no verdict"
    assert "and does between replays, may differ" in judged.note
    site.driven = ""
    merged = report.merge([result], [RunResult([site])], device="GPU", runs=2)
    assert merged.findings[0].status == "not reproduced"


def test_a_function_between_capture_comments_is_called_as_a_marked_one(
    tmp_path: Path,
) -> None:
    """A step marked with comments is a region the program never runs: the
    checker calls it, captured as ``@graphlint.capture_region`` would be, on an
    optimizer of the stand-in model's parameters for the ``opt`` it steps."""
    (target,) = _targets(
        tmp_path,
        """
        import torch

        # graphlint: capture-begin
        def train_step(model, batch, opt):
            loss = model(batch).sum()
            loss.backward()
            opt.step()
            return loss.item()
        # graphlint: capture-end


        # graphlint: capture-begin
        x = 1
        # graphlint: capture-end
        """,
    )
    assert target["name"] == "train_step" and target["marked"] == 4
    assert target["needs"] == {
        "model": "module",
        "batch": "tensor",
        "opt": "optimizer",
    }
    assert "`opt`: an SGD optimizer of the stand-in module's parameters" in (
        uncalled.described(target["needs"])
    )


def test_a_failure_only_the_checkers_call_shows_is_never_missed(
    tmp_path: Path,
) -> None:
    """Two functions nothing calls that capture into one graph: the second capture
    fails ("already owns a captured graph") because the checker called both, which
    the program never does; no finding predicts it, and it is not "missed"."""
    a = tmp_path / "a.py"
    twice = "RuntimeError: This CUDAGraph instance already owns a captured graph"
    site = _failed(a, 3, 9, twice, at=4)
    site.driven = "`second` is never called by the program"
    result = FileResult(str(a), ())
    merged = report.merge([result], [RunResult([site])], device="GPU", runs=2)
    assert merged.missed == ()
    site.driven = ""  # the program's own capture: missed
    merged = report.merge([result], [RunResult([site])], device="GPU", runs=2)
    assert len(merged.missed) == 1


def test_a_marked_block_is_a_function_only_when_it_holds_nothing_else(
    tmp_path: Path,
) -> None:
    """Between the comments, a function and a statement that uses it are one
    region: calling the function alone would leave the statement's finding to a
    capture of something else."""
    assert not _targets(
        tmp_path,
        """
        import torch

        # graphlint: capture-begin
        def scale(v):
            return v * 2
        out = scale(x).sum().item()
        # graphlint: capture-end
        """,
    )


def test_only_methods_that_replay_the_captured_graph_follow(tmp_path: Path) -> None:
    """A replay buffer's ``replay()`` or another graph's is not this capture's."""
    (target,) = _targets(
        tmp_path,
        """
        import torch

        class Agent:
            def __init__(self):
                self.graph = torch.cuda.CUDAGraph()

            def capture(self):
                with torch.cuda.graph(self.graph):
                    self.out = self.x * 2

            def learn(self):
                return self.buffer.replay()

            def run(self):
                self.graph.replay()

            @torch.no_grad()
            def decorated(self):
                self.graph.replay()
        """,
    )
    assert [then["name"] for then in target["then"]] == ["run"]


def test_a_parameter_called_is_a_module_though_it_is_zeroed_first() -> None:
    assert _kinds(
        "def f(model, opt, x):\n    model.zero_grad()\n    model(x).sum()\n"
        "    opt.zero_grad()\n    opt.step()\n"
    ) == {"model": "module", "opt": "optimizer", "x": "tensor"}


def test_a_body_on_the_line_of_its_def_is_not_evidence_of_a_call(
    tmp_path: Path,
) -> None:
    """The line of a ``def`` runs when the function is defined: a body there
    tells nothing of a call."""
    one = ast.parse("def one(x): return x\n").body[0]
    assert isinstance(one, ast.FunctionDef) and uncalled._body(one) == []
    (two,) = _targets(
        tmp_path,
        """
        import torch
        g = torch.cuda.CUDAGraph()

        def two(x, *, scale):
            with torch.cuda.graph(g):
                x.mul_(scale)
        """,
    )
    assert two["body"] == [6, 7]
    assert two["keywords"] == ["scale"]
    assert two["needs"] == {"x": "tensor", "scale": "tensor"}


def test_what_the_program_called_is_not_called_again(tmp_path: Path) -> None:
    """A line of the function's body ran (its region may sit in a branch the
    program did not take): the program called it."""
    from graphlint.runtime import lines, session  # noqa: PLC0415

    path = str(tmp_path / "m.py")
    target: dict[str, Any] = {"path": path, "body": [5, 9], "regions": [7]}
    assert not uncalled._called(target)
    lines.EXECUTED.add((path, 6))
    try:
        assert uncalled._called(target)
    finally:
        lines.EXECUTED.discard((path, 6))
    site = _site(tmp_path / "m.py", 7, 8)  # its region ran: called too
    session.SITES[site.key] = site
    try:
        assert uncalled._called(target)
    finally:
        del session.SITES[site.key]


def test_a_call_that_runs_on_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(uncalled, "CALL_LIMIT", 0.05)

    def forever() -> None:
        with uncalled._limit():
            while True:
                pass

    with pytest.raises(uncalled._Late):
        forever()


def test_required_parameters_go_by_position_keyword_only_ones_by_name() -> None:
    torch = types.SimpleNamespace(nn=types.SimpleNamespace(Module=type("M", (), {})))
    seen: list[tuple[object, ...]] = []

    def function(a, b, /, *, c):  # type: ignore[no-untyped-def]
        seen.append((a, b, c))

    needs: dict[str, str | None] = {"a": "int", "b": "float", "c": "bool"}
    uncalled._invoke(function, needs, ["c"], torch, None, {})
    assert seen == [(2, 1.0, True)]


def test_a_module_is_imported_only_when_importing_it_only_defines() -> None:
    def quiet(source: str) -> bool:
        return uncalled._quiet(ast.parse(textwrap.dedent(source)))

    assert quiet(
        """
        \"\"\"Layers.\"\"\"
        import torch
        try:
            import apex
        except ImportError:
            apex = None
        SIZE = 4

        class Net(torch.nn.Module):
            pass

        if __name__ == "__main__":
            train()
        """
    )
    assert not quiet("import torch\ntrain()\n")
    assert not quiet("for step in range(10):\n    pass\n")
    assert not quiet("with open('log') as f:\n    pass\n")


def test_a_keyword_only_constructor_parameter_is_passed_by_name(
    tmp_path: Path,
) -> None:
    (target,) = _targets(
        tmp_path,
        """
        import torch

        class Runner:
            def __init__(self, model, opt, other, *, size: int, scale=2.0):
                self.model, self.graph = model, torch.cuda.CUDAGraph()
                self.opt = opt
                self.other = other

            def capture(self, x):
                with torch.cuda.graph(self.graph):
                    self.model(x).sum().backward()
                    self.opt.step()
        """,
    )
    # what __init__ keeps is taken by the class's use of it
    assert target["init"] == {
        "model": "tensor",  # kept by unpacking: not followed
        "opt": "optimizer",
        "other": "tensor",
        "size": "int",
    }
    assert target["init_keywords"] == ["size", "scale"]
    assert target["needs"] == {"x": "tensor"}
