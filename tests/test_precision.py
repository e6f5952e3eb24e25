"""One fixture per false-positive class seen on real code (fixtures/_precision), each
next to a true hazard of the same shape: checked as a project, every finding must be
marked and every mark found."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.project.check import check_project
from graphlint.settings import Settings
from tests.conftest import FIXTURES, expectations

PRECISION = FIXTURES / "_precision"
CASES = sorted(p for p in PRECISION.iterdir() if p.suffix == ".py" or p.is_dir())


def _files(case: Path) -> list[Path]:
    return sorted(case.rglob("*.py")) if case.is_dir() else [case]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_precision_fixture(case: Path) -> None:
    files = _files(case)
    want = {
        (path.relative_to(PRECISION).as_posix(), line, code)
        for path in files
        for line, code in expectations(path.read_text(encoding="utf-8"))
    }
    assert want, "each class sits next to a true hazard"
    # with hand-offs followed (preview): each class must hold on the widest reach
    results = check_project(files, Settings(preview=True), 1)
    got = {
        (Path(r.path).resolve().relative_to(PRECISION).as_posix(), d.line, d.code)
        for r in results
        for d in r.diagnostics
    }
    assert got == want
