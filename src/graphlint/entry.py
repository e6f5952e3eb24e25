"""The ``graphlint`` command's entry point.

``graphlint server``, as an editor starts it, goes straight to the language server:
the command line's own modules (typer, and what the options of ``check`` need) are
not imported while the editor waits for the answer to ``initialize``. Every other
command line is ``graphlint.cli``'s, ``graphlint server --help`` included.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console entry point (``graphlint`` and ``python -m graphlint``)."""
    if sys.argv[1:] == ["server"]:
        _server()
    else:
        from graphlint.cli import main as command  # noqa: PLC0415

        command()


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


def _server() -> None:
    """``server``, failing as every command does while it starts: Ctrl-C exits
    130, a bug is one line and exit 2, never a traceback (once it serves, pygls
    ends it on Ctrl-C, exit 0)."""
    try:
        server()
    except KeyboardInterrupt:
        sys.stderr.write("graphlint: interrupted\n")
        sys.exit(130)
    except Exception as error:  # a bug: said in one line
        from graphlint.output.escape import printable  # noqa: PLC0415

        detail = printable(f"{type(error).__name__}: {error}")
        sys.stderr.write(f"graphlint: internal error: {detail}\n")
        sys.exit(2)
