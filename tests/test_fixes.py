"""Fixes that are mechanical edits (GL107, GL701): the edit each finding carries, that
applying it removes the finding, and how the editor and SARIF get it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from graphlint.diagnostics import Diagnostic, Edit
from graphlint.engine import lint_source
from tests.lsp_client import Client
from tests.test_cli import run
from tests.test_output_formats import SCHEMA

HEAD = """\
import torch
model = torch.nn.Linear(4, 4).cuda()
{build}
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    opt.step()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    {step}
"""


def apply(source: str, edits: tuple[Edit, ...]) -> str:
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for e in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        begin = starts[e.line - 1] + e.col
        end = starts[e.end_line - 1] + e.end_col
        source = source[:begin] + e.text + source[end:]
    return source


def only(source: str, code: str) -> Diagnostic:
    (found,) = [d for d in lint_source(source) if d.code == code]
    return found


@pytest.mark.parametrize(
    ("build", "fixed"),
    [
        (
            "opt = torch.optim.Adam(model.parameters(), lr=0.1)",
            "opt = torch.optim.Adam(model.parameters(), lr=0.1, capturable=True)",
        ),
        (
            "opt = torch.optim.Adam(model.parameters(), capturable=False)",
            "opt = torch.optim.Adam(model.parameters(), capturable=True)",
        ),
        (
            "opt = torch.optim.AdamW(\n    model.parameters(),\n    lr=0.1,\n)",
            "opt = torch.optim.AdamW(\n    model.parameters(),\n    lr=0.1,\n"
            "    capturable=True,\n)",
        ),
    ],
)
def test_gl701_builds_the_optimizer_capturable(build: str, fixed: str) -> None:
    source = HEAD.format(build=build, step="opt.step()")
    found = only(source, "GL701")
    after = apply(source, found.edits)
    assert after == source.replace(build, fixed)
    assert "GL701" not in {d.code for d in lint_source(after)}


@pytest.mark.parametrize(
    "build",
    [
        "opt = torch.optim.Adam(**options)",
        "opt = torch.optim.Adam(\n    model.parameters(),\n    lr=0.1\n)",
    ],
)
def test_gl701_offers_no_edit_it_cannot_be_sure_of(build: str) -> None:
    source = "options = {'params': []}\n" + HEAD.format(build=build, step="opt.step()")
    assert only(source, "GL701").edits == ()


def test_gl107_drops_error_if_nonfinite() -> None:
    source = HEAD.format(
        build="opt = torch.optim.Adam(model.parameters(), capturable=True)",
        step="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, "
        "error_if_nonfinite=True)",
    )
    found = only(source, "GL107")
    after = apply(source, found.edits)
    assert "clip_grad_norm_(model.parameters(), 1.0)\n" in after
    assert "GL107" not in {d.code for d in lint_source(after)}


GL107_FILE = HEAD.format(
    build="opt = torch.optim.Adam(model.parameters(), capturable=True)",
    step="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, "
    "error_if_nonfinite=True)",
)


def test_sarif_carries_the_fix(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(GL107_FILE)
    out = run("check", "--no-cache", "--format", "sarif", "train.py", cwd=tmp_path)[1]
    document = json.loads(out)
    import jsonschema  # noqa: PLC0415

    jsonschema.Draft4Validator(SCHEMA).validate(document)
    (result,) = document["runs"][0]["results"]
    (fix,) = result["fixes"]
    (change,) = fix["artifactChanges"]
    (replacement,) = change["replacements"]
    assert replacement["insertedContent"]["text"] == (
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
    )
    assert replacement["deletedRegion"]["startLine"] == 9
    assert fix["properties"]["applicability"] == "safe"


def test_json_says_whether_the_fix_is_safe(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(GL107_FILE)
    out = run("check", "--no-cache", "--format", "json", "train.py", cwd=tmp_path)[1]
    (found,) = json.loads(out)
    assert found["applicability"] == "safe" and found["edits"]


def test_the_editor_offers_the_fix_first(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    client = Client(tmp_path)
    try:
        client.initialize(tmp_path)
        uri = client.open(tmp_path / "train.py", GL107_FILE)
        (found,) = client.diagnostics(uri, version=1)
        fix, ignore, fix_all = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": found["range"],
                "context": {"diagnostics": [found]},
            },
        )
        assert fix["title"].startswith("Fix GL107: Drop `error_if_nonfinite=True`")
        assert fix["isPreferred"] is True
        assert ignore["title"] == "Ignore GL107 on this line"
        assert fix_all["kind"] == "source.fixAll.graphlint"
        (edit,) = fix["edit"]["changes"][uri]
        assert fix_all["edit"]["changes"][uri] == [edit]
        # what an editor asks on save: only the fix-all action
        (on_save,) = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {
                    "start": {"line": 0, "character": 0},
                    "end": {"line": 0, "character": 0},
                },
                "context": {"diagnostics": [], "only": ["source.fixAll"]},
            },
        )
        assert on_save == fix_all
    finally:
        client.dispose()


def test_fix_all_puts_its_edits_where_python_counts_lines(tmp_path: Path) -> None:
    """A form feed in a comment is no line break (pygls's own line list would
    shift the edit a line)."""
    (tmp_path / "pyproject.toml").write_text("")
    source = textwrap.dedent(GL107_FILE).replace(
        "import torch\n", "import torch  # page\x0cbreak\n", 1
    )
    client = Client(tmp_path)
    try:
        client.initialize(tmp_path)
        uri = client.open(tmp_path / "train.py", source)
        (found,) = client.diagnostics(uri, version=1)
        assert found["range"]["start"]["line"] == 8
        (fix_all,) = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": found["range"],
                "context": {"diagnostics": [], "only": ["source.fixAll"]},
            },
        )
        (edit,) = fix_all["edit"]["changes"][uri]
        assert edit["range"] == found["range"]
        client.change(
            uri,
            textwrap.dedent(GL107_FILE).replace(", error_if_nonfinite=True", ""),
            version=2,
        )
        assert edit["newText"].endswith("1.0)")
        assert client.diagnostics(uri, version=2) == []
    finally:
        client.dispose()


def test_a_rebuilt_call_over_lines_keeps_its_block_indentation() -> None:
    """The arguments of a call laid out one a line, inside a function, stay
    indented with their block once the fix adds one."""
    source = textwrap.dedent(
        """\
        import torch


        def main():
            model = torch.nn.Linear(4, 4).cuda()
            opt = torch.optim.Adam(
                model.parameters(),
                lr=1e-3,
            )
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                opt.step()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                opt.step()
        """
    )
    after = apply(source, only(source, "GL701").edits)
    assert after == source.replace("lr=1e-3,\n", "lr=1e-3,\n        capturable=True,\n")


def test_gl107_keeps_the_comments_among_the_arguments() -> None:
    source = HEAD.format(
        build="opt = torch.optim.Adam(model.parameters(), capturable=True)",
        step="torch.nn.utils.clip_grad_norm_(\n"
        "        model.parameters(),\n"
        "        1.0,  # the max norm\n"
        "        error_if_nonfinite=True,  # raise on inf\n"
        "    )",
    )
    assert only(source, "GL107").edits == ()
