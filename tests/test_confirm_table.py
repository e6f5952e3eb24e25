"""bench/confirm_table.py's counts (issue #30): the verdict share and the missed
failures per set, and the confirmations by another rule's failure, which it finds
from the failure's words and the finding's code, apart from the rules' own
signatures, so that it catches a rule claiming another's failure. No GPU needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import confirm_table
from graphlint.checks import Check
from graphlint.diagnostics import FileResult, Outcome
from graphlint.runtime import report
from graphlint.runtime.sites import RunResult
from tests.test_confirm import SYNC, _failed, _finding


def _item(code: str, line: int, status: str, note: str) -> dict[str, Any]:
    return {
        "source": "graphlint",
        "code": code,
        "range": {"start": {"line": line - 1, "character": 0}},
        "data": {"runtime": {"status": status, "note": note}},
    }


def _missed(line: int) -> dict[str, Any]:
    return {
        "source": "graphlint confirm",
        "code": "capture-error",
        "range": {"start": {"line": line - 1, "character": 0}},
        "data": {"runtime": {"status": "missed", "site": {}}},
    }


def _run(name: str, group: str, items: list[dict[str, Any]]) -> confirm_table.FileRun:
    return confirm_table.FileRun(Path(f"/sets/{name}"), 1.0, 1, items, group=group)


def test_each_set_has_its_share_missed_and_misattributed_confirmations() -> None:
    fails = f"the capture of step() fails here: {SYNC}"
    runs = [
        _run(
            "bad.py",
            "fixtures",
            [
                _item("GL101", 5, "confirmed", fails),
                _item("GL701", 5, "confirmed", fails),  # GradScaler's sync: GL702's
                _item("GL007", 5, "no verdict", "graphlint's own"),
                _item("GL406", 9, "no verdict", "its region did not run"),  # uncalled
                _item(
                    "GL203",
                    13,
                    "no verdict",
                    "its region did not run: the run was stopped at the failed "
                    "capture of step() first",
                ),
                _missed(12),
            ],
        ),
        _run(
            "p06.py",
            "../shared/corpus/cases",
            [
                _item(
                    "GL601",
                    3,
                    "confirmed",
                    "the capture of run() fails here: RuntimeError: Cannot copy "
                    "between CPU and CUDA tensors during CUDA graph capture",
                ),
                _item("GL406", 4, "not reproduced", "step() captured"),
                _item("GL201", 11, "not executed", "its line never ran in the run"),
            ],
        ),
    ]
    table = confirm_table.sets_table(runs)
    # the share of all findings, then of those in code the script runs
    assert table[2] == "| fixtures | 1 | 2/4 (50%) | 2/3 (67%) | 1 | 1 | 1 |"
    corpus = "| ../shared/corpus/cases | 1 | 2/3 (67%) | 2/2 (100%) | 0 | 0 | 0 |"
    assert table[3] == corpus
    text = confirm_table.report(runs, 1.0)
    assert "Confirmed by another rule's failure: 1.\n- bad.py:5 GL701: " in text
    assert "Confirmed by a capture failure this table cannot place: 0." in text


@pytest.mark.parametrize(
    ("code", "note", "found"),
    [
        ("GL101", f"the capture of f() fails here: {SYNC}", None),
        ("GL702", f"the capture of f() fails here: {SYNC}", None),
        ("GL701", f"the capture of f() fails here: {SYNC}", "another"),
        ("GL007", "anything at all", "another"),  # the tool's own: never confirmed
        ("GL101", "f() breaks its CUDA graph here: Tensor.item", None),
        ("GL402", "f() breaks its CUDA graph here: Tensor.item", "another"),
        ("GL301", "replay differs from eager by up to 2 in `y`", None),
        ("GL401", "it ran on the host while a CUDA graph was captured", None),
        ("GL101", "the capture of f() fails here: ValueError: odd", "unplaced"),
        (
            "GL705",
            "the capture of f() fails at a.py:6, a failure of this kind anywhere in "
            "the region: AcceleratorError: CUDA error: operation not permitted when "
            "stream is capturing (run with a.py:5 moved out of the capture)",
            None,
        ),
    ],
)
def test_a_confirmation_is_placed_by_the_failures_words(
    code: str, note: str, found: str | None
) -> None:
    assert confirm_table.misattributed(_item(code, 1, "confirmed", note)) == found
    assert confirm_table.misattributed(_item(code, 1, "no verdict", note)) is None


def _table_items(tmp_path: Path) -> list[dict[str, Any]]:
    """What ``graphlint confirm --format lsp`` says of a GradScaler step on a
    non-capturable optimizer whose sync fails the capture."""
    a = tmp_path / "a.py"
    found = (
        _finding(a, 5, "GL701", Outcome.CAPTURE_ERROR, 3),
        _finding(a, 5, "GL702", Outcome.CAPTURE_ERROR, 3),
    )
    merged = report.merge(
        [FileResult(str(a), found)],
        [RunResult([_failed(a, 3, 9, SYNC, at=5)])],
        device="GPU",
        runs=2,
    )
    return [
        d for doc in json.loads(report.format_lsp(merged)) for d in doc["diagnostics"]
    ]


def test_the_count_catches_a_rule_confirmed_by_another_rules_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run("a.py", "fixtures", _table_items(tmp_path))
    assert (
        confirm_table.sets_table([run])[2]
        == "| fixtures | 1 | 1/2 (50%) | 1/2 (50%) | 0 | 0 | 0 |"
    )
    # as before issue #30: any failure at the line confirms every finding there
    monkeypatch.setattr(Check, "explains", classmethod(lambda cls, failure: True))
    run = _run("a.py", "fixtures", _table_items(tmp_path))
    assert (
        confirm_table.sets_table([run])[2]
        == "| fixtures | 1 | 2/2 (100%) | 2/2 (100%) | 0 | 1 | 0 |"
    )


def test_sets_are_the_paths_given(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "p01.py").write_text("")
    (tmp_path / "cases" / "_helper.py").write_text("")
    files = confirm_table.files_of([str(tmp_path / "cases"), "fixtures"])
    assert files[0] == (str(tmp_path / "cases"), (tmp_path / "cases" / "p01.py"))
    assert {group for group, _ in files[1:]} == {"fixtures"}
    assert len(files) == 1 + len(confirm_table.default_files())


def test_code_the_script_never_runs_is_told_from_a_region_it_stopped_before() -> None:
    uncalled = "its region did not run (`f` is never called by the program: ...)"
    stopped = "its region did not run: the run was stopped at the failed capture"
    assert confirm_table.never_ran(_item("GL101", 3, "no verdict", uncalled))
    assert confirm_table.never_ran(
        _item("GL101", 3, "not executed", "its line never ran in the run")
    )
    assert not confirm_table.never_ran(_item("GL101", 3, "no verdict", stopped))
