"""``graphlint confirm`` gives every finding its own chance (issue #16): variant
runs that take out a failing statement or warm a capture up, the lines that ran
(and ran while capturing), and the verdicts built on them. No GPU needed."""

from __future__ import annotations

import ast
import contextlib
import json
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from graphlint.diagnostics import Diagnostic, FileResult, Outcome
from graphlint.runtime import confirm, lines, neutral, report, session
from graphlint.runtime.sites import STOPPED, Capture, RunResult, Site, Status
from tests.test_confirm import _failed, _finding, _site

CUBLAS = (
    "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling "
    "`cublasCreate(handle)`"
)
SYNC = "AcceleratorError: CUDA error: operation not permitted when stream is capturing"
SOURCE = textwrap.dedent(
    """\
    def step(x, log):
        n = x.item()
        if x.positive():
            log.append("positive")
        while x.item() > 5:
            x = Syncing(x.value - 1)
        with open_nothing():
            x.item()
        return n * 2
    """
)


class Syncing:
    """A value that may not be read while a graph is captured, as a tensor's."""

    def __init__(self, value: int) -> None:
        self.value = value

    def item(self) -> int:
        _no_sync()
        return self.value

    def positive(self) -> Truth:
        return Truth(self.value > 0)


class Truth:
    """A comparison's result, on the device: its truth value syncs, as a tensor's."""

    def __init__(self, value: bool) -> None:
        self.value = value

    def __bool__(self) -> bool:
        _no_sync()
        return self.value


def _no_sync() -> None:
    if lines.capturing():
        raise RuntimeError("operation not permitted when stream is capturing")


def _step(taken: set[int]) -> Any:
    tree = neutral.rewrite(
        ast.parse(SOURCE), dict.fromkeys(taken, neutral.HOISTED), "s.py"
    )
    scope = {
        "Syncing": Syncing,
        "open_nothing": contextlib.nullcontext,
        neutral.HOIST: neutral.hoist,
    }
    exec(compile(tree, "s.py", "exec"), scope)
    return scope["step"]


def test_a_statement_moved_out_reuses_its_warm_up_value_while_capturing() -> None:
    step = _step({2, 3, 5, 8})
    log: list[str] = []
    assert step(Syncing(3), log) == 6  # eagerly: computes, keeps the values
    lines.begin_capture()
    try:
        assert step(Syncing(3), log) == 6  # capturing: reuses them, binds n
        with pytest.raises(RuntimeError, match="capturing"):
            _step({3, 5, 8})(Syncing(3), log)  # line 2 still syncs
    finally:
        lines.end_capture()
    assert log == ["positive", "positive"]  # the if's body stays in the capture


def test_the_innermost_statement_of_a_line_is_moved() -> None:
    tree = ast.parse(SOURCE)
    header = neutral.statement_at(tree, 3)
    assert isinstance(header, ast.If) and header.lineno == 3  # the header's statement
    inner = neutral.statement_at(tree, 8)
    assert isinstance(inner, ast.Expr) and inner.lineno == 8  # not its with
    assert neutral.statement_at(tree, 100) is None
    unchanged = ast.unparse(neutral.rewrite(ast.parse(SOURCE), {}))
    assert unchanged == ast.unparse(tree)


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> object:
    def use(**values: object) -> None:
        monkeypatch.setenv(session.ENV, json.dumps(values))
        session.settings.cache_clear()
        neutral._neutralised.cache_clear()
        neutral.tree_of.cache_clear()

    yield use
    session.settings.cache_clear()
    neutral._neutralised.cache_clear()
    neutral.tree_of.cache_clear()


def test_a_variant_imports_the_users_module_rewritten_and_caches_nothing(
    tmp_path: Path, settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "variant_mod.py"
    module.write_text("def f():\n    a = 1\n    a = 2\n    return a\n")  # a = 2 moves
    settings(neutralised=[[str(module), 3]])  # type: ignore[operator]
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    neutral.install()
    import variant_mod  # type: ignore[import-not-found]  # noqa: PLC0415

    try:
        assert variant_mod.f() == 2  # not capturing: computed as before
        lines.begin_capture()
        try:
            assert variant_mod.f() == 2  # capturing: the value kept
        finally:
            lines.end_capture()
        assert variant_mod.f.__code__.co_filename == str(module)
        assert not (tmp_path / "__pycache__").exists()
    finally:
        del sys.modules["variant_mod"]


def test_lines_that_ran_and_ran_while_capturing_are_recorded(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(
        "from graphlint.runtime import lines\n"
        "def f(n):\n"
        "    return n + 1\n"
        "def never():\n"
        "    return 0\n"
        "f(1)\n"
        "lines.begin_capture()\n"
        "f(2)\n"
        "lines.end_capture()\n"
    )
    driver = (
        "import json, runpy, sys; from graphlint.runtime import lines; lines.start(); "
        f"runpy.run_path({str(script)!r}); sys.settrace(None); "
        "print(json.dumps([lines.by_file(lines.EXECUTED), "
        "lines.by_file(lines.CAPTURED)]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", driver], capture_output=True, text=True, check=True
    )
    executed, captured = json.loads(done.stdout)
    path = str(script.resolve())
    assert {3, 6, 8} <= set(executed[path]) and 5 not in executed[path]
    assert set(captured[path]) == {3, 8, 9}  # f's body, the call, end_capture()


def test_the_driver_runs_variants_until_a_failure_is_unexplained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = tmp_path / "a.py"
    seen: list[dict[str, object]] = []

    def run_once(
        script: Path, args: list[str], settings: dict[str, object], timeout: object
    ) -> RunResult:
        seen.append(settings)
        taken = len(settings["neutralised"])  # type: ignore[arg-type]
        site = _failed(a, 3, 9, "RuntimeError: x", at=5 + taken)
        site.kind = Capture.GRAPH_BLOCK  # failed: no run of its own
        return RunResult([site])

    def explain(site: Site, trial: RunResult) -> tuple[str, object] | None:
        line = site.error_line or 0
        return ("neutralised", [site.error_path, line]) if line < 7 else None

    monkeypatch.setattr(confirm, "run_once", run_once)
    trials, runs = confirm.run_all(a, [], {}, explain=explain, variants=5)
    assert [t.sites[0].error_line for t in trials] == [5, 6, 7]
    assert runs == 3 and all(s["target"] is None for s in seen)
    assert seen[-1]["neutralised"] == [[str(a.resolve()), 5], [str(a.resolve()), 6]]
    trials, _ = confirm.run_all(a, [], {}, explain=explain, variants=0)
    assert len(trials) == 1  # --variants 0: the script as written only


def _merge(trials: list[RunResult], found: list[Diagnostic], a: Path) -> report.Report:
    return report.merge(
        [FileResult(str(a), tuple(found))], trials, device="GPU", runs=len(trials)
    )


def test_a_finding_behind_a_confirmed_failure_is_judged_in_the_variant(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    first = RunResult([_failed(a, 3, 9, SYNC, at=5)])
    variant = RunResult([_failed(a, 3, 9, SYNC, at=6)], neutralised=[[str(a), 5]])
    found = [
        _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3),
        _finding(a, 6, "GL101", Outcome.CAPTURE_ERROR, 3),
    ]
    merged = _merge([first, variant], found, a)
    assert [f.status for f in merged.findings] == ["confirmed", "confirmed"]
    assert merged.findings[1].note.endswith(
        "(run with a.py:5 moved out of the capture)"
    )
    assert merged.missed == ()
    # a Python error there may come from the moved statement's stand-in value
    stand_in = RunResult(
        [_failed(a, 3, 9, "TypeError: unsupported operand NoneType", at=6)],
        neutralised=[[str(a), 5]],
    )
    second = _merge([first, stand_in], found, a).findings[1]
    assert second.status == "no verdict" and "not as a capture fails" in second.note


def test_lines_that_never_ran_are_not_executed_never_not_reproduced(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    path = str(a.resolve())
    trial = RunResult([_site(a, 3, 9, compared=2)], executed={path: [3, 4, 5]})
    found = [
        _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3),
        _finding(a, 7, "GL101", Outcome.CAPTURE_ERROR, 3),
    ]
    merged = _merge([trial], found, a)
    assert [f.status for f in merged.findings] == ["not reproduced", "not executed"]
    assert merged.findings[1].note == "its line never ran in the run"
    # nor does its region's failure confirm it: the line made nothing go wrong
    wrong = RunResult(
        [_site(a, 3, 9, status=Status.SILENT_WRONG, detail="outputs overwritten")],
        executed={path: [3, 4, 5]},
    )
    kept = [
        _finding(a, 5, "GL303", Outcome.SILENT_WRONG, 3),
        _finding(a, 7, "GL303", Outcome.SILENT_WRONG, 3),
    ]
    merged = _merge([wrong], kept, a)
    assert [f.status for f in merged.findings] == ["confirmed", "not executed"]


def test_host_work_that_ran_while_capturing_is_confirmed(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    path = str(a.resolve())
    trial = RunResult(
        [_site(a, 3, 9)], executed={path: [3, 4, 5]}, captured={path: [4]}
    )
    found = [
        _finding(a, 4, "GL401", Outcome.SILENT_WRONG, 3),  # host I/O, ran capturing
        _finding(a, 5, "GL401", Outcome.SILENT_WRONG, 3),  # ran, not capturing
        _finding(a, 4, "GL406", Outcome.SILENT_WRONG, 3),  # no host work: replays
    ]
    statuses = [f.status for f in _merge([trial], found, a).findings]
    assert statuses == ["confirmed", "no verdict", "no verdict"]


def test_a_failure_eager_execution_has_too_is_no_capture_hazard(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    site = _failed(a, 3, 9, "TypeError: bad operand", at=5)
    site.eager = "TypeError: bad operand"
    merged = _merge([RunResult([site])], [], a)
    assert merged.missed == ()  # the script's own bug, not a missed hazard
    found = [_finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)]
    (finding,) = _merge([RunResult([site])], found, a).findings
    assert finding.status == "not reproduced"
    assert "fails the same way run eagerly" in finding.note


def test_the_explainer_warms_up_for_gl703_and_takes_out_confirmed_lines(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    warmup = _finding(a, 3, "GL703", Outcome.CAPTURE_ERROR, 3)
    sync = _finding(a, 6, "GL101", Outcome.CAPTURE_ERROR, 3)
    explain = report.Explainer(lambda paths: [FileResult(str(a), (warmup, sync))])
    graph = _failed(a, 3, 9, CUBLAS, at=5)
    graph.kind = Capture.GRAPH_BLOCK
    assert explain(graph, RunResult([graph])) == ("warm", graph.key)
    warmed = RunResult([graph], warm=[graph.key])
    assert explain(graph, warmed) is None  # at line 5, no finding: unexplained
    synced = _failed(a, 3, 9, SYNC, at=6)
    # the finding's own expression moves alone (columns 4 to 9 of line 6)
    moved = [str(a.resolve()), 6, "hoisted", [[6, 4, 6, 9]]]
    assert explain(synced, warmed) == ("neutralised", moved)
    merged = _merge([RunResult([graph]), warmed], [warmup], a)
    assert merged.findings[0].status == "confirmed"  # not "not reproduced" warmed


def test_a_captures_own_call_taken_out_runs_the_code_eagerly() -> None:
    source = (
        "graphed = torch.cuda.make_graphed_callables(model, (x,))\n"
        "with torch.cuda.graph(g):\n"
        "    y = model(x)\n"
        "g.capture_begin()\n"
        "z = model(x)\n"
        "h.capture_end()\n"
        "g.capture_end()\n"
    )
    taken = dict.fromkeys((1, 2, 4), neutral.UNGRAPHED)
    out = ast.unparse(neutral.rewrite(ast.parse(source), taken))
    assert out == (  # the capture_begin() goes with its own capture_end()
        "graphed = model\ny = model(x)\npass\nz = model(x)\nh.capture_end()\npass"
    )


def test_a_python_error_of_a_run_that_moved_statements_is_never_missed(
    tmp_path: Path,
) -> None:
    """A failure that does not read as a capture's own may be the moved
    statement's doing (a value it no longer computes inside the capture), not a
    hazard no rule saw."""
    a = tmp_path / "a.py"
    first = RunResult([_failed(a, 3, 9, SYNC, at=5)])
    variant = RunResult(
        [_failed(a, 3, 9, "AssertionError: no inf checks", at=7)],
        neutralised=[[str(a), 5, "hoisted"]],
    )
    found = [_finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)]
    merged = _merge([first, variant], found, a)
    assert merged.missed == ()
    assert _merge([variant.__class__(variant.sites)], found, a).missed != ()


def test_a_failure_only_a_variant_shows_is_missed_with_that_variant(
    tmp_path: Path,
) -> None:
    """Issue #30: once line 5 is moved out, the capture fails at line 7, which no
    rule flagged: missed, with the re-run that showed it."""
    a = tmp_path / "a.py"
    first = RunResult([_failed(a, 3, 9, SYNC, at=5)])
    variant = RunResult(
        [_failed(a, 3, 9, SYNC, at=7)], neutralised=[[str(a), 5, "hoisted"]]
    )
    found = [_finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)]
    merged = _merge([first, variant], found, a)
    (missed,) = merged.missed
    assert (missed.line, missed.variant) == (7, "a.py:5 moved out of the capture")
    assert missed.message.endswith(
        f"no rule said so: {SYNC} (in the re-run with a.py:5 moved out of the capture)"
    )
    (document,) = json.loads(report.format_lsp(merged))
    runtime = [d["data"]["runtime"] for d in document["diagnostics"]]
    (item,) = [d for d in runtime if d["status"] == "missed"]
    assert item["variant"] == "a.py:5 moved out of the capture"
    assert "in the re-run with a.py:5" in report.format_text(merged)
    # a finding there that predicts it: nothing missed
    seven = _finding(a, 7, "GL103", Outcome.CAPTURE_ERROR, 3)
    assert _merge([first, variant], [*found, seven], a).missed == ()


def test_a_failure_in_the_script_as_written_is_missed_once_without_a_variant(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    graph = _failed(a, 3, 9, CUBLAS, at=5)
    warmed = RunResult([graph], warm=[graph.key])
    merged = _merge([RunResult([graph]), warmed], [], a)
    (missed,) = merged.missed
    assert missed.variant == "" and "re-run" not in missed.message
    (only,) = _merge([RunResult([_site(a, 3, 9)]), warmed], [], a).missed
    assert only.variant == "the capture at a.py:3 warmed up first"


def test_a_failure_a_library_swallowed_names_the_users_line() -> None:
    """``logging`` prints a handler's failure (formatting a tensor under capture);
    the capture then fails at its end with no line: the swallowed one is used."""
    from graphlint.runtime import attribution  # noqa: PLC0415

    def log_it() -> None:  # the user's logging call
        attribution.swallowed(RuntimeError("operation not permitted"), sys._getframe())

    log_it()
    try:
        at_end = RuntimeError("operation failed due to a previous error")
        line = log_it.__code__.co_firstlineno + 1
        assert attribution.user_frame(at_end) == (str(Path(__file__).resolve()), line)
        assert attribution.first_line(at_end) == "RuntimeError: operation not permitted"
    finally:
        attribution.SWALLOWED.clear()


def test_what_cannot_move_stays_and_a_value_never_kept_has_a_stand_in() -> None:
    source = (
        "def f(xs, x):\n"
        "    if (n := x.item()) > 0:\n"  # a walrus binds in f's scope: it stays
        "        pass\n"
        "    for r in x.rows():\n"  # the iterable moves, the body stays
        "        xs.append(r)\n"
        "    y = x.item()\n"
        "    return xs\n"
    )
    tree = neutral.rewrite(ast.parse(source), dict.fromkeys((2, 4, 6), "hoisted"))
    out = ast.unparse(tree)
    assert "(n := x.item()) > 0" in out and neutral.HOIST + "('" in out
    assert "for r in __graphlint_hoist__" in out and "xs.append(r)" in out
    assert "'iter')" in out  # a loop over a value never kept ends at once
    lines.begin_capture()
    try:
        stand_ins = [
            neutral.hoist("never-computed:2", lambda: 1, kind)
            for kind in ("test", "assert", "loop", "iter", "effect", "value")
        ]
        assert stand_ins == [False, True, False, (), None, None]
    finally:
        lines.end_capture()


def test_a_decorator_line_belongs_to_its_definition() -> None:
    source = "@torch.compile(\n    mode='reduce-overhead'\n)\ndef f(x):\n    return x\n"
    tree = ast.parse(source)
    found = neutral.statement_at(tree, 2)
    assert isinstance(found, ast.FunctionDef)
    out = ast.unparse(neutral.rewrite(tree, {1: neutral.UNGRAPHED}))
    assert out == "def f(x):\n    return x"  # the function runs uncompiled


def test_findings_on_any_line_of_a_moved_statement_skip_that_run(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    a.write_text("x = 1\nvalue = f(\n    t.item(),\n)\ny = 2\n")
    first = RunResult([_failed(a, 1, 5, SYNC, at=3)])
    moved = RunResult([_site(a, 1, 5)], neutralised=[[str(a), 3, "hoisted"]])
    found = [
        _finding(a, 3, "GL101", Outcome.CAPTURE_ERROR, 1),
        _finding(a, 2, "GL105", Outcome.CAPTURE_ERROR, 1),  # the same statement
    ]
    statuses = [f.status for f in _merge([first, moved], found, a).findings]
    assert statuses == ["confirmed", "no verdict"]  # never "not reproduced"


def test_a_line_after_the_checkers_stop_is_not_said_never_to_run(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    path = str(a.resolve())
    stopped = RunResult(
        [_failed(a, 3, 9, "RuntimeError: x", at=4)],
        STOPPED,
        executed={path: [3, 4]},
    )
    found = [_finding(a, 7, "GL101", Outcome.CAPTURE_ERROR, 3)]
    (finding,) = _merge([stopped], found, a).findings
    assert finding.status == "no verdict" and "failed first" in finding.note


def test_a_region_that_ran_only_in_a_skipped_variant_is_not_said_not_to_run(
    tmp_path: Path,
) -> None:
    """Issue #30: the script stopped at the capture at line 3 before the one at
    line 20 ran; the re-run that warmed line 3's capture up ran it, but a warm-up
    says nothing of GL703. The note says what happened, not "did not run"."""
    a = tmp_path / "a.py"
    graph = _failed(a, 3, 9, CUBLAS, at=5)
    graph.kind = Capture.GRAPH_BLOCK
    later = _site(a, 20, 25, kind=Capture.GRAPH_BLOCK, calls=0)
    first = RunResult([graph, later], STOPPED)
    ran = _site(a, 20, 25, kind=Capture.GRAPH_BLOCK, compared=2)
    warmed = RunResult(
        [_site(a, 3, 9, kind=Capture.GRAPH_BLOCK), ran], warm=[graph.key]
    )
    warmup = _finding(a, 20, "GL703", Outcome.CAPTURE_ERROR, 20)
    (finding,) = _merge([first, warmed], [warmup], a).findings
    assert finding.status == "no verdict"
    assert finding.note == (
        "its region ran only in the re-run with the capture at a.py:3 warmed up "
        "first, where a warm-up says nothing of this finding"
    )
    (alone,) = _merge([first], [warmup], a).findings
    assert alone.note == (
        "its region did not run: the run was stopped at the failed capture of "
        "step() first"
    )


def test_a_failure_another_finding_explains_is_not_a_region_findings_kind(
    tmp_path: Path,
) -> None:
    """GL705's failure is any sync under capture: a .item() flagged where the
    capture failed explains it instead."""
    a = tmp_path / "a.py"
    site = _failed(
        a,
        3,
        9,
        "AcceleratorError: operation not permitted when stream is capturing",
        at=6,
    )
    ddp = _finding(a, 3, "GL705", Outcome.CAPTURE_ERROR, 3)
    item = _finding(a, 6, "GL101", Outcome.CAPTURE_ERROR, 3)
    statuses = [f.status for f in _merge([RunResult([site])], [ddp, item], a).findings]
    assert statuses == ["no verdict", "confirmed"]
    alone = _merge([RunResult([site])], [ddp], a).findings
    assert alone[0].status == "confirmed"


def test_marked_regions_are_captured_again_in_every_variant_and_steps_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = tmp_path / "a.py"
    asked: list[tuple[object, int]] = []

    def run_once(
        script: Path, args: list[str], settings: dict[str, object], timeout: object
    ) -> RunResult:
        moved = len(settings["neutralised"])  # type: ignore[arg-type]
        asked.append((settings["target"], moved))
        marked = _site(a, 3, 9)
        if settings["target"] is None:
            return RunResult([marked])
        return RunResult([_failed(a, 3, 9, "RuntimeError: x", at=5 + moved)])

    def explain(site: Site, trial: RunResult) -> tuple[str, object] | None:
        return ("neutralised", [site.error_path, min(site.error_line or 0, 6)])

    monkeypatch.setattr(confirm, "run_once", run_once)
    trials, runs = confirm.run_all(a, [], {}, explain=explain, variants=5)
    marked_key = _site(a, 3, 9).key
    assert asked == [
        (None, 0),
        (marked_key, 0),
        (None, 1),
        (marked_key, 1),
        (None, 2),
        (marked_key, 2),
    ]
    assert len(trials) == 3 and runs == 6  # line 6 again: a step already taken


def test_the_import_finder_leaves_modules_it_does_not_rewrite_alone(
    settings: object,
) -> None:
    settings(neutralised=[["/nowhere/rewritten.py", 1, "hoisted"]])  # type: ignore[operator]
    assert neutral._Finder().find_spec("json", None) is None


def test_the_eager_check_does_not_read_the_capture_failure_it_runs_under(
    tmp_path: Path,
) -> None:
    """The eager run starts while the capture's failure is handled, so Python
    chains that failure to any error it raises: a different eager error (a later
    line's TypeError) must not read as the capture's failure again."""
    from graphlint.runtime import capture  # noqa: PLC0415

    user = tmp_path / "user_code.py"
    user.write_text(
        "def body(eager):\n"
        "    if not eager:\n"
        '        raise RuntimeError("operation not permitted when stream is capturing")\n'
        '    raise TypeError("can\'t convert cuda:0 device type tensor to numpy")\n'
    )
    scope: dict[str, Any] = {}
    exec(compile(user.read_text(), str(user), "exec"), scope)
    try:
        scope["body"](False)
    except RuntimeError as failure:  # the eager checks run while it is handled
        other = capture._fails_eagerly(lambda: scope["body"](True), failure)
        again = capture._fails_eagerly(lambda: scope["body"](False), failure)
    assert other is None
    assert again == "RuntimeError: operation not permitted when stream is capturing"


def test_a_hoisted_header_moves_without_its_body_or_elif(tmp_path: Path) -> None:
    """A finding in the body or an ``elif`` of an ``if`` whose test a run moved
    still gets that run's verdict; an ungraphed block moves whole."""
    path = tmp_path / "spans.py"
    path.write_text(
        "if (x.abs().max()\n"  # 1
        "        > 100):\n"  # 2
        "    y = x / 100\n"  # 3
        "elif x.mean() < -1:\n"  # 4
        "    y = -x\n"  # 5
        "for _ in range(int(n)):\n"  # 6
        "    x = x * 2\n"  # 7
        "with torch.cuda.graph(g):\n"  # 8
        "    y = x.item()\n"  # 9
        "z = (x +\n"  # 10
        "     1)\n"  # 11
    )
    where = str(path)
    assert neutral.span(where, 1) == (1, 2)
    assert neutral.span(where, 4) == (4, 4)
    assert neutral.span(where, 6) == (6, 6)
    assert neutral.span(where, 8, neutral.UNGRAPHED) == (8, 9)
    assert neutral.span(where, 10) == (10, 11)
    assert neutral.span(where, 1, neutral.UNGRAPHED) == (1, 5)


def test_the_eager_check_tolerates_moved_statements_that_fail() -> None:
    """Run eagerly after a failed capture, a moved statement computes as in any
    eager run; one that raises (it was moved for failing) gives what it gave the
    capture, so the eager run reaches the line the capture failed at."""

    def fails() -> int:
        raise TypeError("can't convert cuda:0 device type tensor to numpy")

    assert neutral.hoist("eager-check:1", lambda: 3) == 3  # kept in a warm-up
    with neutral.eager_check():
        assert neutral.hoist("eager-check:2", lambda: 4) == 4  # computed
        assert neutral.hoist("eager-check:1", fails) == 3  # the value kept
        assert neutral.hoist("eager-check:3", fails) is None  # the stand-in
        assert neutral.hoist("eager-check:4", fails, "test") is False
    with pytest.raises(TypeError):  # the program's own eager runs raise as written
        neutral.hoist("eager-check:3", fails)


def test_a_block_the_checker_re_runs_is_the_variants_rewritten_code(
    tmp_path: Path, settings: object
) -> None:
    from graphlint.runtime.source import block_at  # noqa: PLC0415

    script = tmp_path / "blocks_variant.py"
    script.write_text("with region():\n    y = x.item()\n    z = y + 1\n")
    assert block_at(str(script), 1) is not None  # parsed as written: nothing moves
    settings(neutralised=[[str(script), 2]])  # type: ignore[operator]
    block = block_at(str(script), 1)
    assert block is not None and block.code is not None
    assert neutral.HOIST in block.code.co_names  # y's value moved out of the capture


def test_a_capture_records_what_moved_statements_gave_it_and_which_stood_in() -> None:
    """Issue #30: a value no run outside the capture kept is a stand-in, and the
    capture's site is told; an eager run to compare with a replay reuses what the
    capture used (``pinned``), as the replay does, and computes the rest."""
    computed: list[str] = []

    def compute(name: str, value: object) -> Any:
        def run() -> object:
            computed.append(name)
            return value

        return run

    assert neutral.hoist("pins.py:1", compute("kept", 7)) == 7  # a warm-up keeps it
    start = neutral.mark()
    lines.begin_capture()
    try:
        assert neutral.hoist("pins.py:1", compute("kept", 8)) == 7
        assert neutral.hoist("pins.py:2", compute("never", 9)) is None
        assert neutral.hoist("pins.py:3", compute("test", 1), "test") is False
        assert neutral.hoist("pins.py:4", compute("loop", 1), "loop") is False
        assert neutral.hoist("pins.py:5", compute("effect", 1), "effect") is None
    finally:
        lines.end_capture()
    assert computed == ["kept"]  # nothing is computed while capturing
    # a loop that ends and a dropped value are what the move means, not stand-ins
    assert neutral.stand_ins_since(start) == ["pins.py:2", "pins.py:3"]
    pins = neutral.values_since(start)
    assert pins == {
        "pins.py:1": 7,
        "pins.py:2": None,
        "pins.py:3": False,
        "pins.py:4": False,
        "pins.py:5": None,
    }
    with neutral.pinned(pins):
        assert neutral.hoist("pins.py:1", compute("kept", 8)) == 7  # as captured
        assert neutral.hoist("pins.py:5", compute("effect", 1), "effect") is None
        assert neutral.hoist("pins.py:6", compute("other", 5)) == 5  # not captured
    assert computed == ["kept", "other"]
    assert neutral.hoist("pins.py:1", compute("kept", 8)) == 8  # unpinned: computes
    assert neutral.since(neutral.mark()) == []


def test_the_moved_statements_a_region_would_stand_in_for_are_known_before_it(
    tmp_path: Path, settings: object
) -> None:
    """Before a capture of lines 1-8 begins, the run knows which statements it
    moved there have no kept value yet that other code reads (so an eager run of
    the region can compute them first); a value kept, a dropped value, a name no
    other code reads or another region's are not."""
    script = tmp_path / "unwarmed.py"
    script.write_text(
        "with graph(g):\n"  # 1
        "    n = x.sum().item()\n"  # 2
        "    print(x.item())\n"  # 3: an effect, its value dropped
        "    m = (x *\n"  # 4
        "         n).max().item()\n"  # 5
        "    y = m + 1\n"  # 6
        "    k = x.item()\n"  # 7: nothing in the region reads k
        "    s.total = x.item()\n"  # 8: state, which anything may read
        "k = x.item()\n"  # 9
    )
    path = str(script)
    real = str(script.resolve())
    moved = [[path, line] for line in (2, 3, 5, 7, 8, 9)]
    settings(neutralised=moved)  # type: ignore[operator]
    assert neutral.missing(path, 1, 8) == [f"{real}:2", f"{real}:4", f"{real}:8"]
    after = tmp_path / "after.py"  # read only after the region
    after.write_text("with graph(g):\n    peak = y.max().item()\nprint(peak)\n")
    settings(neutralised=[[str(after), 2]])  # type: ignore[operator]
    assert neutral.missing(str(after), 1, 2) == [f"{after.resolve()}:2"]
    settings(neutralised=moved)  # type: ignore[operator]
    neutral.VALUES[f"{real}:2"] = 4.0
    try:
        assert neutral.missing(path, 1, 8) == [f"{real}:4", f"{real}:8"]
        assert neutral.missing(path, 7, 9) == [f"{real}:8"]
    finally:
        del neutral.VALUES[f"{real}:2"]


def test_the_statements_between_capture_begin_and_capture_end_are_a_block(
    tmp_path: Path,
) -> None:
    from graphlint.runtime.source import span_at  # noqa: PLC0415

    script = tmp_path / "pair.py"
    script.write_text(
        "with torch.cuda.stream(s):\n"  # 1
        "    g.capture_begin()\n"  # 2
        "    y = x * 2\n"  # 3
        "    h.capture_end()\n"  # 4: another graph's
        "    z = y + w\n"  # 5
        "    g.capture_end()\n"  # 6
        "def split():\n"  # 7
        "    g.capture_begin()\n"  # 8
        "    y = x * 2\n"  # 9
        "g.capture_end()\n"  # 10: not in the same statements
    )
    block = span_at(str(script), 2)
    assert block is not None and block.code is not None
    assert (block.line, block.end_line) == (2, 6)
    assert block.assigned == {"y", "z"} and {"x", "w", "h"} <= block.names
    scope: dict[str, Any] = {"x": 1, "w": 10, "h": types_namespace()}
    exec(block.code, scope)
    assert scope["z"] == 12  # the statements between, run on their own
    assert span_at(str(script), 8) is None
    assert span_at(str(script), 3) is None  # not a capture_begin()


def types_namespace() -> Any:
    """An object whose ``capture_end()`` does nothing."""

    class Graph:
        def capture_end(self) -> None:
            return None

    return Graph()


def test_a_verdict_a_stand_in_withheld_says_so(tmp_path: Path) -> None:
    """A chain that ends behind a stand-in is not silent: the findings it leaves
    without a verdict say which moved statement stood in, and what it may cost."""
    a = tmp_path / "a.py"
    first = RunResult([_failed(a, 3, 9, SYNC, at=5)])
    failed = _failed(a, 3, 9, "TypeError: unsupported operand NoneType", at=6)
    failed.stand_ins = [f"{a.resolve()}:5"]
    variant = RunResult([failed], neutralised=[[str(a), 5]])
    found = [
        _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3),
        _finding(a, 7, "GL101", Outcome.CAPTURE_ERROR, 3),
    ]
    merged = _merge([first, variant], found, a)
    assert [f.status for f in merged.findings] == ["confirmed", "no verdict"]
    note = merged.findings[1].note
    assert "ran with a stand-in for " in note and "a.py:5" in note
    assert "may have failed or gone another way because of it" in note
    failed.stand_ins = []
    assert "stand-in" not in _merge([first, variant], found, a).findings[1].note


def test_a_variant_trial_targets_the_programs_captures_and_says_what_it_warmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #30: a variant's comparisons reuse what moved statements gave the
    capture, so its captures are compared too; a capture its runs warmed up (an
    eager run of the region for a moved statement's value) is the trial's."""
    a = tmp_path / "a.py"
    asked: list[object] = []

    def run_once(
        script: Path, args: list[str], settings: dict[str, object], timeout: object
    ) -> RunResult:
        asked.append(settings["target"])
        graph = _site(a, 3, 9, kind=Capture.GRAPH_BLOCK)
        return RunResult([graph], neutralised=[[str(a), 5]], warm=[graph.key])

    monkeypatch.setattr(confirm, "run_once", run_once)
    settings = {"neutralised": [[str(a), 5, "hoisted"]], "warm": []}
    trial, runs = confirm._trial(a, [], settings, None, set(), lambda line: None)
    key = _site(a, 3, 9).key
    assert asked == [None, key] and runs == 2
    assert trial.warm == [key]
    assert "warmed up first" in trial.variant


UNWARMED = textwrap.dedent(
    """\
    import torch

    x = torch.ones(4, device="cuda")
    w = torch.full((4,), 0.5, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        n = x.sum().item()
        y = x * n
        m = y.max().item()
        z = y * w + m
    g.replay()
    print(z)
    """
)


@pytest.mark.gpu
def test_gpu_a_value_moved_out_of_an_unwarmed_block_comes_from_an_eager_run(
    tmp_path: Path,
) -> None:
    """Issue #30: the block is never run eagerly, so no run kept ``n`` when line 7
    moved out; an eager run of the block computes it first (not a ``None`` that
    fails line 8), and the second sync, behind it, is confirmed in that variant.
    With both moved, the capture's replays are compared with eager runs that
    reuse the moved values, on varied inputs too, and match."""
    from graphlint.lint import lint  # noqa: PLC0415

    script = tmp_path / "unwarmed.py"
    script.write_text(UNWARMED)
    explain = report.Explainer(lambda paths: lint(paths, no_cache=True).results)
    trials, runs = confirm.run_all(
        script, [], {"warmup": 3}, 240, explain=explain, variants=4
    )
    merged = report.merge(
        lint([script], no_cache=True).results, trials, device="GPU", runs=runs
    )
    verdicts = [(f.diagnostic.line, f.status) for f in merged.findings]
    assert verdicts == [(7, "confirmed"), (9, "confirmed")], merged.findings
    assert "run with unwarmed.py:7 moved out of the capture" in merged.findings[1].note
    assert len(trials) == 3, [t.variant for t in trials]
    (site,) = trials[-1].sites
    assert site.status == "captured" and site.compared >= 2, site
    assert site.stand_ins == [] and trials[-1].warm == [site.key]
    assert merged.missed == ()


PROGRAM_CAPTURES = textwrap.dedent(
    """\
    import torch


    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.factor = torch.ones(4, device="cuda")

        def forward(self, x):
            return x * self.factor


    model = Scale()
    x = torch.randn(4, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(model, (x,))
    model.factor = torch.full((4,), 2.0, device="cuda")
    out = graphed(x)

    a = torch.ones(4, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        b = a * 2
        g = torch.cuda.CUDAGraph()
        g.capture_begin()
        b = a * 2
        g.capture_end()
    torch.cuda.current_stream().wait_stream(s)
    a = torch.full((4,), 3.0, device="cuda")
    g.replay()
    print(out, b)
    """
)


@pytest.mark.gpu
def test_gpu_graphed_callables_and_capture_pairs_are_compared_with_eager(
    tmp_path: Path,
) -> None:
    """Issue #30: a graphed module's calls and a capture_begin()/capture_end()
    pair's replays are compared with eager runs, as a torch.cuda.graph block's
    are: each here reads a tensor the program rebinds after capture, which the
    graph never sees."""
    script = tmp_path / "rebound.py"
    script.write_text(PROGRAM_CAPTURES)
    trials, _ = confirm.run_all(script, [], {"warmup": 3}, 240)
    sites = {site.kind: site for site in trials[0].sites}
    graphed = sites[Capture.GRAPHED_CALLABLES]
    assert graphed.status == "silent-wrong" and graphed.compared == 2, graphed
    assert "(call 1)" in graphed.detail  # right after capture, it still matched
    pair = sites[Capture.CAPTURE_PAIR]
    assert pair.status == "silent-wrong" and pair.compared >= 2, pair
    assert (pair.line, pair.end_line) == (25, 27)
    assert "`b`" in pair.detail or "`a`" in pair.detail


def test_a_silent_error_only_a_variant_shows_is_missed(tmp_path: Path) -> None:
    """Issue #30 compares a variant's replays with eager (the eager runs reuse what
    the moved statements gave the capture): a region that captures only once line
    5 is moved out, and whose replays then differ from eager, is a failure no rule
    predicted, so it is missed, not dropped; unless it ran on a stand-in."""
    a = tmp_path / "a.py"
    first = RunResult([_failed(a, 3, 9, SYNC, at=5)])
    wrong = _site(a, 3, 9, status=Status.SILENT_WRONG, detail="replay 1 differs")
    variant = RunResult([wrong], neutralised=[[str(a), 5, "hoisted"]])
    found = [_finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)]
    merged = _merge([first, variant], found, a)
    assert merged.findings[0].status == "confirmed"
    (missed,) = merged.missed
    assert missed.variant == "a.py:5 moved out of the capture"
    assert "is silently wrong, and no rule said so" in missed.message
    wrong.stand_ins = [f"{a.resolve()}:5"]  # the code after it ran on a stand-in
    assert _merge([first, variant], found, a).missed == ()


def test_a_marked_block_whose_body_raises_keeps_no_value_in_force() -> None:
    """``with graphlint.capture_region():`` whose body raises: the values its
    capture gave moved statements stop standing in for them (an eager run of the
    same statements later computes them again), and no replay is left to compare."""
    from graphlint.markers import capture_region  # noqa: PLC0415
    from graphlint.runtime.capture import BlockProbe  # noqa: PLC0415

    probe = BlockProbe.__new__(BlockProbe)
    probe.pinning = contextlib.ExitStack()
    probe.pending = ({}, None)
    probe.pinning.enter_context(neutral.pinned({"k": 1}))
    assert neutral._PINNED
    region = capture_region()
    region.probe = probe
    with pytest.raises(ValueError, match="the body failed"), region:
        raise ValueError("the body failed")
    assert not neutral._PINNED
    assert probe.pending is None


def test_a_comparison_that_fails_leaves_the_programs_call_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker's own failure while it compares a call (a value it cannot copy,
    a bug) is not the program's: the call returns as it would, the comparisons
    stop, and the site says why. Found in review."""
    from graphlint.runtime import capture  # noqa: PLC0415

    site = _site(tmp_path / "a.py", 3, 9, kind=Capture.COMPILED)
    calls = capture.CallComparison(site, lambda x: x)
    monkeypatch.setattr(capture, "_wants_comparison", lambda s: True)

    def broken(*args: object) -> None:
        raise TypeError("cannot copy this value")

    monkeypatch.setattr(calls, "_eager", broken)
    wrapped = calls.wrap(lambda x: x + 1)
    assert wrapped(1) == 2
    assert calls.off
    assert "graphlint could not compare them (TypeError: cannot copy" in site.detail
    calls.off = False
    calls.pending = [{"return": 2}]
    monkeypatch.setattr(capture, "reached_values", broken)
    calls.after((1,), {}, 2)  # does not raise
    assert calls.off and calls.pending == []


class _Host:
    """A value whose ``item()`` waits for the device: it fails while capturing."""

    def __init__(self, value: float) -> None:
        self.value = value

    def item(self) -> float:
        _no_sync()
        return self.value


def _rewritten(tmp_path: Path, source: str, spans: neutral.Spans) -> dict[str, Any]:
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    real = str(path.resolve())
    taken = dict.fromkeys(spans, neutral.HOISTED)
    tree = neutral.rewrite(ast.parse(source), taken, real, spans)
    scope: dict[str, Any] = {neutral.HOIST: neutral.hoist}
    exec(compile(tree, real, "exec"), scope)
    return scope


def test_a_host_read_moves_alone_and_the_rest_of_its_statement_is_captured(
    tmp_path: Path,
) -> None:
    """The finding's expression is hoisted, as a user's fix would hoist it: the
    statement's other values are computed in the capture (a graphed forward's
    output keeps its own autograd graph, not the warm-up's)."""
    source = "def f(y, s):\n    return [y] + [s.item() * 2]\n"
    scope = _rewritten(tmp_path, source, {2: ((2, 18, 2, 26),)})
    assert scope["f"](1, _Host(3.0)) == [1, 6.0]  # eagerly: keeps s.item()
    lines.begin_capture()
    try:
        assert scope["f"](5, _Host(4.0)) == [5, 6.0]  # y live, s.item() kept
    finally:
        lines.end_capture()
    whole = _rewritten(tmp_path, source, {})  # no spans: nothing moves
    assert whole["f"](5, _Host(4.0)) == [5, 8.0]


def test_an_expression_that_cannot_move_alone_moves_its_statement(
    tmp_path: Path,
) -> None:
    """Columns count code points (``é`` is two bytes); a span in a comprehension
    (one value per item) or one that names no expression moves the whole value."""
    source = "def f(s):\n    return ['é', s.item()]\n"
    moved = ast.parse(source)
    real = str((tmp_path / "m.py").resolve())
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    spans: neutral.Spans = {2: ((2, 17, 2, 25),)}
    out = ast.unparse(neutral.rewrite(moved, {2: neutral.HOISTED}, real, spans))
    assert "lambda: s.item(), 'value')" in out and f"'{real}:2:" in out
    for source, span in (
        ("def f(s):\n    return [t.item() for t in s]\n", (2, 12, 2, 20)),
        ("def f(s):\n    return [1, s.item()]\n", (2, 99, 2, 100)),
    ):
        (tmp_path / "m.py").write_text(source, encoding="utf-8")
        neutral._text.cache_clear()
        out = ast.unparse(
            neutral.rewrite(ast.parse(source), {2: neutral.HOISTED}, real, {2: (span,)})
        )
        assert f"'{real}:2', lambda: [" in out  # the statement's whole value


def test_a_moved_value_is_named_by_its_line() -> None:
    """A statement's key is its line; an expression's, its own line and columns,
    shown as its line."""
    assert neutral.place("/a/b.py:12") == ("/a/b.py", "12")
    assert neutral.place("/a/b.py:13:8:13:20") == ("/a/b.py", "13")
    assert neutral.place("C:/a/b.py:3") == ("C:/a/b.py", "3")
    assert neutral.place("/a/12:3/b.py:7") == ("/a/12:3/b.py", "7")


def test_a_test_moved_alone_keeps_its_truth_and_a_name_never_moves(
    tmp_path: Path,
) -> None:
    """A comparison read for its truth (``a if h.sum() > 0 else b``) is kept as a
    bool, so the capture reads no tensor's truth; a name (a generator argument)
    computes nothing, and a loop's condition never moves alone: the statement moves."""
    source = "def f(s):\n    return 2 if s.gt() else 3\n"

    class Host:
        def gt(self) -> Syncing:
            return Syncing(True)

    scope = _rewritten(tmp_path, source, {2: ((2, 16, 2, 22),)})
    assert scope["f"](Host()) == 2  # eagerly: keeps bool(s.gt())
    lines.begin_capture()
    try:
        assert scope["f"](Host()) == 2  # no truth read while capturing
    finally:
        lines.end_capture()
    real = str((tmp_path / "m.py").resolve())
    for source, span in (
        ("def f(g):\n    return r(4, generator=g)\n", (2, 30, 2, 31)),
        (
            "def f(h, i):\n    while h.norm() > 1 and i:\n        i -= 1\n",
            (2, 10, 2, 24),
        ),
    ):
        (tmp_path / "m.py").write_text(source, encoding="utf-8")
        neutral._text.cache_clear()
        out = ast.unparse(
            neutral.rewrite(ast.parse(source), {2: neutral.HOISTED}, real, {2: (span,)})
        )
        assert f"'{real}:2', lambda:" in out  # the statement's whole part moved


def test_a_failure_a_moved_statement_caused_moves_too_and_the_trials_go_on(
    tmp_path: Path,
) -> None:
    """``scaler.update()`` fails once ``scaler.step()`` has moved out (no capture's
    failure: a Python error): it moves too, as a user's fix moves both, so the
    findings after it are tried; never twice, never in the script as written."""
    a = tmp_path / "a.py"
    path = str(a.resolve())
    explain = report.Explainer(lambda paths: [FileResult(str(a), ())])
    broken = _failed(a, 3, 9, "AssertionError: No inf checks were recorded", at=6)
    moved = RunResult([broken], neutralised=[[path, 5, "hoisted"]])
    assert explain(broken, moved) == ("neutralised", [path, 6, "hoisted"])
    assert explain(broken, RunResult([broken])) is None  # as written: unexplained
    again = RunResult(
        [broken], neutralised=[[path, 5, "hoisted"], [path, 6, "hoisted"]]
    )
    assert explain(broken, again) is None
    captured = _failed(a, 3, 9, SYNC, at=6)  # a capture's own: not a moved one's
    assert explain(captured, moved) is None


class _Scaler:
    """A GradScaler-like holder: its scale is made on first use."""

    def __init__(self) -> None:
        self._scale: Any = None


def test_an_eager_run_starts_from_the_bindings_its_capture_began_with() -> None:
    """A capture binds tensors whose values it never computed (a gradient set to
    None before it, a scale made on first use): the eager run compared with the
    first replay starts from the bindings the capture began with, and the
    program's bindings (the graph's tensors) are put back after it."""
    torch = pytest.importorskip("torch")
    from graphlint.runtime.tensors import Bindings, reachable  # noqa: PLC0415

    weight = torch.nn.Parameter(torch.ones(2))
    scaler = _Scaler()
    began = Bindings(reachable({"weight": weight, "scaler": scaler}))
    static_grad, static_scale = torch.full((2,), 7.0), torch.tensor(0.0)
    weight.grad, scaler._scale = static_grad, static_scale  # what the capture bound
    program = began.now()
    began.apply()
    assert weight.grad is None and scaler._scale is None
    (weight * 3).sum().backward()  # the eager run: a fresh gradient, not 7 + 3
    assert cast(Any, weight.grad).tolist() == [3.0, 3.0]
    program.apply()
    assert weight.grad is static_grad and scaler._scale is static_scale


def test_a_compiled_function_is_driven_only_when_its_parameters_are_tensors() -> None:
    """``compiled.drive`` calls what the program never called only where it knows
    what to give: every parameter without a default annotated as a tensor."""
    torch = pytest.importorskip("torch")
    from graphlint.runtime.compiled import _tensor_parameters  # noqa: PLC0415

    scope: dict[str, Any] = {}
    source = (  # annotations as objects and as words
        "import torch\n"
        "def kernels(x: torch.Tensor, w: 'torch.Tensor', scale: float = 2.0): ...\n"
        "def step(model, batch: torch.Tensor): ...\n"
        "def count(n: int): ...\n"
    )
    exec(compile(source, "kernels.py", "exec", dont_inherit=True), scope)
    kernels, step, count = scope["kernels"], scope["step"], scope["count"]
    assert _tensor_parameters(kernels, torch) == ("x", "w")
    assert _tensor_parameters(step, torch) is None
    assert _tensor_parameters(count, torch) is None
    postponed: dict[str, Any] = {}  # from __future__ import annotations: all words
    exec(
        compile(f"from __future__ import annotations\n{source}", "k.py", "exec"),
        postponed,
    )
    assert _tensor_parameters(postponed["kernels"], torch) == ("x", "w")


def _spans_in(tmp_path: Path, source: str, spans: neutral.Spans) -> str:
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    real = str(path.resolve())
    neutral._text.cache_clear()
    taken = dict.fromkeys(spans, neutral.HOISTED)
    return ast.unparse(neutral.rewrite(ast.parse(source), taken, real, spans))


class _DeviceFlag:
    """A tensor-like value whose truth is a read of the device."""

    numel = device = None

    def __bool__(self) -> bool:
        _no_sync()
        return True


def test_an_operand_of_or_keeps_its_value_unless_only_the_truth_is_read(
    tmp_path: Path,
) -> None:
    """``z = a.item() or 1.0`` may give the operand's value: a host value is kept
    as computed, a tensor (whose truth Python reads there) as a bool; the last
    operand keeps its value; in ``if a.item() or b:`` only the truth is read."""
    value = _spans_in(tmp_path, "z = a.item() or b.item()\n", {1: ((1, 4, 1, 12),)})
    assert "lambda: a.item(), 'operand')" in value
    last = _spans_in(tmp_path, "z = a or b.item()\n", {1: ((1, 9, 1, 17),)})
    assert "lambda: b.item(), 'value')" in last
    test = _spans_in(tmp_path, "if a.item() or b:\n    pass\n", {1: ((1, 3, 1, 11),)})
    assert "lambda: a.item(), 'test')" in test
    assert neutral.hoist("operand-test:1", lambda: 3.5, neutral.OPERAND) == 3.5
    assert neutral.hoist("operand-test:2", _DeviceFlag, neutral.OPERAND) is True
    lines.begin_capture()
    try:  # the capture reads neither value's truth from the device
        assert neutral.hoist("operand-test:2", _DeviceFlag, neutral.OPERAND) is True
    finally:
        lines.end_capture()


def test_expressions_of_one_statement_have_keys_of_their_own(tmp_path: Path) -> None:
    """Two host reads of a statement written over several lines, moved by two
    trials (one line each), move together, each under its own key; a line of it
    named without spans moves the whole statement."""
    source = "y = (\n    a.item(),\n    b.item(),\n)\n"
    spans: neutral.Spans = {2: ((2, 4, 2, 12),), 3: ((3, 4, 3, 12),)}
    out = _spans_in(tmp_path, source, spans)
    assert out.count("__graphlint_hoist__") == 2
    assert ":2:4:2:12'" in out and ":3:4:3:12'" in out
    path = tmp_path / "m.py"
    real = str(path.resolve())
    whole = neutral.rewrite(
        ast.parse(source), {2: neutral.HOISTED, 3: neutral.HOISTED}, real, {2: spans[2]}
    )
    assert f"'{real}:1', lambda: (a.item(), b.item())" in ast.unparse(whole)


def test_a_span_inside_a_moved_expression_moves_with_it(tmp_path: Path) -> None:
    """Nested spans (``float(a.item())`` and its ``a.item()``): the outer one
    moves, and the keys the run waits for are the ones it fills."""
    out = _spans_in(
        tmp_path, "z = float(a.item()) + 1\n", {1: ((1, 4, 1, 19), (1, 10, 1, 18))}
    )
    assert out.count("__graphlint_hoist__") == 1
    assert "lambda: float(a.item()), 'value')" in out


def test_the_values_a_run_waits_for_are_the_ones_its_rewrite_fills(
    tmp_path: Path, settings: Any
) -> None:
    """``missing`` (what an eager run of the region must give before the capture)
    names the keys the rewritten statements compute, no other."""
    path = tmp_path / "m.py"
    path.write_text("y = (\n    a.item(),\n    b.item(),\n)\nz = float(c.item()) + 1\n")
    real = str(path.resolve())
    neutral._text.cache_clear()
    settings(
        neutralised=[
            [real, 2, "hoisted", [[2, 4, 2, 12]]],
            [real, 3, "hoisted", [[3, 4, 3, 12]]],
            [real, 5, "hoisted", [[5, 4, 5, 19], [5, 10, 5, 18]]],
        ]
    )
    keys = neutral.missing(real, 1, 5)
    rewritten = ast.unparse(neutral.tree_of(real) or ast.Module([], []))
    assert keys == [f"{real}:2:4:2:12", f"{real}:3:4:3:12", f"{real}:5:4:5:19"]
    assert all(f"'{key}'" in rewritten for key in keys)


def test_a_trial_passes_over_only_the_code_it_moved(tmp_path: Path) -> None:
    """Where a re-run moved one expression of a statement, another finding on the
    rest of the statement, still captured, is judged there; where it moved the
    statement whole, neither is."""
    a = tmp_path / "a.py"
    a.write_text("with g:\n    y = a.item() + b.item()\n")
    path = str(a.resolve())
    neutral._text.cache_clear()
    first = replace(
        _finding(a, 2, "GL101", Outcome.CAPTURE_ERROR, 1), col=8, end_col=16
    )
    second = replace(first, col=19, end_col=27)
    alone = RunResult([], neutralised=[[path, 2, "hoisted", [[2, 8, 2, 16]]]])
    assert report._moved(alone, first) and not report._moved(alone, second)
    whole = RunResult([], neutralised=[[path, 2, "hoisted"]])
    assert report._moved(whole, first) and report._moved(whole, second)
