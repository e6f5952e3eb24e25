"""The project's module index: which file a dotted name is, without reading it;
and the summaries it loads."""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec
import pytest

from graphlint import runner
from graphlint.project import check
from graphlint.project.index import ModuleIndex
from graphlint.project.summary import ModuleSummary, _bindings, summarize_source
from graphlint.read import overlay
from graphlint.settings import Settings


@pytest.fixture
def roots(tmp_path: Path) -> list[Path]:
    """Three roots: ``mod.py`` in the second, the package ``pkg`` in the third."""
    found = [tmp_path / f"r{n}" for n in range(3)]
    for root in found:
        root.mkdir()
    (found[1] / "mod.py").write_text("x = 1\n")
    (found[2] / "pkg").mkdir()
    (found[2] / "pkg" / "__init__.py").write_text("")
    (found[2] / "pkg" / "sub.py").write_text("")
    return found


def _index(roots: list[Path]) -> tuple[ModuleIndex, list[str]]:
    loaded: list[str] = []

    def load(path: Path, name: str) -> ModuleSummary:
        loaded.append(str(path))
        return ModuleSummary(name, str(path))

    return ModuleIndex(roots, load), loaded


def _asked_roots(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The roots each module is looked for in from now on (``ModuleIndex._file``)."""
    asked: list[Path] = []
    file = ModuleIndex._file

    def spy(self: ModuleIndex, root: Path, parts: list[str]) -> Path | None:
        asked.append(root)
        return file(self, root, parts)

    monkeypatch.setattr(ModuleIndex, "_file", spy)
    return asked


def test_a_name_no_root_holds_asks_no_root(
    roots: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``torch`` is in no root: each root is listed once, and no root is asked for
    it; the names the roots hold are found where they are."""
    index, loaded = _index(roots)
    asked = _asked_roots(monkeypatch)
    assert index.module("torch") is None
    assert index.module("torch.nn", prefer=roots[0]) is None
    assert asked == []
    assert index.looked >= set(roots)
    assert loaded == []
    assert index.module("mod") is not None
    assert index.module("pkg.sub") is not None
    assert index.module("pkg.other") is None
    assert loaded == [str(roots[1] / "mod.py"), str(roots[2] / "pkg" / "sub.py")]


def test_a_name_is_looked_for_only_in_the_roots_that_may_hold_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a root for each folder of loose scripts, a module is looked for in the
    roots whose listing (or buffers) name it, in their order, not in every one;
    ``_next_load`` the same way."""
    found = [tmp_path / f"r{n}" for n in range(30)]
    for root in found:
        root.mkdir()
        (root / f"only_{root.name}.py").write_text("")
    (found[20] / "shared.py").write_text("")
    (found[25] / "shared.py").write_text("")
    index, loaded = _index(found)
    asked = _asked_roots(monkeypatch)
    assert index.module("shared") is not None
    assert asked == [found[20]]
    assert loaded == [str(found[20] / "shared.py")]
    asked.clear()
    assert index.module("shared", prefer=found[25]) is not None
    assert index.module("only_r7") is not None
    assert asked == [found[25], found[7]]
    asked.clear()
    assert index._next_load("only_r3", None) == [(found[3] / "only_r3.py", "only_r3")]
    assert asked == [found[3]]
    with overlay({str(found[9] / "fresh.py"): b"x = 1\n"}):
        fresh = ModuleIndex(found, lambda path, name: ModuleSummary(name, str(path)))
        asked.clear()
        assert fresh.module("fresh") is not None
        assert asked == [found[9]]


def test_a_root_that_cannot_be_listed_may_hold_anything(
    roots: list[Path], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")  # a root that is no folder
    index, _ = _index([tmp_path / "file", *roots])
    assert index._holds(index.roots[0], "anything")  # asked first
    assert not index._holds(index.roots[1], "anything")
    assert index.module("torch") is None
    assert index.module("mod") is not None


def test_a_module_only_a_buffer_holds_is_found(roots: list[Path]) -> None:
    """A module the editor has open but not saved is a name a root holds."""
    index, loaded = _index(roots)
    with overlay({str(roots[0] / "fresh.py"): b"x = 1\n"}):
        assert index.module("fresh") is not None
    assert loaded == [str(roots[0] / "fresh.py")]


def test_a_buffer_behind_a_linked_folder_is_found(tmp_path: Path) -> None:
    """A module that is only an editor's buffer, in a folder a root reaches through
    a link: found by its real path, as the buffer is kept."""
    real = tmp_path / "real"
    (real / "pkg").mkdir(parents=True)
    (real / "pkg" / "__init__.py").write_text("")
    root = tmp_path / "root"
    root.mkdir()
    (root / "pkg").symlink_to(real / "pkg", target_is_directory=True)
    index, loaded = _index([root])
    with overlay({str(real / "pkg" / "fresh.py"): b"x = 1\n"}):
        assert index.module("pkg.other") is None
        assert index.module("pkg.fresh") is not None
    assert loaded == [str(root / "pkg" / "fresh.py")]


def test_a_module_is_looked_for_once_a_run(
    roots: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the walk prefetches is looked for once: loading it does not ask the
    file system again."""
    looked: list[str] = []
    find = ModuleIndex._find

    def spy(self: ModuleIndex, root: Path, parts: list[str], name: str) -> object:
        looked.append(name)
        return find(self, root, parts, name)

    monkeypatch.setattr(ModuleIndex, "_find", spy)
    index, _ = _index(roots)
    assert index._next_load("pkg.sub", None) == [
        (roots[2] / "pkg" / "sub.py", "pkg.sub")
    ]
    assert index.module("pkg.sub") is not None
    assert looked == ["pkg.sub"]


SOURCE = """\
import torch
from megatron.core import utils

def step(x):
    return utils.helper(x).item()
"""


@pytest.mark.parametrize("path", ["core/x.py", "core/x/__init__.py"])
def test_a_summary_under_another_name_is_the_same_but_for_the_name(path: str) -> None:
    """A file in a namespace package has two names (``core.x`` from one source
    root, ``megatron.core.x`` from another): without relative imports its summary
    is the same under both, but for the name, and is renamed rather than made
    again; with one, it is made again."""
    first = summarize_source(SOURCE.encode(), "core.x", path)
    second = summarize_source(SOURCE.encode(), "megatron.core.x", path)
    assert isinstance(first, ModuleSummary) and isinstance(second, ModuleSummary)
    renamed = first.renamed("megatron.core.x")
    assert renamed is not None and renamed.name == "megatron.core.x"
    assert msgspec.json.encode(renamed) == msgspec.json.encode(second)
    relative = summarize_source(
        b"from . import utils\n" + SOURCE.encode(), "core.x", path
    )
    assert isinstance(relative, ModuleSummary) and relative.renamed("m.core.x") is None


def test_a_run_summarises_a_file_once_under_two_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked for the same unchanged file under two names, a run summarises it once,
    both one by one and in a batch."""
    made: list[str] = []
    summarize = runner._summarize

    def spy(job: runner.SummaryJob, settings: Settings) -> object:
        made.append(job.module)
        return summarize(job, settings)

    monkeypatch.setattr(runner, "_summarize", spy)
    path = tmp_path / "x.py"
    path.write_text(SOURCE)
    for batch in (False, True):
        made.clear()
        summaries = check._Summaries(runner.Inline(Settings()), Settings(), None, str)
        names = [(path, "core.x"), (path, "megatron.core.x")]
        if batch:
            summaries.prefetch(names)
        found = [summaries(*name) for name in names]
        assert [s.name for s in found if s is not None] == ["core.x", "megatron.core.x"]
        assert made == ["core.x"]


WALRUS = [
    "def f(x):\n    if (n := len(x)) > 2:\n        return n\n",
    "def f(x):\n    for a in x:\n        while (b := a.pop()):\n"
    "            if (c := b) and (n := c):\n                y = n\n    return y\n",
    "def f(x):\n    y = 1; z = (w := x)\n    return [v for u in x if (v := u)]\n",
    "def f(x):\n    def g():\n        return (k := 1)\n    k = (\n        k\n"
    "        := 2)\n    return k\n",
    "def f(x):\n    try:\n        a = (b := x)\n    except E as e:\n"
    "        b = (e := 1)\n    finally:\n        c = 1\n    s = ':= in a string'\n",
    "def f(x):\n    match x:\n        case [p]:\n            q = (r := p)\n",
]


@pytest.mark.parametrize("source", WALRUS)
def test_only_the_statements_holding_a_walrus_are_walked_for_it(source: str) -> None:
    """``_bindings`` walks for ``:=`` only the statements that span a line where one
    is written; walking every statement (every line given) binds the same names,
    from the same lines, with the same values in the same order."""
    (function,) = ast.parse(source).body
    assert isinstance(function, ast.FunctionDef)
    lines = [n for n, line in enumerate(source.splitlines(), 1) if ":=" in line]
    every = list(range(1, source.count("\n") + 2))
    found, walked = _bindings(function, lines), _bindings(function, every)
    assert found.first == walked.first
    assert {k: [id(v) for v in vs] for k, vs in found.values.items()} == {
        k: [id(v) for v in vs] for k, vs in walked.values.items()
    }
    assert any(isinstance(v, ast.expr) for vs in found.values.values() for v in vs)


def test_the_files_layout_is_asked_once_while_paths_are_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the files are the whole project, and their source roots, are kept
    while the lookups they read hold (a server's edits): asked again once the
    paths are forgotten (a run plans afresh) or from another working folder."""
    from graphlint.read import forget_paths  # noqa: PLC0415

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("")
    monkeypatch.chdir(tmp_path)
    files = [Path("pkg/a.py"), Path("pkg/__init__.py")]
    asked: list[str] = []
    whole_now = check._whole_now

    def spy(*args: object) -> bool:
        asked.append("whole")
        return whole_now(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(check, "_whole_now", spy)
    forget_paths()
    assert check._whole(files, [], [tmp_path])
    assert check._whole(files, [], [tmp_path])
    assert check._source_roots(files) == [tmp_path.resolve()]
    assert asked == ["whole"]
    assert not check._whole(files, [], [tmp_path / "x"])  # other arguments
    forget_paths()
    assert check._whole(files, [], [tmp_path])
    (tmp_path / "other" / "pkg").mkdir(parents=True)
    (tmp_path / "other" / "pkg" / "a.py").write_text("")
    monkeypatch.chdir(tmp_path / "other")  # no package there: its folder is its root
    assert check._source_roots(files) == [(tmp_path / "other" / "pkg").resolve()]
    assert check._whole(files, [], [tmp_path / "other"])
    assert asked == ["whole"] * 4


def test_a_name_a_package_reexports_is_summarised_ahead(tmp_path: Path) -> None:
    """A callee imported from a package that imports it from a module of its own
    (``from top import helper``; ``top/__init__.py``: ``from .mid import helper``,
    and ``mid`` from ``.impl``): each module on the way is summarised ahead of
    the resolver, a hop per batch, where the resolver would load each alone."""
    (tmp_path / "top" / "mid").mkdir(parents=True)
    (tmp_path / "top" / "__init__.py").write_text("from .mid import helper\n")
    (tmp_path / "top" / "mid" / "__init__.py").write_text("from .impl import helper\n")
    (tmp_path / "top" / "mid" / "impl.py").write_text("def helper(x):\n    return x\n")
    (tmp_path / "train.py").write_text("from top import helper\n")
    made: dict[Path, ModuleSummary] = {}
    batches: list[list[str]] = []
    alone: list[str] = []

    def summary(path: Path, name: str) -> ModuleSummary:
        found = summarize_source(path.read_bytes(), name, str(path))
        assert isinstance(found, ModuleSummary)
        return found

    def prefetch(modules: list[tuple[Path, str]]) -> None:
        batches.append([name for _, name in modules])
        made.update((path, summary(path, name)) for path, name in modules)

    def load(path: Path, name: str) -> ModuleSummary:
        if path not in made:
            alone.append(name)
        return made.get(path) or summary(path, name)

    index = ModuleIndex([tmp_path], load, prefetch=prefetch)
    train = index.module("train")
    assert train is not None
    index.prefetch_calls([(train, "helper")])
    assert batches == [["top"], ["top.mid"], ["top.mid.impl"]]
    assert index.module("top.mid.impl") is not None
    assert alone == ["train"]


def test_a_region_calls_module_is_summarised_ahead_through_a_local(
    tmp_path: Path,
) -> None:
    """A region's call of a local bound before it (``model = build()``, then
    ``model.step()`` under capture) has the module ``build`` is imported from
    summarised with the region calls' own, not alone when the call is resolved."""
    from graphlint.diagnostics import Entry, RegionKind, RegionRef  # noqa: PLC0415

    (tmp_path / "models.py").write_text("def build():\n    return 1\n")
    (tmp_path / "train.py").write_text(
        "from models import build\n\n\ndef run(g):\n    model = build()\n"
        "    with torch.cuda.graph(g):\n        model.step()\n"
    )
    batches: list[list[str]] = []

    def prefetch(modules: list[tuple[Path, str]]) -> None:
        batches.append([name for _, name in modules])

    def load(path: Path, name: str) -> ModuleSummary:
        found = summarize_source(path.read_bytes(), name, str(path))
        assert isinstance(found, ModuleSummary)
        return found

    index = ModuleIndex([tmp_path], load, prefetch=prefetch)
    region = RegionRef(RegionKind.MANUAL, 6, "torch.cuda.graph")
    entry = Entry(
        str(tmp_path / "train.py"), "train", "run", 7, 8, "model.step", region
    )
    index.prefetch([entry], [])
    assert batches == [["train"], ["models"]]
