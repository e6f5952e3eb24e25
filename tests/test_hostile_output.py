"""Text from the checked repository (file names, quoted source) cannot forge output
lines, drive the terminal or crash the formatters; odd but valid literals do not
crash the analysis (issue #11)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata
import urllib.parse
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from graphlint.diagnostics import (
    Confidence,
    Diagnostic,
    FileResult,
    Hop,
    Outcome,
    RegionKind,
    RegionRef,
    Severity,
)
from graphlint.engine import lint_source
from graphlint.output.escape import encodable, printable, shown_path
from graphlint.output.lsp import format_lsp
from graphlint.output.text import format_text
from graphlint.runtime import report
from graphlint.runtime.sites import Capture, RunResult, Site, Status
from tests.conftest import WARMED
from tests.test_facts import facts_for

OSC_TITLE = "\x1b]0;pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
HOSTILE = f"{OSC_TITLE}{OSC_CLIPBOARD}\u202eevil\u2066\b\x7f\x9b\u2028"
FORGED = "\nfake.py:1:1: GL101 forged line"
NOT_UTF8 = os.fsdecode(b"bad\xffname.py")  # 'bad\udcffname.py'
_UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def unsafe(text: str) -> list[str]:
    """The characters of ``text`` that a terminal line must not hold raw."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in _UNSAFE]


def diagnostic(path: str, message: str, region: RegionRef | None = None) -> Diagnostic:
    return Diagnostic(
        path,
        "GL101",
        "tensor-to-host",
        message,
        6,
        4,
        6,
        12,
        Severity.ERROR,
        Confidence.HIGH,
        Outcome.CAPTURE_ERROR,
        region or RegionRef(RegionKind.MANUAL, 5, "torch.cuda.graph"),
        fix_hint=f"help {HOSTILE}",
    )


def reached(path: str) -> RegionRef:
    """A region in ``path`` that reaches the diagnostic through a hostile function."""
    return RegionRef(
        RegionKind.MANUAL,
        5,
        f"torch.cuda.graph{OSC_TITLE}",
        path=path,
        via=(Hop(path, 6, 4, f"helper{HOSTILE}()"),),
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (OSC_TITLE, "\\x1b]0;pwned\\x07"),
        ("a\u202eb\u2066c\u2069\u200e\u200f\u061c", "a\\u202eb\\u2066c\\u2069"),
        ("\b\x7f\x85\x9b\x00", "\\x08\\x7f\\x85\\x9b\\x00"),
        ("one\ntwo\rthree\tfour", "one\\ntwo\\rthree\\tfour"),
        ("\u2028\u2029\ufeff\u200b", "\\u2028\\u2029\\ufeff\\u200b"),
        (NOT_UTF8, "bad\\xffname.py"),
        ("\ud800", "\\ud800"),
        ("\U000e0041", "\\U000e0041"),
    ],
)
def test_printable_escapes(text: str, shown: str) -> None:
    assert printable(text).startswith(shown)
    assert unsafe(printable(text)) == []
    assert printable(text).encode("utf-8")


@pytest.mark.parametrize(
    "text",
    ["plain", "café naïve", "形状 グラフ", "🚀 ok", "a\u00a0b", "\\x1b stays", ""],
)
def test_printable_keeps_ordinary_text(text: str) -> None:
    assert printable(text) == text
    assert encodable(text) == text


def test_encodable_escapes_only_surrogates() -> None:
    assert encodable(f"{OSC_TITLE}{NOT_UTF8}") == f"{OSC_TITLE}bad\\xffname.py"


def test_text_output_escapes_what_the_files_hold() -> None:
    results = [
        FileResult(f"x{FORGED}.py", (diagnostic(f"x{FORGED}.py", HOSTILE),)),
        FileResult(
            NOT_UTF8, (diagnostic(NOT_UTF8, f"`{HOSTILE}.item()`", reached(NOT_UTF8)),)
        ),
    ]
    for color in (False, True):
        text = format_text(results, color=color)
        own = re.sub(r"\x1b\[[0-9;]*m", "", text) if color else text
        assert unsafe(own) == [], color
        text.encode("utf-8")
        lines = own.splitlines()
        # two diagnostics, two help lines, the blank lines and the summary
        assert len(lines) == 7, lines
        assert lines[0].startswith("x\\nfake.py:1:1: GL101 forged line.py:6:5: GL101 ")
        assert "\\x1b]0;pwned\\x07\\x1b]52;c;" in lines[0]
        assert lines[3].startswith("bad\\xffname.py:6:5: GL101 `")
        assert "region at bad\\xffname.py:5, reached from bad\\xffname.py:6" in lines[3]
        assert "via helper\\x1b]0;pwned" in lines[3]
        assert lines[4].lstrip().startswith("help: help \\x1b]0;pwned")


def test_lsp_output_is_valid_utf8_json_with_real_file_uris(tmp_path: Path) -> None:
    bad = str(tmp_path / NOT_UTF8)
    forged = str(tmp_path / f"x{FORGED}.py")
    results = [
        FileResult(bad, (diagnostic(bad, f"`{HOSTILE}{NOT_UTF8}`", reached(bad)),)),
        FileResult(forged, (diagnostic(forged, HOSTILE),)),
    ]
    text = format_lsp(results)
    text.encode("utf-8")
    document = json.loads(text)

    def strings(value: Any) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for item in value.values() for s in strings(item)]
        if isinstance(value, list):
            return [s for item in value for s in strings(item)]
        return []

    for value in strings(document):
        value.encode("utf-8")  # no lone surrogate survives
    first, second = document
    uri = "file://" + urllib.parse.quote(os.fsencode(Path(bad).resolve()))
    assert first["uri"] == uri and uri.endswith("/bad%FFname.py")
    assert second["uri"].endswith("/x%0Afake.py%3A1%3A1%3A%20GL101%20forged%20line.py")
    item = first["diagnostics"][0]
    assert item["message"] == f"`{HOSTILE}bad\\xffname.py`"  # JSON escapes the rest
    assert item["relatedInformation"][0]["location"]["uri"] == uri
    assert item["data"]["region"]["path"].endswith("bad\\xffname.py")
    assert second["diagnostics"][0]["message"] == HOSTILE


def test_confirm_text_report_escapes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    a = tmp_path / NOT_UTF8
    site = Site(
        Capture.MARKED_FUNCTION,
        f"step{OSC_TITLE}()",
        str(a),
        3,
        9,
        calls=1,
        status=Status.CAPTURE_ERROR,
        detail=f"RuntimeError: boom{FORGED}{HOSTILE}",
        error_path=str(a),
        error_line=7,
    )
    merged = report.merge(
        [FileResult(str(a), (diagnostic(str(a), HOSTILE),))],
        [RunResult([site], f"the script raised {HOSTILE}")],
        device=f"GPU{OSC_CLIPBOARD}",
        runs=2,
    )
    text = report.format_text(merged)
    text.encode("utf-8")
    assert unsafe(text) == []
    assert "capture-error bad\\xffname.py:3 step\\x1b]0;pwned\\x07() " in text
    assert "boom\\nfake.py:1:1: GL101 forged line" in text
    assert not any(line.startswith("fake.py") for line in text.splitlines())


def graphlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "graphlint", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
    )


def assert_one_diagnostic(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    """Exit 1, and the output of exactly one diagnostic, with nothing raw in it."""
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode("utf-8")
    assert unsafe(out) == []
    lines = out.splitlines()
    assert len(lines) == 4, lines  # the diagnostic, its help, a blank, the summary
    assert lines[3].startswith("Found 1 diagnostic (1 error) in 1 of ")
    return lines


def test_cli_escapes_a_hostile_file_name(tmp_path: Path) -> None:
    name = f"evil{FORGED}{OSC_TITLE}\u202e.py"
    try:
        (tmp_path / name).write_text(WARMED + "    v = x.item()\n")
    except OSError:
        pytest.skip("the file system refuses the name")
    lines = assert_one_diagnostic(graphlint("check", ".", cwd=tmp_path))
    assert lines[0].startswith(
        "evil\\nfake.py:1:1: GL101 forged line\\x1b]0;pwned\\x07\\u202e.py:8:9: GL101"
    )
    done = graphlint("check", "--format", "lsp", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    (entry,) = json.loads(done.stdout)
    path = os.fsencode((tmp_path / name).resolve())
    assert entry["uri"] == "file://" + urllib.parse.quote(path)


def test_cli_escapes_control_characters_quoted_from_source(tmp_path: Path) -> None:
    quoted = f"{OSC_TITLE}\u202e\u2066\b\x7f\x9b"
    source = WARMED + f'    v = x.add(len("{quoted}")).item()\n'
    (tmp_path / "quoted.py").write_text(source, encoding="utf-8")
    lines = assert_one_diagnostic(graphlint("check", ".", cwd=tmp_path))
    assert (
        '`x.add(len("\\x1b]0;pwned\\x07\\u202e\\u2066\\x08\\x7f\\x9b")).item()`'
        in lines[0]
    )


def test_cli_survives_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("def helper(x): return x.item()\n")
    try:
        (pkg / NOT_UTF8).write_text(
            WARMED.replace(
                "import torch\n", "import torch\nfrom pkg.helper import helper\n"
            )
            + "    helper(x)\n"
        )
    except (OSError, UnicodeEncodeError):
        pytest.skip("the file system refuses the name")
    lines = assert_one_diagnostic(graphlint("check", ".", cwd=tmp_path))
    assert lines[0].startswith("pkg/helper.py:1:23: GL101 ")
    assert (
        "region at pkg/bad\\xffname.py:8, reached from pkg/bad\\xffname.py:9"
        in (lines[0])
    )
    done = graphlint("check", "--format", "lsp", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert any(entry["uri"].endswith("/pkg/bad%FFname.py") for entry in document)


# -- GitHub Actions workflow commands ------------------------------------------------

COMMAND_NAMES = (
    "::error file=SECURITY.md,line=1::x.py",  # a forged annotation
    "  ::add-mask::y.py",  # the runner trims leading white space
    "::stop-commands::z.py",
    "a##[error]b.py",  # the runner's older form, anywhere in a line
    f"e{OSC_TITLE}\u202e\x85\u2028\u2029\b\x7f\u200e\u2066.py",
)
QUOTES_A_COMMAND = '    v = x.add(len("##[add-mask]x")).item()\n'
ANNOTATION_PROPERTIES = {"file", "line", "col", "endLine", "endColumn", "title"}


def _unescape(value: str, *, prop: bool) -> str:
    value = value.replace("%0D", "\r").replace("%0A", "\n")
    if prop:
        value = value.replace("%3A", ":").replace("%2C", ",")
    return value.replace("%25", "%")


def workflow_command(line: str) -> tuple[str, dict[str, str], str] | None:
    """The workflow command GitHub's runner reads in a line of a step's log, as its
    ``ActionCommand.TryParseV2`` (``::name props::data`` after leading white space)
    and ``TryParse`` (``##[`` anywhere) do, whatever the command's name; None when
    the line is no command."""
    text = line.lstrip()
    end = text.find("::", 2)
    if text.startswith("::") and end >= 0:
        name, _, listed = text[2:end].partition(" ")
        properties = {}
        for item in listed.strip().split(","):
            key, sep, value = item.partition("=")
            if sep and key and value:
                properties[key] = _unescape(value, prop=True)
        return name, properties, _unescape(text[end + 2 :], prop=False)
    if "##[" in line:
        return "##[", {}, line
    return None


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("::error file=a::b", "\\x3a:error file=a::b"),
        ("  \u3000::add-mask::x", "  \u3000\\x3a:add-mask::x"),
        ("a ##[error]b ##[x]", "a ##\\x5berror]b ##\\x5bx]"),
    ],
)
def test_printable_is_no_workflow_command(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert workflow_command(printable(text)) is None
    assert printable(printable(text)) == printable(text)


def test_a_path_that_would_start_a_command_is_shown_from_dot_slash() -> None:
    assert shown_path("::error file=x::y.py") == "./::error file=x::y.py"
    assert shown_path(" ::x.py") == "./ ::x.py"
    assert shown_path("pkg/::x.py") == "pkg/::x.py"
    assert shown_path("a##[b.py") == "a##\\x5bb.py"
    # what starts no command is shown as it was
    assert shown_path("\t::x.py") == "\\t::x.py"  # the line starts with a backslash
    assert printable("a::b: c") == shown_path("a::b: c") == "a::b: c"


@pytest.fixture
def command_tree(tmp_path: Path) -> Path:
    """Real files whose names GitHub Actions would read as workflow commands (and
    one full of control characters), each with one finding that quotes one."""
    for name in COMMAND_NAMES:
        try:
            (tmp_path / name).write_text(WARMED + QUOTES_A_COMMAND)
        except (OSError, UnicodeEncodeError):
            pytest.skip("the file system refuses the name")
    return tmp_path


@pytest.mark.parametrize(
    "runs",
    [
        [("--show-reach",), ("--statistics",)],
        [("--format", "json"), ("--statistics", "--format", "json")],
        [("--format", "sarif")],
        [("--format", "lsp", "--show-reach")],
    ],
    ids=["text", "json", "sarif", "lsp"],
)
def test_no_output_line_is_a_workflow_command(
    command_tree: Path, runs: list[tuple[str, ...]]
) -> None:
    outputs = []
    for args in runs:
        done = graphlint("check", *args, ".", cwd=command_tree)
        assert done.returncode == 1, done.stderr
        outputs.append(done.stdout.decode("utf-8"))
        for line in [*outputs[-1].splitlines(), *done.stderr.decode().splitlines()]:
            assert workflow_command(line) is None, line
    out = outputs[0]
    if runs[0] == ("--show-reach",):
        for start in (
            "./::error file=SECURITY.md,line=1::x.py:8:9: GL101 ",
            "  ./::error file=SECURITY.md,line=1::x.py:7: torch.cuda.graph",
            "./  ::add-mask::y.py:8:9: GL101 ",
            'a##\\x5berror]b.py:8:9: GL101 `x.add(len("##\\x5badd-mask]x")',
        ):
            assert any(line.startswith(start) for line in out.splitlines()), start
    if runs[0] == ("--format", "json"):  # the same data, ``##[`` and all
        assert "a##[error]b.py" in {d["path"] for d in json.loads(out)}
        assert all("##[add-mask]" in d["message"] for d in json.loads(out))


def test_github_annotations_are_graphlint_s_own_commands(command_tree: Path) -> None:
    done = graphlint("check", "--format", "github", ".", cwd=command_tree)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.decode("utf-8").splitlines()
    assert len(lines) == len(COMMAND_NAMES)
    files = set()
    for line in lines:
        assert unsafe(line) == [], line
        found = workflow_command(line)
        assert found is not None, line
        name, properties, message = found
        assert name == "error" and set(properties) == ANNOTATION_PROPERTIES, line
        assert properties["line"] == "8" and properties["title"].startswith("GL101 ")
        assert message.startswith('`x.add(len("##\\x5badd-mask]x")).item()` copies')
        assert unsafe(message.replace("\n", "")) == [], message
        files.add(properties["file"])
    assert files == {
        *COMMAND_NAMES[:4],
        "e\\x1b]0;pwned\\x07\\u202e\\x85\\u2028\\u2029\\x08\\x7f\\u200e\\u2066.py",
    }
    for stderr_line in done.stderr.decode("utf-8").splitlines():
        assert workflow_command(stderr_line) is None


def test_github_message_escapes_quoted_source(tmp_path: Path) -> None:
    quoted = f"{OSC_TITLE}\u202e\b\x7f%0A::warning::x ##[error]"
    source = WARMED + f'    v = x.add(len("{quoted}")).item()\n'
    (tmp_path / "quoted.py").write_text(source, encoding="utf-8", newline="\n")
    done = graphlint("check", "--format", "github", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    (line,) = done.stdout.decode("utf-8").splitlines()
    assert unsafe(line) == []
    found = workflow_command(line)
    assert found is not None and found[0] == "error"
    assert (
        '`x.add(len("\\x1b]0;pwned\\x07\\u202e\\x08\\x7f%0A::warning::x '
        '##\\x5berror]")).item()`'
    ) in found[2]


# -- odd literals ---------------------------------------------------------------------

HUGE_HEX = "0x" + "f" * 5000  # valid; its decimal form exceeds int's 4,300 digits


def test_a_huge_hex_subscript_is_analysed() -> None:
    source = WARMED + (
        f"    d = {{}}\n    d[{HUGE_HEX}] = x\n    y = d[{HUGE_HEX}]\n"
        f"    x[{HUGE_HEX}] = y\n    z = (x, x)[{HUGE_HEX}]\n"
    )
    compile(source, "huge.py", "exec")  # CPython accepts it
    assert all(d.code != "GL009" for d in lint_source(source))


def test_subscript_keys_of_equal_literals_are_equal() -> None:
    module, facts = facts_for(
        f"""
        x = [1, 2]
        opt = {{"lr": 0.1}}
        a = x[1]
        b = x[1]
        c = x[2]
        d = opt['lr']
        e = opt["lr"]
        f = x[{HUGE_HEX}]
        h = x[{HUGE_HEX}]
        """
    )
    keys: dict[str, object] = {}

    class Keys(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            target = node.targets[0].target
            assert isinstance(target, cst.Name)
            keys[target.value] = facts.state.key_of(node.value)

    module.visit(Keys())
    assert keys["a"] is not None and keys["a"] == keys["b"] != keys["c"]
    assert keys["d"] is not None and keys["d"] == keys["e"]
    assert keys["f"] is not None and keys["f"] == keys["h"] != keys["a"]
