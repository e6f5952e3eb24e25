"""What a checked repository's configuration may do: lower the limits, never raise
them (the command line, the environment and the user's own configuration do); read
nothing out of the repository; compile its per-file-ignores once, and not too many
of them. A broken configuration in a subfolder is a warning, and standard input is
read no further than the size limit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graphlint import gitignore
from graphlint.config import MAX_PER_FILE_IGNORES, load
from graphlint.gitignore import IgnoreFile, PatternSet
from tests.conftest import GRAPHLINT, graphlint
from tests.test_cli import BAD, MODEL, TRAIN, run


def _settings(out: str) -> dict[str, str]:
    """``--show-settings``' limit lines: key -> "value  # origin"."""
    found = {}
    for line in out.splitlines():
        key, equals, rest = line.partition(" = ")
        if equals and key in ("max-file-size", "timeout", "max-memory"):
            found[key] = rest
    return found


def _one_warning(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("graphlint: warning: "), err
    return err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree (its top is the repository) beside a folder outside it."""
    tree = tmp_path / "repo"
    (tree / ".git").mkdir(parents=True)
    (tree / "a.py").write_text(BAD)
    outside = tmp_path / "outside"
    outside.mkdir()
    return tree


# -- 1. per-file-ignores: compiled once, and bounded -----------------------------------
def _count_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    compiled: list[str] = []
    real = gitignore.compile_pattern

    def counting(line: str) -> gitignore.Pattern | None:
        compiled.append(line)
        return real(line)

    monkeypatch.setattr(gitignore, "compile_pattern", counting)
    return compiled


def _patterns(count: int) -> str:
    entries = ", ".join(f'"gen{i}/**" = ["GL1"]' for i in range(count))
    return f"per-file-ignores = {{ {entries} }}\n"


def test_per_file_ignores_are_compiled_once_per_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N files and M patterns compile M matchers, not N x M (2,000 patterns cost
    84 s on 300 files that way)."""
    files, patterns = 40, 30
    (tmp_path / "graphlint.toml").write_text(_patterns(patterns))
    for i in range(files):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    compiled = _count_compiles(monkeypatch)
    config = load(tmp_path / "graphlint.toml", tmp_path)
    for i in range(files):
        assert "GL101" in config.enabled_for(tmp_path / f"m{i}.py")
    assert "GL101" not in config.enabled_for(tmp_path / "gen7" / "x.py")
    assert len(compiled) == patterns
    compiled.clear()
    code, out, _ = run("check", "--no-cache", ".", cwd=tmp_path)
    assert code == 0, out
    assert len(compiled) <= patterns  # the run's configuration, once


def test_per_file_ignores_decide_one_by_one_as_before(tmp_path: Path) -> None:
    """Each pattern excludes what it would alone (a negated one excludes nothing)."""
    patterns = ["tests/**", "*.gen.py", "a/", "!b.py", "x/**/y.py", "/top.py"]
    patterns += ["sub/", "d?r/*", "[ab]*/c.py", "**/gen", "a/**/", "[z-a]"]
    paths = ["tests/t.py", "a/b.py", "b.py", "x/y.py", "x/1/2/y.py", "top.py"]
    paths += ["q/top.py", "sub/x.py", "q/sub/z.py", "dir/x.py", "a/c.py"]
    paths += ["b/c.py", "gen/x.py", "z/gen/k.py", "m.gen.py", "a/q/r.py", "z.py"]
    together = PatternSet(tmp_path, patterns)
    for path in paths:
        alone = {
            i
            for i, pattern in enumerate(patterns)
            if IgnoreFile(tmp_path, [pattern]).excludes(tmp_path / path)
        }
        assert together.matching(tmp_path / path) == alone, path


def test_too_many_per_file_ignores_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "graphlint.toml").write_text(_patterns(MAX_PER_FILE_IGNORES))
    assert run("check", "--no-cache", "a.py", cwd=tmp_path)[0] == 0
    (tmp_path / "graphlint.toml").write_text(_patterns(MAX_PER_FILE_IGNORES + 1))
    code, out, err = run("check", "a.py", cwd=tmp_path)
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert f"has {MAX_PER_FILE_IGNORES + 1} patterns, more than the 1000" in err


# -- 2. limits: the repository lowers, the user raises ----------------------------------
def test_a_repository_may_lower_a_limit(repo: Path) -> None:
    (repo / "graphlint.toml").write_text("timeout = 5\nmax-file-size = 100\n")
    code, out, err = run("check", "--show-settings", "a.py", cwd=repo)
    assert (code, err) == (0, "")
    shown = _settings(out)
    assert shown["timeout"] == f"5.0  # from {repo / 'graphlint.toml'}"
    assert shown["max-file-size"] == f"100  # from {repo / 'graphlint.toml'}"
    assert shown["max-memory"] == "2048  # graphlint's default"
    out = run("check", "--no-cache", "a.py", cwd=repo)[1]
    assert "GL003" in out and "over the 100-byte limit" in out


@pytest.mark.parametrize("name", ["graphlint.toml", "pyproject.toml"])
def test_a_repository_cannot_raise_a_limit(repo: Path, name: str) -> None:
    table = "[tool.graphlint]\n" if name == "pyproject.toml" else ""
    (repo / name).write_text(
        f"{table}timeout = 600\nmax-file-size = 16777216\nmax-memory = 16384\n"
    )
    code, out, err = run("check", "--show-settings", "a.py", cwd=repo)
    assert code == 0
    assert _settings(out) == {
        "max-file-size": "1048576  # graphlint's default",
        "timeout": "60.0  # graphlint's default",
        "max-memory": "2048  # graphlint's default",
    }
    lines = err.splitlines()
    assert len(lines) == 3 and all(
        line.startswith("graphlint: warning: ") for line in lines
    )
    assert "asks for timeout = 600, more than the 60 allowed" in lines[1]
    assert "60 is kept: a repository may only lower limits" in lines[1]


def test_a_raised_size_limit_is_not_taken_from_the_repository(repo: Path) -> None:
    """The limit kept is the one enforced: a file over it is GL003."""
    (repo / "graphlint.toml").write_text("max-file-size = 1000\n")
    (repo / "big.py").write_text("x = 1\n" * 100)  # 600 bytes
    code, out, err = run("check", "--no-cache", "--max-file-size", "500", cwd=repo)
    assert code == 1 and "big.py:1:1: GL003" in out and "over the 500-byte limit" in out
    assert "asks for max-file-size = 1000, more than the 500 allowed " in err
    assert "(from --max-file-size); 500 is kept" in err


def test_a_limit_raised_through_extend_is_not_taken(repo: Path) -> None:
    (repo / "base.toml").write_text("timeout = 300\n")
    (repo / "graphlint.toml").write_text('extend = "base.toml"\n')
    code, out, err = run("check", "--show-settings", "a.py", cwd=repo)
    assert code == 0 and _settings(out)["timeout"] == "60.0  # graphlint's default"
    assert f"{repo / 'base.toml'} asks for timeout = 300" in _one_warning(err)


def test_the_user_raises_limits_command_line_first(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Command line > environment > the user's configuration > defaults; the
    repository's value applies where it is lower."""
    user = Path(os.environ["GRAPHLINT_CONFIG_DIR"]) / "graphlint.toml"
    user.write_text("timeout = 100\nmax-file-size = 2000000\nmax-memory = 3000\n")
    monkeypatch.setenv("GRAPHLINT_TIMEOUT", "200")
    monkeypatch.setenv("GRAPHLINT_MAX_MEMORY", "4000")
    (repo / "graphlint.toml").write_text("max-file-size = 1500000\nmax-memory = 8000\n")
    code, out, err = run("check", "--show-settings", "--max-memory", "5000", cwd=repo)
    assert code == 0
    assert _settings(out) == {
        "max-file-size": f"1500000  # from {repo / 'graphlint.toml'}",
        "timeout": "200.0  # from GRAPHLINT_TIMEOUT",
        "max-memory": "5000  # from --max-memory",
    }
    assert "asks for max-memory = 8000, more than the 5000 allowed" in _one_warning(err)
    monkeypatch.delenv("GRAPHLINT_TIMEOUT")
    out = run("check", "--show-settings", "--timeout", "7.5", cwd=repo)[1]
    assert _settings(out)["timeout"] == "7.5  # from --timeout"
    out = run("check", "--show-settings", cwd=repo)[1]
    assert _settings(out)["timeout"] == f"100.0  # from the user configuration {user}"


def test_a_configuration_named_with_config_may_raise_limits(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "ci.toml").write_text("timeout = 300\nmax-memory = 512\n")
    code, out, err = run("check", "--show-settings", "--config", "ci.toml", cwd=repo)
    assert (code, err) == (0, "")
    shown = _settings(out)
    assert shown["timeout"] == "300.0  # from ci.toml"
    assert shown["max-memory"] == "512  # from ci.toml"
    monkeypatch.setenv("GRAPHLINT_TIMEOUT", "20")  # the environment comes first
    out = run("check", "--show-settings", "--config", "ci.toml", cwd=repo)[1]
    assert _settings(out)["timeout"] == "20.0  # from GRAPHLINT_TIMEOUT"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--timeout", "nan", "--timeout must be a number from 0.001 to 600, not 'nan'"),
        ("--timeout", "inf", "not 'inf'"),
        ("--timeout", "0", "not '0'"),
        ("--timeout", "601", "not '601'"),
        ("--timeout", "soon", "not 'soon'"),
        ("--max-file-size", "1.5", "--max-file-size must be a whole number from 1"),
        ("--max-file-size", "16777217", "not '16777217'"),
        ("--max-memory", "255", "--max-memory must be a whole number from 256"),
        ("--max-memory", "", "not ''"),
    ],
)
def test_bad_limits_on_the_command_line(
    repo: Path, option: str, value: str, message: str
) -> None:
    code, out, err = run("check", option, value, "a.py", cwd=repo)
    assert code == 2 and out == ""
    assert err.startswith("graphlint: error: ") and err.count("\n") == 1
    assert message in err


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("GRAPHLINT_TIMEOUT", "1e300"),
        ("GRAPHLINT_MAX_FILE_SIZE", "0"),
        ("GRAPHLINT_MAX_MEMORY", "lots"),
    ],
)
def test_bad_limits_in_the_environment(
    repo: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    code, out, err = run("check", "a.py", cwd=repo)
    assert code == 2 and out == ""
    assert err.startswith(f"graphlint: error: {variable} must be a ")
    assert err.count("\n") == 1 and f"not {value!r}" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("timeout = 601\n", "'timeout' in "),
        ('select = ["GL1"]\n', "unknown key 'select' in "),
        ("timeout = [\n", "is not valid TOML"),
    ],
)
def test_a_bad_user_configuration_is_an_error(
    repo: Path, text: str, message: str
) -> None:
    (Path(os.environ["GRAPHLINT_CONFIG_DIR"]) / "graphlint.toml").write_text(text)
    code, _, err = run("check", "a.py", cwd=repo)
    assert code == 2 and message in err and err.count("\n") == 1


# -- 3. nothing out of the repository is read -------------------------------------------
SECRET = "hunter2_outside_the_tree"  # written only in files out of the repository


def _outside_config(repo: Path) -> Path:
    """A file out of the repository whose key names would tell what it holds."""
    outside = repo.parent / "outside" / "private.toml"
    outside.write_text(f'{SECRET} = "{SECRET}"\n')
    return outside


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text and "private.toml" not in text


@pytest.mark.parametrize("how", ["path", "link"])
def test_extend_out_of_the_repository_is_not_read(repo: Path, how: str) -> None:
    outside = _outside_config(repo)
    target = "../outside/private.toml"
    if how == "link":
        (repo / "shared.toml").symlink_to(outside)
        target = "shared.toml"
    (repo / "graphlint.toml").write_text(f'extend = "{target}"\n')
    code, out, err = run("check", "a.py", cwd=repo)
    assert code == 2 and out == ""
    assert err == (
        f"graphlint: error: 'extend' in {repo / 'graphlint.toml'} leads out of "
        f"the repository ({repo}); it is not read\n"
    )
    _no_secret(err)
    # named with --config, the same file is the user's own choice
    code, _, err = run("check", "--config", "graphlint.toml", "a.py", cwd=repo)
    assert code == 2 and f"unknown key '{SECRET}'" in err
    # within the repository, a configuration extends one in a folder above
    (repo / "pyproject.toml").write_text('[tool.graphlint]\nignore = ["GL201"]\n')
    app = repo / "app"
    app.mkdir()
    (app / "b.py").write_text(BAD)
    (app / "graphlint.toml").write_text('extend = "../pyproject.toml"\n')
    code, out, err = run("check", "--no-cache", "b.py", cwd=app)
    assert code == 1 and "GL101" in out and "GL201" not in out and err == ""


def test_source_roots_out_of_the_repository_are_not_used(repo: Path) -> None:
    lib = repo.parent / "outside" / "lib"
    lib.mkdir()
    (lib / "helper.py").write_text(f"def step(x):\n    return x.item()  # {SECRET}\n")
    (repo / "graphlint.toml").write_text(
        'source-roots = ["../outside/lib", "src"]\ncapture-roots = ["helper:step"]\n'
    )
    code, out, err = run("check", "--no-cache", "--show-reach", ".", cwd=repo)
    _no_secret(out, err)
    assert code == 1 and "a.py:8:9: GL101" in out and "helper.py" not in out
    warning, missing = err.splitlines()
    assert warning == (
        f"graphlint: warning: 'source-roots' in {repo / 'graphlint.toml'}: "
        f"'../outside/lib' leads out of the repository ({repo}); it is not used"
    )
    assert missing.startswith("graphlint: warning: capture root 'helper:step'")
    out = run("check", "--show-settings", cwd=repo)[1]
    assert f'source-roots = ["{repo / "src"}"]' in out.splitlines()
    # named with --config, the configuration may look there
    code, out, _ = run(
        "check", "--no-cache", "--config", "graphlint.toml", ".", cwd=repo
    )
    assert code == 1 and "helper.py:2:12: GL101" in out


def _linked_package(repo: Path) -> Path:
    """``pkg.model`` is a committed link to a file out of the repository."""
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "train.py").write_text(TRAIN)
    secret = repo.parent / "outside" / "model.py"
    secret.write_text(MODEL.replace("item()", f"item()  # {SECRET}") + "x = (\n")
    (repo / "pkg" / "model.py").symlink_to(secret)
    return secret


def test_a_committed_link_out_of_the_repository_is_not_read(repo: Path) -> None:
    _linked_package(repo)
    code, out, err = run("check", "--no-cache", "--show-reach", ".", cwd=repo)
    _no_secret(out, err)
    assert code == 1
    assert (
        "pkg/model.py:1:1: GL004 file cannot be read: a link out of the repository"
        in out
    )
    assert "GL001" not in out and "model.py:2" not in out
    # named alone, as a pre-commit hook names it
    code, out, err = run("check", "--no-cache", "pkg/model.py", cwd=repo)
    _no_secret(out, err)
    assert "GL004" in out
    # a link that stays in the repository is read as before
    (repo / "pkg" / "model.py").unlink()
    (repo / "real.py").write_text(MODEL)
    (repo / "pkg" / "model.py").symlink_to(repo / "real.py")
    out = run("check", "--no-cache", "pkg/train.py", cwd=repo)[1]
    assert "real.py:2:12: GL101" in out


def test_a_module_looked_up_through_a_link_is_not_read(repo: Path) -> None:
    """Reached through an import or a capture root, a module whose file links out
    of the repository is not summarised: nothing of it (names, size, syntax)
    reaches the output."""
    _linked_package(repo)
    (repo / "graphlint.toml").write_text('capture-roots = ["pkg.model:step"]\n')
    code, out, err = run(
        "check", "--no-cache", "--show-reach", "pkg/train.py", cwd=repo
    )
    _no_secret(out, err)
    assert code == 1 and "model.py:2" not in out and "GL001" not in out
    assert "pkg/model.py:1:1: GL004 file cannot be read: a link out of the " in out
    assert "names nothing: " in err and "pkg/model.py could not be read" in err
    (repo / "pkg" / "model.py").unlink()
    src = repo.parent / "outside" / "src"
    src.mkdir()
    (src / "mod.py").write_text(f"def f(x):\n    return x.item()  # {SECRET}\n")
    (repo / "src").symlink_to(src)
    (repo / "graphlint.toml").write_text('capture-roots = ["mod:f"]\n')
    code, out, err = run("check", "--no-cache", "--show-reach", ".", cwd=repo)
    _no_secret(out, err)
    assert code == 1 and "mod.py:2" not in out
    assert "src/mod.py:1:1: GL004 file cannot be read: a link out of the " in out


@pytest.mark.parametrize("name", [".graphlint.toml", "graphlint.toml"])
def test_a_configuration_linked_out_of_the_repository_is_not_read(
    repo: Path, name: str
) -> None:
    (repo / name).symlink_to(_outside_config(repo))
    code, out, err = run("check", "a.py", cwd=repo)
    assert code == 2 and out == ""
    assert err == (
        f"graphlint: error: {repo / name} is a link out of its repository "
        f"({repo}); it is not read\n"
    )
    _no_secret(err)


def test_a_pyproject_linked_out_of_the_repository_is_skipped(repo: Path) -> None:
    outside = repo.parent / "outside" / "pyproject.toml"
    outside.write_text(f'[tool.graphlint]\n{SECRET} = 1\nignore = ["GL1"]\n')
    (repo / "pyproject.toml").symlink_to(outside)
    code, out, err = run("check", "--no-cache", "a.py", cwd=repo)
    assert code == 1 and "GL101" in out
    assert _one_warning(err) == (
        f"graphlint: warning: skipping {repo / 'pyproject.toml'}: a link out of its "
        f"repository ({repo})\n"
    )


# -- 4. a broken configuration below the run's own --------------------------------------
@pytest.mark.parametrize(
    "kind", ["toml", "fifo", "unknown-key", "bad-code", "link-out", "pyproject"]
)
def test_a_broken_nested_configuration_is_a_warning(repo: Path, kind: str) -> None:
    """The folder's files then follow the configuration above; nothing hangs."""
    (repo / "pyproject.toml").write_text('[tool.graphlint]\nignore = ["GL201"]\n')
    sub = repo / "sub"
    sub.mkdir()
    (sub / "b.py").write_text(BAD)
    nested = sub / ("pyproject.toml" if kind == "pyproject" else ".graphlint.toml")
    if kind == "fifo":
        os.mkfifo(nested)
    elif kind == "link-out":
        nested.symlink_to(_outside_config(repo))
    else:
        nested.write_text(
            {
                "toml": 'ignore = ["GL1"\n',
                "unknown-key": 'ignore = ["GL1"]\nignor = ["GL7"]\n',
                "bad-code": 'ignore = ["GL999"]\n',
                "pyproject": '[tool.graphlint]\nignore = ["GL1"\n',
            }[kind]
        )
    done = graphlint("check", "--no-cache", ".", cwd=repo, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "sub/b.py:8:9: GL101" in done.stdout and "GL201" not in done.stdout
    assert done.stderr.startswith("graphlint: warning: skipping ")
    assert str(nested) in done.stderr and done.stderr.count("\n") == 1
    assert done.stderr.endswith("; the configuration above applies there\n")
    _no_secret(done.stderr)
    # the run's own configuration broken is still an error
    nested.unlink()
    os.mkfifo(repo / ".graphlint.toml")
    done = graphlint("check", "--no-cache", ".", cwd=repo, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("graphlint: error: cannot read ")


@pytest.mark.parametrize("how", ["path", "link"])
def test_a_nested_configuration_reads_nothing_out_of_the_repository(
    repo: Path, how: str
) -> None:
    """With no configuration above it, too: its extend is a warning."""
    outside = _outside_config(repo)
    target = "../../outside/private.toml"
    if how == "link":
        (repo / "shared.toml").symlink_to(outside)
        target = "../shared.toml"
    (repo / "sub").mkdir()
    (repo / "sub" / "graphlint.toml").write_text(f'extend = "{target}"\n')
    (repo / "sub" / "b.py").write_text(BAD)
    code, out, err = run("check", "--no-cache", ".", cwd=repo)
    assert code == 1 and "sub/b.py:8:9: GL101" in out
    assert "leads out of the repository" in _one_warning(err)
    _no_secret(err)


# -- 5. standard input is read no further than the size limit ---------------------------
def test_stdin_is_read_up_to_one_byte_over_the_size_limit(repo: Path) -> None:
    """As much as the limit allows, and one byte more to see it is over: GL003,
    for however much more there is."""
    text = "x = 1\n" * 20  # 120 bytes
    done = graphlint(
        "check", "--no-cache", "--max-file-size", "120", "-", cwd=repo, input=text
    )
    assert done.returncode == 0, done.stdout
    done = graphlint(
        "check", "--no-cache", "--max-file-size", "119", "-", cwd=repo, input=text
    )
    assert done.returncode == 1 and "-:1:1: GL003" in done.stdout
    assert "file is 120 bytes, over the 119-byte limit" in done.stdout
    done = graphlint(
        "check", "--no-cache", "--max-file-size", "119", "-", cwd=repo, input=text * 50
    )
    assert done.returncode == 1 and "-:1:1: GL003" in done.stdout
    assert "file is 120 bytes, over the 119-byte limit" in done.stdout  # not 6000


def test_an_endless_stdin_is_not_read_to_its_end(repo: Path) -> None:
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run(
            [*GRAPHLINT, "check", "--no-cache", "--max-file-size", "1000", "-"],
            cwd=repo,
            stdin=zero,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    assert "GL003" in done.stdout and "over the 1000-byte limit" in done.stdout
    done = graphlint("check", "--no-cache", "-", cwd=repo, stdin=subprocess.DEVNULL)
    assert done.returncode == 0  # nothing on stdin: an empty file
