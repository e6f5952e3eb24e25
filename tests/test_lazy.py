"""``graphlint.lazy``: a module named where it is not yet imported."""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphlint import lazy


@pytest.fixture
def owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[types.ModuleType]:
    """A module ``owner_mod`` that holds a stand-in for ``later_mod``, a module on
    the path that nothing has imported."""
    (tmp_path / "later_mod.py").write_text(
        "VALUE = 1\n\ndef twice(x):\n    return 2 * x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = types.ModuleType("owner_mod")
    module.later = lazy.module("later_mod", "owner_mod")  # type: ignore[attr-defined]
    module.again = module.later  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "owner_mod", module)
    yield module
    sys.modules.pop("later_mod", None)


def test_the_module_is_imported_when_a_name_is_first_read(
    owner: types.ModuleType,
) -> None:
    assert "later_mod" not in sys.modules
    assert owner.later.twice(3) == 6
    real = sys.modules["later_mod"]
    # the owner holds the module itself now, under every name it gave the stand-in
    assert owner.later is real
    assert owner.again is real


def test_a_patch_is_read_from_the_module(
    owner: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once imported, names are read from the module: a patch made while the first
    read happens is not kept after it is undone, one made later is seen."""
    import later_mod  # type: ignore[import-not-found]  # noqa: PLC0415

    with monkeypatch.context() as patched:
        patched.setattr(later_mod, "VALUE", 2)
        assert owner.later.VALUE == 2
    assert owner.later.VALUE == 1
    monkeypatch.setattr(later_mod, "VALUE", 3)
    assert owner.later.VALUE == 3


def test_two_threads_read_first_at_once(owner: types.ModuleType) -> None:
    barrier = threading.Barrier(2)
    found: list[object] = []

    def read() -> None:
        barrier.wait()
        found.append(owner.later.twice(2))

    threads = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [4, 4]
    assert owner.later is sys.modules["later_mod"]


def test_introspection_imports_nothing(owner: types.ModuleType) -> None:
    with pytest.raises(AttributeError, match="not imported yet: it has no __file__"):
        owner.later.__file__  # noqa: B018
    assert "later_mod" not in sys.modules
