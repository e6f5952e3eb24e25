"""One position model: diagnostics count columns in code points, and each output
converts to what its consumer counts. A character outside the Basic Multilingual
Plane is one code point and two UTF-16 code units (LSP's default, SARIF's
``utf16CodeUnits``); the text, json and github outputs keep 1-based code points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphlint.columns import ByteColumns, anchor, astral_lines, lines_of, utf16
from tests.test_cli import run

U = "\U0001d518"  # MATHEMATICAL FRAKTUR CAPITAL U: one code point, two UTF-16 units

# the finding, and each call on the way from the region to it, comes after
# characters outside the BMP (U) and within it ("é") on its line
TRAIN = f"""\
import torch
from pkg.model import step

x = torch.zeros(4, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    tag = "{U}é"; y = step(x)
"""
MODEL = f"""\
from pkg.inner import inner


def step(x):
    label = "{U}"; return inner(x)
"""
INNER = f"""\
def inner(x):
    s = "é{U}"; return x.sum().item()
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for name, text in (("train", TRAIN), ("model", MODEL), ("inner", INNER)):
        (tmp_path / "pkg" / f"{name}.py").write_text(text, encoding="utf-8")
    return tmp_path


def _where(text: str, line: int, what: str) -> tuple[int, int]:
    """The 0-based column of ``what`` on ``line``: in code points, in UTF-16 units."""
    found = text.splitlines()[line - 1]
    points = found.index(what)
    return points, len(found[:points].encode("utf-16-le")) // 2


FINDING = _where(INNER, 2, "x.sum().item()")
CALLS = [
    ("pkg/train.py", 7, _where(TRAIN, 7, "step(x)")),
    ("pkg/model.py", 5, _where(MODEL, 5, "inner(x)")),
]


def test_the_lines_hold_what_the_test_is_about() -> None:
    points, units = FINDING
    assert units == points + 1  # one character outside the BMP before it
    assert all(units == points + 1 for _, _, (points, units) in CALLS)


def test_text_json_and_github_count_code_points(project: Path) -> None:
    points = FINDING[0]
    out = run("check", "--no-cache", ".", cwd=project)[1]
    assert f"pkg/inner.py:2:{points + 1}: GL101" in out
    (found,) = json.loads(
        run("check", "--no-cache", "--format", "json", ".", cwd=project)[1]
    )
    assert (found["line"], found["column"]) == (2, points + 1)
    assert found["end_column"] == points + 1 + len("x.sum().item()")
    via = [(hop["path"], hop["line"], hop["column"]) for hop in found["region"]["via"]]
    # a call's column is counted in code points too, not in CPython's UTF-8 bytes
    assert via == [(path, line, p + 1) for path, line, (p, _) in CALLS]
    out = run("check", "--no-cache", "--format", "github", ".", cwd=project)[1]
    assert f"line=2,col={points + 1},endLine=2," in out


def test_lsp_counts_utf16_code_units(project: Path) -> None:
    units = FINDING[1]
    documents = json.loads(
        run("check", "--no-cache", "--format", "lsp", ".", cwd=project)[1]
    )
    (d,) = [d for doc in documents for d in doc["diagnostics"]]
    assert d["range"]["start"] == {"line": 1, "character": units}
    assert d["range"]["end"] == {"line": 1, "character": units + len("x.sum().item()")}
    calls = [
        (Path(r["location"]["uri"]).name, r["location"]["range"]["start"])
        for r in d["relatedInformation"]
    ]
    assert calls == [
        (Path(path).name, {"line": line - 1, "character": u})
        for path, line, (_, u) in CALLS
    ]


def test_sarif_counts_what_its_column_kind_says(project: Path) -> None:
    units = FINDING[1]
    document = json.loads(
        run("check", "--no-cache", "--format", "sarif", ".", cwd=project)[1]
    )
    (sarif_run,) = document["runs"]
    assert sarif_run["columnKind"] == "utf16CodeUnits"
    (result,) = sarif_run["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startColumn"], region["endColumn"]) == (
        units + 1,
        units + 1 + len("x.sum().item()"),
    )
    calls = [
        (
            r["physicalLocation"]["artifactLocation"]["uri"],
            r["physicalLocation"]["region"]["startLine"],
            r["physicalLocation"]["region"]["startColumn"],
        )
        for r in result["relatedLocations"]
        if "startColumn" in r["physicalLocation"]["region"]
    ]
    assert calls == [(path, line, u + 1) for path, line, (_, u) in CALLS]


def test_cached_results_keep_the_columns(project: Path) -> None:
    first = run("check", "--format", "lsp", ".", cwd=project)[1]
    assert run("check", "--format", "lsp", ".", cwd=project)[1] == first
    # pass one again for one file; the others' results come from the cache
    (project / "pkg" / "train.py").write_text(TRAIN + "\n", encoding="utf-8")
    assert run("check", "--format", "lsp", ".", cwd=project)[1] == first


def test_astral_lines_and_utf16() -> None:
    text = f"a = 1\r\nb = '{U}x{U}'\rc = 'é'\n{U}\x0c{U}\n"
    assert lines_of(text) == ["a = 1", f"b = '{U}x{U}'", "c = 'é'", f"{U}\x0c{U}"]
    assert astral_lines(text) == ((2, (5, 7)), (4, (0, 2)))
    assert astral_lines("é = 'ascii and BMP only'") == ()
    assert [utf16(col, (5, 7)) for col in (0, 5, 6, 7, 8, 9)] == [0, 5, 7, 8, 10, 11]


def test_byte_offsets_become_code_points() -> None:
    columns = ByteColumns(f"x = 1\ns = 'é{U}'; f(x)\n")
    assert columns(1, 4) == 4
    assert columns(2, len(f"s = 'é{U}'; ".encode())) == len(f"s = 'é{U}'; ")
    assert columns(9, 3) == 3  # a line the text does not have: as given


def test_anchor_is_the_flagged_code_not_its_place() -> None:
    lines = ["    y = x.item()  # note", "", "y  =  x.item()"]
    here = anchor(lines, 1, 8, 1, 16)
    assert here == anchor(lines, 3, 6, 3, 14)  # the same code, elsewhere
    assert here != anchor(["    y = x.cpu()"], 1, 8, 1, 15)
    # a span over several lines: its first line, from its start
    assert anchor(lines, 1, 4, 2, 0) == anchor(["y = x.item() # note"], 1, 0, 2, 0)
    assert anchor(lines, 9, 0, 9, 1) == ""
