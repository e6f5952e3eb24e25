"""Jupyter notebooks: checked as the script their code cells make, reported at the
cell and the line in it, in every output format; IPython's magics are no syntax
errors, markdown is not code, a broken notebook is a GL0xx, suppression comments work
in cells, ``--fix`` leaves notebooks as they are, ``extend-include`` adds files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from graphlint.cli import app
from graphlint.notebook import Cells, NotebookError, script
from tests.conftest import ROOT
from tests.lsp_client import Client
from tests.test_cli import MODEL, run
from tests.test_output_formats import SCHEMA

SETUP = [
    "import torch\n",
    "g = torch.cuda.CUDAGraph()\n",
    'x = torch.zeros(4, device="cuda")\n',
    "with torch.cuda.stream(torch.cuda.Stream()):\n",
    "    x.sum()\n",
]
CAPTURE = [
    "with torch.cuda.graph(g):\n",
    "    y = x * 2\n",
    "    v = y.item()\n",  # GL101 at line 3, column 9 of its cell
]


def code(source: list[str] | str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": "c",
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def markdown(source: list[str] | str) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": "m", "metadata": {}, "source": source}


def write(path: Path, *cells: dict[str, Any], **metadata: Any) -> Path:
    """A notebook as Jupyter saves it (nbformat 4.5, indented by one)."""
    document = {
        "cells": list(cells),
        "metadata": metadata
        or {"kernelspec": {"display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    """A markdown cell first (cell 1), the setup (cell 2), the capture (cell 3)."""
    return write(
        tmp_path / "n.ipynb",
        markdown(["# Capture\n", "with torch.cuda.graph(g): x.item()\n"]),
        code(SETUP),
        code(CAPTURE),
    )


FINDING = re.compile(r".*?: GL\d{3}\b")


def findings(out: str) -> list[str]:
    """``path:place: CODE`` of each diagnostic in the text output."""
    return [
        found.group()
        for line in out.splitlines()
        if not line.startswith(" ") and (found := FINDING.match(line))
    ]


# -- where findings are reported ---------------------------------------------------


def test_a_finding_in_a_cell_is_reported_at_the_cell_and_its_line(
    notebook: Path,
) -> None:
    code_, out, _ = run("check", "--no-cache", "n.ipynb", cwd=notebook.parent)
    assert code_ == 1
    assert findings(out) == ["n.ipynb:cell 3:3:9: GL101"]
    assert "[torch.cuda.graph region, cell 3, line 1]" in out
    assert "1 capture region" in out


def test_json_gives_the_cell_and_the_line_in_it(notebook: Path) -> None:
    out = run("check", "--no-cache", "--format", "json", ".", cwd=notebook.parent)[1]
    (found,) = json.loads(out)
    assert (found["path"], found["cell"], found["line"], found["column"]) == (
        "n.ipynb",
        3,
        3,
        9,
    )
    assert (found["end_line"], found["end_column"]) == (3, 17)
    assert (found["region"]["cell"], found["region"]["line"]) == (3, 1)
    # no fix is offered in a notebook: fixes are not applied to notebooks
    assert found["edits"] == [] and found["applicability"] is None


def test_a_script_has_a_null_cell_in_json(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("".join(SETUP + CAPTURE))
    (found,) = json.loads(
        run("check", "--no-cache", "--format", "json", "s.py", cwd=tmp_path)[1]
    )
    assert found["cell"] is None and found["line"] == 8
    assert "cell" not in found["region"]


def test_sarif_github_and_lsp_say_the_cell(notebook: Path) -> None:
    cwd = notebook.parent
    document = json.loads(
        run("check", "--no-cache", "--format", "sarif", "n.ipynb", cwd=cwd)[1]
    )
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    (result,) = document["runs"][0]["results"]
    (location,) = result["locations"]
    assert "region" not in location["physicalLocation"]  # the JSON's lines are not code
    assert location["properties"] == {"cell": 3, "line": 3, "column": 9}
    assert result["message"]["text"].startswith("cell 3, line 3, column 9: `y.item()`")

    (annotation,) = run(
        "check", "--no-cache", "--format", "github", "n.ipynb", cwd=cwd
    )[1].splitlines()
    assert annotation.startswith(
        "::error file=n.ipynb,title=GL101 device-to-host-copy::cell 3, line 3, column 9: "
    )

    (file,) = json.loads(
        run("check", "--no-cache", "--format", "lsp", "n.ipynb", cwd=cwd)[1]
    )
    (found,) = file["diagnostics"]
    assert found["range"]["start"] == {"line": 2, "character": 8}  # in the cell
    assert found["data"]["cell"] == 3
    assert found["data"]["region"]["cell"] == 3


def test_lsp_counts_utf16_in_the_cell(tmp_path: Path) -> None:
    """A character outside the BMP before a finding counts two UTF-16 units in the
    ``lsp`` range, on the cell's line (the text output counts code points)."""
    capture = ["with torch.cuda.graph(g):\n", "    s = '\U0001f600'; v = x.item()\n"]
    write(tmp_path / "n.ipynb", code(SETUP), code(capture))
    text = run("check", "--no-cache", "n.ipynb", cwd=tmp_path)[1]
    assert findings(text) == ["n.ipynb:cell 2:2:18: GL101"]
    (file,) = json.loads(
        run("check", "--no-cache", "--format", "lsp", "n.ipynb", cwd=tmp_path)[1]
    )
    (found,) = file["diagnostics"]
    assert found["range"]["start"] == {"line": 1, "character": 18}


def test_a_region_in_a_notebook_reaches_project_code_and_its_own_functions(
    tmp_path: Path,
) -> None:
    """A region in a notebook follows its calls as a script's: into the project
    (the model file shows the hazard, with the notebook's cell as the region) and
    into the functions its own cells define."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(MODEL)
    write(
        tmp_path / "train.ipynb",
        code([*SETUP, "from model import step\n"]),
        markdown("Now capture."),
        code(["def own(t):\n", "    return t.max().item()\n"]),
        code(["with torch.cuda.graph(g):\n", "    y = step(x)\n", "    z = own(x)\n"]),
    )
    out = run("check", "--no-cache", "model.py", cwd=tmp_path)[1]
    assert findings(out) == ["model.py:2:12: GL101"]
    assert (
        "region at train.ipynb:cell 4:1, reached from train.ipynb:cell 4:2 via step()"
        in out
    )
    out = run("check", "--no-cache", "train.ipynb", cwd=tmp_path)[1]
    # what its regions reach is reported with it, as for a script
    assert findings(out) == ["model.py:2:12: GL101", "train.ipynb:cell 3:2:12: GL101"]
    assert "reached from train.ipynb:cell 4:3 via own()" in out
    out = run("check", "--no-cache", "--show-reach", "train.ipynb", cwd=tmp_path)[1]
    assert "train.ipynb:cell 4:1: torch.cuda.graph region" in out
    assert "reaches train.ipynb:cell 3:1 own" in out
    sarif = json.loads(
        run("check", "--no-cache", "--format", "sarif", "model.py", cwd=tmp_path)[1]
    )
    jsonschema.Draft4Validator(SCHEMA).validate(sarif)
    (result,) = sarif["runs"][0]["results"]
    assert [r["properties"] for r in result["relatedLocations"]] == [
        {"cell": 4, "line": 1},
        {"cell": 4, "line": 2, "column": 9},
    ]


def test_the_lines_a_message_names_are_given_their_cells(tmp_path: Path) -> None:
    """GL301 names the capture's line and the replay's: in a notebook, as cells."""
    write(
        tmp_path / "n.ipynb",
        code(SETUP),
        code(["with torch.cuda.graph(g):\n", "    y = x * 2\n"]),
        markdown("Replay with new data."),
        code(
            [
                "for _ in range(3):\n",
                '    x = torch.randn(4, device="cuda")\n',
                "    g.replay()\n",
            ]
        ),
    )
    out = run("check", "--no-cache", "n.ipynb", cwd=tmp_path)[1]
    assert findings(out) == ["n.ipynb:cell 4:2:5: GL301"]
    assert (
        "rebinds a tensor that the graph captured at cell 2, line 1 reads, before the "
        "replay at cell 4, line 3"
    ) in out


# -- what is not Python -------------------------------------------------------------


def test_magics_are_not_python_and_keep_every_other_line_in_place(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "n.ipynb",
        code(["%pip install torch\n", "!nvidia-smi\n", "%matplotlib inline\n"]),
        code([*SETUP, "files = !ls\n", "torch.zeros?\n", "??torch.ones\n"]),
        code(["%%bash\n", "echo with torch.cuda.graph(g): x.item()\n"]),
        code(
            [
                "with torch.cuda.graph(g):\n",
                "    %time y = x * 2\n",
                "    !echo inside\n",
                "    v = x.item()\n",
            ]
        ),
        code(["%%timeit -n 1\n", "with torch.cuda.graph(g):\n", "    x.item()"]),
        code("pip install numpy\n"),  # automagic: a cell of one line, %pip
        code("cd /tmp"),
    )
    code_, out, _ = run("check", "--no-cache", "n.ipynb", cwd=tmp_path)
    assert code_ == 1
    assert findings(out) == ["n.ipynb:cell 4:4:9: GL101", "n.ipynb:cell 5:3:5: GL101"]
    assert "GL001" not in out


def test_the_script_of_a_notebook() -> None:
    """Each line that is not Python becomes a statement at its indentation; a cell
    magic's cell is left out unless its body is Python; markdown and raw cells are
    not code; cells are numbered among all cells."""
    data = json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [
                markdown("# x.item()"),
                code("a = 1\n%time b = 2\nfor i in a:\n    !ls \\\n    -l\nc = 3"),
                {"cell_type": "raw", "metadata": {}, "source": "x.item()"},
                code(["%%writefile f.py\n", "x.item()\n"]),
                code(["%%time\n", "d = '''\n", "%not a magic\n", "'''\n"]),
                code(""),
                code("e = 4?  # help\nf = 'what?'  # really?\n"),
            ],
        }
    ).encode()
    found = script(data)
    assert found.text == (
        "a = 1\npass\nfor i in a:\n    pass\n    pass\nc = 3\n"
        "pass\nd = '''\n%not a magic\n'''\n"
        "\n"
        "pass\nf = 'what?'  # really?\n"
    )
    assert found.cells == Cells(starts=(1, 7, 11, 12), numbers=(2, 5, 6, 7))
    assert found.cells.locate(8) == (5, 2)
    assert found.cells.locate(13) == (7, 2)


def test_a_notebook_of_another_language_has_no_code(tmp_path: Path) -> None:
    write(
        tmp_path / "r.ipynb",
        code(["x <- c(1, 2)\n", "with torch.cuda.graph(g): x.item()\n"]),
        kernelspec={"language": "R", "name": "ir"},
    )
    code_, out, _ = run("check", "--no-cache", "r.ipynb", cwd=tmp_path)
    assert code_ == 0 and "GL0" not in out


def test_markdown_cells_are_not_code(tmp_path: Path) -> None:
    write(
        tmp_path / "doc.ipynb",
        markdown(["```python\n", *SETUP, *CAPTURE, "```\n"]),
        code("print('hello')\n"),
    )
    code_, out, _ = run("check", "--no-cache", "doc.ipynb", cwd=tmp_path)
    assert code_ == 0
    assert findings(out) == []


def test_a_syntax_error_in_a_cell_is_gl001_at_the_cell(tmp_path: Path) -> None:
    write(tmp_path / "n.ipynb", code(SETUP), code(["x = (\n", "y = 2\n"]))
    code_, out, _ = run("check", "--no-cache", "n.ipynb", cwd=tmp_path)
    assert code_ == 1
    (found,) = findings(out)
    assert found.startswith("n.ipynb:cell 2:") and found.endswith("GL001")


# -- broken notebooks ------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "code_", "detail"),
    [
        (b'{"cells": [', "GL001", "not a Jupyter notebook: invalid JSON"),
        (b"[1, 2]", "GL001", "not a Jupyter notebook: the JSON is not an object"),
        (
            b'{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}',
            "GL001",
            "nbformat 3 notebook: graphlint reads nbformat 4",
        ),
        (b'{"nbformat": 4, "cells": 1}', "GL001", "it has no list of cells"),
        (
            b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 1}]}',
            "GL001",
            "cell 1 is not an nbformat 4 code cell",
        ),
        (b'{"nbformat": 4, "cells": ["\xff"]}', "GL002", "invalid utf-8 byte 0xff"),
        (b"[" * 100_000, "GL001", "nested too deeply"),
    ],
    ids=["json", "array", "nbformat-3", "cells", "source", "utf-8", "deep"],
)
def test_a_broken_notebook_is_a_gl0xx(
    tmp_path: Path, data: bytes, code_: str, detail: str
) -> None:
    (tmp_path / "bad.ipynb").write_bytes(data)
    status, out, err = run("check", "--no-cache", ".", cwd=tmp_path)
    assert status == 1 and err == ""
    assert [f.rsplit(" ", 1)[1] for f in findings(out)] == [code_]
    assert detail in out


def test_a_notebook_over_the_size_limit_is_gl003(notebook: Path) -> None:
    """Its code over the limit; or the notebook over 16 times the limit."""
    for size in ("50", str(notebook.stat().st_size // 20)):
        out = run(
            "check",
            "--no-cache",
            "--max-file-size",
            size,
            "n.ipynb",
            cwd=notebook.parent,
        )[1]
        assert [f.rsplit(" ", 1)[1] for f in findings(out)] == ["GL003"]


def test_the_size_limit_counts_the_code_not_the_outputs(notebook: Path) -> None:
    """A notebook of plots is checked: its outputs weigh, its code is small."""
    document = json.loads(notebook.read_text(encoding="utf-8"))
    document["cells"][0]["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": ["x" * 5000]}
    ]
    notebook.write_text(json.dumps(document), encoding="utf-8")
    size = str(notebook.stat().st_size // 2)  # the file is over it, its code is not
    out = run(
        "check", "--no-cache", "--max-file-size", size, "n.ipynb", cwd=notebook.parent
    )[1]
    assert "GL003" not in out and "GL101" in out


def test_an_empty_notebook_file(tmp_path: Path) -> None:
    (tmp_path / "empty.ipynb").write_text("")
    write(tmp_path / "no-code.ipynb", markdown("nothing"))
    assert run("check", "--no-cache", ".", cwd=tmp_path)[0] == 0
    out = run("check", "--no-cache", "--extend-select", "GL006", ".", cwd=tmp_path)[1]
    assert findings(out) == ["empty.ipynb:1:1: GL006"]


def test_notebook_errors_say_where_the_json_breaks() -> None:
    with pytest.raises(NotebookError) as raised:
        script(b'{\n "cells": [\n  {,\n')
    assert (raised.value.line, raised.value.col) == (3, 3)


# -- suppression, fixes -------------------------------------------------------------


def test_a_suppression_comment_in_a_cell(tmp_path: Path) -> None:
    suppressed = [*CAPTURE[:2], "    v = y.item()  # graphlint: ignore[GL101]\n"]
    unused = ["# graphlint: ignore[GL201]\n", "z = 1\n"]
    write(tmp_path / "n.ipynb", code(SETUP), code(suppressed), code(unused))
    code_, out, _ = run("check", "--no-cache", "n.ipynb", cwd=tmp_path)
    assert code_ == 0, out
    out = run(
        "check", "--no-cache", "--extend-select", "GL008", "n.ipynb", cwd=tmp_path
    )[1]
    assert findings(out) == ["n.ipynb:cell 3:1:1: GL008"]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--fix", "--unsafe-fixes"], "not fixed"),
        (["--diff", "--unsafe-fixes"], "not fixed"),
        (["--add-noqa"], "no suppression comments added"),
    ],
)
def test_fix_and_add_noqa_leave_a_notebook_as_it_is(
    notebook: Path, options: list[str], said: str
) -> None:
    before = notebook.read_bytes()
    _, out, err = run("check", "--no-cache", *options, "n.ipynb", cwd=notebook.parent)
    assert notebook.read_bytes() == before
    assert (
        f"graphlint: warning: n.ipynb: {said}: graphlint does not change notebooks "
        "(1 finding there)"
    ) in err
    if options[0] == "--fix":
        assert findings(out) == ["n.ipynb:cell 3:3:9: GL101"]
    if options[0] == "--diff":
        assert out == ""


# -- which files are checked ------------------------------------------------------


def test_folders_hold_notebooks(notebook: Path) -> None:
    folder = notebook.parent
    (folder / "sub").mkdir()
    write(folder / "sub" / "m.ipynb", code(SETUP), code(CAPTURE))
    (folder / ".ipynb_checkpoints").mkdir()
    checkpoints = folder / ".ipynb_checkpoints"
    write(checkpoints / "n-checkpoint.ipynb", code(SETUP), code(CAPTURE))
    out = run("check", "--show-files", ".", cwd=folder)[1]
    assert out.splitlines() == ["n.ipynb", "sub/m.ipynb"]
    out = run("check", "--no-cache", ".", cwd=folder)[1]
    assert findings(out) == [
        "n.ipynb:cell 3:3:9: GL101",
        "sub/m.ipynb:cell 2:3:9: GL101",
    ]


def test_extend_include(tmp_path: Path) -> None:
    """``extend-include`` (configuration, or ``--extend-include``) adds files to
    what folders are searched for; ``--show-settings`` shows it; a value that is no
    list of strings is a configuration error."""
    (tmp_path / "run.pyw").write_text("".join(SETUP + CAPTURE))
    (tmp_path / "tool.py").write_text("x = 1\n")
    assert run("check", "--show-files", ".", cwd=tmp_path)[1].splitlines() == [
        "tool.py"
    ]
    out = run("check", "--show-files", "--extend-include", "*.pyw", ".", cwd=tmp_path)[
        1
    ]
    assert out.splitlines() == ["run.pyw", "tool.py"]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.graphlint]\nextend-include = ["*.pyw"]\n'
    )
    assert run("check", "--show-files", ".", cwd=tmp_path)[1].splitlines() == [
        "run.pyw",
        "tool.py",
    ]
    code_, out, _ = run("check", "--no-cache", ".", cwd=tmp_path)
    assert code_ == 1 and findings(out) == ["run.pyw:8:9: GL101"]
    settings = run("check", "--show-settings", ".", cwd=tmp_path)[1]
    assert 'extend-include = ["*.pyw"]' in settings.splitlines()
    more = run(
        "check", "--show-settings", "--extend-include", "a/*,*.ipy", ".", cwd=tmp_path
    )[1]
    assert 'extend-include = ["*.pyw", "a/*", "*.ipy"]' in more.splitlines()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.graphlint]\nextend-include = "*.pyw"\n'
    )
    code_, _, err = run("check", ".", cwd=tmp_path)
    assert code_ == 2
    assert "'extend-include' in [tool.graphlint] of" in err
    assert "must be a list of strings" in err


def test_standard_input_as_a_notebook(notebook: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["check", "--no-cache", "--stdin-filename", str(notebook), "-"],
        input=notebook.read_text(),
        catch_exceptions=False,
    )
    assert result.exit_code == 1
    assert ":cell 3:3:9: GL101" in result.stdout


# -- the language server ------------------------------------------------------------


def test_the_server_does_not_check_notebooks(notebook: Path) -> None:
    """An ``.ipynb`` opened as text gets no diagnostics (its places are cells); a
    script opened beside it is checked as ever."""
    folder = notebook.parent
    (folder / "pyproject.toml").write_text("")
    (folder / "s.py").write_text("".join(SETUP + CAPTURE))
    client = Client(folder)
    try:
        client.initialize(folder)
        opened = client.open(notebook, notebook.read_text())
        uri = client.open(folder / "s.py", "".join(SETUP + CAPTURE))
        assert [d["code"] for d in client.diagnostics(uri, version=1)] == ["GL101"]
        published = [
            m
            for m in client.received
            if m.get("method") == "textDocument/publishDiagnostics"
        ]
        assert all(m["params"]["uri"] != opened for m in published)
        logged = [
            m["params"]["message"]
            for m in client.received
            if m.get("method") == "window/logMessage"
        ]
        assert any("does not check notebooks" in line for line in logged)
        assert client.close() == 0
    finally:
        client.dispose()


def test_the_readme_example_is_what_graphlint_prints() -> None:
    """The README's notebook example, run from the repository's root."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Jupyter notebooks", 1)[1]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    command, *printed = block.splitlines()
    assert command == "$ graphlint check fixtures/notebooks/capture.ipynb"
    code_, out, _ = run(
        "check", "--no-cache", "fixtures/notebooks/capture.ipynb", cwd=ROOT
    )
    assert code_ == 1
    assert out.splitlines() == printed
