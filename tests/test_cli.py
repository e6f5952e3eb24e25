"""The command line end to end: exit codes, formats, selection, suppression, config."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphlint.cli import app

BAD = textwrap.dedent(
    """\
    import torch

    x = torch.randn(8, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(torch.cuda.Stream()):
        x.sum()
    with torch.cuda.graph(g):
        y = x.sum().item()
        if y > 0:
            pass
        if x.mean() > 0:
            x.zero_()
    """
)
CLEAN = "import torch\n\nx = torch.randn(3)\nprint(x.sum().item())\n"


def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run the CLI in-process from ``cwd``."""
    runner = CliRunner()
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = runner.invoke(app, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_exit_codes(project: Path) -> None:
    assert run("check", "clean.py", cwd=project)[0] == 0
    code, out, _ = run("check", "bad.py", cwd=project)
    assert code == 1
    assert "bad.py:8:9: GL101" in out
    assert "bad.py:11:8: GL201" in out
    assert "help:" in out
    assert (
        "Found 2 diagnostics (2 errors) in 1 of 1 file checked; 1 capture region, "
        "1 reaching no project function." in out
    )
    assert run("check", "--exit-zero", "bad.py", cwd=project)[0] == 0


def test_folder_is_default_and_recursive(project: Path) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "deep.py").write_text(BAD)
    code, out, _ = run("check", cwd=project)
    assert code == 1
    assert "pkg/deep.py:8:9: GL101" in out
    assert "in 2 of 3 files checked" in out


def test_lsp_format_is_the_editor_contract(project: Path) -> None:
    code, out, _ = run("check", "--format", "lsp", ".", cwd=project)
    assert code == 1
    document = json.loads(out)
    by_uri = {entry["uri"]: entry["diagnostics"] for entry in document}
    assert by_uri[(project / "clean.py").resolve().as_uri()] == []
    first = by_uri[(project / "bad.py").resolve().as_uri()][0]
    assert first["range"] == {
        "start": {"line": 7, "character": 8},
        "end": {"line": 7, "character": 22},
    }
    assert first["severity"] == 1
    assert first["code"] == "GL101"
    assert first["source"] == "graphlint"
    assert first["codeDescription"]["href"].endswith("GL101-device-to-host-copy.md")
    assert first["data"]["region"] == {
        "kind": "torch.cuda.graph",
        "line": 7,
        "label": "torch.cuda.graph",
    }
    assert first["data"]["fix"]
    assert first["data"]["outcome"] == "capture-error"


def test_compile_regions_are_warnings(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text(
        "import torch\n\n@torch.compile(mode='reduce-overhead')\n"
        "def f(x: torch.Tensor):\n    return x.sum().item()\n"
    )
    code, out, _ = run("check", "--format", "lsp", "c.py", cwd=tmp_path)
    (entry,) = json.loads(out)
    (diag,) = entry["diagnostics"]
    assert diag["severity"] == 2
    assert "graph break under torch.compile" in diag["message"]
    assert code == 1


@pytest.mark.parametrize(
    ("flags", "codes"),
    [
        ((), {"GL101", "GL201"}),
        (("--select", "GL1"), {"GL101"}),
        (("--ignore", "GL2"), {"GL101"}),
        (("--select", "GL1,GL2", "--ignore", "GL101"), {"GL201"}),
        (("--select", "GL2", "--select", "GL101"), {"GL101", "GL201"}),
        (("--ignore", "GL1", "--extend-select", "GL101"), {"GL101", "GL201"}),
    ],
)
def test_select_and_ignore(
    project: Path, flags: tuple[str, ...], codes: set[str]
) -> None:
    _, out, _ = run("check", "--format", "lsp", *flags, "bad.py", cwd=project)
    found = {d["code"] for entry in json.loads(out) for d in entry["diagnostics"]}
    assert found == codes


def test_unknown_code_is_a_usage_error(project: Path) -> None:
    code, _, err = run("check", "--select", "GL999", "bad.py", cwd=project)
    assert code == 2
    assert "unknown code or prefix 'GL999'" in err


def test_suppression_comments(tmp_path: Path) -> None:
    source = BAD.replace(
        "y = x.sum().item()", "y = x.sum().item()  # graphlint: ignore[GL101]"
    )
    source = source.replace("if x.mean() > 0:", "if x.mean() > 0:  # graphlint: ignore")
    (tmp_path / "s.py").write_text(source)
    assert run("check", "s.py", cwd=tmp_path)[0] == 0
    other = BAD.replace(
        "y = x.sum().item()", "y = x.sum().item()  # graphlint: ignore[GL201]"
    )
    (tmp_path / "o.py").write_text(other)
    assert "o.py:8:9: GL101" in run("check", "o.py", cwd=tmp_path)[1]


def test_config_in_pyproject(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphlint]\nignore = ["GL2"]\n')
    _, out, _ = run("check", "--format", "lsp", "bad.py", cwd=project)
    assert {d["code"] for e in json.loads(out) for d in e["diagnostics"]} == {"GL101"}


def test_config_found_from_a_subfolder_and_exclude(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.graphlint]\nexclude = ["generated/"]\n'
    )
    (project / "generated").mkdir()
    (project / "generated" / "g.py").write_text(BAD)
    (project / "src").mkdir()
    (project / "src" / "s.py").write_text(BAD)
    _, out, _ = run("check", ".", cwd=project)
    assert "generated" not in out and "src/s.py" in out
    # an excluded file named explicitly is checked (ruff's way); with
    # --force-exclude (the pre-commit hook's) it stays excluded
    code, out, _ = run("check", "generated/g.py", cwd=project)
    assert code == 1 and "generated/g.py" in out
    code, out, _ = run("check", "--force-exclude", "generated/g.py", cwd=project)
    assert code == 0


def test_capture_markers_config(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.graphlint]\ncapture-markers = ["mylib.graphs.captured"]\n'
    )
    (tmp_path / "m.py").write_text(
        "import torch\nfrom mylib.graphs import captured\n\n@captured\n"
        "def step(x: torch.Tensor):\n    return x.sum().item()\n"
    )
    code, out, _ = run("check", "m.py", cwd=tmp_path)
    assert code == 1 and "m.py:6:12: GL101" in out
    assert "marked region" in out


def test_capture_marker_on_a_class_marks_its_forward(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.graphlint]\ncapture-markers = ["mylib.compile.supported"]\n'
    )
    (tmp_path / "m.py").write_text(
        "import torch\nfrom mylib.compile import supported\n\n"
        "@supported\nclass Model(torch.nn.Module):\n"
        "    def forward(self, x: torch.Tensor):\n"
        "        return x.sum().item()\n\n"
        "    def helper(self, x: torch.Tensor):\n"
        "        return x.sum().item()\n"
    )
    code, out, _ = run("check", "m.py", cwd=tmp_path)
    assert code == 1 and "m.py:7:16: GL101" in out and "m.py:10:" not in out
    assert "marked region" in out


def test_capture_checks_config(tmp_path: Path) -> None:
    """A project's own "is the stream capturing?" function guards like PyTorch's, in
    the file and in code the region reaches in another file."""
    (tmp_path / "m.py").write_text(
        "import torch\nfrom mylib.graphs import capturing\nimport helper\n\n"
        "def step(x: torch.Tensor, g: torch.cuda.CUDAGraph):\n"
        "    with torch.cuda.graph(g):\n"
        "        if not capturing():\n"
        "            print(x.sum().item())\n"
        "        helper.log(x)\n"
    )
    (tmp_path / "helper.py").write_text(
        "import torch\nfrom mylib.graphs import capturing\n\n"
        "def log(x: torch.Tensor):\n"
        "    if capturing():\n"
        "        return\n"
        "    print(x.max().item())\n"
    )
    code, out, _ = run("check", "m.py", "--select", "GL1", cwd=tmp_path)
    assert code == 1 and "m.py:8:19: GL101" in out and "helper.py:7:" in out
    (tmp_path / "pyproject.toml").write_text(
        '[tool.graphlint]\ncapture-checks = ["mylib.graphs.capturing"]\n'
    )
    code, out, _ = run("check", "m.py", "--select", "GL1", cwd=tmp_path)
    assert code == 0, out


def test_capture_roots_config(tmp_path: Path) -> None:
    """A declared root is a region in a file with no capture written in it; one
    that names no module is a warning line, and the check still runs. Its findings
    concern its own file, not another file named alone."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.graphlint]\ncapture-roots = ["app.model:Model.forward", "app.gone:f"]\n'
    )
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "model.py").write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n"
        "    def forward(self, x: torch.Tensor):\n"
        "        return x.sum().item()\n"
    )
    (tmp_path / "app" / "run.py").write_text("from app.model import Model\n")
    assert run("check", "app/run.py", cwd=tmp_path)[0] == 0
    code, out, err = run("check", "app/model.py", cwd=tmp_path)
    assert code == 1 and "app/model.py:5:16: GL101" in out
    assert "[capture root region, line 4]" in out
    assert err.strip() == (
        "graphlint: warning: capture root 'app.gone:f' names nothing: no module "
        f"app.gone under {tmp_path.resolve()}"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[tool.graphlint]\nselct = ["GL1"]\n', "unknown key 'selct'"),
        ('[tool.graphlint]\ncapture-roots = "m:f"\n', "must be a list of strings"),
        (
            '[tool.graphlint]\ncapture-roots = ["pkg.model.Model.forward"]\n',
            'must name functions as "module:qualname"',
        ),
        ('[tool.graphlint]\ncapture-roots = ["pkg:1f"]\n', "not 'pkg:1f'"),
        ('[tool.graphlint]\nselect = "GL1"\n', "must be a list of strings"),
        ("[tool.graphlint]\nmax-file-size = -1\n", "must be a whole number from 1"),
        ('[tool.graphlint]\nignore = ["XYZ"]\n', "unknown code or prefix 'XYZ'"),
        ("[tool.graphlint\n", "not valid TOML"),
    ],
)
def test_config_errors_are_clear(project: Path, content: str, message: str) -> None:
    (project / "cfg.toml").write_text(content)
    (project / "pyproject.toml").write_text(content)
    code, out, err = run("check", "--config", "pyproject.toml", "bad.py", cwd=project)
    assert code == 2
    assert message in err
    assert "Traceback" not in out + err


def test_missing_path(project: Path) -> None:
    code, _, err = run("check", "nope.py", "bad.py", cwd=project)
    assert code == 2
    assert "no such file or directory: nope.py" in err


def test_missing_config_file(project: Path) -> None:
    code, _, err = run("check", "--config", "missing.toml", "bad.py", cwd=project)
    assert code == 2 and "config file not found" in err


def test_colour_only_when_asked(project: Path) -> None:
    assert "\x1b[" not in run("check", "bad.py", cwd=project)[1]
    assert "\x1b[" in run("check", "--color", "always", "bad.py", cwd=project)[1]


def test_rules_and_explain(project: Path) -> None:
    code, out, _ = run("rules")
    assert code == 0 and "GL101  device-to-host-copy" in out and "GL006*" in out
    code, out, _ = run("explain", "gl201")
    assert code == 0 and out.startswith("# GL201 tensor-truth-value")
    assert run("explain", "tensor-truth-value")[1] == out  # a rule's name works too
    code, _, err = run("explain", "GL999")
    assert code == 2 and "unknown rule 'GL999'" in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal")
def test_explain_renders_markdown_on_a_terminal() -> None:
    import pty  # noqa: PLC0415 - POSIX only

    main, child = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-m", "graphlint", "explain", "GL201"],
        stdout=child,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
        check=True,
        timeout=60,
    )
    os.close(child)
    shown = b""
    with contextlib.suppress(OSError):  # EIO once everything is read
        while chunk := os.read(main, 65536):
            shown += chunk
    os.close(main)
    text = shown.decode()
    assert done.returncode == 0
    assert "GL201 tensor-truth-value" in text and "# GL201" not in text
    assert "```" not in text  # code blocks are drawn, not fenced


def test_version_and_help() -> None:
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("graphlint ")
    code, out, _ = run("check", "--help")
    assert code == 0 and "--select" in out and "--format" in out


def test_installed_command_and_module_entry(project: Path) -> None:
    """The console script and ``python -m graphlint`` run the same CLI."""
    proc = subprocess.run(
        [sys.executable, "-m", "graphlint", "check", "bad.py"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "GL101" in proc.stdout
    assert proc.stderr == ""


def test_a_run_with_nothing_to_check_imports_no_analysis(tmp_path: Path) -> None:
    """Starting is cheap: no LibCST, rules, project pass or pydantic before a file
    needs them (issue #14: an empty folder in 0.15 s), no pathspec or RE2 before a
    pattern is compiled, no fixer in a run that fixes nothing."""
    script = (
        "import sys\n"
        "from graphlint.cli import main\n"
        "sys.argv = ['graphlint', 'check', '--no-cache', '.']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('libcst', 'pydantic', 'graphlint.engine', 'graphlint.project.reach',"
        " 'pathspec', 're2', 'graphlint.fixer')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run(
        # -P (3.11 on): the working folder is not on the path
        [
            sys.executable,
            *(["-P"] if sys.version_info >= (3, 11) else []),
            "-c",
            script,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "[]"


# ``x @ x`` needs a warm-up (cuBLAS), which the capture in TRAIN lacks (GL703)
MODEL = "def step(x):\n    return x.sum().item() * (x @ x)\n"
TRAIN = textwrap.dedent(
    """\
    import torch
    from pkg.model import step

    x = torch.zeros(4, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = step(x)
    """
)


def _package(root: Path, marker: str | None = "pyproject.toml") -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(MODEL)
    (root / "pkg" / "train.py").write_text(TRAIN)
    if marker is not None:
        (root / marker).mkdir() if marker == ".git" else (root / marker).write_text("")
    return root


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.py", ".git"])
def test_a_file_named_alone_is_checked_with_the_regions_that_reach_it(
    tmp_path: Path, marker: str
) -> None:
    """The pre-commit hook names only the edited model file: the region in another
    file of its project still reaches it, and only the named file is reported."""
    root = _package(tmp_path, marker)
    code, out, _ = run("check", "--no-cache", "pkg/model.py", cwd=root)
    assert code == 1
    assert "pkg/model.py:2:12: GL101" in out
    assert "region at pkg/train.py:6, reached from pkg/train.py:7" in out
    assert "train.py:6:6: GL703" not in out  # found, but in a file not named
    assert out.splitlines()[-1].startswith("Found 1 diagnostic (1 error) in 1 of 1")
    _, inside, _ = run("check", "--no-cache", "model.py", cwd=root / "pkg")
    assert "model.py:2:12: GL101" in inside
    # the region's file named: what its region reaches concerns it too
    _, out, _ = run("check", "--no-cache", "pkg/train.py", cwd=root)
    assert "pkg/model.py:2:12: GL101" in out and "pkg/train.py:6:6: GL703" in out


def test_show_reach_lists_the_regions_elsewhere_that_reach_a_named_file(
    tmp_path: Path,
) -> None:
    root = _package(tmp_path)
    (root / "pkg" / "other.py").write_text(TRAIN.replace("step(x)", "x.sum()"))
    _, out, _ = run("check", "--no-cache", "--show-reach", "pkg/model.py", cwd=root)
    assert (
        "pkg/train.py:6: torch.cuda.graph region\n    reaches pkg/model.py:1 step"
        in out
    )
    assert "pkg/other.py" not in out  # a region that does not reach it


def test_alone_and_a_folder_without_a_project_check_the_named_file_alone(
    tmp_path: Path,
) -> None:
    root = _package(tmp_path / "p")
    code, out, _ = run("check", "--no-cache", "--alone", "pkg/model.py", cwd=root)
    assert (code, "GL101" in out) == (0, False)
    bare = _package(tmp_path / "bare", marker=None)
    code, out, _ = run("check", "--no-cache", "pkg/model.py", cwd=bare)
    assert (code, "GL101" in out) == (0, False)


def test_a_home_folder_is_no_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dotfiles kept in git make the home folder a repository: a file below it that
    belongs to no project of its own is checked alone, not with the whole home."""
    from graphlint.files import project_root  # noqa: PLC0415

    home = _package(tmp_path / "home", marker=".git")
    monkeypatch.setenv("HOME", str(home))
    assert project_root(home / "pkg" / "model.py") is None
    (home / "pkg" / "setup.cfg").write_text("")
    assert project_root(home / "pkg" / "model.py") == (home / "pkg").resolve()
