"""What the benchmarks do before they time graphlint: give it its bytecode."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path


def compile_graphlint() -> None:
    """Compile graphlint's sources, as pip does on install. An editable install run
    with PYTHONDONTWRITEBYTECODE (these machines set it) would otherwise compile
    every module edited since its bytecode was written, at every start: the
    command line's, the language server's and each worker's."""
    package = importlib.util.find_spec("graphlint")
    if package is not None and package.origin is not None:
        folder = str(Path(package.origin).parent)
        subprocess.run([sys.executable, "-m", "compileall", "-q", folder], check=True)
