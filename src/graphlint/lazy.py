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
        cst = lazy.module("libcst")

The first name read (``cst.Call``) imports the module, by ``importlib``, which
takes the import lock: two threads asking at once get one import. Each name read
is then kept on the stand-in, and read from it as from the module.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class _Later(ModuleType):
    """Stands for the module of its name until a name of it is read."""

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # copy, pickle and pytest look for these
            raise AttributeError(name)
        value = getattr(importlib.import_module(self.__name__), name)
        setattr(self, name, value)
        return value


def module(name: str) -> ModuleType:
    """A stand-in for the module ``name`` that imports it when one of its names is
    first read."""
    return _Later(name)


__all__ = ["module"]
