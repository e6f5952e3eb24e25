"""torch.compile's CUDA graphs (cudagraph trees) follow their own measurements
(ground-truth/README.md): fullgraph=True makes some graph breaks compile errors, and
outputs are overwritten by the next call."""

from __future__ import annotations

import textwrap

from graphlint.diagnostics import Confidence, Diagnostic, Severity
from graphlint.engine import lint_source
from graphlint.output.lsp import diagnostic_to_lsp
from graphlint.output.text import format_diagnostic
from graphlint.settings import Settings
from tests.conftest import FIXTURES


def lint(source: str, code: str) -> list[Diagnostic]:
    return lint_source(
        textwrap.dedent(source), "t.py", Settings(enabled=frozenset({code}))
    )


def by_line(path: str, code: str) -> dict[int, Diagnostic]:
    source = (FIXTURES / path).read_text(encoding="utf-8")
    found = lint_source(source, path, Settings(enabled=frozenset({code})))
    return {d.line: d for d in found}


def test_fullgraph_makes_a_data_dependent_branch_an_error() -> None:
    found = by_line("GL201-tensor-truth-value/bad_fullgraph.py", "GL201")
    strict, lenient = found[8], found[15]
    assert strict.severity is Severity.ERROR
    assert "fullgraph=True" in strict.message and "Data-dependent" in strict.message
    assert strict.region is not None and "fullgraph=True" in strict.region.label
    assert lenient.severity is Severity.WARNING
    assert "graph is split" in lenient.message


def test_fullgraph_item_is_reported_only_when_python_branches_on_it() -> None:
    found = by_line("GL101-device-to-host-copy/bad_fullgraph.py", "GL101")
    assert found[8].severity is Severity.ERROR
    assert "Could not guard" in found[8].message
    assert found[15].severity is Severity.WARNING
    assert not by_line("GL101-device-to-host-copy/good_fullgraph.py", "GL101")


def test_fullgraph_is_read_from_a_compiled_module_too() -> None:
    found = lint(
        """
        import torch

        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                if x.sum() > 0:
                    return x
                return -x

        m = torch.compile(M(), mode="max-autotune", fullgraph=True)
        """,
        "GL201",
    )
    assert [d.severity for d in found] == [Severity.ERROR]


def test_kept_compiled_output_names_the_call_and_its_loop() -> None:
    found = by_line("GL303-graph-output-kept/bad_compiled.py", "GL303")
    tokens = found[15]
    assert tokens.severity is Severity.ERROR
    assert tokens.confidence is Confidence.HIGH  # generate() is under no_grad
    assert "`decode_one_token` (compiled with CUDA graphs at line 27)" in (
        tokens.message
    )
    assert "its next call (line 14, in the same loop)" in tokens.message
    table = by_line("GL303-graph-output-kept/bad_compiled_table.py", "GL303")
    assert table[20].confidence is Confidence.HIGH  # inference_mode
    served = by_line("GL303-graph-output-kept/bad_compiled_server.py", "GL303")
    assert served[18].confidence is Confidence.HIGH  # self.model, under no_grad


def test_kept_compiled_output_with_autograd_on_is_medium() -> None:
    """Measured: with autograd on and no backward yet, the next call did not
    overwrite the output, so the evidence is partial."""
    found = lint(
        """
        import torch

        model = torch.compile(torch.nn.Linear(4, 4).cuda(), mode="reduce-overhead")

        def run(batches):
            outs = []
            for batch in batches:
                outs.append(model(batch))
            return outs
        """,
        "GL303",
    )
    assert [d.confidence for d in found] == [Confidence.MEDIUM]


def test_dynamic_shape_ops_on_unknown_receivers_are_medium() -> None:
    found = by_line("GL105-dynamic-shape-op/bad_unknown.py", "GL105")
    assert {d.confidence for d in found.values()} == {Confidence.MEDIUM}
    known = by_line("GL105-dynamic-shape-op/bad.py", "GL105")
    assert Confidence.HIGH in {d.confidence for d in known.values()}


def test_autocast_finding_sits_on_the_autocast_and_points_at_the_call() -> None:
    [found] = lint(
        """
        import torch

        model = torch.nn.Linear(8, 8).cuda()
        x = torch.randn(4, 8, device="cuda", requires_grad=True)
        with torch.autocast("cuda"):
            graphed = torch.cuda.make_graphed_callables(model, (x,))
        """,
        "GL706",
    )
    assert (found.line, found.col) == (6, 5)
    assert [(r.line, r.col) for r in found.related] == [(7, 14)]
    assert "    note: line 7: torch.cuda.make_graphed_callables(...)" in (
        format_diagnostic(found)
    )
    [related] = diagnostic_to_lsp(found)["relatedInformation"]
    assert related["location"]["range"]["start"] == {"line": 6, "character": 14}


def test_grads_accumulated_says_why_and_how_sure() -> None:
    """GL304: high confidence when every call in the loop is one graphlint sees
    through; medium when one could empty the gradients out of sight; the reason
    names what is missing."""
    found = lint(
        """
        import torch

        def plain(model, batches):
            step = torch.compile(model, mode="reduce-overhead")
            for batch in batches:
                step(batch).sum().backward()

        def opaque(model, trainer, batches):
            step = torch.compile(model, mode="reduce-overhead")
            for batch in batches:
                step(batch).sum().backward()
                trainer.finish_step()

        def twice(model, batches):
            step = torch.compile(model, mode="reduce-overhead")
            for first, second in batches:
                model.zero_grad()
                step(first).sum().backward()
                step(second).sum().backward()

        def compiled_without_grad(model, other, batches):
            step = torch.compile(model, mode="reduce-overhead")
            for batch in batches:
                with torch.no_grad():
                    target = step(batch).clone()
                (other(batch) - target).sum().backward()
        """,
        "GL304",
    )
    by = {d.line: d for d in found}
    assert sorted(by) == [7, 12, 20]
    assert by[7].confidence is Confidence.HIGH
    assert "nothing empties them" in by[7].message
    assert by[12].confidence is Confidence.MEDIUM
    assert "backward at line 19" in by[20].message


def test_a_detached_output_shares_the_graph_memory() -> None:
    """GL303: ``out.detach()`` kept across training steps is a view of the output
    (measured: ``compiled_train_kept_detach`` raised); ``.detach().clone()`` is not."""
    found = lint(
        """
        import torch

        def train(model, batches):
            step = torch.compile(model, mode="reduce-overhead")
            kept = []
            for batch in batches:
                model.zero_grad()
                out = step(batch)
                out.sum().backward()
                kept.append(out.detach())
                kept.append(out.detach().clone())
            return kept
        """,
        "GL303",
    )
    assert [(d.line, d.message.split(" ", 1)[0]) for d in found] == [
        (11, "`out.detach()`")
    ]


def test_grads_accumulated_only_where_the_compiled_code_has_parameters() -> None:
    """GL304: a compiled PyTorch function (a loss) holds no parameters whose
    gradients its graph writes: quiet; a compiled function of the file may call a
    module: medium."""
    found = lint(
        """
        import torch
        import torch.nn.functional as F

        def train(model, batches):
            loss_fn = torch.compile(F.cross_entropy, mode="reduce-overhead")
            for x, y in batches:
                loss_fn(model(x), y).backward()

        @torch.compile(mode="reduce-overhead")
        def forward(model, x):
            return model(x)

        def train_fn(model, batches):
            for x in batches:
                forward(model, x).sum().backward()
        """,
        "GL304",
    )
    assert [(d.line, d.confidence) for d in found] == [(16, Confidence.MEDIUM)]


def test_an_output_read_before_its_backward_ran_is_not_overwritten() -> None:
    """GL303 on ``a = f(x1); b = f(x2); use(a)`` in training: quiet where no
    backward ran between the calls (measured ok,
    ``compiled_train_forward_without_backward_read``); reported where one did, or
    where the first call ran without autograd (``compiled_train_eval_between``)."""
    found = lint(
        """
        import torch

        def read_before_backward(model, batches):
            step = torch.compile(model, mode="reduce-overhead")
            for batch in batches:
                model.zero_grad()
                first = step(batch)
                out = step(batch * 2)
                out.sum().backward()
                print(first.sum())

        def read_after_backward(model, batches):
            step = torch.compile(model, mode="reduce-overhead")
            for batch in batches:
                model.zero_grad()
                first = step(batch)
                first.sum().backward()
                out = step(batch * 2)
                print(first.sum())

        def read_after_eval(model, batches):
            step = torch.compile(model, mode="reduce-overhead")
            for batch in batches:
                model.zero_grad()
                with torch.no_grad():
                    val = step(batch)
                out = step(batch * 2)
                out.sum().backward()
                print(val.sum())
        """,
        "GL303",
    )
    assert [(d.line, d.confidence) for d in found] == [
        (20, Confidence.HIGH),
        (30, Confidence.HIGH),
    ]
