"""The machine formats with their real consumers' rules: SARIF against the official
2.1.0 schema, GitHub workflow commands as the runner parses them, flat JSON; and
--output-file and --statistics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def _sarif(*args: str, cwd: Path) -> dict[str, Any]:
    """The SARIF log of ``graphlint check --format sarif ARGS``, schema-checked."""
    out = run("check", "--no-cache", "--format", "sarif", *args, cwd=cwd)[1]
    document: dict[str, Any] = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    return document


def test_sarif_rules_carry_what_code_scanning_reads(project: Path) -> None:
    (sarif_run,) = _sarif("bad.py", cwd=project)["runs"]
    rules = {rule["id"]: rule for rule in sarif_run["tool"]["driver"]["rules"]}
    gl101 = rules["GL101"]
    assert gl101["fullDescription"]["text"].startswith(
        "Flags code inside a capture region that copies a device tensor to the host: "
        "t.item(), t.tolist(),"
    )
    assert gl101["fullDescription"]["markdown"].startswith(
        "Flags code inside a capture region that copies a device tensor to the host: "
        "`t.item()`, `t.tolist()`,"
    )
    assert gl101["defaultConfiguration"] == {"enabled": True, "level": "error"}
    assert gl101["properties"] == {
        "tags": ["cuda-graphs", "host-synchronisation", "capture-error"],
        "precision": "high",
        "problem.severity": "error",
    }
    assert rules["GL001"]["properties"]["tags"] == ["tool"]
    assert rules["GL008"]["defaultConfiguration"]["enabled"] is False
    for code, rule in rules.items():
        # GitHub's required fields, within the lengths it shows
        assert rule["name"] == CODES[code].name and len(rule["name"]) <= 255
        assert 0 < len(rule["shortDescription"]["text"]) <= 1024
        assert 0 < len(rule["fullDescription"]["text"]) <= 1024
        assert rule["help"]["text"] and rule["help"]["markdown"].startswith(f"# {code}")
        assert rule["properties"]["precision"] in ("very-high", "high")
        assert rule["properties"]["problem.severity"] in (
            "error",
            "warning",
            "recommendation",
        )
        assert 0 < len(rule["properties"]["tags"]) <= 10
        assert "helpUri" not in rule  # no published address, no path of the machine
    assert sarif_run["columnKind"] == "utf16CodeUnits"


def _artifacts(value: object) -> list[dict[str, str]]:
    """Every ``artifactLocation`` in a SARIF log (results, related locations, code
    flows, fixes)."""
    if isinstance(value, list):
        return [found for item in value for found in _artifacts(item)]
    if not isinstance(value, dict):
        return []
    own = [value["artifactLocation"]] if "artifactLocation" in value else []
    return own + [found for item in value.values() for found in _artifacts(item)]


FIXME = """\
import torch

g = torch.cuda.CUDAGraph()
opt = torch.optim.Adam([])
with torch.cuda.graph(g):
    opt.step()
"""


@pytest.mark.parametrize("absolute", [False, True])
def test_sarif_holds_no_path_of_the_machine(project: Path, absolute: bool) -> None:
    (project / "pkg" / "fixme.py").write_text(FIXME)  # a fix, a related location
    targets = [".", "pkg/fixme.py"]
    if absolute:  # ``graphlint check $GITHUB_WORKSPACE``
        targets = [str(project.resolve()), str(project / "pkg" / "fixme.py")]
    document = _sarif(*targets, cwd=project)
    text = json.dumps(document)
    assert str(project) not in text and str(project.resolve()) not in text
    assert "file://" not in text
    (sarif_run,) = document["runs"]
    assert sarif_run["originalUriBaseIds"]["%SRCROOT%"].keys() == {"description"}
    results = sarif_run["results"]
    assert {"fixes", "relatedLocations", "codeFlows"} <= {k for r in results for k in r}
    found = _artifacts(results)
    assert {a["uri"] for a in found} == {
        "bad.py",
        "pkg/model.py",
        "pkg/train.py",
        "pkg/fixme.py",
    }
    assert all(a["uriBaseId"] == "%SRCROOT%" for a in found)


def test_sarif_reaches_a_file_outside_its_root_with_dot_dot(project: Path) -> None:
    (project / "sub").mkdir()
    (sarif_run,) = _sarif("..", cwd=project / "sub")["runs"]
    found = _artifacts(sarif_run["results"])
    assert {a["uri"] for a in found} == {
        "../bad.py",
        "../pkg/model.py",
        "../pkg/train.py",
    }
    assert all(a["uriBaseId"] == "%SRCROOT%" for a in found)


BAD_TWICE = """\
import torch

x = torch.randn(8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    a = x.sum().item()
    b = x.sum().item()
"""


def _fingerprints(project: Path, text: str) -> list[str]:
    (project / "twice.py").write_text(text)
    (sarif_run,) = _sarif("twice.py", cwd=project)["runs"]
    return [r["partialFingerprints"]["graphlint/v1"] for r in sarif_run["results"]]


def test_sarif_fingerprints_follow_the_code_not_its_line(project: Path) -> None:
    first, second = _fingerprints(project, BAD_TWICE)
    assert first != second  # the same finding twice in a file: told apart
    # lines added above, and white space changed in the flagged line: the same
    moved = "import os\n\n\n" + BAD_TWICE.replace("a = x", "a  =  x")
    assert _fingerprints(project, moved) == [first, second]
    # the flagged code changed: a new finding; the other one keeps its own
    changed = BAD_TWICE.replace("b = x.sum().item()", "b = x.max().item()")
    kept, new = _fingerprints(project, changed)
    assert kept == first and new not in (first, second)


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
