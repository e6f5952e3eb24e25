"""One run of the user's script under ``graphlint confirm``, in its own process:
``python -m graphlint.runtime.child RESULT.json SCRIPT [ARGS...]``, with the run's
settings in ``GRAPHLINT_CONFIRM``. Writes what the run learnt to RESULT.json."""

from __future__ import annotations

import ast
import builtins
import os
import runpy
import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphlint.read import package_of, source_root
from graphlint.runtime import lines, neutral, session
from graphlint.runtime.attribution import first_line, user_frame
from graphlint.runtime.sites import STOPPED


def run(
    script: str, args: list[str], ended_well: Callable[[], None] = lambda: None
) -> str | None:
    """Run ``script`` as ``__main__``; how it ended, when it did not end well. Once
    it ended well (``ended_well`` is told, to keep what the run learnt so far), the
    checker calls what it compiled and never called (``compiled``) and what holds
    a region the program never called (``uncalled``), then what those made."""
    from graphlint.runtime import compiled, uncalled  # noqa: PLC0415 - torch
    from graphlint.runtime.capture import fail_open, install  # noqa: PLC0415

    install()
    neutral.install()
    sys.argv = [script, *args]
    module, folders = entry(script)
    sys.path[0:0] = folders
    lines.start()
    namespace: dict[str, Any] = {}  # the script's globals, kept on sys.exit(0)
    try:
        rewritten = neutral.compile_file(script)
        if module is not None:
            namespace = runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            code = rewritten or compile(
                Path(script).read_bytes(), script, "exec", dont_inherit=True
            )
            namespace = _main(script)
            exec(code, namespace)
    except session.StopRun:  # recorded on its site
        return STOPPED
    except SystemExit as stop:
        if stop.code not in (None, 0):
            return f"the script exited with {stop.code}"
    except BaseException as error:  # the script's own failure, reported
        if fail_open(error):  # between capture_begin() and capture_end()
            return STOPPED
        compiled.escaped(error)  # about torch.compile's graphs: on their site
        found = user_frame(error)
        last = traceback.extract_tb(error.__traceback__)[-1]
        path, line = found if found is not None else (last.filename, last.lineno)
        return f"the script raised {first_line(error)} ({path}:{line})"
    ended_well()
    try:
        compiled.drive()
        uncalled.drive(namespace, script)
        compiled.drive()  # what the functions called there compiled
    except session.StopRun:
        return STOPPED
    return None


def _main(script: str) -> dict[str, Any]:
    """The globals of ``script`` run as ``__main__``, as ``runpy.run_path`` sets
    them up."""
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    return vars(main)


def entry(script: str) -> tuple[str | None, list[str]]:
    """How to run ``script``: as a module of its package when it imports relatively
    (``from .model import Net`` fails in a script), else as a file; and the folders
    its imports need first (its own, and for a module the one above its package)."""
    here = os.path.dirname(os.path.realpath(script))
    package = package_of(Path(script))
    if package is None or not _imports_relatively(script):
        return None, [here]
    root = str(source_root(Path(script)))
    return f"{package}.{Path(script).stem}", [root, here]


def _imports_relatively(script: str) -> bool:
    try:
        tree = ast.parse(Path(script).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    return any(
        isinstance(node, ast.ImportFrom) and node.level > 0 for node in ast.walk(tree)
    )


def main() -> None:
    result_path, script, *args = sys.argv[1:]

    def keep() -> None:  # a call of the checker's that hangs keeps this much
        Path(result_path).write_text(session.result(None).dump(), encoding="utf-8")

    ended = run(script, args, keep)
    Path(result_path).write_text(session.result(ended).dump(), encoding="utf-8")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no teardown: the CUDA context may be broken by a failed capture


if __name__ == "__main__":
    main()
