"""Modules imported where one of their names is first read, not where they are named.

A kind of capture region is one module (``graphlint.facts.kinds``): the words the
screen looks for in a file's text, and how LibCST's tree of the file shows the
region. The process that screens a project's files reads the words and never
parses with LibCST, whose import costs it 0.24-0.39 s (most of a warm check of
Megatron-LM): a kind's module names LibCST, and the facts it shares with the
region finder, through ``module``, so that importing it loads neither::

    if TYPE_CHECKING:
        import libcst as cst
    else:
        cst = lazy.module("libcst", __name__)

The first name read (``cst.Call``) imports the module, by ``importlib`` (which
takes the module's import lock: two threads asking at once get one import), and
the module that holds the stand-in holds the real module from then on, under
every name it gave the stand-in: what it reads after that, a patch a test makes
included, it reads from the module itself, as after ``import libcst as cst``.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


class _Later(ModuleType):
    """Stands for the module of its name, in the module ``owner``, until a name of
    it is read."""

    def __init__(self, name: str, owner: str) -> None:
        super().__init__(name)
        self._owner = owner

    def __getattr__(self, name: str) -> object:
        if name.startswith("__") and name.endswith("__"):
            # what introspection asks (copy, pickle, doctest): no import for it
            raise AttributeError(
                f"module {self.__name__!r} is not imported yet: it has no {name}"
            )
        real = importlib.import_module(self.__name__)
        holder = sys.modules.get(self._owner)
        if holder is not None:
            names = vars(holder)
            for key, value in list(names.items()):
                if value is self:
                    names[key] = real
        return getattr(real, name)


def module(name: str, owner: str) -> ModuleType:
    """A stand-in for the module ``name`` in the module ``owner`` (the caller's
    ``__name__``), which imports it when one of its names is first read and puts
    it in the stand-in's place."""
    return _Later(name, owner)


__all__ = ["module"]
