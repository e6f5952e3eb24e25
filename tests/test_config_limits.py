"""What a checked repository's configuration may do: compile its per-file-ignores
once, and not too many of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint import gitignore
from graphlint.config import MAX_PER_FILE_IGNORES, load
from graphlint.gitignore import IgnoreFile, PatternSet
from tests.test_cli import run


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
