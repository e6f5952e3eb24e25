"""``graphlint confirm`` on capture_begin/capture_end pairs and torch.compile's CUDA
graphs, without a GPU: attribution of compiler messages, graph breaks and errors to
the user's lines, and how they confirm findings. The real runs are the ``gpu``
scenarios of fixtures/runtime (tests/test_confirm.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from graphlint.diagnostics import Outcome, Related
from graphlint.project.check import check_project
from graphlint.runtime import capture, compiled, session
from graphlint.runtime.sites import Capture, Site, Status
from graphlint.settings import Settings
from tests.conftest import FIXTURES, expectations
from tests.test_confirm import _finding, _merge


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    yield
    compiled.SITES.clear()
    compiled._CALLING.clear()
    compiled._LAST.clear()
    capture.OPEN.clear()
    session.SITES.clear()


def _compiled_site(path: Path, line: int) -> Site:
    site = Site(Capture.COMPILED, "step()", str(path.resolve()), line, line, calls=2)
    compiled.SITES.append(site)
    return site


def test_graph_break_logs_are_attributed_to_the_user_line(tmp_path: Path) -> None:
    user = tmp_path / "train.py"
    site = _compiled_site(user, 5)
    message = (
        f"Graph break in user code at {user}:8\n"
        "Graph Break Reason: Tensor.item\n"
        "User code traceback:\n"
        f'  File "{user}", line 8, in step\n'
    )
    compiled.record_break(message)  # nothing is being called: ignored
    assert site.breaks == []
    compiled._CALLING.append(site)
    compiled.record_break(message)
    compiled.record_break(message)  # once per line
    assert site.breaks == [[str(user.resolve()), 8, "Tensor.item"]]


def test_a_break_at_the_finding_line_confirms_it(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    site = _compiled_site(a, 3)
    site.breaks = [[str(a.resolve()), 6, "Tensor.item"]]
    merged = _merge(
        tmp_path,
        [site],
        [
            _finding(a, 6, "GL101", Outcome.CAPTURE_ERROR, 3),
            _finding(a, 7, "GL105", Outcome.CAPTURE_ERROR, 3),
        ],
    )
    first, second = merged.findings
    assert first.status == "confirmed"
    assert "breaks its CUDA graph here: Tensor.item" in first.note
    assert second.status == "not reproduced"
    assert merged.missed == () and merged.failed  # a split graph fails the run


class Unsupported(Exception):
    """Stands for Dynamo's error class (only its module matters)."""


Unsupported.__module__ = "torch._dynamo.exc"


def test_a_fullgraph_compile_error_fails_its_site_at_the_named_line(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    site = _compiled_site(a, 3)
    compiled._LAST.append(site)
    error = Unsupported(
        "Data-dependent branching\n\nfrom user code:\n"
        f'   File "{a}", line 7, in step\n    if x.sum() > 0:'
    )
    assert compiled.escaped(error)
    assert (site.status, site.error_path, site.error_line) == (
        "capture-error",
        str(a.resolve()),
        7,
    )
    merged = _merge(
        tmp_path, [site], [_finding(a, 7, "GL201", Outcome.CAPTURE_ERROR, 3)]
    )
    assert merged.findings[0].status == "confirmed"


def test_the_programs_own_errors_are_not_compile_errors(tmp_path: Path) -> None:
    site = _compiled_site(tmp_path / "a.py", 3)
    compiled._LAST.append(site)
    assert not compiled.escaped(ValueError("bad input"))
    assert site.status == "captured"


def test_reading_an_overwritten_output_makes_the_sites_silently_wrong(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    ran, idle = _compiled_site(a, 3), _compiled_site(a, 20)
    idle.calls = 0
    error = RuntimeError(
        "Error: accessing tensor output of CUDAGraphs that has been overwritten by a "
        "subsequent run. Stack trace: ..."
    )
    assert compiled.escaped(error)
    assert (ran.status, idle.status) == ("silent-wrong", "captured")
    merged = _merge(tmp_path, [ran], [_finding(a, 9, "GL303", Outcome.SILENT_WRONG, 3)])
    assert merged.findings[0].status == "confirmed"


def test_an_error_between_capture_begin_and_end_fails_that_capture(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    assert not capture.fail_open(RuntimeError("no capture open"))
    site = Site(Capture.CAPTURE_PAIR, "run()", str(a.resolve()), 4, 4)
    capture.OPEN[1] = site
    with pytest.raises(RuntimeError) as raised:
        exec(compile("\n\n\n\n\nraise RuntimeError('sync')", str(a), "exec"))
    assert capture.fail_open(raised.value)
    assert (site.status, site.error_line) == (Status.CAPTURE_ERROR, 6)
    assert capture.OPEN == {}


def test_a_failure_at_a_related_location_confirms_the_finding(tmp_path: Path) -> None:
    """GL706 sits on the autocast; make_graphed_callables fails at its call."""
    a = tmp_path / "a.py"
    site = Site(
        Capture.GRAPHED_CALLABLES,
        "module level",
        str(a.resolve()),
        7,
        7,
        calls=1,
        status=Status.CAPTURE_ERROR,
        detail=(
            "RuntimeError: make_graphed_callables does not support the autocast "
            "caching. Please set `cache_enabled=False`."
        ),
        error_path=str(a.resolve()),
        error_line=7,
    )
    finding = replace(
        _finding(a, 6, "GL706", Outcome.CAPTURE_ERROR, 7),
        related=(Related(7, 14, "graphs callables here"),),
    )
    merged = _merge(tmp_path, [site], [finding])
    assert merged.findings[0].status == "confirmed"
    assert "fails at 7" in merged.findings[0].note
    assert merged.missed == ()


@pytest.mark.parametrize(
    "scenario",
    sorted((FIXTURES / "runtime").glob("gl*_*.py")),
    ids=lambda p: p.stem,
)
def test_runtime_scenarios_have_exactly_their_static_findings(scenario: Path) -> None:
    """What the GPU scenarios assume of ``graphlint check``, checked without a GPU
    (a lost finding would otherwise show only on the device)."""
    results = check_project([scenario], Settings(), 1)
    got = {(d.line, d.code) for r in results for d in r.diagnostics}
    assert got == expectations(scenario.read_text(encoding="utf-8"))
