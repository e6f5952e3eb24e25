"""The values of names' bindings during one resolution of ``reach.Project``, each
binding evaluated once, cycles of bindings that read one another evaluated to a
fixpoint (``Bindings``)."""

from __future__ import annotations

import sys
from collections.abc import Callable

# passes over a binding that depends on itself (``h = h.float()``): each starts from
# what the last one found, until no new project value appears
_ROUNDS = 4
# a binding: ("local", module, function, name), ("global", module, name), ("import",
# module, name), ("attribute", module, class, name) or ("parameter", module,
# function, name), summaries by identity
_Key = tuple[object, ...]
_NOWHERE = sys.maxsize  # no place on the stack of bindings being evaluated


class Bindings:
    """What the bindings of names hold during one resolution, each evaluated once.

    A binding is everything a name can hold: a local's or a module-level name's
    assignments, what ``self.x = ...`` sets, an import, what calls pass a parameter.
    Evaluated again at each use, bindings that read themselves fan out
    exponentially: in ``out = f(q); out = out.view(...); out = out[0]`` each
    binding that reads ``out`` evaluates all of them again, down to the depth
    limit (a function with 14 bindings of ``out``, 5 of them reading it, is 5**8
    paths). Here each is evaluated once and kept.

    Where bindings read one another in a cycle, the read that closes it gets what
    the last pass found (nothing, at first), and the binding the cycle was entered
    by is evaluated again, at least once (so that ``out.view`` also reads what
    ``out = out.float()`` made), until it finds no new project value, at most
    ``_ROUNDS`` times: values the resolution cannot follow (``opaque``) never lead
    to project values, and only theirs grow without end (``h.float().float()...``). The
    other bindings of the cycle are kept until that one is done, as their values
    come from a pass still under way (Tarjan's low-link says which is which). A
    value that a chain cut at the depth limit helped find is not kept: it would be
    short where the chain starts higher.
    """

    def __init__(self, opaque: Callable[[object], bool]) -> None:
        self._opaque = opaque  # a value that leads to no project code
        self._done: dict[_Key, list[object]] = {}
        self._cut: dict[tuple[_Key, int], list[object]] = {}  # at that depth
        self._open: dict[_Key, int] = {}  # being evaluated: its place on the stack
        self._last: dict[_Key, list[object]] = {}  # in a cycle: the last pass found
        # evaluated in a cycle that is still open: its values and the lowest place
        # on the stack they depend on; in the order found
        self._inner: dict[_Key, tuple[list[object], int]] = {}
        self._order: list[_Key] = []
        self._low = _NOWHERE  # the lowest open place the evaluation under way read
        self._grew = False  # a value of an open cycle grew in this pass
        self._cuts = 0  # chains cut at the depth limit

    def values(
        self, key: _Key, evaluate: Callable[[], list[object]], depth: int
    ) -> list[object]:
        """What the binding ``key`` holds: ``evaluate()``, the first time. A chain
        cut at the depth limit is evaluated again only at another ``depth``, once
        a parameter got a new argument, or once another binding's values were
        found whole (a chain cut before may end in them now): otherwise it cuts
        again where it did, and chains of arguments passed down many calls (a
        tensor handed from layer to layer) were evaluated again at every read."""
        done = self._done.get(key)
        if done is not None:
            return list(done)
        cut = self._cut.get((key, depth))
        if cut is not None:
            self._cuts += 1  # what reads it is cut too
            return list(cut)
        place = self._open.get(key)
        if place is not None:  # a cycle closes here
            self._low = min(self._low, place)
            return list(self._last.get(key, ()))
        inner = self._inner.get(key)
        if inner is not None:
            self._low = min(self._low, inner[1])
            return list(inner[0])
        place = len(self._open)
        self._open[key] = place
        low, grew, mark, cuts = self._low, self._grew, len(self._order), self._cuts
        try:
            for rounds in range(1, _ROUNDS + 1):
                self._low, self._grew = _NOWHERE, False
                found = _trimmed(evaluate(), self._opaque)
                before = self._last.get(key, [])
                self._last[key] = found
                self._grew |= _leading(before, self._opaque) != _leading(
                    found, self._opaque
                )
                if self._low < place:  # a cycle entered lower down: evaluated there
                    self._inner[key] = (found, self._low)
                    self._order.append(key)
                    self._low, self._grew = min(low, self._low), grew or self._grew
                    return list(found)
                for kept in self._order[mark:]:  # from this pass's values
                    del self._inner[kept]
                del self._order[mark:]
                if self._low > place or (rounds > 1 and not self._grew):
                    break  # no cycle; or settled, once its own values were read
            if self._cuts == cuts:
                self._done[key] = found
                # a chain cut before may now end in it, at any depth
                self._cut.clear()
            else:
                self._cut[(key, depth)] = found
            self._low, self._grew = low, grew
            return list(found)
        finally:
            del self._open[key]

    def too_deep(self) -> list[object]:
        """Nothing: a chain cut at the depth limit (what it helps find is kept for
        its depth only, ``values``)."""
        self._cuts += 1
        return []

    def changed(self) -> None:
        """A parameter got a new argument: what was found may be short of it."""
        self._done.clear()
        self._cut.clear()


_MAX_OPAQUE = 8  # values a binding keeps that lead to no project code


def _trimmed(values: list[object], opaque: Callable[[object], bool]) -> list[object]:
    """``values`` once each, with only the first few that lead to no project code:
    they say why a call is not followed, and each read of an untracked value makes
    a new one (``h.float().float()...``), which would otherwise multiply along
    every binding that reads it."""
    found = list(dict.fromkeys(values))
    nowhere = [v for v in found if opaque(v)]
    if len(nowhere) <= _MAX_OPAQUE:
        return found
    dropped = set(map(id, nowhere[_MAX_OPAQUE:]))
    return [v for v in found if id(v) not in dropped]


def _leading(
    values: list[object], opaque: Callable[[object], bool]
) -> frozenset[object]:
    """The values that may lead to project code (all but ``opaque`` ones)."""
    return frozenset(v for v in values if not opaque(v))


__all__ = ["Bindings"]
