"""Every file gets a defined outcome, and one file never takes the run down."""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time
from pathlib import Path

import pytest

from graphlint import runner
from graphlint.diagnostics import FileResult
from graphlint.engine import check_file
from graphlint.settings import Job, Settings
from tests.test_cli import run

ALL = Settings(enabled=frozenset(Settings().enabled | {"GL006"}))


def codes(path: Path, settings: Settings = ALL) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in check_file(path, settings).diagnostics]


def test_syntax_error_position_comes_from_cpython(tmp_path: Path) -> None:
    path = tmp_path / "s.py"
    path.write_text("import torch\n\n\ndef f(:\n    pass\n")
    (diag,) = check_file(path, ALL).diagnostics
    assert (diag.code, diag.line, diag.col) == ("GL001", 4, 6)
    assert "invalid syntax" in diag.message


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "b.py"
    path.write_bytes(b"x = 1\ny = 2\nz = '\xff'\n")
    (diag,) = check_file(path, ALL).diagnostics
    assert diag.code == "GL002" and diag.line == 3 and "0xff" in diag.message


def test_coding_cookie_is_honoured_and_bad_cookie_reported(tmp_path: Path) -> None:
    good = tmp_path / "latin.py"
    good.write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xe9'\n")
    assert codes(good) == []
    bad = tmp_path / "cookie.py"
    bad.write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    assert [c for c, _ in codes(bad)] == ["GL002"]


def test_empty_files(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "blank.py").write_text("\n\n")
    assert codes(tmp_path / "__init__.py") == []
    assert codes(tmp_path / "blank.py") == [("GL006", 1)]
    assert codes(tmp_path / "blank.py", Settings()) == []  # GL006 is opt-in


def test_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_text("x = 1\n" * 1000)
    assert codes(path, Settings(enabled=ALL.enabled, max_file_size=100)) == [
        ("GL003", 1)
    ]
    assert codes(path) == []


def test_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    (diag,) = check_file(fifo, ALL).diagnostics
    assert diag.code == "GL004" and "FIFO" in diag.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads anything")
def test_unreadable(tmp_path: Path) -> None:  # pragma: no cover - CI runs as root
    path = tmp_path / "secret.py"
    path.write_text("x = 1\n")
    path.chmod(0)
    assert [c for c, _ in codes(path)] == ["GL004"]


def test_nesting_beyond_cpython(tmp_path: Path) -> None:
    path = tmp_path / "deep.py"
    path.write_text("x = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    assert [c for c, _ in codes(path)] == ["GL001"]  # "too many nested parentheses"


def test_long_chain_in_a_region_is_analysed(tmp_path: Path) -> None:
    """CPython compiles a 900-term chain; LibCST's default recursion limit does not
    survive it, the worker's large stack does."""
    path = tmp_path / "chain.py"
    chain = " + ".join(["x"] * 900)
    path.write_text(
        "import torch\nx = torch.ones(3, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
        f"with torch.cuda.graph(g):\n    y = {chain}\n    z = y.item()\n"
    )
    code, out, _ = run("check", "--format", "lsp", "--select", "GL1", str(path))
    assert code == 1
    assert [d["code"] for d in json.loads(out)[0]["diagnostics"]] == ["GL101"]


def _crash_on_boom(job: Job, settings: Settings) -> FileResult:
    path = job.path
    if path.name == "boom.py":
        ctypes.string_at(0)  # a real, synchronous segfault, as LibCST's at depth
    if path.name == "slow.py":
        time.sleep(30)
    if path.name == "bug.py":
        raise ValueError("simulated bug")
    return FileResult(str(path), ())


@pytest.mark.skipif(sys.platform == "win32", reason="fork-based monkeypatching")
def test_crash_timeout_and_bug_are_contained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.py", "boom.py", "slow.py", "bug.py", "z.py"):
        (tmp_path / name).write_text("x = 1\n")
    monkeypatch.setattr(runner, "check_file", _crash_on_boom)
    files = sorted(tmp_path.glob("*.py"))
    settings = Settings(timeout=2.0)
    results = {
        Path(r.path).name: r for r in runner.check_files(files, settings, jobs=2)
    }
    assert set(results) == {"a.py", "boom.py", "slow.py", "bug.py", "z.py"}
    assert results["a.py"].diagnostics == () and results["z.py"].diagnostics == ()
    (crash,) = results["boom.py"].diagnostics
    assert crash.code == "GL005" and "crashed" in crash.message
    (late,) = results["slow.py"].diagnostics
    assert late.code == "GL005" and "2 s" in late.message
    (bug,) = results["bug.py"].diagnostics
    assert bug.code == "GL009" and "simulated bug" in bug.message
    assert results["bug.py"].internal_error


def test_internal_error_exits_2_without_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    region = "import graphlint\nwith graphlint.capture_region():\n    x = 1\n"
    (tmp_path / "bug.py").write_text(region)  # a file the workers analyse
    (tmp_path / "ok.py").write_text(region)
    monkeypatch.setattr(runner, "check_file", _crash_on_boom)
    code, out, err = run("check", ".", cwd=tmp_path)
    assert code == 2
    assert "GL009" in out and "Traceback" not in out + err
