"""``project.bindings.Bindings``: each binding evaluated once, cycles to a fixpoint,
values that lead nowhere kept few."""

from __future__ import annotations

from graphlint.project.bindings import Bindings


def test_a_binding_is_evaluated_once_and_a_cycle_until_it_grows_no_more() -> None:
    """``h = f(); h = h.float()``: the binding reads itself; each pass starts from
    what the last found, and it ends when no new value appears."""
    bindings = Bindings(lambda _: False)
    passes: list[int] = []

    def h() -> list[object]:
        passes.append(1)
        seen = bindings.values(("local", "h"), h, 0)  # the read that closes it
        return sorted({"f", *(f"{v}.float" for v in seen if v == "f")}, key=str)

    found = bindings.values(("local", "h"), h, 0)
    assert found == ["f", "f.float"]
    assert len(passes) == 3  # [f], [f, f.float], the same: done
    assert bindings.values(("local", "h"), h, 0) == found
    assert len(passes) == 3  # kept


def test_values_that_lead_nowhere_are_kept_few() -> None:
    """Each read of an untracked value makes a new one: only the first eight of
    them are kept, with every value that may lead to project code."""
    bindings = Bindings(lambda v: isinstance(v, str) and v.startswith("?"))
    made: list[object] = [f"?{n}" for n in range(20)]
    made.append("step")
    found = bindings.values(("local", "x"), lambda: made, 0)
    assert found == [*made[:8], "step"]
    everything = Bindings(lambda _: False).values(("local", "x"), lambda: made, 0)
    assert everything == made


def test_a_cycle_ends_when_its_project_values_settle() -> None:
    """A pass that only adds values leading nowhere finds nothing new: the cycle
    ends after it, although each pass adds one (``h = h.float()`` on a value the
    resolution cannot follow)."""
    bindings = Bindings(lambda v: isinstance(v, str) and v.startswith("?"))
    passes: list[int] = []

    def h() -> list[object]:
        passes.append(1)
        seen = bindings.values(("local", "h"), h, 0)
        return ["step", f"?{len(passes)}", *seen]

    bindings.values(("local", "h"), h, 0)
    assert len(passes) == 2  # the second pass finds the project value again


def test_a_cycle_runs_until_it_settles() -> None:
    """Each pass may find one more project value: passes go on while they do, up
    to the limit."""
    bindings = Bindings(lambda _: False)
    passes: list[int] = []

    def h() -> list[object]:
        passes.append(1)
        seen = bindings.values(("local", "h"), h, 0)
        return sorted({"f", *(f"{v}.f" for v in seen if len(str(v)) < 5)}, key=str)

    assert bindings.values(("local", "h"), h, 0) == ["f", "f.f", "f.f.f"]
    assert len(passes) == 4  # [f], [f, f.f], [f, f.f, f.f.f], the same
