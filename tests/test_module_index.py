"""The project's module index: which file a dotted name is, without reading it."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.project.index import ModuleIndex
from graphlint.project.summary import ModuleSummary
from graphlint.read import overlay


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


def test_a_name_no_root_holds_asks_no_root(
    roots: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``torch`` is in no root: each root is listed once, and no root is asked for
    it; the names the roots hold are found where they are."""
    index, loaded = _index(roots)
    asked: list[Path] = []
    file = ModuleIndex._file

    def spy(self: ModuleIndex, root: Path, parts: list[str]) -> Path | None:
        asked.append(root)
        return file(self, root, parts)

    monkeypatch.setattr(ModuleIndex, "_file", spy)
    assert index.module("torch") is None
    assert index.module("torch.nn", prefer=roots[0]) is None
    assert asked == []
    assert index.looked >= set(roots)
    assert loaded == []
    assert index.module("mod") is not None
    assert index.module("pkg.sub") is not None
    assert index.module("pkg.other") is None
    assert loaded == [str(roots[1] / "mod.py"), str(roots[2] / "pkg" / "sub.py")]


def test_a_root_that_cannot_be_listed_may_hold_anything(
    roots: list[Path], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")  # a root that is no folder
    index, _ = _index([tmp_path / "file", *roots])
    assert index.module("torch") is None
    assert index.module("mod") is not None


def test_a_module_only_a_buffer_holds_is_found(roots: list[Path]) -> None:
    """A module the editor has open but not saved is a name a root holds."""
    index, loaded = _index(roots)
    with overlay({str(roots[0] / "fresh.py"): b"x = 1\n"}):
        assert index.module("fresh") is not None
    assert loaded == [str(roots[0] / "fresh.py")]
