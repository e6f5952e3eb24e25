"""File discovery on a hostile repository (issue #11): no pattern, .gitignore or path
makes the walk hang, fill memory or stop the run; what cannot be read is reported
(GL004) and everything else is still checked."""

from __future__ import annotations

import errno
import os
import random
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graphlint.files import collect
from graphlint.gitignore import MAX_FILE_SIZE, MAX_PATTERN, IgnoreFile
from tests.conftest import GRAPHLINT, WARMED, graphlint
from tests.test_cli import run

HAZARD = WARMED + "    v = x.item()\n"
REPORTED = "ok.py:8:9: GL101 "  # what HAZARD in ok.py yields
# 30 bytes that kept Python's backtracking ``re`` busy for over 120 s on one name
BACKTRACKING = "*a*a*a*a*a*a*a*a*a*a*a*a*a*ab"
LOOP = os.strerror(errno.ELOOP)
MISSING = os.strerror(errno.ENOENT)
DENIED = os.strerror(errno.EACCES)
TOO_LONG = os.strerror(errno.ENAMETOOLONG)


def names(paths: list[Path], root: Path) -> set[str]:
    return {os.path.relpath(p, root.resolve()) for p in paths}


def problems(root: Path, *paths: Path) -> dict[str, str]:
    """What ``collect`` could not read under ``paths`` (default ``root``), by name."""
    found = collect(list(paths) or [root]).unreadable
    return {os.path.relpath(path, root.resolve()): reason for path, reason in found}


def gl004(name: str, reason: str) -> str:
    return f"{name}:1:1: GL004 file cannot be read: {reason}"


# -- .gitignore patterns --------------------------------------------------------------


def test_a_backtracking_pattern_is_matched_in_linear_time(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(BACKTRACKING + "\n")
    name = "a" * 40 + ".py"
    (tmp_path / name).write_text(HAZARD)
    done = graphlint("check", "--no-cache", ".", cwd=tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    assert f"{name}:8:9: GL101 " in done.stdout
    started = time.perf_counter()
    ignore = IgnoreFile(tmp_path, [BACKTRACKING])
    assert ignore.decide(tmp_path / name, is_dir=False) is None
    assert ignore.decide(tmp_path / ("a" * 40 + "b"), is_dir=False) is True
    assert time.perf_counter() - started < 1


def test_lines_that_are_not_patterns_are_dropped_alone(tmp_path: Path) -> None:
    """git skips an invalid range and a trailing backslash; the rest still applies."""
    lines = ["[z-a]", "\\", "x\\", "[[:nope:]]", "y" * (MAX_PATTERN + 1)]
    lines += ["skip.py", "[a-c]ross.py", "gen/", "!gen/"]
    ignore = IgnoreFile(tmp_path, lines)
    assert ignore.decide(tmp_path / "skip.py", is_dir=False) is True
    assert ignore.decide(tmp_path / "bross.py", is_dir=False) is True
    assert ignore.decide(tmp_path / "keep.py", is_dir=False) is None
    assert ignore.decide(tmp_path / "gen", is_dir=True) is False
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("\n".join(lines) + "\n")
    for name in ("skip.py", "bross.py", "keep.py", "gen/g.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert names(collect([tmp_path]).files, tmp_path) == {"keep.py", "gen/g.py"}


def test_a_gitignore_beyond_re2s_memory_budget_still_applies(tmp_path: Path) -> None:
    """3,000 wildcard lines are over RE2's budget for one set: split, not dropped."""
    wildcards = [f"dir{i}/file*{i}.py" for i in range(3000)]
    started = time.perf_counter()
    ignore = IgnoreFile(tmp_path, ["*.py", *wildcards, "!keep.py"])
    assert time.perf_counter() - started < 10
    assert ignore.decide(tmp_path / "keep.py", is_dir=False) is False
    assert ignore.decide(tmp_path / "other.py", is_dir=False) is True
    assert ignore.decide(tmp_path / "dir7" / "file_x7.pyc", is_dir=False) is None
    assert ignore.decide(tmp_path / "dir2999" / "file2999.py", is_dir=False) is True


def test_bytes_that_are_not_utf8_match_the_same_bytes(tmp_path: Path) -> None:
    """git compares bytes: ``bad\\xff*.py`` ignores ``bad\\xffname.py`` only."""
    root = os.fsencode(tmp_path)
    try:
        for name in (b"bad\xffname.py", b"good\xff.py", b"bad_plain.py"):
            with open(os.path.join(root, name), "w") as handle:
                handle.write("x = 1\n")
    except OSError:
        pytest.skip("the file system refuses names that are not UTF-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_bytes(b"bad\xff*.py\n")
    found = names(collect([tmp_path]).files, tmp_path)
    assert found == {os.fsdecode(b"good\xff.py"), "bad_plain.py"}


def test_a_byte_order_mark_is_not_part_of_the_first_pattern(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_bytes(b"\xef\xbb\xbfskip.py\r\n")
    (tmp_path / "skip.py").write_text("x = 1\n")
    (tmp_path / "keep.py").write_text("x = 1\n")
    assert names(collect([tmp_path]).files, tmp_path) == {"keep.py"}


def test_a_named_folder_that_git_ignores_is_walked(tmp_path: Path) -> None:
    """A pattern matches the path itself, as before: ``build/`` does not match what
    is inside build, so ``graphlint check build`` walks it (pathspec's GitIgnoreSpec
    would match everything below); the file patterns above still apply inside."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build/\n*_pb2.py\n")
    for name in ("build/gen.py", "build/x_pb2.py", "build/sub/deep.py", "top.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert names(collect([tmp_path]).files, tmp_path) == {"top.py"}
    found = names(collect([tmp_path / "build"]).files, tmp_path)
    assert found == {"build/gen.py", "build/sub/deep.py"}
    ignore = IgnoreFile(tmp_path, ["build/"])
    assert ignore.decide(tmp_path / "build", is_dir=True) is True
    assert ignore.decide(tmp_path / "build" / "gen.py", is_dir=False) is None
    assert ignore.excludes(tmp_path / "build" / "gen.py")


# Lines for random .gitignore files: the shapes git's wildmatch gives meaning to.
PATTERNS = (
    *("*.py", "a", "a/", "/a", "b/", "build/", "/build/", "x.py", "/x.py", "?.py"),
    *("[ab].py", "[!a].py", "test_*.py", "*a*", "*", "*/", "**/", "a/b", "a/b/"),
    *(
        "src/**/x.py",
        "**/gen",
        "**/gen/",
        "gen/**",
        "a/**/b.py",
        "deep/**/",
        "/**/a.py",
    ),
    *("**/b/**/*.py", "deep/**", "pkg/*", "pkg/*/", "src/*.py", "*/a.py", "**/pkg"),
    *("!x.py", "!a.py", "!*.py", "!src/", "!build/", "!pkg/a.py", "!a/", "!*a*"),
    *("\\#a.py", "#a.py", "\\!x.py", " a.py", "a.py ", "a.py\\ ", "a.py/", "[z-a].py"),
)
NAMES = ("a", "b", "build", "src", "pkg", "gen", "deep", "x.py", "a.py", "test_a.py")


def _random_tree(root: Path, rng: random.Random, depth: int = 0) -> None:
    for _ in range(rng.randint(1, 4)):
        path = root / rng.choice(NAMES)
        if path.exists():
            continue
        if path.suffix != ".py" and depth < 3 and rng.random() < 0.6:
            path.mkdir()
            _random_tree(path, rng, depth + 1)
            if rng.random() < 0.3:
                lines = rng.sample(PATTERNS, rng.randint(1, 4))
                (path / ".gitignore").write_text("\n".join(lines) + "\n")
        elif not path.with_suffix(".py").exists():
            path.with_suffix(".py").write_text("x = 1\n")


def test_walks_agree_with_git_on_random_trees(tmp_path: Path) -> None:
    """The files a folder expands to are the ``.py`` files git calls untracked and
    not ignored (``git ls-files --others --exclude-standard``)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    for seed in range(150):
        rng = random.Random(seed)
        root = tmp_path / str(seed)
        root.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
        _random_tree(root, rng)
        lines = rng.sample(PATTERNS, rng.randint(1, 5))
        (root / ".gitignore").write_text("\n".join(lines) + "\n")
        listed = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "-z"],
            cwd=root,
            env=env,
            capture_output=True,
            check=True,
        ).stdout.decode()
        expected = {name for name in listed.split("\0") if name.endswith(".py")}
        assert names(collect([root]).files, root) == expected, f"seed {seed}"


# -- reading .gitignore ---------------------------------------------------------------


def test_a_fifo_gitignore_does_not_block(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / ".gitignore")
    (tmp_path / "sub" / "ok.py").write_text(HAZARD)
    done = graphlint("check", "--no-cache", "sub", cwd=tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "sub/" + REPORTED in done.stdout
    assert IgnoreFile.read(tmp_path / ".gitignore") is None


def _address_space(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def test_a_gitignore_linked_to_dev_zero_is_not_read(tmp_path: Path) -> None:
    """0.1 read it to the end: memory grew until the run died."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").symlink_to("/dev/zero")
    (tmp_path / "ok.py").write_text("x = 1\n")
    script = (
        "import sys; from pathlib import Path; from graphlint.files import collect; "
        "print([p.name for p in collect([Path(sys.argv[1])]).files])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_address_space(2 << 30),  # 2 GiB: MemoryError, not a full machine
    )
    assert (done.returncode, done.stdout) == (0, "['ok.py']\n"), done.stderr


@pytest.mark.parametrize("kind", ["folder", "oversized", "symlink"])
def test_a_gitignore_git_would_not_use_is_skipped(tmp_path: Path, kind: str) -> None:
    """A folder; over the size limit; a symlink (git >= 2.32 does not follow one)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "skip.py").write_text("x = 1\n")
    gitignore = tmp_path / ".gitignore"
    if kind == "folder":
        gitignore.mkdir()
    elif kind == "oversized":
        gitignore.write_text("skip.py\n" + "#" * MAX_FILE_SIZE + "\n")
    else:
        (tmp_path / "patterns").write_text("skip.py\n")
        gitignore.symlink_to("patterns")
    assert IgnoreFile.read(gitignore) is None
    assert names(collect([tmp_path]).files, tmp_path) == {"skip.py"}


# -- paths that cannot be read --------------------------------------------------------


def _links(root: Path) -> None:
    (root / "ok.py").write_text(HAZARD)
    (root / "loop.py").symlink_to("loop.py")
    (root / "a.py").symlink_to("b.py")
    (root / "b.py").symlink_to("a.py")
    (root / "x.py").symlink_to("missing")
    (root / "sub").mkdir()
    (root / "sub" / "loop.py").symlink_to("loop.py")


def test_links_that_lead_nowhere_are_collected_as_problems(tmp_path: Path) -> None:
    _links(tmp_path)
    found = collect([tmp_path])
    assert names(found.files, tmp_path) == {"ok.py"}
    assert problems(tmp_path) == {
        "a.py": LOOP,
        "b.py": LOOP,
        "loop.py": LOOP,
        "sub/loop.py": LOOP,
        "x.py": MISSING,
    }
    named = problems(tmp_path, tmp_path / "loop.py", tmp_path / "x.py")
    assert named == {"loop.py": LOOP, "x.py": MISSING}


def test_links_that_lead_nowhere_get_gl004_and_the_run_goes_on(tmp_path: Path) -> None:
    _links(tmp_path)
    code, out, err = run("check", "--no-cache", ".", cwd=tmp_path)
    assert code == 1, err
    for name in ("a.py", "b.py", "loop.py", "sub/loop.py"):
        assert gl004(name, LOOP) in out
    assert gl004("x.py", MISSING) in out  # the link's name, not its target's
    assert REPORTED in out
    code, out, err = run("check", "--no-cache", "loop.py", "ok.py", cwd=tmp_path)
    assert code == 1, err
    assert gl004("loop.py", LOOP) in out
    assert REPORTED in out


def test_gl004_for_paths_that_cannot_be_read_can_be_switched_off(
    tmp_path: Path,
) -> None:
    _links(tmp_path)
    code, out, err = run("check", "--no-cache", "--ignore", "GL004", ".", cwd=tmp_path)
    assert code == 1, err
    assert "GL004" not in out
    assert REPORTED in out


def test_a_name_that_is_not_utf8_is_checked(tmp_path: Path) -> None:
    try:
        with open(os.path.join(os.fsencode(tmp_path), b"bad\xffname.py"), "w") as f:
            f.write("x = (\n")
            f.write("# graphlint: capture-begin\n")  # a file graphlint parses
    except OSError:
        pytest.skip("the file system refuses names that are not UTF-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*.pyc\n")
    (tmp_path / "ok.py").write_text(HAZARD)
    assert names(collect([tmp_path]).files, tmp_path) == {
        "ok.py",
        os.fsdecode(b"bad\xffname.py"),
    }
    done = graphlint("check", "--no-cache", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "bad\\xffname.py:1:5: GL001 " in done.stdout
    assert REPORTED in done.stdout


def _deny(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """See ``folder`` as a user without its permissions does: it cannot be listed,
    and nothing in it can be looked up."""
    real_scandir, real_stat = os.scandir, os.stat

    def inside(path: Any, itself: bool) -> bool:
        if isinstance(path, int):  # a descriptor
            return False
        name = os.path.abspath(os.fsdecode(path))
        return name == str(folder) if itself else name.startswith(f"{folder}{os.sep}")

    def scandir(path: Any = ".") -> Any:
        if inside(path, itself=True):
            raise PermissionError(errno.EACCES, DENIED, path)
        return real_scandir(path)

    def stat_(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if inside(path, itself=False):
            raise PermissionError(errno.EACCES, DENIED, path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat_)


def test_a_folder_that_cannot_be_listed_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.1 crashed on ``(folder / "pyvenv.cfg").exists()``, and skipped a folder it
    could not list without a word."""
    root = tmp_path.resolve()
    (root / "ok.py").write_text(HAZARD)
    (root / "locked").mkdir()
    (root / "locked" / "inner.py").write_text("x = 1\n")
    (root / "z.py").write_text("x = 1\n")
    _deny(monkeypatch, root / "locked")
    found = collect([root])
    assert names(found.files, root) == {"ok.py", "z.py"}
    assert problems(root) == {"locked": DENIED}
    code, out, err = run("check", "--no-cache", ".", cwd=root)
    assert code == 1, err
    assert gl004("locked", DENIED) in out
    assert REPORTED in out


# -- for real, as a user without root's permission overrides -------------------------


Way = tuple[list[str], dict[str, Any]]  # a command prefix, subprocess.run's user ids
Check = Callable[..., subprocess.CompletedProcess[str]]


def _unprivileged_way() -> Way | None:
    """How to run graphlint without root's right to read anything: as is when not
    root; else as nobody, or as root without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH
    (where nobody cannot reach the interpreter); None if neither works."""
    if os.geteuid() != 0:
        return [], {}
    ways: list[Way] = [([], {"user": 65534, "group": 65534, "extra_groups": []})]
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        drop = "--bounding-set=-dac_override,-dac_read_search"
        ways.append(([setpriv, drop, "--"], {}))
    for wrap, ids in ways:
        try:
            done = subprocess.run(
                [*wrap, *GRAPHLINT, "--version"],
                capture_output=True,
                timeout=60,
                check=False,
                cwd="/",
                **ids,
            )
        except OSError:
            continue
        if done.returncode == 0:
            return wrap, ids
    return None


@pytest.fixture
def unprivileged() -> Iterator[tuple[Path, Check]]:
    """A world-readable tree, and ``graphlint check`` run there without root's
    permission overrides."""
    way = _unprivileged_way()
    if way is None:
        pytest.skip("cannot run graphlint without root's permission overrides")
    wrap, ids = way
    root = Path(tempfile.mkdtemp(prefix="graphlint-hostile-")).resolve()
    root.chmod(0o755)

    def check(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*wrap, *GRAPHLINT, "check", "--no-cache", *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            **ids,
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    try:
        yield root, check
    finally:
        for folder, dirs, _ in os.walk(root):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(root)


def test_unreadable_folders_and_files_get_gl004_for_real(
    unprivileged: tuple[Path, Check],
) -> None:
    root, check = unprivileged
    (root / "ok.py").write_text(HAZARD)
    (root / "secret.py").write_text("x = 1\n")
    (root / "locked").mkdir()
    (root / "locked" / "inner.py").write_text("x = 1\n")
    (root / "blind").mkdir()  # listed, but nothing in it can be opened
    (root / "blind" / "x.py").write_text("x = 1\n")
    for path in (root / "ok.py", root / "blind" / "x.py"):
        path.chmod(0o644)
    (root / "secret.py").chmod(0)
    (root / "locked").chmod(0)
    (root / "blind").chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    done = check(".")
    assert done.returncode == 1, done.stderr
    assert gl004("locked", DENIED) in done.stdout
    assert gl004("secret.py", DENIED) in done.stdout
    assert gl004("blind/x.py", DENIED) in done.stdout
    assert REPORTED in done.stdout
    # named on the command line: click's readable=True refused the whole run
    done = check("secret.py", "locked/inner.py", "ok.py")
    assert done.returncode == 1, done.stderr
    assert gl004("secret.py", DENIED) in done.stdout
    assert gl004("locked/inner.py", DENIED) in done.stdout
    assert REPORTED in done.stdout


# -- tree shapes ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dangling", "file"])
def test_a_git_entry_of_any_kind_is_harmless(tmp_path: Path, kind: str) -> None:
    git = tmp_path / ".git"
    if kind == "fifo":
        os.mkfifo(git)
    elif kind == "dangling":
        git.symlink_to("missing")
    else:
        git.write_text("gitdir: elsewhere\n")  # a worktree or submodule
    (tmp_path / ".gitignore").write_text("skip.py\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "src" / "skip.py").write_text("x = 1\n")
    found = names(collect([tmp_path / "src"]).files, tmp_path)
    assert found == ({"src/a.py"} if kind == "file" else {"src/a.py", "src/skip.py"})
    assert problems(tmp_path) == {}


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/d/d/.../d`` 1,200 levels down, removed bottom up afterwards:
    ``Path.mkdir(parents=True)`` and ``shutil.rmtree`` (pytest's clean-up) both
    recurse once per level and would hit the recursion limit."""
    deepest = tmp_path
    for _ in range(1200):
        deepest = deepest / "d"
        deepest.mkdir()
    try:
        yield deepest
    finally:
        for path in [deepest, *deepest.parents]:
            if path == tmp_path:
                break
            for child in path.iterdir():
                if not child.is_dir() or child.is_symlink():
                    child.unlink()
            path.rmdir()


def test_a_deep_tree_is_walked_without_recursion(tmp_path: Path, deep: Path) -> None:
    """0.1 walked one generator per folder: RecursionError past ~1,000 levels."""
    (deep / "ok.py").write_text(HAZARD)
    found = collect([tmp_path]).files
    assert names(found, tmp_path) == {os.path.join(*["d"] * 1200, "ok.py")}
    code, out, err = run("check", "--no-cache", ".", cwd=tmp_path)
    assert code == 1, err
    assert "d/" * 1200 + REPORTED in out


def test_a_path_longer_than_path_max_is_reported(tmp_path: Path) -> None:
    """Folders deeper than the OS can name by path are GL004, the rest is checked."""
    name = "n" * 200
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(30):  # 6,000 characters, past Linux's 4,096
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
            with open(
                os.open("ok.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w"
            ) as f:
                f.write("x = 1\n")
    finally:
        os.close(fd)
    found = collect([tmp_path])
    assert found.files, "the folders within reach are checked"
    (path, reason), *rest = found.unreadable
    assert (reason, rest) == (TOO_LONG, [])
    assert len(os.fsencode(path)) > 4000


def test_folder_links_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "ok.py").write_text("x = 1\n")
    (tmp_path / "d" / "loop").symlink_to("..")
    (tmp_path / "d" / "up.py").symlink_to("..")
    (tmp_path / "d" / "self").symlink_to("self")
    found = collect([tmp_path])
    assert names(found.files, tmp_path) == {"d/ok.py"}
    assert found.unreadable == []
    assert collect([tmp_path / "d" / "loop"]).files == []
    assert collect([tmp_path / "d" / "up.py"]).files == []
    assert problems(tmp_path, tmp_path / "d" / "self") == {"d/self": LOOP}


def test_long_names_are_matched(tmp_path: Path) -> None:
    keep, skip = "k" * 252 + ".py", "s" * 252 + ".py"
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(f"{skip}\n{'k' * 300}*\n")
    (tmp_path / keep).write_text("x = 1\n")
    (tmp_path / skip).write_text("x = 1\n")
    assert names(collect([tmp_path]).files, tmp_path) == {keep}
