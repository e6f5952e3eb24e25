"""The file a spawned worker starts from (``graphlint.runner._Spawned``).

Python puts this file's folder first on ``sys.path``: a folder that holds nothing
else, so nothing can be imported from it. ``python -c`` would put the working
folder there instead, the repository being checked, and Python 3.13 imports
``linecache`` from it before the first statement runs. The first statement gives
the worker graphlint's own path (its arguments) before anything is imported.
"""

import sys

sys.path[:] = sys.argv[3:]

from graphlint.runner import _spawned_main  # noqa: E402 - after the path is safe

_spawned_main(int(sys.argv[1]), int(sys.argv[2]))
