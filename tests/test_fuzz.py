"""The fuzzing harness (bench/fuzz.py): a bounded, seeded run finds no failure, and
its checks do catch what they look for."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import fuzz
from graphlint.diagnostics import Confidence, Diagnostic, FileResult, Outcome, Severity

VALID = fuzz.Program("ok.py", "mutant", "planted", b"x = 1\n", True)
INVALID = fuzz.Program("bad.py", "mutant", "planted", b"x = (\n", False)


def kinds(
    program: fuzz.Program, batch: list[FileResult], alone: list[FileResult]
) -> list[str]:
    folder = Path("/fuzz")
    singles = {program.name: alone}
    return [f.kind for f in fuzz.judge([program], folder, batch, singles)]


def result(name: str, *codes: str, message: str = "planted") -> FileResult:
    """What graphlint would say about ``/fuzz/name``: a planted finding per code."""
    path = f"/fuzz/{name}"
    planted = (
        Diagnostic(
            path=path,
            code=code,
            name="planted",
            message=message,
            line=1,
            col=0,
            end_line=1,
            end_col=0,
            severity=Severity.ERROR,
            confidence=Confidence.HIGH,
            outcome=Outcome.TOOL,
        )
        for code in codes
    )
    return FileResult(path, tuple(planted))


def test_judge_accepts_agreeing_outcomes() -> None:
    assert kinds(VALID, [result("ok.py")], [result("ok.py")]) == []
    both = [result("bad.py", "GL001")]
    assert kinds(INVALID, both, both) == []


def test_judge_catches_an_internal_error() -> None:
    both = [result("ok.py", "GL009")]
    assert kinds(VALID, both, both) == ["internal-error"]


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("file could not be analysed: took longer than the 60 s limit", "timeout"),
        ("file could not be analysed: the parser crashed (SIGSEGV)", "crash"),
    ],
)
def test_judge_catches_time_outs_and_crashes(message: str, kind: str) -> None:
    both = [result("ok.py", "GL005", message=message)]
    assert kinds(VALID, both, both) == [kind]


def test_judge_catches_batch_and_single_disagreeing() -> None:
    found = kinds(INVALID, [result("bad.py", "GL001")], [result("bad.py")])
    assert found == ["batch-vs-single"]


def test_judge_catches_wrong_syntax_verdicts() -> None:
    assert kinds(INVALID, [result("bad.py")], [result("bad.py")]) == [
        "no-syntax-error-on-invalid"
    ]
    both = [result("ok.py", "GL001")]
    assert kinds(VALID, both, both) == ["syntax-error-on-valid"]


def test_judge_catches_a_missing_file() -> None:
    assert kinds(VALID, [], []) == ["missing"]


def test_generation_is_deterministic() -> None:
    first = fuzz.generated(5, seed_value=3)
    assert first == fuzz.generated(5, seed_value=3)
    assert fuzz.mutants(20, seed_value=3) == fuzz.mutants(20, seed_value=3)
    assert fuzz.mutants(20, seed_value=3) != fuzz.mutants(20, seed_value=4)


def test_seeded_fuzz_run_finds_no_failure(tmp_path: Path) -> None:
    report = fuzz.fuzz(300, 11, tmp_path / "programs", share=1 / 3, cli_every=100)
    assert len(report.programs) > 250
    if report.failures:
        fuzz.save_failures(report, tmp_path / "failures", 11)
    assert report.failures == [], fuzz.summary(report)
