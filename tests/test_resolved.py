"""Resolutions kept from one reach to the next (``graphlint.project.resolved``): a
reach that takes them ends where a reach that resolves every call afresh ends:
what it reaches and how, which reached functions read each parameter, what each
parameter is passed, the calls not followed and the hand-offs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphlint.diagnostics import Entry, RegionKind, RegionRef
from graphlint.project import resolve, resolved
from graphlint.project.reach import Project
from graphlint.project.summary import ModuleSummary, summarize_source

Calls = list[tuple[int, int, str]]  # a region's calls: line, column, callee


class _Tree:
    """Files, and their summaries kept by their text: a file not edited keeps its
    summary (the same object) from one reach to the next, as a language server's
    runs do."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: dict[tuple[str, str, bytes], ModuleSummary | None] = {}

    def write(self, name: str, text: str) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))

    def load(self, path: Path, name: str) -> ModuleSummary | None:
        data = path.read_bytes()
        key = (str(path), name, data)
        if key not in self._made:
            made = summarize_source(data, name, str(path))
            self._made[key] = made if isinstance(made, ModuleSummary) else None
        return self._made[key]

    def reach(self, calls: Calls, kept: resolved.Resolutions) -> dict[str, object]:
        """A reach from a region of ``train.py`` making ``calls``, taking and
        keeping resolutions in ``kept``: where it ends."""
        path = str(self.root / "train.py")
        region = RegionRef(RegionKind.MANUAL, 1, "torch.cuda.graph", path)
        entries = [Entry(path, "train", None, *call, region) for call in calls]
        project = Project([self.root], self.load)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(resolve, "RESOLVED", kept)
            reached = project.reach(entries, set())
        return {
            "reached": reached,
            "readers": {k: sorted(v) for k, v in project._readers.items()},
            "passed": {
                k: [(p, p.handoff) for p in v] for k, v in project._passed.items()
            },
            "stale": dict(project._stale),
            "unfollowed": project.unfollowed,
            "handed": project.handed,
        }


@pytest.fixture
def tree(tmp_path: Path) -> _Tree:
    found = _Tree(tmp_path)
    found.write("pkg/__init__.py", "")
    return found


def _same_as_afresh(tree: _Tree, runs: list[Calls]) -> list[bool]:
    """Reach with each of ``runs`` in turn, resolutions kept between them; each
    must end as a reach with nothing kept does. Whether each took a kept one."""
    kept = resolved.Resolutions()
    taken: list[bool] = []
    for calls in runs:
        before = len(kept)
        assert tree.reach(calls, kept) == tree.reach(calls, resolved.Resolutions())
        taken.append(len(kept) == before)
    return taken


def test_a_kept_resolution_is_taken_where_the_edit_left_it(tree: _Tree) -> None:
    """A construction that passes the function it wraps, a parameter that two
    calls pass different functions, a helper in the same module: a second reach
    takes the kept resolutions, and a reach with a call more passes a parameter
    something new, which the reach follows again."""
    tree.write(
        "pkg/lib.py",
        """
        class Wrapper:
            def __init__(self, fn):
                self.fn = fn

            def __call__(self, x):
                return self.fn(x)


        def scale(x):
            return x * 2


        def plain(x):
            return scale(x)


        def syncs(x):
            return scale(x).sum().item()


        def apply(fn, x):
            return fn(x)


        wrapped = Wrapper(plain)
        """,
    )
    tree.write("train.py", "from pkg.lib import apply, plain, syncs, wrapped\n")
    first: Calls = [(2, 0, "wrapped"), (3, 0, "apply")]
    taken = _same_as_afresh(tree, [first, first, [*first, (4, 0, "apply")]])
    assert taken[1]  # every resolution the same: nothing new kept


def test_subclasses_found_while_a_binding_is_under_way_are_not_kept(
    tree: _Tree,
) -> None:
    """The subclasses of a class are found once a run, by the resolution that
    first asks, which may read a binding it is evaluating (``Base`` here, whose
    second binding reads ``inst.step``): a kept resolution that asked for them
    holds only where this run found the same, and the one that found them is
    not kept, so no reach finds ``Sub.step``, which a reach afresh does not."""
    tree.write(
        "pkg/lib.py",
        """
        class Model:
            def forward(self, x):
                return self.step(x)

            def step(self, x):
                return x


        def make() -> Model:
            return Model()


        inst = make()

        Base = Model
        if inst:
            Base = inst.step


        class Sub(Base):
            def step(self, x):
                return x
        """,
    )
    tree.write("train.py", "from pkg.lib import Base, Model\nm = Model()\n")
    calls: Calls = [(3, 0, "Base"), (4, 0, "m.forward")]
    _same_as_afresh(tree, [calls, calls])


def test_what_finding_subclasses_reads_is_read_by_whoever_finds_them(
    tree: _Tree,
) -> None:
    """The parameters read while a class's subclasses are found count for the
    function followed when they are found; a reach whose first call that asks
    for them is another than the last reach's reads them for that one."""
    tree.write(
        "pkg/lib.py",
        """
        class Holder:
            def __init__(self, base):
                self.Base = base


        class Thing:
            pass


        holder = Holder(Thing)


        class Model:
            def forward(self, x):
                return self.step(x)

            def step(self, x):
                return x

            def other(self, x):
                return self.step(x)


        class Sub(holder.Base):
            pass
        """,
    )
    tree.write("train.py", "from pkg.lib import Model\nm = Model()\n")
    _same_as_afresh(
        tree, [[(3, 0, "m.other"), (4, 0, "m.forward")], [(4, 0, "m.forward")]]
    )


def test_the_resolutions_of_a_files_earlier_version_are_let_go(tree: _Tree) -> None:
    """A resolution holds the summaries it read; those of a module's earlier
    summary go when one of its new summary is kept (an edited file's)."""
    kept = resolved.Resolutions()
    tree.write("pkg/lib.py", "def scale(x):\n    return x * 2\n")
    for version in range(3):
        tree.write("train.py", f"from pkg.lib import scale\n# version {version}\n")
        tree.reach([(1, 0, "scale")], kept)
        modules = {id(r.module) for r in kept._kept.values()}
        assert len(modules) == 1  # the last version of ``train.py``
