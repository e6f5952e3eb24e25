"""The ``graphlint`` command's entry point.

``graphlint server``, as an editor starts it, goes straight to the language server:
the command line's own modules (typer, and what the options of ``check`` need) are
not imported while the editor waits for the answer to ``initialize``. Every other
command line is ``graphlint.cli``'s, ``graphlint server --help`` included.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

EXIT_ERROR, EXIT_INTERRUPTED = 2, 130


def main() -> None:
    """Console entry point (``graphlint`` and ``python -m graphlint``)."""
    if sys.argv[1:] == ["server"]:
        guarded(server)
    else:
        from graphlint.cli import app  # noqa: PLC0415

        guarded(app)


def server() -> None:
    """``graphlint server``. A worker is started first, and imports the analysis
    while this process imports the protocol's types (most of the start), so that the
    first document opened finds it ready. One, not more: on a machine with few
    cores, more would slow the server's own start."""
    from graphlint.runner import keep_workers  # noqa: PLC0415

    try:
        keep_workers(start=1)
    except OSError:  # no process to spare now: the first check starts its own
        keep_workers()
    from graphlint.server import serve  # noqa: PLC0415 - pygls only for the server

    serve()


def guarded(command: Callable[[], object]) -> None:
    """Run ``command`` as every command fails: never a traceback; Ctrl-C is one
    line and exit 130, a bug one line and exit 2 (the server's once it serves:
    pygls ends it on Ctrl-C, exit 0)."""
    try:
        command()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        interrupted()
    except Exception as error:  # a bug: said in one line
        from graphlint.output.escape import printable  # noqa: PLC0415

        detail = printable(f"{type(error).__name__}: {error}")
        sys.stderr.write(f"graphlint: internal error: {detail}\n")
        sys.exit(EXIT_ERROR)


def interrupted() -> NoReturn:
    """Ctrl-C: one line and exit 130 (click would print "Aborted!" and exit 1)."""
    sys.stderr.write("graphlint: interrupted\n")
    sys.exit(EXIT_INTERRUPTED)
