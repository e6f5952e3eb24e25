"""The cache is bounded: other versions' entries go once unused for a day, and a
daily sweep keeps every project's entries under a size cap, least recently used
first; ``graphlint clean`` removes a project's cache, or all, and nothing else.

Times are set on the files (days, hours), never measured: no test waits."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from graphlint import cache
from graphlint.cache import Cache, project_folder, sweep, version_folder
from graphlint.project.summary import ModuleSummary
from tests.test_cli import BAD, run

HOUR = 3600 * 10**9
DAY = 24 * HOUR
OTHER = "0123456789abcdef"  # another graphlint's folder
KEY = "ab" * 32  # an entry's name


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "bad.py").write_text(BAD)
    return folder


def aged(path: Path, age: int, now: int | None = None) -> Path:
    """``path`` last modified ``age`` nanoseconds before ``now``."""
    when = (time.time_ns() if now is None else now) - age
    os.utime(path, ns=(when, when), follow_symlinks=False)
    return path


def entry(folder: Path, name: str, size: int, age: int, now: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"x" * size)
    return aged(path, age, now)


def project_of(tree: Path, base: Path) -> Path:
    return project_folder(Path(os.path.realpath(tree)), base)


def test_the_entries_of_other_versions_go_once_unused_for_a_day(
    base: Path, tree: Path
) -> None:
    first = run("check", ".", cwd=tree)
    project = project_of(tree, base)
    ours = project / version_folder()
    assert ours.is_dir() and any(ours.iterdir())
    old = entry(project / OTHER, KEY, 10, DAY, time.time_ns()).parent
    aged(old, 2 * DAY)
    recent = aged(entry(project / ("f" * 16), KEY, 10, 0, time.time_ns()).parent, HOUR)
    flat = entry(project, "cd" * 32, 10, 2 * DAY, time.time_ns())  # format 25
    young_flat = entry(project, "ef" * 32, 10, HOUR, time.time_ns())
    mine = entry(project, "notes.txt", 10, 2 * DAY, time.time_ns())  # not a cache name
    assert run("check", ".", cwd=tree) == first
    assert not old.exists() and not flat.exists()
    assert recent.is_dir() and young_flat.exists(), "in use by another graphlint"
    assert mine.exists()
    assert any(ours.iterdir())


def test_this_versions_folder_is_marked_used(base: Path, tree: Path) -> None:
    run("check", ".", cwd=tree)
    ours = aged(project_of(tree, base) / version_folder(), 2 * HOUR)
    before = ours.stat().st_mtime_ns
    run("check", ".", cwd=tree)  # a warm run: it writes nothing
    assert ours.stat().st_mtime_ns > before


def test_every_project_is_swept_once_a_day(base: Path, tree: Path) -> None:
    run("check", ".", cwd=tree)
    marker = base / ".swept"
    assert marker.is_file()
    elsewhere = base / ("1" * 24)
    old = elsewhere / OTHER
    entry(old, KEY, 10, 2 * DAY, time.time_ns())
    aged(old, 2 * DAY)
    kept = entry(elsewhere / version_folder(), KEY, 10, 30 * DAY, time.time_ns())
    aged(marker, 12 * HOUR)
    run("check", ".", cwd=tree)
    assert old.is_dir(), "swept less than a day ago: not again"
    aged(marker, 2 * DAY)
    run("check", ".", cwd=tree)
    assert not old.exists() and kept.exists(), "this version's entries stay"
    assert time.time_ns() - marker.stat().st_mtime_ns < HOUR


def test_the_cap_evicts_the_least_recently_used(tmp_path: Path) -> None:
    now = time.time_ns()
    base = tmp_path / "cache"
    one, two = base / ("1" * 24), base / ("2" * 24)
    ours = version_folder()
    oldest = entry(one / ours, "01" * 32, 400, 5 * DAY, now)
    old = entry(two / ours, "02" * 32, 400, 4 * DAY, now)
    legacy = entry(two, "03" * 32, 400, 3 * HOUR, now)  # format 25, in use
    recent = entry(one / ours, "04" * 32, 400, 2 * DAY, now)
    newest = entry(two / ours, "05" * 32, 400, HOUR, now)
    other = base / "notes.txt"
    other.write_bytes(b"x" * 10_000)  # not graphlint's: neither counted nor removed
    sweep(base, max_size=1300, now=now)
    assert [p.exists() for p in (oldest, old, recent, legacy, newest)] == [
        False,
        False,
        True,
        True,
        True,
    ]
    assert other.exists()
    sweep(base, max_size=400, now=now)
    assert [p.exists() for p in (recent, legacy, newest)] == [False, False, True]
    assert not one.exists(), "a project left empty goes"
    sweep(base, max_size=0, now=now, keep=two)
    assert two.is_dir() and list((two / ours).iterdir()) == [], "the run's folder"


def test_an_entry_read_is_marked_used(tmp_path: Path) -> None:
    """Reading an entry marks it used (at most once a day), so the cap keeps it
    over one written later but not read since."""
    cache_ = Cache.for_project(tmp_path / "tree", tmp_path / "cache")
    read, unread = Cache.key(b"read"), Cache.key(b"unread")
    cache_.put(read, ModuleSummary("m", "m.py"))
    cache_.put(unread, ModuleSummary("n", "n.py"))
    now = time.time_ns()
    aged(cache_.folder / read, 3 * DAY, now)
    aged(cache_.folder / unread, 2 * DAY, now)
    again = Cache.for_project(tmp_path / "tree", tmp_path / "cache")
    assert again.get(read, ModuleSummary) is not None
    assert now - (cache_.folder / read).stat().st_mtime_ns < HOUR
    size = (cache_.folder / read).stat().st_size
    sweep(tmp_path / "cache", max_size=size, now=time.time_ns())
    assert (cache_.folder / read).exists() and not (cache_.folder / unread).exists()


def test_the_cap_from_the_environment(
    base: Path, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = base / ("1" * 24) / version_folder()
    big = entry(elsewhere, KEY, 2 << 20, 3 * DAY, time.time_ns())
    monkeypatch.setenv("GRAPHLINT_CACHE_MAX_MIB", "1")
    first = run("check", ".", cwd=tree)
    assert first[0] == 1 and not big.exists()
    total = sum(p.stat().st_size for p in base.rglob("*") if p.is_file())
    assert 0 < total <= 1 << 20
    for value in ("0", "1.5", "lots", "-3", str(2 << 20)):
        monkeypatch.setenv("GRAPHLINT_CACHE_MAX_MIB", value)
        code, out, err = run("check", ".", cwd=tree)
        assert (code, out) == (2, "")
        assert err == (
            "graphlint: error: GRAPHLINT_CACHE_MAX_MIB must be a whole number of "
            f"MiB from 1 to 1048576, not {value!r}\n"
        )
        assert run("check", "--no-cache", ".", cwd=tree)[0] == 1


def test_a_sweep_touches_only_what_graphlint_writes(tmp_path: Path) -> None:
    now = time.time_ns()
    base = tmp_path / "cache"
    victim = tmp_path / "victim"
    entry(victim / OTHER, KEY, 10, 3 * DAY, now)
    aged(victim / OTHER, 3 * DAY, now)
    base.mkdir()
    (base / ("1" * 24)).symlink_to(victim, target_is_directory=True)
    project = base / ("2" * 24)
    (project / OTHER).mkdir(parents=True)
    (project / OTHER / "precious").symlink_to(victim / OTHER / KEY)
    aged(project / OTHER, 3 * DAY, now)
    sweep(base, max_size=0, now=now)
    assert (victim / OTHER / KEY).read_bytes() == b"x" * 10
    assert not (project / OTHER).exists()  # the link in it removed, not followed


# -- graphlint clean ---------------------------------------------------------------


def test_clean_removes_the_projects_cache_only(
    base: Path, tree: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "bad.py").write_text(BAD)
    run("check", ".", cwd=tree)
    run("check", ".", cwd=other)
    project = project_of(tree, base)
    files = sum(1 for p in project.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in project.rglob("*") if p.is_file())
    code, out, err = run("clean", cwd=tree)
    assert (code, err) == (0, "")
    kib = f"{size / 1024:.1f} KiB"
    assert out == (
        f"Removed the cache of {os.path.realpath(tree)}: {files} files, {kib} "
        f"({project}).\n"
    )
    assert not project.exists() and project_of(other, base).is_dir()
    assert sorted(p.name for p in tree.iterdir()) == ["bad.py"]
    assert run("clean", cwd=tree) == (
        0,
        f"No cache to remove for {os.path.realpath(tree)} ({project}).\n",
        "",
    )
    moved = tmp_path / "moved"
    run("check", "--cache-dir", str(moved), ".", cwd=tree)
    out = run("clean", "--cache-dir", str(moved), cwd=tree)[1]
    assert out.startswith("Removed the cache of ")
    assert [p.name for p in moved.iterdir()] == [".swept"]


def test_clean_follows_the_configuration_as_check_does(base: Path, tree: Path) -> None:
    (tree / "pkg").mkdir()
    (tree / "pkg" / "bad.py").write_text(BAD)
    (tree / "graphlint.toml").write_text("")
    run("check", ".", cwd=tree / "pkg")  # the configuration's folder is the key
    project = project_of(tree, base)
    assert project.is_dir()
    assert run("clean", cwd=tree / "pkg")[0] == 0 and not project.exists()
    assert run("clean", "pkg/bad.py", cwd=tree)[1].startswith("No cache to remove")
    (tree / "pkg" / "graphlint.toml").write_text("")
    run("check", "--config", "pkg/graphlint.toml", ".", cwd=tree)
    named = project_of(tree / "pkg", base)
    assert named.is_dir() and not project.exists()
    assert run("clean", cwd=tree)[1].startswith("No cache to remove")
    code, out, _ = run("clean", "--config", "pkg/graphlint.toml", cwd=tree)
    assert code == 0 and out.startswith("Removed") and not named.exists()


def test_clean_all(base: Path, tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "bad.py").write_text(BAD)
    run("check", ".", cwd=tree)
    run("check", ".", cwd=other)
    code, out, err = run("clean", "--all", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert out.startswith(f"Removed the caches of 2 projects in {base}: ")
    assert base.is_dir() and list(base.iterdir()) == []
    assert run("clean", "--all", cwd=tmp_path)[1] == f"No cache to remove in {base}.\n"
    code, _, err = run("clean", "--all", ".", cwd=tmp_path)
    assert code == 2 and "--all removes every project's cache" in err


def test_clean_refuses_a_link_in_place_of_the_projects_cache(
    base: Path, tree: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    (victim / OTHER).mkdir(parents=True)
    (victim / OTHER / KEY).write_text("precious\n")
    project = project_of(tree, base)
    base.mkdir()
    project.symlink_to(victim, target_is_directory=True)
    code, out, err = run("clean", cwd=tree)
    assert (code, out) == (2, "")
    assert err == (
        f"graphlint: error: {project} is a symbolic link, not a graphlint cache "
        "folder; nothing was removed\n"
    )
    assert project.is_symlink() and (victim / OTHER / KEY).exists()
    code, _, err = run("clean", "--all", cwd=tree)
    assert code == 2 and "is a symbolic link" in err
    assert project.is_symlink() and (victim / OTHER / KEY).exists()


@pytest.mark.parametrize(
    "planted", ["notes.txt", f"{OTHER}/notes.txt", f"{OTHER}/{KEY}/deep", "sub/"]
)
def test_clean_refuses_a_folder_that_is_not_a_cache(
    base: Path, tree: Path, planted: str
) -> None:
    run("check", ".", cwd=tree)
    project = project_of(tree, base)
    path = project / planted.rstrip("/")
    if planted.endswith("/"):
        path.mkdir(parents=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("mine\n")
    before = sorted(project.rglob("*"))
    for args in (("clean",), ("clean", "--all")):
        code, out, err = run(*args, cwd=tree)
        assert (code, out) == (2, "")
        shown = os.path.relpath(path if "deep" not in planted else path.parent, project)
        assert err == (
            f"graphlint: error: {project} does not look like a graphlint cache "
            f"folder: it holds {shown!r}, which graphlint does not write there; "
            "nothing was removed\n"
        )
        assert sorted(project.rglob("*")) == before


def test_clean_all_refuses_a_folder_that_is_not_a_cache(tmp_path: Path) -> None:
    """``--cache-dir ~`` by mistake: nothing is removed."""
    home = tmp_path / "home"
    (home / "projects").mkdir(parents=True)
    (home / ("1" * 24)).mkdir()
    code, out, err = run("clean", "--all", "--cache-dir", str(home), cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == (
        f"graphlint: error: {home} does not look like a graphlint cache folder: it "
        "holds 'projects', which graphlint does not write there; nothing was "
        "removed\n"
    )
    assert (home / ("1" * 24)).is_dir() and (home / "projects").is_dir()
    (home / "projects").rmdir()
    (home / "file").write_text("")
    assert run("clean", "--all", "--cache-dir", str(home / "file"), cwd=tmp_path)[
        2
    ] == (
        f"graphlint: error: {home / 'file'} is not a folder: not a graphlint cache folder\n"
    )


def test_clean_of_a_missing_path_is_one_line(tmp_path: Path) -> None:
    code, out, err = run("clean", "missing.py", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == "graphlint: error: no such file or directory: missing.py\n"


def test_sizes_as_people_read_them() -> None:
    from graphlint.cli import _size  # noqa: PLC0415

    assert [_size(n) for n in (0, 1, 1023, 1024, 5_976_883, 3 << 30, 5 << 40)] == [
        "0 bytes",
        "1 byte",
        "1023 bytes",
        "1.0 KiB",
        "5.7 MiB",
        "3.0 GiB",
        "5120.0 GiB",
    ]
    assert cache.configured_max_size({}) == 1024 << 20
    assert cache.configured_max_size({"GRAPHLINT_CACHE_MAX_MIB": " 64 "}) == 64 << 20
