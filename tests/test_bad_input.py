"""Every file gets a defined outcome, and one file never takes the run down."""

from __future__ import annotations

import ast
import ctypes
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from graphlint import runner
from graphlint.diagnostics import FileResult
from graphlint.engine import check_file
from graphlint.read import skip_statements, too_deep
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


# -- a statement nested too deeply for the analysis costs that statement only ---------
def _region_after(statement: str) -> str:
    return (
        "import torch\na = torch.ones(3, device='cuda')\n"
        f"{statement}\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    y = a.sum().item()\n"
    )


def _lsp(*args: str, cwd: Path) -> dict[str, list[dict[str, Any]]]:
    code, out, _ = run(
        "check", "--format", "lsp", "--select", "GL0,GL1", *args, cwd=cwd
    )
    assert code == 1
    return {str(e["uri"]).rsplit("/", 1)[1]: e["diagnostics"] for e in json.loads(out)}


def test_a_sum_too_deep_for_the_analysis_costs_only_its_statement(
    tmp_path: Path,
) -> None:
    """CPython parses a 3,000-term sum; LibCST cannot be asked to. The statement is
    skipped, with a note, and the hazard on the next lines is found."""
    sum_ = "x = " + " + ".join(["a"] * 3000)
    (tmp_path / "deep.py").write_text(_region_after(sum_))
    found = _lsp("deep.py", cwd=tmp_path)["deep.py"]
    assert [(d["code"], d["range"]["start"]["line"]) for d in found] == [
        ("GL005", 2),
        ("GL101", 5),
    ]
    note = found[0]
    assert note["severity"] == 3  # information: the rest of the file was analysed
    assert note["message"].startswith("statement skipped: an expression nested")


def test_deep_nesting_has_a_defined_outcome(tmp_path: Path) -> None:
    """50,000 terms: CPython (on the workers' stack) parses them, the statement is
    skipped; 100,000: beyond CPython's parser, GL005 for the file; the run goes on."""
    for terms in (50_000, 100_000):
        sum_ = "x = " + " + ".join(["a"] * terms)
        (tmp_path / f"deep{terms}.py").write_text(_region_after(sum_))
    found = _lsp("deep50000.py", "deep100000.py", cwd=tmp_path)
    assert [d["code"] for d in found["deep50000.py"]] == ["GL005", "GL101"]
    (whole,) = found["deep100000.py"]
    assert whole["code"] == "GL005" and whole["severity"] == 1


def test_a_skipped_statement_in_a_reached_function_is_shown_with_its_caller(
    tmp_path: Path,
) -> None:
    """helpers.py is only reached: its hazard and the note on the statement skipped
    in the reached function both say which region reaches them."""
    (tmp_path / ".git").mkdir()
    sum_ = " + ".join(["x"] * 3000)
    (tmp_path / "helpers.py").write_text(
        f"def step(x):\n    y = {sum_}\n    return x.sum().item()\n\n"
        f"def unused(x):\n    return {sum_}\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nimport helpers\n\nx = torch.ones(3, device='cuda')\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    helpers.step(x)\n"
    )
    code, out, _ = run("check", "--select", "GL0,GL1", "train.py", cwd=tmp_path)
    assert code == 1
    reached = (
        "[torch.cuda.graph region at train.py:6, reached from train.py:7 via step()]"
    )
    assert "helpers.py:2:1: GL005 statement skipped: an expression nested" in out
    assert out.count(reached) == 2 and "helpers.py:3:12: GL101" in out
    assert "helpers.py:6" not in out  # not reached: not analysed


@pytest.fixture
def deep_stack() -> Iterator[None]:
    """What a worker has: CPython builds trees deeper than the default limit."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


CHAIN = " + ".join(["a"] * 1200)


UNARY = "-" * 1100 + "a"  # a node for each character


@pytest.mark.usefixtures("deep_stack")
@pytest.mark.parametrize(
    "source",
    [
        f"x = {UNARY}\ny = 1\n",
        f"if c: y = {UNARY}\nz = 1\n",
        f"if c:\n    pass\nelif {UNARY}:\n    pass\n",
        f"@dec({UNARY})\ndef f():\n    pass\n",
        f"class C({UNARY}):\n    x = 1\n",
        f"for i in {UNARY}:\n    pass\n",
        f"with open({UNARY}) as f:\n    pass\n",
        f"def f(x=0,\n      y={UNARY}):\n    return x\n",
        "x = a" + ".b" * 1100 + "\n",
        "x = 1\ry = (\r" + " +\r".join(["a"] * 1100) + "\r)\rz = 2\r",
        f"try:\n    pass\nexcept {UNARY}:\n    pass\n",
        f"match x:\n    case 1 if {UNARY}:\n        pass\n",
        "x = 1\n" + "y = 2\n" * 400 + f"z = [{UNARY[-600:]}] + [{UNARY[-600:]}]\n",
    ],
)
def test_the_text_bounds_what_the_full_walk_finds(source: str) -> None:
    """Given the text, ``too_deep`` walks only the expressions of statements long
    enough to nest too deep, and finds what the full walk finds."""
    tree = ast.parse(source)
    skipped = too_deep(tree)
    assert skipped or source.endswith("]\n")  # the last: two chains of 600
    assert too_deep(tree, source) == skipped


@pytest.mark.usefixtures("deep_stack")
@pytest.mark.parametrize(
    "source",
    [
        f"import torch\nx = {CHAIN}; y = x.item()  # tail\n",
        f"s = 'é'; x = ({CHAIN}); t = 'ü'\n",
        "x = (\n" + " +\n".join(["a"] * 1200) + "\n)  # tail\nz = 2\n",
        f"@dec\n@dec2(\n    1)\ndef f(x={CHAIN}):\n    return x\nz = 3\n",
        "if a == 0:\n    pass\n"
        + "".join(f"elif a == {i}:\n    pass\n" for i in range(1, 1100))
        + "else:\n    pass\nz = 1\n",
        f"def f():\n\tif c:\n\t\tx = {CHAIN}\n\t\ty = 1\n",
        f"x = 1\r\ny = (\r\n{CHAIN}\r\n)\r\nz = 2\r\n",
        f"x = 1\ny = (\n{CHAIN}\n)",
        f"try:\n    pass\nexcept ({CHAIN}):\n    pass\nz = 1\n",
        f"import {'.'.join(['m'] * 1100)}\nz = 1\n",
    ],
    ids=[
        "semicolons",
        "non-ascii",
        "multi-line",
        "decorated",
        "elif",
        "tabs",
        "crlf",
        "no-final-newline",
        "except",
        "dotted-import",
    ],
)
def test_skipped_statements_leave_every_other_line_where_it_was(source: str) -> None:
    skipped = too_deep(ast.parse(source))
    assert skipped
    assert too_deep(ast.parse(source), source) == skipped  # the text's bound too
    kept = skip_statements(source, skipped)
    assert too_deep(ast.parse(kept)) == []
    cst.parse_module(kept)  # LibCST reads it too
    gone = {n for s in skipped for n in range(s.line, s.end_line + 1)}
    ends = {s.end_line: s.end_col for s in skipped}
    before, after = source.splitlines(), kept.splitlines()
    assert len(after) == len(before)
    for number, (old, new) in enumerate(zip(before, after, strict=True), 1):
        if number not in gone:
            assert new == old
        elif number in ends:  # what follows the statement stays in its column
            end = len(old.encode()[: ends[number]].decode())
            assert new[end:] == old[end:] and len(new) == len(old)
