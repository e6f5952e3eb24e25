"""The machine formats with their real consumers' rules: SARIF against the official
2.1.0 schema, GitHub workflow commands as the runner parses them, flat JSON; and
--output-file and --statistics."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from graphlint.codes import CODES
from tests.test_cli import BAD, MODEL, TRAIN, run

SCHEMA = json.loads(
    (Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text()
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "model.py").write_text(MODEL)
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)
    return tmp_path


def _text_findings(project: Path) -> list[str]:
    """``path:line:col: CODE`` of every diagnostic, from the text output."""
    out = run("check", "--no-cache", ".", cwd=project)[1]
    return [
        " ".join(line.split()[:2])
        for line in out.splitlines()
        if line and not line.startswith((" ", "Found"))
    ]


def test_sarif_is_valid_and_says_what_the_text_says(project: Path) -> None:
    code, out, _ = run("check", "--no-cache", "--format", "sarif", ".", cwd=project)
    assert code == 1
    document = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    (sarif_run,) = document["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == list(CODES)
    assert all(rule["shortDescription"]["text"] for rule in rules)
    assert rules[list(CODES).index("GL101")]["help"]["markdown"].startswith("# GL101")
    found = []
    for result in sarif_run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        where = location["region"]
        path = location["artifactLocation"]["uri"]
        found.append(
            f"{path}:{where['startLine']}:{where['startColumn']}: {result['ruleId']}"
        )
    assert found == _text_findings(project)


def test_sarif_gives_a_reached_finding_its_region_and_call_chain(project: Path) -> None:
    out = run("check", "--no-cache", "--format", "sarif", "pkg/model.py", cwd=project)[
        1
    ]
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["ruleId"] == "GL101" and result["level"] == "error"
    assert (
        "region at pkg/train.py:6, reached from pkg/train.py:7"
        in result["message"]["text"]
    )
    related = [
        (
            r["physicalLocation"]["artifactLocation"]["uri"],
            r["physicalLocation"]["region"]["startLine"],
            r["message"]["text"],
        )
        for r in result["relatedLocations"]
    ]
    assert related == [
        ("pkg/train.py", 6, "the torch.cuda.graph region"),
        ("pkg/train.py", 7, "calls step() inside the capture region"),
    ]
    (flow,) = result["codeFlows"]
    steps = [
        s["location"]["physicalLocation"]["region"]["startLine"]
        for s in flow["threadFlows"][0]["locations"]
    ]
    assert steps == [7, 2]
    # ``x`` is a device tensor: the capture passes it one
    assert result["properties"]["confidence"] == "high"


def test_github_annotations(project: Path) -> None:
    code, out, _ = run(
        "check", "--no-cache", "--format", "github", "bad.py", cwd=project
    )
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith(
        "::error file=bad.py,line=8,col=9,endLine=8,endColumn=23,"
        "title=GL101 device-to-host-copy::"
    )
    assert "%0AKeep the value on the device" in first  # the help, on its own line
    assert len(out.splitlines()) == len(_text_findings(project)) - 2  # pkg/ excluded


def test_github_escapes_what_the_runner_would_parse(tmp_path: Path) -> None:
    (tmp_path / "a,b:c%.py").write_text(BAD)
    out = run("check", "--no-cache", "--format", "github", ".", cwd=tmp_path)[1]
    assert out.startswith("::error file=a%2Cb%3Ac%25.py,line=8,")
    assert all(line.startswith("::") for line in out.splitlines())


def test_json_is_a_flat_list_with_text_positions(project: Path) -> None:
    code, out, _ = run("check", "--no-cache", "--format", "json", ".", cwd=project)
    assert code == 1
    found = json.loads(out)
    assert [f"{d['path']}:{d['line']}:{d['column']}: {d['code']}" for d in found] == (
        _text_findings(project)
    )
    reached = next(d for d in found if d["path"] == "pkg/model.py")
    assert reached["region"]["via"] == [
        {"path": "pkg/train.py", "line": 7, "column": 9, "function": "step()"}
    ]
    assert reached["severity"] == "error" and reached["confidence"] == "high"


def test_output_file(project: Path) -> None:
    code, out, _ = run(
        "check",
        "--no-cache",
        "--format",
        "json",
        "--output-file",
        "out/report.json",
        ".",
        cwd=project,
    )
    assert (code, out) == (1, "")
    assert json.loads((project / "out" / "report.json").read_text())
    code, _, err = run("check", "--output-file", "bad.py/x", ".", cwd=project)
    assert code == 2 and err.startswith("graphlint: error: cannot write bad.py/x")


def test_statistics(project: Path) -> None:
    code, out, _ = run("check", "--no-cache", "--statistics", ".", cwd=project)
    assert code == 1
    lines = out.splitlines()
    assert "    2  GL101  device-to-host-copy" in lines
    assert lines[-1].startswith("Found ")
    out = run(
        "check", "--no-cache", "--statistics", "--format", "json", ".", cwd=project
    )[1]
    counts = {row["code"]: row["count"] for row in json.loads(out)}
    assert counts["GL101"] == 2
    code, _, err = run("check", "--statistics", "--format", "sarif", ".", cwd=project)
    assert code == 2 and "--statistics" in err
