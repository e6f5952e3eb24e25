"""The result cache: a run with nothing changed takes every file's result from the
cache and says exactly what a cold ``--no-cache`` run says; an edit, other settings
or another job are new keys."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from graphlint import cache as cache_module
from graphlint import runner, serving, stamps
from graphlint.cache import Cache, code_version
from graphlint.diagnostics import FileResult
from graphlint.lint import lint
from graphlint.project import check, kept
from graphlint.project.summary import ModuleSummary
from graphlint.read import overlay
from graphlint.runner import Pool, Work, run_files
from graphlint.settings import Job, Settings
from tests.conftest import FIXTURES, WARMED
from tests.test_cli import run

T = TypeVar("T")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(FIXTURES / "_project", tmp_path / "p")
    return tmp_path / "p"


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files sent to the workers to be checked (not those from the cache), as
    jobs of a batch or as guesses started behind one (``Pool.start``)."""
    sent: list[Path] = []

    def spy(pool: Pool, files: Sequence[Job], *besides: Any) -> list[FileResult]:
        sent.extend(job.path for job in files)
        return run_files(pool, files, *besides)

    started = Pool.start

    def guessed(pool: Pool, jobs: Sequence[Work], *rest: Any) -> None:
        sent.extend(job.path for job in jobs if isinstance(job, Job))
        started(pool, jobs, *rest)

    monkeypatch.setattr(check, "run_files", spy)
    monkeypatch.setattr(Pool, "start", guessed)
    return sent


def projects(base: Path) -> list[Path]:
    """The projects' folders in a cache folder (not its ``.swept`` marker)."""
    return [path for path in base.iterdir() if not path.name.startswith(".")]


def same_as_cold(*args: str, cwd: Path) -> str:
    """The output of a run, asserted equal to a cold run's."""
    code, out, _ = run("check", *args, cwd=cwd)
    assert (code, out) == run("check", "--no-cache", *args, cwd=cwd)[:2]
    return out


def test_a_warm_run_checks_nothing_and_says_the_same(
    project: Path, checked: list[Path]
) -> None:
    for form in ("text", "lsp"):
        first = same_as_cold("--format", form, "--show-reach", ".", cwd=project)
        checked.clear()
        assert run("check", "--format", form, "--show-reach", ".", cwd=project)[1] == (
            first
        )
        assert checked == [], "every result, pass one and the project pass, cached"


def test_an_edit_settings_and_jobs_are_new_keys(
    project: Path, checked: list[Path]
) -> None:
    before = same_as_cold(".", cwd=project)
    helpers = project / "app" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n\ndef extra():\n    return 1\n")
    checked.clear()
    warm = run("check", ".", cwd=project)[1]
    assert set(checked) == {Path("app/helpers.py")}, "only the edited file is checked"
    assert warm == before == run("check", "--no-cache", ".", cwd=project)[1]
    selected = same_as_cold("--select", "GL103", ".", cwd=project)
    assert selected != before and "GL101" not in selected
    # a file reached from another region: its project-pass job changes
    alone = same_as_cold("app/helpers.py", cwd=project)
    assert alone != before


@pytest.fixture
def guessed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files whose guessed project-pass jobs start behind pass one."""
    found: list[Path] = []
    guess = check._Results._guess

    def spy(results: Any, jobs: Sequence[Job]) -> None:
        found.extend(job.path for job, _ in results._guessed(jobs))
        guess(results, jobs)

    monkeypatch.setattr(check._Results, "_guess", spy)
    return found


def test_after_an_edit_the_last_runs_jobs_start_at_once(
    project: Path, checked: list[Path], guessed: list[Path]
) -> None:
    """A command line's run that an edit keeps from the last run's results still
    finds what the last run of the same files asked, in the cache: the edited
    file's project-pass job starts beside pass one, and is checked once (the reach
    gives the very same job); the output is a cold run's."""
    before = same_as_cold(".", cwd=project)
    helpers = project / "app" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n# edited\n")
    checked.clear()
    guessed.clear()
    assert run("check", ".", cwd=project)[1] == before
    assert guessed == [Path("app/helpers.py")]
    assert checked == [Path("app/helpers.py")]


def test_a_run_naming_other_files_starts_what_the_project_asked(
    project: Path, guessed: list[Path]
) -> None:
    """What a run asked is kept for the project, not for the files it named: a
    pre-commit run that names the edited file finds what ``check .`` asked."""
    same_as_cold(".", cwd=project)
    helpers = project / "app" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n# edited\n")
    guessed.clear()
    same_as_cold("app/helpers.py", cwd=project)
    assert guessed == [Path("app/helpers.py")]  # the warm run: a cold one has none


def _hints_entry(base: Path) -> Path:
    """The cache's entry of a project's hints (``kept.Hints``)."""
    for path in sorted(base.rglob("*")):
        try:
            value = json.loads(path.read_bytes())["value"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(value, dict) and set(value) == {"reached", "asked"}:
            return path
    raise AssertionError("no hints kept")


def test_damaged_hints_change_no_output(project: Path) -> None:
    """Hints whose paths no file can have (a NUL in them) or that are gone are
    left out: the run after an edit says what a run without the cache says."""
    before = same_as_cold(".", cwd=project)
    entry = _hints_entry(Path(os.environ["GRAPHLINT_CACHE_DIR"]))
    data = json.loads(entry.read_bytes())
    hints = data["value"]
    for modules in hints["asked"].values():
        modules.append(["/x\u0000y.py", "x"])
        modules.append([str(project / "gone.py"), "gone"])
    hints["asked"]["app/gone.py"] = [[str(project / "app" / "train.py"), "app.train"]]
    hints["reached"].append([*hints["reached"][0][:1], None, [], [], [], []])
    hints["reached"][-1][0] = "app/\u0000.py"
    entry.write_text(json.dumps(data))
    helpers = project / "app" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n# edited\n")
    assert same_as_cold(".", cwd=project) == before


def test_hints_name_only_files_that_are_there(tmp_path: Path) -> None:
    """A file renamed or deleted since a run kept its hints is not in them."""
    there, gone = tmp_path / "there.py", tmp_path / "gone.py"
    there.write_text("")
    cache = Cache(tmp_path / "cache")
    runs = kept.Runs(cache, [there], Settings(), [])
    runs.keep_hints(
        kept.Hints(
            {str(there): Job(there), str(gone): Job(gone)},
            {str(there): {(there, "there"), (gone, "gone")}, str(gone): set()},
        )
    )
    found = runs.hints()
    assert set(found.reached) == {str(there)}
    assert found.asked == {str(there): {(there, "there")}}


def test_a_guess_the_reach_does_not_give_is_checked_again(
    project: Path, checked: list[Path], guessed: list[Path]
) -> None:
    """An edit that changes what regions reach in a file (here a region's call of
    one of its functions taken out) makes its guess wrong: the reach's job is checked, and the
    output is a cold run's."""
    same_as_cold(".", cwd=project)
    train = project / "app" / "train.py"
    helpers = project / "app" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n# edited\n")
    train.write_text(train.read_text().replace("    h.debug_dump(x)\n", ""))
    checked.clear()
    guessed.clear()
    after = run("check", ".", cwd=project)[1]
    assert Path("app/helpers.py") in guessed
    assert checked.count(Path("app/helpers.py")) == 2  # the guess, then the reach's
    assert after == run("check", "--no-cache", ".", cwd=project)[1]


def test_an_edit_of_a_file_only_the_screening_read_keeps_the_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module no region reaches and that names nothing a capture needs counts
    only as its screening settles it: after an edit that leaves it so, the run is
    the kept one (nothing is surveyed); an edit that makes it a candidate is
    checked."""
    data = project / "app" / "data.py"
    data.write_text("def batches(n):\n    return list(range(n))\n")
    before = same_as_cold(".", cwd=project)
    surveyed: list[int] = []
    survey = check.survey_files

    def counted(*args: Any, **kwargs: Any) -> Any:
        surveyed.append(1)
        return survey(*args, **kwargs)

    monkeypatch.setattr(check, "survey_files", counted)
    data.write_text(data.read_text() + "\n\ndef more(n):\n    return n + 1\n")
    assert run("check", ".", cwd=project)[1] == before
    assert surveyed == []
    data.write_text(
        "import torch\n\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
        "    y = torch.ones(2, device='cuda').sum().item()\n"
    )
    after = run("check", ".", cwd=project)[1]
    assert surveyed == [1] and "app/data.py" in after
    assert after == run("check", "--no-cache", ".", cwd=project)[1]


HAZARD = (
    "import torch\n\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
    "    y = torch.ones(2, device='cuda').sum().item()\n"
)


def test_a_file_saved_while_a_run_reads_it_is_not_kept_with_its_old_text(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose stamp changes between the start of a run and its end was read
    as it was before or after: the run is kept under the stamp taken before it, if
    at all, so the next one checks again and says what a cold run says (from a
    review: stamps taken at the end kept the old results with the new text's
    stamp)."""
    data = project / "app" / "data.py"
    data.write_text("def batches(n):\n    return list(range(n))\n")
    pass_one = check._pass_one

    def saved_meanwhile(*args: Any, **kwargs: Any) -> list[FileResult]:
        found = pass_one(*args, **kwargs)
        data.write_text(HAZARD)
        return found

    monkeypatch.setattr(check, "_pass_one", saved_meanwhile)
    run("check", ".", cwd=project)
    monkeypatch.setattr(check, "_pass_one", pass_one)
    after = same_as_cold(".", cwd=project)
    assert "app/data.py" in after


def test_a_checked_link_given_another_target_is_seen(project: Path) -> None:
    """A file checked through a link is stamped through it: pointed at another
    file, the kept run is not used (from a review: stamped by its real path, the
    old target stayed unchanged)."""
    outside = project.parent / "elsewhere"
    outside.mkdir()
    (outside / "clean.py").write_text("def f(n):\n    return n + 1\n")
    (outside / "hazard.py").write_text(HAZARD)
    (project.parent / ".git").mkdir()  # the repository holds both
    (project / "links").mkdir()
    alias = project / "links" / "alias.py"
    alias.symlink_to(outside / "clean.py")
    before = same_as_cold("--alone", "links", "app", cwd=project)
    alias.unlink()
    alias.symlink_to(outside / "hazard.py")
    after = same_as_cold("--alone", "links", "app", cwd=project)
    assert after != before and "alias.py" in after


def test_unused_suppressions_are_reported_by_warm_runs_too(project: Path) -> None:
    """A file settled by its text keeps its suppression comments in its result on
    every run: GL008 reports one that nothing used, warm as cold (the screening's
    kept verdict dropped them)."""
    (project / "app" / "data.py").write_text("x = 1  # noqa: GL101\n")
    first = same_as_cold("--extend-select", "GL008", ".", cwd=project)
    train = project / "app" / "train.py"
    train.write_text(train.read_text() + "\n")  # the run is not the kept one
    again = same_as_cold("--extend-select", "GL008", ".", cwd=project)
    assert "app/data.py:1:8: GL008" in first and "app/data.py:1:8: GL008" in again


def test_a_run_with_an_edit_screens_only_the_edited_file_and_parses_no_more(
    project: Path, checked: list[Path]
) -> None:
    """Screening verdicts are kept by each file's stamp; a kept verdict settles its
    file as the first run did (a file without region text stays unparsed)."""
    (project / "app" / "broken.py").write_text("def helper(:\n")  # not a candidate
    before = same_as_cold(".", cwd=project)
    assert "GL001" not in before
    helpers = project / "app" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n\ndef extra():\n    return 1\n")
    checked.clear()
    warm = run("check", ".", cwd=project)[1]
    assert set(checked) == {Path("app/helpers.py")}
    assert warm == before == run("check", "--no-cache", ".", cwd=project)[1]


def test_the_screening_takes_the_stamps_the_run_took_before_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file is stamped once, before the run: not again to look its screening
    verdict up, nor when the run is kept (a change since shows at the next run's
    stamp); an edited one, whose verdict is not kept, once more before it is
    read."""
    monkeypatch.chdir(project)
    lint([Path(".")])
    helpers = Path("app/helpers.py")
    helpers.write_text(helpers.read_text() + "\n\ndef extra():\n    return 1\n")
    taken: list[str] = []
    stamp = stamps.stamp

    def counted(path: Path | str) -> stamps.Stamp:
        taken.append(os.fsdecode(path))
        return stamp(path)

    monkeypatch.setattr(kept, "stamp", counted)
    lint([Path(".")])
    assert taken.count(os.fsdecode(Path("app/layers.py"))) == 1
    assert taken.count(os.fsdecode(helpers)) == 2


def test_a_verdict_is_kept_under_the_stamp_of_the_text_it_is_of(
    tmp_path: Path,
) -> None:
    """A file edited after the run stamped it, and screened anew: its verdict is
    kept under the stamp taken before it was read, not under the run's (which on
    Windows, where a stamp is a digest, the old text would give again)."""
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    before = stamps.stamp(path)
    path.write_text("import os\n\nprint(os.sep)\n")
    screens = kept.Screens(None, Settings(), {os.fsdecode(path): before})
    screens.screen(path)
    now = stamps.stamp(path)
    assert now != before
    assert screens.known[os.fsdecode(path)][0] == now


def test_a_buffers_verdict_is_not_kept(tmp_path: Path) -> None:
    """An editor's buffer is stamped by its text, which the next keystroke changes:
    its verdict is not kept (nor written); the file's own, on disk, is."""
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    screens = kept.Screens(None, Settings())
    with overlay({os.fsdecode(path): b"import os\n\nprint(os.sep)\n"}):
        screens.screen(path)
    assert not screens.known and not screens.changed
    screens.screen(path)
    assert screens.known[os.fsdecode(path)][0] == stamps.stamp(path)


def test_a_servers_verdicts_are_read_from_the_cache_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A language server's runs share the verdicts in memory: the cache is read by
    the first run's, and written when a file on disk was screened anew."""
    cache = Cache(tmp_path / "cache")
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    monkeypatch.setattr(kept.Screens, "_memory", {})
    reads: list[str] = []
    get = Cache.get

    def spy(self: Cache, key: str, kind: type[T]) -> T | None:
        reads.append(key)
        return get(self, key, kind)

    monkeypatch.setattr(Cache, "get", spy)
    first = kept.Screens(cache, Settings(), memory=True)
    seen = first.screen(path)
    first.save()
    second = kept.Screens(cache, Settings(), memory=True)
    assert len(reads) == 1 and os.fsdecode(path) in second.known
    assert kept.Screens(cache, Settings()).known == second.known  # as written
    again = second.screen(path)  # from the kept verdict: made once, then the same
    assert again == seen and second.screen(path) is again
    path.write_text("import torch\n\nwith torch.cuda.graph(g):\n    pass\n")
    assert second.screen(path).result is None  # a candidate now


def test_a_kept_run_is_not_used_when_a_file_it_read_changed(project: Path) -> None:
    """Checking train.py alone reads layers.py, which it reaches: an edit there is
    seen although the file checked is unchanged."""
    first = same_as_cold("app/train.py", cwd=project)
    assert run("check", "app/train.py", cwd=project)[1] == first  # kept
    layers = project / "app" / "layers.py"
    text = layers.read_text()
    layers.write_text(text.replace("return logits.sigmoid().mean().cpu()", "return 0"))
    edited = same_as_cold("app/train.py", cwd=project)
    assert edited != first and edited.count("GL101") == first.count("GL101") - 1


def test_a_run_of_an_unsaved_edit_is_not_kept(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that reads an editor's unsaved buffer is of a text no later run sees:
    it is not kept (a large project's run is half a megabyte, and the server checks
    one at every pause in typing); a run whose buffers the disk holds too is."""
    kept_runs: list[object] = []
    put = Cache.put

    def spy(cache: Cache, key: str, value: object) -> None:
        if isinstance(value, kept._Run):
            kept_runs.append(value)
        put(cache, key, value)

    monkeypatch.setattr(Cache, "put", spy)
    monkeypatch.chdir(project)
    train = project / "app" / "train.py"
    saved = train.read_bytes()
    for buffer, keeps in [(saved + b"\n# unsaved\n", False), (saved, True)]:
        kept_runs.clear()
        with overlay({str(train): buffer}):
            lint([train])
        assert len(kept_runs) == keeps


def test_what_is_made_of_an_unsaved_edit_is_not_kept(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor's unsaved buffer is summarised and checked afresh, and neither its
    summary nor its results are kept (the server checks one at every pause in
    typing); the saved text's are, and so are the other files' of that run."""
    made: list[tuple[str, str]] = []
    put = Cache.put

    def spy(cache: Cache, key: str, value: object) -> None:
        if isinstance(value, (FileResult, ModuleSummary)):
            made.append((type(value).__name__, Path(value.path).name))
        put(cache, key, value)

    monkeypatch.setattr(Cache, "put", spy)
    monkeypatch.chdir(project)
    (project / "pyproject.toml").write_text("")  # a project: train.py reaches it
    layers = project / "app" / "layers.py"
    saved = layers.read_bytes()
    with overlay({str(layers): saved + b"\n# unsaved\n"}):
        lint([layers])
    assert made and ("FileResult", "layers.py") not in made, made
    assert ("ModuleSummary", "layers.py") not in made, made
    assert ("FileResult", "train.py") in made  # a file the buffer's run reads
    made.clear()
    with overlay({str(layers): saved}):
        lint([layers])
    assert {("FileResult", "layers.py"), ("ModuleSummary", "layers.py")} <= set(made)


def test_a_server_decodes_each_summary_and_result_once(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where workers are kept (the language server), a summary or a file's result
    read from the cache or made by a run is kept decoded for the next runs: the
    next edit decodes none of the summaries its reach reads again, nor the result
    of a file it reaches again, and finds what a run without them finds. An unsaved
    buffer's own summary is not kept (it has no key)."""
    monkeypatch.setattr(serving, "_KEEPING", threading.Event())
    monkeypatch.setattr(runner, "_kept", [])
    monkeypatch.setattr(check, "_SUMMARIES", check._Decoded(ModuleSummary, 1024))
    monkeypatch.setattr(check, "_RESULTS", check._Decoded(FileResult, 4096))
    monkeypatch.setattr(check, "_REACHED", {})
    monkeypatch.setattr(check, "_ASKED", {})
    decoded: list[str] = []
    get = Cache.get

    def spy(cache: Cache, key: str, kind: type[T]) -> T | None:
        found = get(cache, key, kind)
        if isinstance(found, (ModuleSummary, FileResult)):
            decoded.append(f"{type(found).__name__} {Path(found.path).name}")
        return found

    monkeypatch.setattr(Cache, "get", spy)
    monkeypatch.chdir(project)
    (project / "pyproject.toml").write_text("")
    train = project / "app" / "train.py"
    edits = [train.read_bytes() + f"\n# edit {n}\n".encode() for n in range(2)]
    expected = []
    for edit in edits:  # workers not kept: summaries made, then read back
        with overlay({str(train): edit}):
            expected.append(lint([train]).results)
    assert {"ModuleSummary layers.py", "FileResult layers.py"} <= set(decoded)
    runner.keep_workers()
    try:
        found = []
        for edit in edits:
            decoded.clear()
            with overlay({str(train): edit}):
                found.append(lint([train]).results)
        assert decoded == [], "the second edit's summaries and results were kept"
        assert found == expected
        kept = {Path(s.path).name for s in check._SUMMARIES._kept.values()}
        assert "layers.py" in kept and "train.py" not in kept
    finally:
        for pool in runner._kept:
            pool.close(kill=True)


def test_the_code_version_stamps_every_module_of_graphlint() -> None:
    stamped = {line.split(":")[0] for line in code_version().decode().splitlines()}
    assert {"cache.py", "engine.py", "rules/host_sync/device_to_host_copy.py"} <= {
        name.replace("\\\\", "/") for name in stamped
    }


def test_a_new_version_of_a_parser_package_is_a_new_code_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LibCST's version is read off its version file without importing it; a
    package without one is named by its installed distribution's version."""
    package = tmp_path / "parserpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    version = package / "_version.py"
    version.write_text("__version__ = '1.0'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = cache_module._version("parserpkg")
    version.write_text("__version__ = '1.10'\n")
    assert cache_module._version("parserpkg") != first
    assert cache_module._version("no_such_parser_package") == (
        "no_such_parser_package unknown"
    )


HAZARD = WARMED + "    v = x.item()\n"
HARMLESS = "# " + "-" * (len(HAZARD) - 3) + "\n"  # names no region: screened clean


def _rewrite_in_place(path: Path, text: str) -> None:
    """``text`` written over ``path``'s bytes (same inode, same size) with its
    modification time put back, as ``tar``, ``rsync`` or ``cp -p`` leave a file."""
    before = os.stat(path)
    with open(path, "r+b") as file:
        file.write(text.encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    assert after.st_ctime_ns != before.st_ctime_ns  # what no one can put back


@pytest.mark.parametrize("other_edit", [False, True], ids=["kept-run", "screened"])
def test_a_same_size_edit_with_its_time_put_back_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other_edit: bool
) -> None:
    """A file screened clean, then rewritten in place with a hazard of the same size
    and its time put back: neither the kept run (all files as they were) nor, when
    another file changed, the file's kept screening verdict hides the finding."""
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(tmp_path / "cache"))
    tree = tmp_path / "p"
    tree.mkdir()
    step = tree / "step.py"
    step.write_text(HARMLESS)
    assert len(HARMLESS.encode()) == len(HAZARD.encode())
    first = run("check", ".", cwd=tree)
    assert first[0] == 0 and run("check", ".", cwd=tree) == first  # warm
    _rewrite_in_place(step, HAZARD)
    if other_edit:  # a new file: the kept run is not used, the verdicts are
        (tree / "other.py").write_text("x = 1\n")
    code, out, _ = run("check", ".", cwd=tree)
    assert (code, out) == run("check", "--no-cache", ".", cwd=tree)[:2]
    assert code == 1 and "step.py:8:9: GL101 " in out


def test_without_change_times_a_stamp_takes_a_digest_of_the_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the change time is the creation time (Windows), a file is stamped by
    its bytes and a folder by its names."""
    monkeypatch.setattr(stamps, "_CTIME_CHANGES", False)
    path = tmp_path / "step.py"
    path.write_text(HARMLESS)
    before = stamps.stamp(path)
    folder = stamps.stamp(tmp_path)
    _rewrite_in_place(path, HAZARD)
    after = stamps.stamp(path)
    assert before is not None and after is not None
    assert before[:2] == after[:2] and before[3] == after[3]
    assert before[2] != after[2]
    assert stamps.stamp(tmp_path) == folder  # the same names
    (tmp_path / "new.py").write_text("")
    assert folder is not None
    os.utime(tmp_path, ns=(0, folder[1]))
    now = stamps.stamp(tmp_path)
    assert now is not None and now[1:] != folder[1:] and now[1] == folder[1]


def test_temporary_files_a_killed_run_left_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``.tmp-*`` file over an hour old (a run killed between writing an entry and
    renaming it) goes when a run next uses the folder; younger ones (a run writing
    now), folders and other names stay."""
    base = tmp_path / "cache"
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(base))
    tree = tmp_path / "p"
    tree.mkdir()
    (tree / "step.py").write_text(HAZARD)
    first = run("check", ".", cwd=tree)
    (folder,) = projects(base)
    fresh = folder / ".tmp-fresh"
    fresh.write_bytes(b"{")
    written = fresh.stat().st_mtime_ns
    hour = 3600 * 10**9
    left = {}
    for name, age in [
        (".tmp-killed", 2 * hour),
        (".tmp-writing", hour // 2),
        (".tmp-folder", 2 * hour),
        ("not-temporary", 2 * hour),
    ]:
        path = folder / name
        if name.endswith("folder"):
            path.mkdir()
        else:
            path.write_bytes(b"{")
        os.utime(path, ns=(written - age, written - age))
        left[name] = path
    assert run("check", ".", cwd=tree) == first  # a warm run: reads, writes nothing
    assert not left[".tmp-killed"].exists()
    assert fresh.exists() and left[".tmp-writing"].exists()
    assert left[".tmp-folder"].is_dir() and left["not-temporary"].exists()


@pytest.mark.parametrize("target", ["made", "to-make"])
@pytest.mark.parametrize("how", ["env", "--cache-dir"])
def test_a_cache_folder_the_user_names_through_a_link_is_used(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    checked: list[Path],
    how: str,
    target: str,
) -> None:
    """``GRAPHLINT_CACHE_DIR`` or ``--cache-dir`` naming a link (a cache on another
    disk) is the user's own choice: the link is followed, and the cache works."""
    real = tmp_path / "disk" / "cache"
    if target == "made":
        real.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    if how == "env":
        monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(link))
        args: tuple[str, ...] = ("check", ".")
    else:
        monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(tmp_path / "unused"))
        args = ("check", "--cache-dir", str(link), ".")
    tree = tmp_path / "p"
    tree.mkdir()
    (tree / "step.py").write_text(HAZARD)
    first = run(*args, cwd=tree)
    assert first[0] == 1
    (folder,) = projects(real)
    assert not folder.is_symlink() and any(folder.iterdir())
    checked.clear()
    assert run(*args, cwd=tree) == first
    assert checked == [], "a warm run through the link checks nothing"
    assert not (tmp_path / "unused").exists()


def test_a_files_digest_is_read_again_only_when_its_stamp_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keys of results and summaries take the digest of the file's bytes, kept
    by its stamp for the process: asked again with the file unchanged, it is not
    read; edited (or given in a buffer), read anew; an outcome is not kept."""
    import hashlib  # noqa: PLC0415

    from graphlint.read import read_file  # noqa: PLC0415

    path = tmp_path / "model.py"
    path.write_text("x = 1\n")
    reads: list[Path] = []

    def counted(found: Path, display: str, size: int) -> Any:
        reads.append(found)
        return read_file(found, display, size)

    monkeypatch.setattr(stamps, "read_file", counted)
    first = stamps.digest_of(path, "model.py", 1 << 20)
    assert first == hashlib.sha256(b"x = 1\n").hexdigest()
    assert stamps.digest_of(path, "model.py", 1 << 20) == first
    assert len(reads) == 1
    path.write_text("x = 22\n")
    assert stamps.digest_of(path, "model.py", 1 << 20) != first
    with overlay({str(path): b"y = 3\n"}):
        given = stamps.digest_of(path, "model.py", 1 << 20)
    assert given == hashlib.sha256(b"y = 3\n").hexdigest()
    assert len(reads) == 3
    assert not isinstance(stamps.digest_of(path, "model.py", 2), str)  # too large
    assert not isinstance(stamps.digest_of(path, "model.py", 2), str)
    assert len(reads) == 5
