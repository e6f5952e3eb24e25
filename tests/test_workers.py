"""The workers: how they end, told right (a parser that aborts on the memory
limit), and a pool kept between runs (the language server's)."""

from __future__ import annotations

import ast
import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from graphlint import runner, serving
from graphlint.diagnostics import FileResult
from graphlint.project.summary import ModuleSummary
from graphlint.read import overlay
from graphlint.settings import Job, Settings

GRAPHLINT = str(Path(sys.executable).with_name("graphlint"))
METHODS = ["spawn", *(["fork"] if sys.platform.startswith("linux") else [])]


def _large(path: Path) -> None:
    """Just under 1 MB of statements in a region: LibCST's parser (Rust) needs
    well over 256 MiB for it, and aborts when an allocation fails."""
    lines = ["import torch", "g = torch.cuda.CUDAGraph()", "with torch.cuda.graph(g):"]
    size, number = 0, 0
    while size < 950_000:
        line = f"    y{number} = torch.add(x, {number}) * (x + {number}) - f(x)"
        lines.append(line)
        size += len(line) + 1
        number += 1
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs RLIMIT_AS")
def test_a_streamed_job_runs_while_the_next_ones_are_found(tmp_path: Path) -> None:
    """``Pool.stream`` hands each job to a worker as it comes: here the next job is
    found only once the outcome of the one before is told, which a pool that
    waited for every job before starting any would never tell. Outcomes are told
    by index, the jobs ``queued`` first; ``Inline.stream`` runs the jobs alike."""
    files = [tmp_path / f"f{i}.py" for i in range(3)]
    for i, path in enumerate(files):
        path.write_text(REGION + ("    z = y.item()\n" if i == 1 else ""))
    deadline = time.monotonic() + 300  # a hang fails, not a slow machine

    def streamed(pool: runner.Workers) -> dict[int, str]:
        told: dict[int, str] = {}

        def found() -> Iterator[Job | None]:
            yield None
            yield Job(files[1])
            while 1 not in told:  # the job found first, told while finding goes on
                assert time.monotonic() < deadline
                yield None
            yield Job(files[2])

        def tell(index: int, result: runner.Outcome) -> None:
            assert isinstance(result, FileResult)
            told[index] = result.path

        pool.stream(found(), tell, queued=[Job(files[0])])
        return told

    with runner.Pool(1, Settings()) as pool:
        told = streamed(pool)
    assert told == {i: str(path) for i, path in enumerate(files)}
    assert streamed(runner.Inline(Settings())) == told


@pytest.mark.parametrize("method", METHODS)
def test_the_memory_limit_is_named_when_the_parser_aborts(
    tmp_path: Path, method: str
) -> None:
    _large(tmp_path / "big.py")
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\nmax-memory = 256\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHLINT_")}
    done = subprocess.run(
        [GRAPHLINT, "check", "--no-cache", "big.py"],
        cwd=tmp_path,
        env={**env, "GRAPHLINT_WORKER_START": method},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "GL005" in done.stdout, done.stdout + done.stderr
    assert "needed more than the 256 MiB memory limit" in done.stdout
    assert "crashed" not in done.stdout
    assert done.stderr == ""


REGION = """\
import torch
g = torch.cuda.CUDAGraph()
x = torch.ones(2, device="cuda")
with torch.cuda.graph(g):
    y = x * 2
"""


def _codes(result: FileResult) -> list[str]:
    return [d.code for d in result.diagnostics]


@pytest.mark.parametrize("method", METHODS)
def test_a_kept_pool_checks_each_run_with_its_own_buffers_and_settings(
    tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The language server keeps its workers between checks: each run's unsaved
    buffers and settings reach them; a new memory limit takes a new worker (the
    limit is set once, at its start); the same one keeps it."""
    monkeypatch.setenv("GRAPHLINT_WORKER_START", method)
    path = tmp_path / "train.py"
    path.write_text(REGION)
    settings = Settings()
    with runner.Pool(1, settings) as pool:
        (first,) = runner.run_files(pool, [path])
        assert "GL101" not in _codes(first)
        with overlay({str(path): (REGION + "    z = y.item()\n").encode()}):
            pool.use(settings)
            (second,) = runner.run_files(pool, [path])
        assert "GL101" in _codes(second)
        pid = pool.workers[0].process.pid
        pool.use(replace(settings, enabled=settings.enabled - {"GL703"}))
        (third,) = runner.run_files(pool, [path])
        assert "GL703" not in _codes(third) and "GL101" not in _codes(third)
        assert pool.workers[0].process.pid == pid
        pool.use(replace(settings, max_memory=settings.max_memory + 256))
        runner.run_files(pool, [path])
        assert pool.workers[0].process.pid != pid


def test_jobs_started_behind_run_on_the_workers_the_others_leave_idle(
    tmp_path: Path,
) -> None:
    """``Pool.start`` queues jobs behind those of ``run``: on one worker, a run's
    own job goes first, the run returns once its jobs are done (the one behind
    has begun, not been waited for), and ``finish`` tells its outcome; a run
    with nothing of its own still starts it."""
    clean, hazard = tmp_path / "clean.py", tmp_path / "hazard.py"
    clean.write_text(REGION)
    hazard.write_text(REGION + "    z = y.item()\n")
    told: list[str] = []
    with runner.Pool(1, Settings()) as pool:
        pool.start([Job(hazard)], lambda _, result: told.append(result.path))
        pool.run([Job(clean)], lambda _, result: told.append(result.path))
        assert told == [str(clean)]
        assert pool.workers[0].task is not None  # the one behind is running
        pool.finish()
        assert told == [str(clean), str(hazard)]
        pool.start([Job(hazard)], lambda _, result: told.append("again"))
        pool.run([], lambda _, result: told.append("nothing"))
        assert pool.workers[0].task is not None
        pool.finish()
        assert told[2:] == ["again"]
        assert pool.done == pool.asked == 3


@pytest.mark.parametrize("method", METHODS)
def test_a_kept_worker_looks_links_up_again_each_run(
    tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker kept between runs resolves paths once per run, not once for its
    life: after a link is pointed elsewhere, the buffer of the file it now leads to
    is read, not the disk's text."""
    monkeypatch.setenv("GRAPHLINT_WORKER_START", method)
    for name in ("v1", "v2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(REGION)
    link = tmp_path / "cur"
    settings = Settings()
    with runner.Pool(1, settings) as pool:
        for name in ("v1", "v2"):
            if link.is_symlink():
                link.unlink()
            link.symlink_to(tmp_path / name)
            edited = (REGION + "    z = y.item()\n").encode()
            with overlay({str(link / "train.py"): edited}):
                pool.use(settings)
                (result,) = runner.run_files(pool, [link / "train.py"])
            assert "GL101" in _codes(result), name


HELPERS = """\
import torch


def scale(x):
    return x * 2


def sync(x):
    return x.sum().item()


g = torch.cuda.CUDAGraph()
x = torch.ones(2, device="cuda")
with torch.cuda.graph(g):
    y = scale(x)
    z = y.cpu()
"""


@pytest.mark.parametrize("method", METHODS)
def test_a_kept_worker_checks_an_edit_as_a_fresh_one_does(
    tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept pool's worker parses an edited file from the pieces of its last
    parse (``graphlint.reparse``): each version's findings, lines and all, are
    those a fresh worker gives."""
    monkeypatch.setenv("GRAPHLINT_WORKER_START", method)
    path = tmp_path / "train.py"
    path.write_text(HELPERS)
    versions = [
        HELPERS,
        "import os\n\n\n" + HELPERS,  # lines above every piece
        HELPERS.replace("return x * 2", "return x * 2\n\n\ndef more(x):\n    pass"),
        HELPERS.replace("    z = y.cpu()\n", "    z = y.cpu()\n    w = sync(y)\n"),
        HELPERS,
    ]
    settings = Settings()
    with runner.Pool(1, settings, kept=True) as kept:
        for version in versions:
            with overlay({str(path): version.encode()}):
                kept.use(settings)
                (edited,) = runner.run_files(kept, [path])
                with runner.Pool(1, settings) as fresh:
                    (whole,) = runner.run_files(fresh, [path])
            assert edited.diagnostics == whole.diagnostics
            assert "GL101" in _codes(edited)


def test_a_server_starts_a_worker_before_its_first_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``keep_workers(start=1)``, as the server starts, starts a fresh interpreter
    at once (the server will have threads); the first run checks with it, with
    that run's settings."""
    monkeypatch.setattr(runner, "_kept", [])
    monkeypatch.setattr(serving, "_KEEPING", threading.Event())
    path = tmp_path / "train.py"
    path.write_text(REGION + "    z = y.item()\n")
    runner.keep_workers(start=1)
    (pool,) = runner._kept
    try:
        assert pool.method == "spawn" and len(pool.workers) == 1
        pid = pool.workers[0].process.pid
        settings = Settings()
        for enabled, found in [(settings.enabled - {"GL101"}, []), (None, ["GL101"])]:
            chosen = replace(settings, enabled=enabled or settings.enabled)
            with runner.open_pool(1, chosen) as used:
                assert used is pool
                (result,) = runner.run_files(used, [path])
            assert _codes(result) == found
        assert pool.workers[0].process.pid == pid
    finally:
        pool.close(kill=True)


def test_a_run_gives_the_collector_back_as_it_found_it(tmp_path: Path) -> None:
    """The collecting process collects less often during a run (``fewer_collections``),
    and afterwards as before: the language server runs many."""
    import gc  # noqa: PLC0415

    from graphlint.project.survey import survey_project  # noqa: PLC0415

    source = tmp_path / "m.py"
    source.write_text("import torch\nwith torch.cuda.graph(g):\n    y = x.item()\n")
    before = gc.get_threshold(), gc.get_freeze_count()
    with runner.fewer_collections():
        assert gc.get_threshold()[0] > before[0][0]
    checked = survey_project([source], Settings(), inline=True)
    assert [d.code for r in checked.results for d in r.diagnostics] == ["GL101"]
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


class _Runs:
    """Checks of one file's buffers (``check``) with workers kept between them, or
    not; ``batches``: each batch of the last check's jobs ("one" for pass one,
    "project" for a project-pass job; the guesses started behind the batch after
    its own) with the number of summaries beside them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        from graphlint.project import check, kept  # noqa: PLC0415

        self.monkeypatch = monkeypatch
        self.batches: list[tuple[list[str], int]] = []
        monkeypatch.setattr(runner, "_kept", [])
        monkeypatch.setattr(check, "_REACHED", {})
        monkeypatch.setattr(check, "_ASKED", {})
        monkeypatch.setattr(check, "_SUMMARIES", check._Decoded(ModuleSummary, 1024))
        monkeypatch.setattr(check, "_RESULTS", check._Decoded(FileResult, 4096))
        monkeypatch.setattr(kept.Runs, "_memory", {})
        monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(root / "cache"))
        monkeypatch.chdir(root)
        (root / "pyproject.toml").write_text("")

        behind: list[str] = []  # the jobs started since the last batch

        def kinds(jobs: Sequence[runner.Work]) -> list[str]:
            return ["project" if j.external else "one" for j in jobs]  # type: ignore[union-attr]

        def recorded(
            pool: runner.Workers, jobs: list[Job], *besides: Any
        ) -> list[FileResult]:
            self.batches.append(
                ([*kinds(jobs), *behind], len(besides[0]) if besides else 0)
            )
            behind.clear()
            return runner.run_files(pool, jobs, *besides)

        def streamed(
            pool: runner.Workers, jobs: Iterable[Job | None], *besides: Any
        ) -> list[FileResult]:
            found: list[Job] = []

            def passing() -> Iterator[Job | None]:
                for job in jobs:
                    found.extend([job] if job is not None else [])
                    yield job

            results = runner.stream_files(pool, passing(), *besides)
            self.batches.append(
                ([*kinds(found), *behind], len(besides[0]) if besides else 0)
            )
            behind.clear()
            return results

        started = runner.Pool.start

        def start(pool: runner.Pool, jobs: Sequence[runner.Work], *rest: Any) -> None:
            behind.extend(kinds(jobs))
            started(pool, jobs, *rest)

        monkeypatch.setattr(check, "run_files", recorded)
        monkeypatch.setattr(check, "stream_files", streamed)
        monkeypatch.setattr(runner.Pool, "start", start)

    def check(
        self,
        path: Path,
        text: str,
        *,
        kept: bool,
        others: dict[Path, str] | None = None,
    ) -> list[tuple[str, int, str]]:
        """``path`` checked with ``text`` in its buffer, and ``others`` open in
        the editor too."""
        from graphlint.lint import Choices, lint  # noqa: PLC0415

        self.monkeypatch.setattr(serving, "_KEEPING", threading.Event())
        if kept:
            runner.keep_workers()
        self.batches.clear()
        buffers = {str(p): t.encode() for p, t in (others or {}).items()}
        buffers[str(path)] = text.encode()
        with overlay(buffers):
            checked = lint([path], chosen=Choices(force_exclude=True))
        return [
            (d.code, d.line, d.message) for r in checked.results for d in r.diagnostics
        ]

    def close(self) -> None:
        for pool in runner._kept:
            pool.close(kill=True)


def test_a_kept_pool_runs_a_files_last_reach_beside_its_pass_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where workers are kept, a file in both passes (it captures and calls its own
    functions) has its last project-pass job run again behind its pass one, on a
    guess that the edit left the reach alone: the project pass takes that result
    when the reach gives the same job and checks the file again when it does not.
    Every run finds what a run without guesses finds."""
    runs = _Runs(monkeypatch, tmp_path)
    path = tmp_path / "train.py"
    path.write_text(HELPERS)
    versions = [
        (HELPERS, [["one"], ["project"]]),  # nothing to guess from
        (HELPERS + "# edited\n", [["one", "project"], []]),  # the same reach
        (  # the region calls one more function: the guess is wrong
            HELPERS.replace("    z = y.cpu()\n", "    z = sync(y)\n"),
            [["one", "project"], ["project"]],
        ),
    ]
    try:
        for text, kinds in versions:
            kept = runs.check(path, text, kept=True)
            assert [jobs for jobs, _ in runs.batches] == kinds
            assert kept == runs.check(path, text, kept=False)
        assert any(code == "GL101" for code, _, _ in kept)
    finally:
        runs.close()


def test_a_kept_pool_summarises_an_edited_file_beside_its_pass_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where workers are kept, a file the last check summarised (a model file the
    regions of another reach) is summarised again in the batch of its pass one,
    beside the guess of its project pass, not after it while the calls are
    followed; each edit finds what a check without guesses finds."""
    runs = _Runs(monkeypatch, tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    model = tmp_path / "pkg" / "model.py"
    model.write_text("def step(x):\n    return x * 2\n")
    (tmp_path / "pkg" / "train.py").write_text(
        "import torch\nfrom pkg.model import step\n\n"
        "x = torch.zeros(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    y = step(x)\n"
    )
    edits = [
        "def step(x):\n    return x.item()\n",
        "def step(x):\n    return x.cpu()\n",
    ]
    try:
        first = runs.check(model, edits[0], kept=True)
        assert runs.batches[0][1] == 0  # nothing known yet
        second = runs.check(model, edits[1], kept=True)
        # the guess and the summary at once; the project pass runs nothing
        assert runs.batches[0] == (["project"], 1), runs.batches
        assert [jobs for jobs, _ in runs.batches[1:] if jobs] == []
        assert first == runs.check(model, edits[0], kept=False)
        assert second == runs.check(model, edits[1], kept=False)
        assert any(code == "GL101" for code, _, _ in first)
    finally:
        runs.close()


def test_a_kept_pool_answers_an_edit_that_nothing_read_from_its_last_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where workers are kept, an edit of a module whose text only the screening
    read (no region reaches it, it names nothing a region needs) gives the last
    run's results without a job; an edit of a module the regions reach, one that
    makes the module a candidate, and a change on disk to a module the last run
    summarised are checked. Each finds what a check without workers kept finds."""
    runs = _Runs(monkeypatch, tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    model = tmp_path / "pkg" / "model.py"
    model.write_text("def step(x):\n    return x * 2\n")  # settled by its text
    other = tmp_path / "pkg" / "other.py"
    other.write_text("def unrelated(x):\n    return x + 1\n")
    layers = tmp_path / "pkg" / "layers.py"  # never opened
    layers.write_text("def scale(x):\n    return x * 2\n")
    (tmp_path / "pkg" / "train.py").write_text(
        "import torch\nfrom pkg.model import step\nfrom pkg.layers import scale\n\n"
        "x = torch.zeros(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    y = scale(step(x))\n"
    )
    open_ = {model: model.read_text(), other: other.read_text()}  # the buffers

    def edit(path: Path, text: str, *, kept: bool = True) -> list[tuple[str, int, str]]:
        open_[path] = text
        return runs.check(path, text, kept=kept, others=open_)

    try:
        edit(other, open_[other])
        assert runs.batches  # nothing kept yet
        found = edit(
            other, "def unrelated(x):\n    return x + 2\n\n\ndef more(y):\n    pass\n"
        )
        assert runs.batches == []
        assert found == edit(other, open_[other], kept=False) == []
        edit(model, "def step(x):\n    return x * 3\n")
        assert runs.batches  # the regions reach it
        captures = "import torch\nx = torch.zeros(4, device='cuda')\n" + (
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = x.item()\n"
        )
        found = edit(other, captures)
        assert runs.batches and any(code == "GL101" for code, _, _ in found)
        assert found == edit(other, captures, kept=False)
        edit(other, "def unrelated(x):\n    return x\n")
        layers.write_text("def scale(x):\n    return x.item()\n")
        found = edit(other, "def unrelated(x):\n    return x * 2\n")
        assert runs.batches
        assert found == edit(other, open_[other], kept=False)
    finally:
        runs.close()


# a region file that calls into two modules: a wrapper whose ``__init__`` keeps the
# function it is given (a construction passes arguments while it is resolved), and
# a layer whose parameter two calls pass different things
_WRAPPER = """\
class Wrapper:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)
"""
_LAYERS = """\
def scale(x):
    return x * 2


def plain(x):
    return scale(x)


def syncs(x):
    return scale(x).sum().item()


def apply(fn, x):
    return fn(x)
"""
_TRAIN = """\
import torch
from pkg.layers import apply, plain, syncs
from pkg.wrap import Wrapper

x = torch.zeros(4, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = Wrapper(plain)(x)
    z = apply(plain, y)
"""


@pytest.mark.parametrize("checked", [False, True], ids=["taken", "checked"])
def test_a_kept_pool_takes_the_resolutions_an_edit_left_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked: bool
) -> None:
    """Where workers are kept, the calls that an edit left resolving as they did
    are not resolved again (``graphlint.project.resolved``): with ``CHECKED``, each
    kept resolution taken is also made afresh and found the same; and each edit
    (a call added that passes a parameter something new, a wrapper built with
    another function, a call removed) finds what a check without kept
    resolutions finds."""
    from graphlint.project import resolve, resolved  # noqa: PLC0415

    monkeypatch.setattr(resolve, "CHECKED", checked)
    kept = resolved.Resolutions()
    taken: list[bool] = []
    holds = resolve.Resolver._holds

    def spy(self: resolve.Resolver, known: resolved.Resolution) -> bool:
        taken.append(holds(self, known))
        return taken[-1]

    monkeypatch.setattr(resolve.Resolver, "_holds", spy)
    runs = _Runs(monkeypatch, tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "wrap.py").write_text(_WRAPPER)
    (tmp_path / "pkg" / "layers.py").write_text(_LAYERS)
    train = tmp_path / "pkg" / "train.py"
    train.write_text(_TRAIN)
    edits = [
        _TRAIN + "# edited\n",
        _TRAIN + "    w = apply(syncs, z)\n",
        _TRAIN + "    wrapped = Wrapper(syncs)\n    w = wrapped(z)\n",
        _TRAIN.replace("    y = Wrapper(plain)(x)\n", "    y = x\n"),
    ]

    def check(text: str, *, keep: bool) -> list[tuple[str, int, str]]:
        resolutions = kept if keep else resolved.Resolutions()
        monkeypatch.setattr(resolve, "RESOLVED", resolutions)
        return runs.check(train, text, kept=keep)

    try:
        check(_TRAIN, keep=True)
        for text in edits:
            taken.clear()
            found = check(text, keep=True)
            assert any(taken), text  # ``scale(x)``: the same in the same module
            assert found == check(text, keep=False), text
            assert any(code == "GL101" for code, _, _ in found) == ("(syncs" in text)
    finally:
        runs.close()


@pytest.mark.parametrize(
    ("counts", "busy", "collected"),
    [
        ((5_000, 3, 4), False, [0]),  # the young generation, as its threshold would
        ((5_000, 100, 4), False, [1]),  # the middle one is due: it goes with it
        ((5_000, 100, 100), False, [2]),  # and the old one after as many of those
        ((0, 0, 0), False, []),  # nothing allocated since the last collection
        ((5_000, 100, 100), True, []),  # a next job waits: it is not held up
    ],
)
def test_a_worker_collects_between_jobs_what_is_due(
    monkeypatch: pytest.MonkeyPatch,
    counts: tuple[int, int, int],
    busy: bool,
    collected: list[int],
) -> None:
    """A worker idle after a job collects there, not inside the next job; each
    older generation when as many collections of the younger one as its threshold
    have run, as CPython's collector decides."""
    calls: list[int] = []
    monkeypatch.setattr(gc, "get_count", lambda: counts)
    monkeypatch.setattr(gc, "get_threshold", lambda: (200_000, 100, 100))
    monkeypatch.setattr(gc, "collect", lambda generation: calls.append(generation))
    runner.collect_between_jobs(lambda: busy)
    assert calls == collected


def test_jobs_started_behind_wait_for_the_jobs_streamed(tmp_path: Path) -> None:
    """A job ``start`` gave runs behind those a stream finds, however long the
    finding takes before the first: the pool's looks at the workers between two
    found jobs hand out only found ones."""
    found, behind = tmp_path / "found.py", tmp_path / "behind.py"
    found.write_text(REGION)
    behind.write_text(REGION)
    told: list[str] = []

    def finding() -> Iterator[Job | None]:
        start = time.monotonic()
        while time.monotonic() - start < 20 * runner.POLL:  # looks at the workers
            yield None
        yield Job(found)

    with runner.Pool(1, Settings()) as pool:
        pool.start([Job(behind)], lambda _, result: told.append(result.path))
        pool.stream(finding(), lambda _, result: told.append(result.path))
        pool.finish()
    assert told == [str(found), str(behind)]


def test_only_a_project_pass_waits_for_the_guesses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of pass-one jobs (a second one: the files compile wrappers make
    parsed) runs beside the guessed project-pass jobs still running; a batch of
    project-pass jobs waits for them first, as one of them may be its own."""
    from graphlint.project import check  # noqa: PLC0415

    path = tmp_path / "train.py"
    path.write_text(HELPERS)
    finished: list[int] = []
    monkeypatch.setattr(check._Results, "finish", lambda self: finished.append(1))
    checked = check._Results(runner.Inline(Settings()), Settings(), None)
    region = checked.run([Job(path)])[0].entries[0].region
    assert not finished
    checked.run([Job(path, {"train.sync": region})])
    assert finished == [1]


def test_a_worker_parses_a_text_with_cpython_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's summary, its pass one and its project pass, run in one language
    server's worker, take the tree CPython gave the first of them; an edited text is
    parsed again. A command line's worker keeps no tree."""
    from graphlint import read  # noqa: PLC0415

    monkeypatch.setattr(read, "_TREES", {})
    path = tmp_path / "train.py"
    path.write_text(HELPERS)
    runner.check_file(Job(path), Settings())  # a command line's worker
    assert read._TREES == {}
    monkeypatch.setattr(read, "_TREES_KEPT", 1 << 18)  # a language server's
    parsed: list[str] = []
    parse = ast.parse

    def counted(source: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(source)
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    settings = Settings()
    summary = runner.SummaryJob("train", str(path), HELPERS.encode())
    assert isinstance(runner._summarize(summary, settings), ModuleSummary)
    first = runner.check_file(Job(path), settings)
    regions = first.entries[0].region
    runner.check_file(Job(path, {"train.sync": regions}), settings)
    assert parsed.count(HELPERS) == 1
    path.write_text(HELPERS + "# edited\n")
    runner.check_file(Job(path), settings)
    assert parsed.count(HELPERS + "# edited\n") == 1


def test_a_text_larger_than_the_trees_kept_is_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CPython's tree of a text over the size kept is not kept: it would outgrow
    what the worker means to keep until its next parse."""
    from graphlint import read  # noqa: PLC0415

    monkeypatch.setattr(read, "_TREES", {})
    monkeypatch.setattr(read, "_TREES_KEPT", len(HELPERS) - 1)
    first = read.prescreen(HELPERS, "train.py")
    assert read._TREES == {}
    assert read.prescreen(HELPERS, "train.py") is not first
    small = read.prescreen("x = 1\n", "small.py")
    assert read.prescreen("x = 1\n", "small.py") is small
